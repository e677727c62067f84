"""Pair codes: a document pair of an n-document sample as one integer.

A pair (i, j) with i < j is coded ``i * n + j`` (int64; exact while n**2 <
2**63). Codes sort pairs by (i, j), so sets of pairs become sorted integer
arrays: ``np.unique``, ``np.isin`` and ``np.searchsorted`` do the set work.
"""

from __future__ import annotations

import numpy as np


def pair_codes(i, j, n: int) -> np.ndarray:
    """``i * n + j`` for pairs given with i < j."""
    return np.asarray(i, dtype=np.int64) * n + np.asarray(j, dtype=np.int64)


def unordered_codes(a, b, n: int) -> np.ndarray:
    """Codes of pairs given in either order: (min, max)."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    return pair_codes(np.minimum(a, b), np.maximum(a, b), n)


def decode(codes, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(i, j) of pair codes."""
    codes = np.asarray(codes, dtype=np.int64)
    return codes // n, codes % n


def first_of_each(i, j, n: int) -> np.ndarray:
    """Indices of the first occurrence of each distinct pair (i < j), in (i, j) order."""
    return np.unique(pair_codes(i, j, n), return_index=True)[1]
