"""Binomial intervals and tests, vectorized over arrays of counts.

Wilson score interval for k successes in n trials at confidence 1-alpha::

    p = k/n, z = Phi^-1(1 - alpha/2)
    centre = (p + z^2/(2n)) / (1 + z^2/n)
    half   = z / (1 + z^2/n) * sqrt(p(1-p)/n + z^2/(4n^2))

n = 0 gives NaN (no evidence either way), never 0 or 1.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy import stats as _st


@lru_cache(maxsize=16)
def _z(alpha: float) -> float:
    return float(_st.norm.ppf(1 - alpha / 2))


def wilson(k, n, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Wilson interval (low, high) for each k of n; NaN where n == 0."""
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    z = _z(alpha)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        denom = 1 + z * z / n
        centre = (p + z * z / (2 * n)) / denom
        half = z / denom * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        lo = np.where(n > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
        hi = np.where(n > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
    return lo, hi


def clopper_pearson(k, n, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Exact (Clopper-Pearson) interval via the beta distribution; NaN where n == 0."""
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        lo = np.where(k > 0, _st.beta.ppf(alpha / 2, k, n - k + 1), 0.0)
        hi = np.where(k < n, _st.beta.ppf(1 - alpha / 2, k + 1, n - k), 1.0)
    lo = np.where(n > 0, lo, np.nan)
    hi = np.where(n > 0, hi, np.nan)
    return lo, hi


def rate(k, n) -> np.ndarray:
    """k/n with NaN for n == 0."""
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, k / n, np.nan)
