"""Containment: how much of the smaller shingle set lies inside the larger.

Direction: for a pair (A, B) with |A| <= |B| (A the smaller set; ties: either)

    C(A, B) = |A & B| / |A|        in [0, 1]

so a short document copied whole into a long one has C = 1 while its Jaccard
J = |A & B| / |A | B| = |A| / |B| can be tiny. C is symmetric as defined here
(always the smaller set's share), so a pair's containment does not depend on
the order (i, j); the shorter document is the *contained* one, the one
containment clustering proposes for removal (see :mod:`calib.search.config`).

* :func:`pairs_containment`: exact C per pair (a compiled sorted merge, as
  :func:`calib.verification.jaccard.pairs_jaccard`);
* :func:`containment_from_jaccard` / :func:`estimate_containment`: C from a
  Jaccard value and the exact set sizes. With x = |A & B|,
  J = x / (|A| + |B| - x), so x = J (|A| + |B|) / (1 + J) and

      C = J (|A| + |B|) / ((1 + J) min(|A|, |B|)),

  clipped to [0, 1]; with the MinHash estimate of J it is the estimate of C
  (the sizes are known exactly, only J is estimated);
* :func:`all_pairs_containment_above`: every pair with C >= t, by prefix
  filtering on the smaller side: with shingles in a global order (rarest
  first), C(A, B) >= t needs |A & B| >= ceil(t |A|), so the first
  |A| - ceil(t |A|) + 1 shingles of A meet B somewhere. Every shingle of B is
  indexed (B's share of the overlap can be small), A's prefix probes the index,
  and the survivors are verified exactly; :func:`brute_force_containment` is
  the O(n^2) reference.

Two empty sets (or an empty and any other) have C = 0 (no evidence).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from calib.base.validate import pair_arrays, row_mask
from calib.verification.jaccard import TooManyPairs, _global_ranks, _prefix_lengths, _require_sets, pairs_intersection
from calib.sketches.shingles import ShingleSets


def pairs_containment(sets: ShingleSets, i, j) -> np.ndarray:
    """Exact C = |A & B| / min(|A|, |B|) for each pair (i[t], j[t])."""
    i, j = pair_arrays(i, j, sets.n)
    inter = pairs_intersection(sets, i, j)
    sizes = sets.sizes()
    small = np.minimum(sizes[i], sizes[j])
    return np.divide(inter, small, out=np.zeros(len(inter)), where=small > 0)


def containment_from_jaccard(jaccard, size_a, size_b) -> np.ndarray:
    """C = J (|A| + |B|) / ((1 + J) min(|A|, |B|)), clipped to [0, 1]; 0 when a set is empty."""
    s = np.asarray(jaccard, dtype=np.float64)
    a = np.asarray(size_a, dtype=np.float64)
    b = np.asarray(size_b, dtype=np.float64)
    small = np.minimum(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = s * (a + b) / ((1.0 + s) * small)
    return np.where(small > 0, np.clip(c, 0.0, 1.0), 0.0)


def jaccard_from_containment(containment, size_a, size_b) -> np.ndarray:
    """The inverse: J = C m / (|A| + |B| - C m), m = min(|A|, |B|)."""
    c = np.asarray(containment, dtype=np.float64)
    a = np.asarray(size_a, dtype=np.float64)
    b = np.asarray(size_b, dtype=np.float64)
    x = c * np.minimum(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(a + b - x > 0, x / (a + b - x), 0.0)


def estimate_containment(sig: np.ndarray, sizes: np.ndarray, i, j, num_perm: int | None = None) -> np.ndarray:
    """MinHash estimate of C: the estimate of J converted with the exact sizes."""
    from calib.sketches.minhash import estimate_jaccard
    i, j = pair_arrays(i, j, sig.shape[0])
    return containment_from_jaccard(estimate_jaccard(sig, i, j, num_perm), sizes[i], sizes[j])


@njit(cache=True)
def _full_postings(offsets, ranks, active, n_tokens):
    """Inverted index of every shingle of the active documents: token -> rows (ascending)."""
    n = len(offsets) - 1
    counts = np.zeros(n_tokens + 1, dtype=np.int64)
    for d in range(n):
        if active[d]:
            for t in range(offsets[d], offsets[d + 1]):
                counts[ranks[t] + 1] += 1
    post_off = np.cumsum(counts)
    fill = post_off[:-1].copy()
    rows = np.empty(post_off[-1], dtype=np.int64)
    for d in range(n):
        if active[d]:
            for t in range(offsets[d], offsets[d + 1]):
                rows[fill[ranks[t]]] = d
                fill[ranks[t]] += 1
    return post_off, rows


@njit(cache=True, parallel=True)
def _probe(offsets, ranks, probe_len, post_off, post_rows, sizes, lo, hi, emit, out_off, out_i, out_j, counts,
           n_chunks):
    """Rows x in lo..hi-1 probe the index with their prefix; a partner y must
    be at least as large ((|y|, y) > (|x|, x): each pair is met once, from its
    smaller side). Pass 1 counts the partners per row, pass 2 (emit) writes
    them (min, max) from out_off."""
    n = len(sizes)
    for ch in prange(n_chunks):
        seen = np.zeros(n, dtype=np.bool_)
        touched = np.empty(n, dtype=np.int64)
        for x in range(lo + ch, hi, n_chunks):
            a = sizes[x]
            m = 0
            for t in range(offsets[x], offsets[x] + probe_len[x]):
                tok = ranks[t]
                for q in range(post_off[tok], post_off[tok + 1]):
                    y = post_rows[q]
                    if y == x or seen[y]:
                        continue
                    if sizes[y] < a or (sizes[y] == a and y < x):
                        continue
                    seen[y] = True
                    touched[m] = y
                    m += 1
            w = out_off[x - lo] if emit else 0
            for u in range(m):
                y = touched[u]
                seen[y] = False
                if emit:
                    out_i[w + u] = min(x, y)
                    out_j[w + u] = max(x, y)
            counts[x - lo] = m


def all_pairs_containment_above(sets: ShingleSets, threshold: float, *, block: int = 4096,
                                active: np.ndarray | None = None, max_pairs: int | None = None
                                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (i < j) with exact C >= threshold (> 0), and its C, sorted by (i, j).

    Raises :class:`calib.verification.jaccard.TooManyPairs` when more than ``max_pairs``
    pairs pass. Each block's filter survivors are materialized at once (their
    number is bounded by the block's prefix postings).
    """
    _require_sets(sets)
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    if max_pairs is not None and max_pairs < 0:
        raise ValueError(f"max_pairs must be >= 0 or None, got {max_pairs}")
    n = sets.n
    act = (np.ones(n, dtype=np.bool_) if active is None else row_mask(active, n)) & (sets.sizes() > 0)
    sizes = sets.sizes()
    probe_len = np.where(act, _prefix_lengths(sizes, threshold), 0)
    ranks = _global_ranks(sets)
    n_tokens = int(ranks.max()) + 1 if len(ranks) else 0
    post_off, post_rows = _full_postings(sets.offsets, ranks, act, n_tokens)
    out_i, out_j, out_s, found = [], [], [], 0
    empty = np.empty(0, np.int64)
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        workers = min(hi - lo, 8)
        counts = np.zeros(hi - lo, dtype=np.int64)
        base = (sets.offsets, ranks, probe_len, post_off, post_rows, sizes)
        _probe(*base, lo, hi, False, empty, empty, empty, counts, workers)
        off = np.zeros(hi - lo + 1, dtype=np.int64)
        np.cumsum(counts, out=off[1:])
        if off[-1] == 0:
            continue
        ii = np.empty(off[-1], dtype=np.int64)
        jj = np.empty(off[-1], dtype=np.int64)
        _probe(*base, lo, hi, True, off, ii, jj, np.zeros(hi - lo, dtype=np.int64), workers)
        c = pairs_containment(sets, ii, jj)
        keep = c >= threshold
        found += int(keep.sum())
        if max_pairs is not None and found > max_pairs:
            raise TooManyPairs(threshold, found, max_pairs)
        out_i.append(ii[keep]); out_j.append(jj[keep]); out_s.append(c[keep])
    if not out_i:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64)
    ii, jj, ss = np.concatenate(out_i), np.concatenate(out_j), np.concatenate(out_s)
    srt = np.argsort(ii * np.int64(n) + jj)
    return ii[srt], jj[srt], ss[srt]


def brute_force_containment(sets: ShingleSets, threshold: float):
    """Reference O(n^2): every pair (i < j) with C >= threshold, and its C."""
    I, J = np.triu_indices(sets.n, 1)
    c = pairs_containment(sets, I, J)
    m = c >= threshold
    return I[m].astype(np.int64), J[m].astype(np.int64), c[m]
