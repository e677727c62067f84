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
  indexed (B's share of the overlap can be small), A's prefix probes the index
  counting c, the prefix shingles B holds, and each survivor is verified
  exactly: |A & B| = c + |A's suffix & B's shingles ranked after A's prefix|,
  a merge that stops as soon as the matches plus A's shingles left fall short
  of ceil(t |A|), and gallops through B when B is much larger than A (a short
  file against long ones: O(|A| log |B|), not O(|A| + |B|));
  :func:`brute_force_containment` is the O(n^2) reference.

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
def _full_postings(offsets, ranks, active, by_order, n_tokens):
    """Inverted index of every shingle of the active documents: token -> their positions in the
    (size, row) order ``by_order``, ascending (int32)."""
    n = len(offsets) - 1
    counts = np.zeros(n_tokens + 1, dtype=np.int64)
    for d in range(n):
        if active[d]:
            for t in range(offsets[d], offsets[d + 1]):
                counts[ranks[t] + 1] += 1
    post_off = np.cumsum(counts)
    fill = post_off[:-1].copy()
    pos = np.empty(post_off[-1], dtype=np.int32)
    for u in range(n):
        d = by_order[u]
        if active[d]:
            for t in range(offsets[d], offsets[d + 1]):
                pos[fill[ranks[t]]] = u
                fill[ranks[t]] += 1
    return post_off, pos


@njit(inline="always")  # compiled into its callers (and cached with them)
def _suffix_overlap(ranks, a0, a1, b0, b1, need):
    """|ranks[a0:a1] & ranks[b0:b1]| (both ascending), or -1 as soon as it cannot reach ``need``
    (the matches so far plus every element of A left is less). When B is much longer than A each
    element of A is sought by galloping (exponential then binary search): O(|A| log |B|)."""
    inter = 0
    gallop = (b1 - b0) > 8 * (a1 - a0)
    while a0 < a1:
        if inter + (a1 - a0) < need:
            return -1
        v = ranks[a0]
        if gallop:
            step = 1
            hi = b0
            while hi < b1 and ranks[hi] < v:
                b0 = hi + 1
                hi = b0 + step
                step *= 2
            hi = min(hi, b1)
            while b0 < hi:  # first position in [b0, hi) with rank >= v
                mid = (b0 + hi) // 2
                if ranks[mid] < v:
                    b0 = mid + 1
                else:
                    hi = mid
        else:
            while b0 < b1 and ranks[b0] < v:
                b0 += 1
        if b0 >= b1:
            break
        if ranks[b0] == v:
            inter += 1
            b0 += 1
        a0 += 1
    return inter if inter >= need else -1


@njit(cache=True, parallel=True)
def _probe(offsets, ranks, probe_len, need, post_off, post_pos, by_order, order_pos, lo, hi, emit, out_off,
           out_i, out_j, out_x, counts, n_chunks):
    """Rows x in lo..hi-1 probe the index with their prefix; a partner y comes after x in (size, row)
    order (each pair is met once, from its smaller side), and c counts the prefix tokens it shares.

    Pass 1 (emit=False) counts the candidates per row; pass 2 writes them (min, max) from out_off
    with |x & y| = c + |x's suffix & y's tokens ranked after x's prefix| (the suffix's tokens rank
    after the prefix's), or -1 where that merge proves |x & y| < need (then C < t)."""
    n = len(order_pos)
    for ch in prange(n_chunks):
        acc = np.zeros(n, dtype=np.int32)
        touched = np.empty(n, dtype=np.int64)
        for x in range(lo + ch, hi, n_chunks):
            me = order_pos[x]
            m = 0
            for t in range(offsets[x], offsets[x] + probe_len[x]):
                tok = ranks[t]
                s, e = post_off[tok], post_off[tok + 1]
                for q in range(s + np.searchsorted(post_pos[s:e], me + 1), e):
                    y = by_order[post_pos[q]]
                    if acc[y] == 0:
                        touched[m] = y
                        m += 1
                    acc[y] += 1
            counts[x - lo] = m
            w = out_off[x - lo] if emit else 0
            a1 = offsets[x + 1]
            a0 = offsets[x] + probe_len[x]
            end_x = ranks[a0 - 1] if m else 0
            for u in range(m):
                y = touched[u]
                c = acc[y]
                acc[y] = 0
                if emit:
                    b0 = offsets[y] + np.searchsorted(ranks[offsets[y]:offsets[y + 1]], end_x, side="right")
                    rest = _suffix_overlap(ranks, a0, a1, b0, offsets[y + 1], need[x] - c)
                    out_i[w + u] = min(x, y)
                    out_j[w + u] = max(x, y)
                    out_x[w + u] = c + rest if rest >= 0 else -1


def all_pairs_containment_above(sets: ShingleSets, threshold: float, *, block: int = 4096,
                                active: np.ndarray | None = None, max_pairs: int | None = None
                                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (i < j) with exact C >= threshold (> 0), and its C, sorted by (i, j).

    Raises :class:`calib.verification.jaccard.TooManyPairs` when more than ``max_pairs``
    pairs pass (checked after each block of rows). Each block's filter survivors are
    materialized at once (their number is bounded by the block's prefix postings) and verified
    in the probe: the merge of a survivor's suffixes stops once C >= t is out of reach.
    """
    _require_sets(sets)
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    if max_pairs is not None and max_pairs < 0:
        raise ValueError(f"max_pairs must be >= 0 or None, got {max_pairs}")
    n = sets.n
    sizes = sets.sizes()
    act = (np.ones(n, dtype=np.bool_) if active is None else row_mask(active, n)) & (sizes > 0)
    probe_len = np.where(act, _prefix_lengths(sizes, threshold), 0)
    # the overlap C >= t needs, with a margin below the prefix filter's: where the merge may give up
    need = np.maximum(np.ceil(threshold * sizes - 1e-6), 1).astype(np.int64)
    ranks = _global_ranks(sets)
    n_tokens = int(ranks.max()) + 1 if len(ranks) else 0
    by_order = np.lexsort((np.arange(n), sizes))
    order_pos = np.empty(n, dtype=np.int64)
    order_pos[by_order] = np.arange(n)
    post_off, post_pos = _full_postings(sets.offsets, ranks, act, by_order, n_tokens)
    out_i, out_j, out_s, found = [], [], [], 0
    empty = np.empty(0, np.int64)
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        workers = min(hi - lo, 8)
        counts = np.zeros(hi - lo, dtype=np.int64)
        base = (sets.offsets, ranks, probe_len, need, post_off, post_pos, by_order, order_pos, lo, hi)
        _probe(*base, False, empty, empty, empty, empty, counts, workers)
        off = np.zeros(hi - lo + 1, dtype=np.int64)
        np.cumsum(counts, out=off[1:])
        if off[-1] == 0:
            continue
        ii, jj, inter = (np.empty(off[-1], dtype=np.int64) for _ in range(3))
        _probe(*base, True, off, ii, jj, inter, np.zeros(hi - lo, dtype=np.int64), workers)
        small = np.minimum(sizes[ii], sizes[jj])
        c = np.divide(inter, small, out=np.zeros(len(inter)), where=inter > 0)  # as pairs_containment
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
