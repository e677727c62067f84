"""Exact copies: documents whose normalized shingle sets are identical.

Production pipelines drop exact duplicates before MinHash. Here every
document stays measured, but copies cost nothing extra: the members of a
group share one signature, collide with each other in every band and have
J = 1, so the pair-producing steps (banding, the reference join) run on one
*canonical* row per group (its smallest row), and their pairs are expanded
by multiplicity afterwards. With m_u members in the group of u:

* a pair of canonical rows (u, v) stands for m_u x m_v document pairs with
  the same J, the same estimate and the same collisions;
* a group of m documents holds C(m, 2) pairs with J = 1.

So the number of document pairs is known by arithmetic before any pair is
built (for the pair budget), and the expansion gives exactly the pairs an
uncollapsed run would produce. Empty sets are never grouped (J = 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from calib.sketches.shingles import ShingleSets


@dataclass(frozen=True, eq=False)
class Copies:
    """``canonical[x]``: the smallest row whose shingle set equals x's (x itself
    when x has no copy or an empty set)."""

    canonical: np.ndarray

    @property
    def n(self) -> int:
        return len(self.canonical)

    @property
    def is_canonical(self) -> np.ndarray:
        return self.canonical == np.arange(self.n)

    @property
    def multiplicity(self) -> np.ndarray:
        """int64[n]: group size at canonical rows, 0 at the other rows."""
        return np.bincount(self.canonical, minlength=self.n).astype(np.int64)

    @property
    def n_copies(self) -> int:
        """Documents that are a copy of an earlier one."""
        return int(self.n - self.is_canonical.sum())

    def pair_count(self, i: np.ndarray, j: np.ndarray) -> int:
        """Document pairs that the canonical pairs (i, j) plus every group's
        inner pairs stand for: sum m_i m_j + sum C(m, 2)."""
        m = self.multiplicity
        return int((m[i] * m[j]).sum() + (m * (m - 1) // 2).sum())

    def expand(self, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The document pairs (I < J, sorted) that canonical pairs (i, j) and the
        groups stand for, and ``src``: the canonical pair each came from, -1 for
        a pair inside a group (J = 1)."""
        n = self.n
        order = np.argsort(self.canonical, kind="stable")  # members of each group, ascending
        m = self.multiplicity
        starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(m, out=starts[1:])
        i = np.asarray(i, np.int64)
        j = np.asarray(j, np.int64)
        cross = m[i] * m[j]
        inner_groups = np.flatnonzero(m > 1)
        inner = m[inner_groups] * (m[inner_groups] - 1) // 2
        off = np.zeros(len(i) + len(inner_groups) + 1, dtype=np.int64)
        np.cumsum(np.r_[cross, inner], out=off[1:])
        out_i = np.empty(off[-1], dtype=np.int64)
        out_j = np.empty(off[-1], dtype=np.int64)
        src = np.empty(off[-1], dtype=np.int64)
        _expand(order, starts, i, j, inner_groups, off, out_i, out_j, src)
        srt = np.argsort(out_i * np.int64(n) + out_j)
        return out_i[srt], out_j[srt], src[srt]


def spread(values: np.ndarray, src: np.ndarray, inner) -> np.ndarray:
    """Per expanded pair: its canonical pair's value, ``inner`` inside a group."""
    out = np.full(len(src), inner, dtype=np.asarray(values).dtype)
    m = src >= 0
    out[m] = np.asarray(values)[src[m]]
    return out


@njit(cache=True, parallel=True)
def _expand(members, starts, i, j, groups, off, out_i, out_j, src):
    p = len(i)
    for t in prange(p + len(groups)):
        o = off[t]
        if t < p:
            u, v = i[t], j[t]
            for a in range(starts[u], starts[u + 1]):
                for c in range(starts[v], starts[v + 1]):
                    x, y = members[a], members[c]
                    out_i[o] = min(x, y)
                    out_j[o] = max(x, y)
                    src[o] = t
                    o += 1
        else:
            g = groups[t - p]
            for a in range(starts[g], starts[g + 1]):
                for c in range(a + 1, starts[g + 1]):
                    out_i[o] = members[a]  # members ascend, so a's row is the smaller
                    out_j[o] = members[c]
                    src[o] = -1
                    o += 1


@njit(cache=True, parallel=True)
def _digests(offsets, hashes):
    """Two independent 64-bit hashes of each (sorted) set."""
    n = len(offsets) - 1
    out = np.empty((n, 2), dtype=np.uint64)
    for d in prange(n):
        h1 = np.uint64(0xCBF29CE484222325)
        h2 = np.uint64(0x84222325CBF29CE4) ^ np.uint64(offsets[d + 1] - offsets[d])
        for t in range(offsets[d], offsets[d + 1]):
            x = np.uint64(hashes[t])
            h1 = (h1 ^ x) * np.uint64(0x100000001B3)
            h2 = (h2 + x + np.uint64(0x9E3779B97F4A7C15)) * np.uint64(0xBF58476D1CE4E5B9)
            h2 ^= h2 >> np.uint64(31)
        h1 ^= h1 >> np.uint64(33)
        h1 *= np.uint64(0xFF51AFD7ED558CCD)
        h1 ^= h1 >> np.uint64(33)
        out[d, 0] = h1
        out[d, 1] = h2
    return out


def set_digests(sets: ShingleSets) -> np.ndarray:
    """(n, 2) uint64: a 128-bit digest of each document's sorted unique shingle set."""
    if not sets.unique:
        raise ValueError("copies need sorted unique shingle sets (shingle_hashes(..., unique=True))")
    return _digests(sets.offsets, sets.hashes)


def copies_from_digests(digests: np.ndarray, sizes: np.ndarray) -> Copies:
    """Groups of equal (digest, size), empty sets excluded; canonical = smallest row."""
    n = len(sizes)
    rows = np.arange(n, dtype=np.int64)
    canonical = rows.copy()
    live = np.flatnonzero(sizes > 0)
    if len(live) < 2:
        return Copies(canonical)
    d = digests[live]
    order = live[np.lexsort((live, sizes[live], d[:, 1], d[:, 0]))]
    key_change = np.r_[True, (digests[order[1:]] != digests[order[:-1]]).any(axis=1) |
                       (sizes[order[1:]] != sizes[order[:-1]])]
    head = order[key_change][np.cumsum(key_change) - 1]  # first (smallest) row of each run
    canonical[order] = head
    return Copies(canonical)


@njit(cache=True, parallel=True)
def _same_as(offsets, hashes, x, c):
    out = np.ones(len(x), dtype=np.bool_)
    for t in prange(len(x)):
        a0, a1 = offsets[x[t]], offsets[x[t] + 1]
        b0 = offsets[c[t]]
        if a1 - a0 != offsets[c[t] + 1] - b0:
            out[t] = False
            continue
        for k in range(a1 - a0):
            if hashes[a0 + k] != hashes[b0 + k]:
                out[t] = False
                break
    return out


def find_copies(sets: ShingleSets) -> Copies:
    """Exact groups of identical non-empty shingle sets: grouped by digest,
    then every member compared with its canonical set element by element (a
    digest collision leaves the document on its own, which is still exact:
    it then meets its twins as ordinary pairs with J = 1)."""
    cp = copies_from_digests(set_digests(sets), sets.sizes())
    x = np.flatnonzero(~cp.is_canonical)
    same = _same_as(sets.offsets, sets.hashes, x, cp.canonical[x])
    if same.all():
        return cp
    canonical = cp.canonical.copy()
    canonical[x[~same]] = x[~same]
    return Copies(canonical)
