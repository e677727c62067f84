"""Hash variance of a band-collision rate from one seed: the band jackknife.

The b bands of an LSH split use disjoint rows of the signature, i.e.
independent hash functions, so given the documents they are b i.i.d. draws
of "hash luck" shared by every pair. A rate over pairs,

    R = (1/N) sum_p m_p [c_p > 0],   c_p = number of bands pair p collides in,

(``m_p`` a hash-free mask such as ``J_p >= t`` for exact verification) is a
symmetric function of those b draws. Its variance over hash seeds is
estimated without re-hashing by deleting one band at a time (Efron & Stein
1981; the delete-one jackknife variance is conservative, i.e. biased
upward, for symmetric statistics of i.i.d. draws)::

    R_(-k) = R - (1/N) #{p : m_p, c_p = 1, p's only band is k}
    var_jack = (b - 1)/b * sum_k (R_(-k) - mean_k R_(-k))^2

It sees the dependence between pairs that share documents (they share the
bands). A rate driven by rare misses can show no single-band pair at all
(var_jack = 0), so the estimate is floored by the variance the pairs would
have if they were independent, sum_p q_p (1 - q_p) / N^2 with
q_p = m_p P(J_p) from each pair's exact Jaccard (no seed needed).

It covers the hash functions' luck on *these* documents; which documents
were sampled is the bootstrap's part (:mod:`calib.estimates.bootstrap`).
"""

from __future__ import annotations

import numpy as np

from calib.candidates.lsh import s_curve


def hash_sd(count: np.ndarray, first: np.ndarray, b: int, r: int, exact: np.ndarray,
            mask: np.ndarray | None = None) -> float:
    """Standard deviation over hash seeds of R = mean(mask & count > 0).

    ``count``, ``first``: from :func:`calib.candidates.lsh.band_hits` (for a pair with
    count 1, ``first`` is its only band); ``exact``: each pair's exact
    Jaccard. NaN when there are no pairs.
    """
    n = len(count)
    if n == 0:
        return float("nan")
    m = np.ones(n, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    single = m & (count == 1)
    drop = np.bincount(first[single], minlength=b)[:b] / n  # R - R_(-k)
    var_jack = (b - 1) / b * float(np.sum((drop - drop.mean()) ** 2)) if b > 1 else 0.0
    q = s_curve(np.asarray(exact, dtype=np.float64), b, r) * m
    var_ind = float(np.sum(q * (1 - q))) / (n * n)
    return float(np.sqrt(max(var_jack, var_ind)))


def widen(estimate: float, low: float, high: float, sd: float, z: float = 1.959963984540054) -> tuple[float, float]:
    """Combine a sampling interval with hash variation into an interval for
    the rate *another* seed gives: each half-width is added in quadrature to
    z * sqrt(2) * sd (the difference of two seeds' hash luck has variance
    2 sd^2). Clipped to [0, 1]."""
    if np.isnan(estimate) or np.isnan(sd):
        return low, high
    h = z * np.sqrt(2.0) * sd
    lo = estimate - np.hypot(estimate - low, h)
    hi = estimate + np.hypot(high - estimate, h)
    return float(max(0.0, lo)), float(min(1.0, hi))
