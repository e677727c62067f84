"""How likely a rate is to exceed a budget, and its one-sided upper bound at a confidence level.

A result row keeps its rate's estimate ``p`` and the two-sided 95% interval ``[lo, hi]`` calib computed
for it (cluster-bootstrap percentiles, Wilson, Wilson over clusters or a stratified draw's interval,
widened by the hash spread where the method ends in ``+hash``: :mod:`calib.estimates.metrics`), not the
bootstrap replicates. The distribution of the rate is read back from that interval as the normal
approximation it implies, one half on each side of the estimate (a split normal, so an interval that
is not symmetric, as near 0, keeps its shape)::

    sd_up   = (hi - p) / z,      sd_down = (p - lo) / z,      z = Phi^-1(0.975) = 1.95996...

    P(rate > x) = 1 - Phi((x - p) / sd_up)     for x >= p
                = Phi((p - x) / sd_down)       for x <  p

It gives back the row's own interval: P(rate > hi) = 2.5%, P(rate < lo) = 2.5%, and P(rate > p) = 50%.
The one-sided upper bound at confidence ``c`` (0.5 <= c < 1) is the value the rate exceeds with
probability 1 - c::

    U_c = p + Phi^-1(c) * sd_up

so U_0.5 = p (the point estimate), U_0.975 = hi (the two-sided 95% interval's upper end), and a
budget holds at confidence c exactly when P(rate > budget) <= 1 - c, i.e. U_c <= budget. A side of
zero width (hi = p: every resample gave the same rate) is a step: P is 0 at and above p, 1 below.
The rate of interest is the one on the corpus the sample was drawn from, for the hash seed the
configuration will run with: what the interval covers (:func:`calib.estimates.figures.interval_words`)
is what the probability covers; label errors and another population are not in it.
"""

from __future__ import annotations

import math

from scipy.stats import norm

Z975 = 1.959963984540054  # the two-sided 95% interval's quantile


def _finite(x) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def check_confidence(confidence) -> float | None:
    """``confidence`` as a float in [0.5, 1), or None (no confidence: the point estimate); ValueError otherwise."""
    if confidence is None:
        return None
    c = float(confidence)
    if not 0.5 <= c < 1.0:  # NaN fails too
        raise ValueError(f"confidence must be at least 0.5 and below 1 (e.g. 0.95), got {confidence!r}")
    return c


def exceed_probability(estimate, low, high, budget: float) -> float:
    """P(rate > ``budget``) under the split normal the row's 95% interval implies (module docstring);
    NaN when the estimate or the needed end of the interval is not measured."""
    if not (_finite(estimate) and _finite(budget)):
        return float("nan")
    p, x = float(estimate), float(budget)
    if x >= p:
        if not _finite(high):
            return float("nan")
        sd = (float(high) - p) / Z975
        return 0.0 if sd <= 0 else float(norm.sf((x - p) / sd))
    if not _finite(low):
        return float("nan")
    sd = (p - float(low)) / Z975
    return 1.0 if sd <= 0 else float(norm.cdf((p - x) / sd))


def upper_bound(estimate, high, confidence: float) -> float:
    """The rate's one-sided upper bound at ``confidence`` (module docstring): p + Phi^-1(c) (hi - p) / z;
    NaN when either is not measured."""
    c = check_confidence(confidence)
    if not (_finite(estimate) and _finite(high)):
        return float("nan")
    p = float(estimate)
    return p + float(norm.ppf(c)) * max(0.0, float(high) - p) / Z975


def upper_bounds(estimates, highs, confidence: float):
    """:func:`upper_bound` over arrays (NaN where either is not a number)."""
    import numpy as np
    c = check_confidence(confidence)
    p = np.asarray(estimates, dtype=np.float64)
    h = np.asarray(highs, dtype=np.float64)
    return p + float(norm.ppf(c)) * np.maximum(0.0, h - p) / Z975
