"""What to label next in a stratified draw (:mod:`calib.labeling.draw`); ``calib draw --more``
(:mod:`calib.cli.draw`) runs it.

The rates of a drawn set's labels are design-weighted ratio estimates
(:mod:`calib.estimates.design_weighted`); their variance falls as labels are
added to a stratum h, V_h(n_h) = N_h^2 S2_h / n_h - N_h S2_h.
What to label next (:func:`next_labels`): the stratum whose next label
lowers the variance most, one label at a time (greedy Neyman allocation:
n_h proportional to N_h S_h at the optimum), for the recommended
configuration's false-removal rate and pair recall together.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calib.estimates.design_weighted import Z95, estimate
from calib.estimates.stats import wilson


def _half_width(R: float, var: float) -> float:
    """Half-width of the Wilson interval at the effective size R(1-R)/var (as
    :func:`calib.estimates.design_weighted.stratified_ratio` reports it); z sqrt(var) when R is 0
    or 1 or unknown."""
    if not np.isfinite(var):
        return float("inf")
    if not (np.isfinite(R) and 0.0 < R < 1.0) or var <= 0:
        return float(Z95 * np.sqrt(max(var, 0.0)))
    n_eff = R * (1.0 - R) / var
    lo, hi = wilson(R * n_eff, n_eff)
    return float((hi - lo) / 2)


def _variance(N, n, s2, X) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(n > 0, N ** 2 * (1 - n / np.maximum(N, 1)) * s2 / np.maximum(n, 1), np.where(N > 0, np.inf, 0))
    return float(v.sum() / X ** 2)


def next_labels(frame: pd.DataFrame, design, *, width: float = 0.05, rates_: tuple[str, ...] = (
        "false_removal_rate", "pair_recall"), k: int | None = None, limit: int = 200_000) -> dict:
    """Greedy Neyman allocation of the next labels.

    Returns ``allocation`` (extra labels per stratum, ``k`` of them, or as
    many as bring every rate's projected 95% half-width z sqrt(V) to ``width``),
    and per rate: ``half_width`` now and ``labels_needed`` (extra labels, each
    rate allocated on its own, to reach ``width``; None beyond ``limit`` or
    when the strata run out; ``documents_limit`` True when the document
    sample's own variance, which labels do not lower, is already wider:
    draw more documents then). A label goes where it lowers
    sum_rates V_rate / V_target most, V_target = (width / z)^2."""
    N = np.asarray(design.population, dtype=float)
    H = len(N)
    n0 = np.bincount(frame["h"].to_numpy(np.int64), minlength=H).astype(float)
    target = (width / Z95) ** 2
    parts = {}
    for r in rates_:
        est = estimate(frame, design, r)
        s2 = est.s2 if est.s2 is not None else np.zeros(H)
        # the part of the variance beyond the stratified one (the document sample's, ultimate-cluster term)
        # does not shrink with more labels of the same documents: it stays as it is
        extra = max(est.variance - est.variance / est.deff, 0.0) if np.isfinite(est.variance) else 0.0
        parts[r] = (s2, est.total_x if np.isfinite(est.total_x) else 1.0, est.estimate, extra,
                    (est.high - est.low) / 2 if np.isfinite(est.estimate) else float("inf"))

    # The projection's half-width at the labels held now can differ from the reported interval's
    # (the estimate widens its interval for strata next to labeled ones, which the projection does
    # not model): scale the projection by that ratio, so "0 more labels" is said exactly when the
    # reported interval is within the width already, and a wider one always needs more.
    scale = {}
    for r in rates_:
        now = _half_width(parts[r][2], _variance(N, n0, parts[r][0], parts[r][1]) + parts[r][3])
        scale[r] = parts[r][4] / now if np.isfinite(parts[r][4]) and np.isfinite(now) and now > 0 else 1.0

    def within(r: str, var: float) -> bool:
        return _half_width(parts[r][2], var) * scale[r] <= width

    def greedy(which: tuple[str, ...], stop_k: int | None):
        n = n0.copy()
        added = 0
        while True:
            vs = {r: _variance(N, n, parts[r][0], parts[r][1]) + parts[r][3] for r in which}
            if stop_k is None and all(within(r, vs[r]) for r in which):
                return n - n0, added, vs
            if stop_k is not None and added >= stop_k:
                return n - n0, added, vs
            room = n < N
            if not room.any() or added >= limit:
                return n - n0, None if stop_k is None else added, vs
            gain = np.zeros(H)
            for r in which:
                s2, X = parts[r][:2]
                with np.errstate(divide="ignore", invalid="ignore"):
                    # V_h(n) = N^2 S2/n - N S2: one more label lowers it by N^2 S2 / (n (n + 1))
                    g = np.where(n > 0, N ** 2 * s2 / np.maximum(n * (n + 1), 1), np.inf) / X ** 2
                # an unlabeled stratum (infinite variance) comes first: its gain stays infinite
                gain += np.where(np.isinf(g), np.inf, g / max(vs[r], target) if np.isfinite(vs[r]) else g)
            gain[~room] = -1
            # a batch of labels per step (1% of the labels so far) keeps this fast for large counts
            step = max(1, int(n.sum() // 100))
            best = int(np.argmax(gain))
            add = min(step, int(N[best] - n[best]), (stop_k - added) if stop_k is not None else step)
            n[best] += add
            added += add

    out = {"width": width, "rates": {}}
    for r in rates_:
        _, need, _ = greedy((r,), None)
        out["rates"][r] = {"estimate": parts[r][2], "half_width": float(parts[r][4]), "labels_needed": need,
                           # True: the document sample alone keeps the interval wider than the width
                           "documents_limit": not within(r, parts[r][3])}
    alloc, added, _ = greedy(rates_, k)
    out["allocation"] = pd.Series(alloc.astype(int), index=list(design.strata))
    out["labels"] = added
    return out


