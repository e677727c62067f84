"""Exact Jaccard similarity on hashed shingle sets: J(A, B) = |A & B| / |A | B|.

* :func:`pairs_jaccard` for any list of pairs (a compiled sorted-merge per pair);
* :func:`all_pairs_above` for every pair with J >= t in a whole sample, by
  prefix filtering (AllPairs): order shingles by global frequency (rarest
  first); if J(A, B) >= t then the first |A| - ceil(t|A|) + 1 shingles of A
  and of B share at least one shingle. An inverted index of the prefixes is
  joined row block by row block in compiled code (it computes the sparse
  product P P^T of the prefix incidence matrix one row at a time, with a
  dense accumulator), counting c, the prefix shingles a pair shares. Two
  exact filters prune before the merge verifies: sizes (t|A| <= |B| <=
  |A|/t) and overlap (J >= t needs |A & B| >= ceil(t/(1+t) (|A|+|B|)), while
  |A & B| <= c + |X| - prefix(X), X being the document whose prefix ends
  first in the global order: a shared shingle outside either prefix lies
  after X's prefix).

Two empty sets have J = 0 here (no evidence of duplication), not 1.
"""

from __future__ import annotations

import weakref

import numba
import numpy as np
import pandas as pd
from numba import njit, prange

from calib.base.validate import pair_arrays, row_mask
from calib.sketches.shingles import ShingleSets


class TooManyPairs(RuntimeError):
    """More pairs with J >= threshold than the pair budget allows.

    ``found`` is the number of distinct pairs verified above the threshold
    before the join stopped (at least ``limit + 1``).
    """

    def __init__(self, threshold: float, found: int, limit: int):
        self.threshold, self.found, self.limit = threshold, found, limit
        super().__init__(f"too many pairs above J >= {threshold:g}: at least {found:,} distinct pairs, more "
                         f"than max_pairs={limit:,}")


def _require_sets(sets: ShingleSets) -> None:
    if not sets.unique:
        raise ValueError("exact Jaccard needs sorted unique shingle sets (shingle_hashes(..., unique=True))")


@njit(cache=True, parallel=True)
def _pairs_intersection(offsets, hashes, i, j):
    """|A & B| for each pair, by a sorted merge of the two sets."""
    out = np.empty(len(i), dtype=np.int64)
    for t in prange(len(i)):
        a0, a1 = offsets[i[t]], offsets[i[t] + 1]
        b0, b1 = offsets[j[t]], offsets[j[t] + 1]
        inter = 0
        while a0 < a1 and b0 < b1:
            x, y = hashes[a0], hashes[b0]
            if x == y:
                inter += 1
                a0 += 1
                b0 += 1
            elif x < y:
                a0 += 1
            else:
                b0 += 1
        out[t] = inter
    return out


def pairs_intersection(sets: ShingleSets, i, j) -> np.ndarray:
    """|A & B| (int64) for each pair (i[t], j[t]) of documents."""
    _require_sets(sets)
    i, j = pair_arrays(i, j, sets.n)
    return _pairs_intersection(sets.offsets, sets.hashes, i, j)


def pairs_jaccard(sets: ShingleSets, i, j) -> np.ndarray:
    """Exact J for each pair (i[t], j[t]) of documents."""
    _require_sets(sets)
    i, j = pair_arrays(i, j, sets.n)
    inter = _pairs_intersection(sets.offsets, sets.hashes, i, j)
    sizes = sets.sizes()
    union = sizes[i] + sizes[j] - inter
    return np.divide(inter, union, out=np.zeros(len(inter)), where=union > 0)


_RANKS: list = []  # the last few (weak reference to the sets, their ranks): joins at several floors share them
_RANKS_KEPT = 4


def _global_ranks(sets: ShingleSets) -> np.ndarray:
    """Each shingle occurrence replaced by its token's global rank: rarest
    token first (ties by first appearance), as int32, per-document sorted.
    Remembered for the last few sets (a search joins one representation at several floors)."""
    for ref, ranks in _RANKS:
        if ref() is sets:
            return ranks
    ranks = _rank_tokens(sets)
    _RANKS.insert(0, (weakref.ref(sets), ranks))
    del _RANKS[_RANKS_KEPT:]
    return ranks


