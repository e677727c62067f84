"""Boundary checks for pair arrays handed to compiled kernels (which do not
bounds-check: a bad index would read garbage or crash the interpreter)."""

from __future__ import annotations

import numpy as np


def pair_arrays(i, j, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(i, j) as int64 arrays of equal length with every index in 0..n-1."""
    i = np.ascontiguousarray(i, dtype=np.int64)
    j = np.ascontiguousarray(j, dtype=np.int64)
    if i.ndim != 1 or j.ndim != 1:
        raise ValueError("pair arrays i and j must be one-dimensional")
    if len(i) != len(j):
        raise ValueError(f"pair arrays i and j differ in length ({len(i)} != {len(j)})")
    if len(i) and (min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= n):
        raise ValueError(f"pair index outside 0..{n - 1}")
    return i, j


def row_mask(mask, n: int, name: str = "active") -> np.ndarray:
    """A bool array with one entry per row."""
    m = np.ascontiguousarray(mask, dtype=np.bool_)
    if m.shape != (n,):
        raise ValueError(f"{name} must have one entry per document ({n}), got shape {m.shape}")
    return m