def _rank_tokens(sets: ShingleSets) -> np.ndarray:
    codes, uniques = pd.factorize(sets.hashes, sort=False)
    df = np.bincount(codes, minlength=len(uniques))
    order = np.argsort(df, kind="stable")
    rank = np.empty(len(uniques), dtype=np.int32)
    rank[order] = np.arange(len(uniques), dtype=np.int32)
    return _sort_segments(sets.offsets, rank[codes])


@njit(cache=True, parallel=True)
def _sort_segments(offsets, values):
    out = np.empty_like(values)
    for d in prange(len(offsets) - 1):
        out[offsets[d]:offsets[d + 1]] = np.sort(values[offsets[d]:offsets[d + 1]])
    return out


@njit(cache=True)
def _postings(offsets, ranks, index_len, order_pos, active, n_tokens):
    """Inverted index of the index-prefixes: token -> documents, ascending in
    the (size, row) order ``order_pos``; stores each document's order position."""
    n = len(offsets) - 1
    counts = np.zeros(n_tokens + 1, dtype=np.int64)
    for d in range(n):
        if active[d]:
            for t in range(offsets[d], offsets[d] + index_len[d]):
                counts[ranks[t] + 1] += 1
    post_off = np.cumsum(counts)
    fill = post_off[:-1].copy()
    pos = np.empty(post_off[-1], dtype=np.int32)
    by_order = np.argsort(order_pos)
    for u in range(n):
        d = by_order[u]
        if active[d]:
            for t in range(offsets[d], offsets[d] + index_len[d]):
                pos[fill[ranks[t]]] = u
                fill[ranks[t]] += 1
    return post_off, pos, by_order


@njit(cache=True, parallel=True)
def _prefix_join(offsets, ranks, probe_len, index_len, post_off, post_pos, by_order, order_pos, sizes_sorted,
                 sizes, threshold, lo, hi, emit, out_off, out_i, out_j, counts, n_chunks):
    """Rows lo..hi-1 (x) against every y before x in (size, row) order that
    shares a prefix token (each pair is met once, from its larger side).

    Exact filters: |y| <= |x| by the order and |y| >= t|x| by ``first``;
    counting c, the shared prefix tokens, a survivor needs c + (tokens after
    the prefix that ends first in the global order) >= alpha, where J >= t
    needs the overlap alpha = ceil(t/(1+t) (|x|+|y|)). Pass 1 (emit=False)
    counts the survivors per row, pass 2 writes them (min, max) at out_off.
    Rows are dealt to ``n_chunks`` workers, each with an n-sized accumulator.
    """
    n = len(sizes)
    for ch in prange(n_chunks):
        acc = np.zeros(n, dtype=np.int32)
        touched = np.empty(n, dtype=np.int64)
        for x in range(lo + ch, hi, n_chunks):
            a = sizes[x]
            if a == 0 or probe_len[x] == 0:
                counts[x - lo] = 0
                continue
            me = order_pos[x]
            # y ranges over order positions [first with |y| >= t|x|, me)
            first = np.searchsorted(sizes_sorted, np.ceil(threshold * a - 1e-9))
            m = 0
            for t in range(offsets[x], offsets[x] + probe_len[x]):
                tok = ranks[t]
                s, e = post_off[tok], post_off[tok + 1]
                k0 = s + np.searchsorted(post_pos[s:e], first)
                k1 = s + np.searchsorted(post_pos[s:e], me)
                for q in range(k0, k1):
                    y = by_order[post_pos[q]]
                    if acc[y] == 0:
                        touched[m] = y
                        m += 1
                    acc[y] += 1
            end_x = ranks[offsets[x] + probe_len[x] - 1]
            w = out_off[x - lo] if emit else 0
            c_out = 0
            for u in range(m):
                y = touched[u]
                c = acc[y]
                acc[y] = 0
                b = sizes[y]
                end_y = ranks[offsets[y] + index_len[y] - 1]
                rest = (a - probe_len[x]) if end_x <= end_y else (b - index_len[y])
                need = np.ceil(threshold / (1.0 + threshold) * (a + b) - 1e-9)
                if c + rest >= need:
                    if emit:
                        out_i[w] = min(x, y)
                        out_j[w] = max(x, y)
                        w += 1
                    c_out += 1
            counts[x - lo] = c_out


def _prefix_lengths(sizes: np.ndarray, fraction: float) -> np.ndarray:
    """|A| - ceil(fraction |A|) + 1 for non-empty sets, 0 for empty ones; at most |A| (a pair above
    any threshold > 0 shares a shingle, even where fraction |A| rounds to 0)."""
    need = np.maximum(np.ceil(fraction * sizes - 1e-9), 1).astype(np.int64)
    return np.where(sizes > 0, sizes - need + 1, 0)


_EMIT = 1 << 22  # filter survivors emitted and verified at a time (~100 MB of transient arrays)


def all_pairs_above(sets: ShingleSets, threshold: float, *, block: int = 4096,
                    active: np.ndarray | None = None, max_pairs: int | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (i < j) with exact J >= threshold, and its J, sorted by (i, j).

    ``threshold`` must be > 0 (J >= 0 is every pair). Rows are counted block
    by block, and the survivors of the filters are emitted and verified a few
    million at a time (at most ``max_pairs`` + 1, or 65,536), so memory is the
    prefix index, n x (4 + 8) bytes per worker, one emission chunk (~40 bytes a
    pair) and the pairs kept (24 bytes each, ~2x while they are sorted).
    Raises :class:`TooManyPairs` as soon as more than ``max_pairs`` are found.
    """
    _require_sets(sets)
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    if max_pairs is not None and max_pairs < 0:
        raise ValueError(f"max_pairs must be >= 0 or None, got {max_pairs}")
    n = sets.n
    act = np.ones(n, dtype=np.bool_) if active is None else row_mask(active, n)
    sizes = sets.sizes()
    probe_len = np.where(act, _prefix_lengths(sizes, threshold), 0)
    # Both sides use the probe prefix |A| - ceil(t|A|) + 1. AllPairs' shorter
    # index prefix (2t/(1+t)) traverses less but leaves the overlap filter
    # below nearly powerless: on prose char 5-grams it was 3x slower overall.
    index_len = probe_len
    ranks = _global_ranks(sets)
    n_tokens = int(ranks.max()) + 1 if len(ranks) else 0
    by_order = np.lexsort((np.arange(n), sizes))
    order_pos = np.empty(n, dtype=np.int64)
    order_pos[by_order] = np.arange(n)
    post_off, post_pos, by_order = _postings(sets.offsets, ranks, index_len, order_pos, act, n_tokens)
    sizes_sorted = sizes[by_order]
    workers = 4 * numba.get_num_threads()
    chunk = _EMIT if max_pairs is None else min(_EMIT, max(max_pairs + 1, 1 << 16))
    out_i, out_j, out_s, found = [], [], [], 0
    empty = np.empty(0, np.int64)
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        counts = np.zeros(hi - lo, dtype=np.int64)
        base = (sets.offsets, ranks, probe_len, index_len, post_off, post_pos, by_order, order_pos,
                sizes_sorted, sizes, float(threshold))
        _prefix_join(*base, lo, hi, False, empty, empty, empty, counts, min(hi - lo, workers))
        # emit the block's survivors in runs of rows of at most ~_EMIT pairs
        ends = np.cumsum(counts)
        a = 0
        while a < hi - lo:
            start = ends[a - 1] if a else 0
            z = max(int(np.searchsorted(ends, start + chunk, side="right")), a + 1)
            total = int(ends[z - 1] - start)
            if total:
                off = np.zeros(z - a + 1, dtype=np.int64)
                np.cumsum(counts[a:z], out=off[1:])
                ii = np.empty(total, dtype=np.int64)
                jj = np.empty(total, dtype=np.int64)
                sub = np.empty(z - a, dtype=np.int64)
                _prefix_join(*base, lo + a, lo + z, True, off, ii, jj, sub, min(z - a, workers))
                sim = pairs_jaccard(sets, ii, jj)
                keep = sim >= threshold
                found += int(keep.sum())
                if max_pairs is not None and found > max_pairs:
                    raise TooManyPairs(threshold, found, max_pairs)
                out_i.append(ii[keep]); out_j.append(jj[keep]); out_s.append(sim[keep])
                del ii, jj, sim, keep
            a = z
    if not out_i:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64)
    ii, jj, ss = np.concatenate(out_i), np.concatenate(out_j), np.concatenate(out_s)
    del out_i, out_j, out_s
    srt = np.argsort(ii * np.int64(n) + jj)
    return ii[srt], jj[srt], ss[srt]


def brute_force_all_pairs(sets: ShingleSets, threshold: float):
    """Reference O(n^2) implementation, for tests on small samples."""
    n = sets.n
    I, J = np.triu_indices(n, 1)
    s = pairs_jaccard(sets, I, J)
    m = s >= threshold
    return I[m].astype(np.int64), J[m].astype(np.int64), s[m]
