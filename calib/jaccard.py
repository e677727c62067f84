"""Exact Jaccard similarity on hashed shingle sets: J(A, B) = |A & B| / |A | B|.

* :func:`pairs_jaccard` for any list of pairs (a compiled sorted-merge per pair);
* :func:`all_pairs_above` for every pair with J >= t in a whole sample, by
  prefix filtering: order shingles by global frequency (rarest first); if
  J(A, B) >= t then the first |A| - ceil(t|A|) + 1 shingles of A and of B
  share at least one shingle. Sparse products (scipy.sparse) of the prefix
  incidence matrix, block of rows by block, give candidate pairs and c, the
  number of prefix shingles they share, with bounded memory. Two exact
  filters prune before the merge verifies: sizes (t|A| <= |B| <= |A|/t) and
  overlap (J >= t needs |A & B| >= ceil(t/(1+t) (|A|+|B|)), while
  |A & B| <= c + ceil(t|X|) - 1, X being the document whose prefix ends
  first in the global order: a shared shingle outside either prefix lies
  after X's prefix).

Two empty sets have J = 0 here (no evidence of duplication), not 1.
"""

from __future__ import annotations


import numpy as np
import pandas as pd
import scipy.sparse as sp
from numba import njit, prange

from ._validate import pair_arrays, row_mask
from .shingles import ShingleSets


def _require_sets(sets: ShingleSets) -> None:
    if not sets.unique:
        raise ValueError("exact Jaccard needs sorted unique shingle sets (shingle_hashes(..., unique=True))")


@njit(cache=True, parallel=True)
def _pairs_jaccard(offsets, hashes, i, j):
    out = np.empty(len(i), dtype=np.float64)
    for t in prange(len(i)):
        a0, a1 = offsets[i[t]], offsets[i[t] + 1]
        b0, b1 = offsets[j[t]], offsets[j[t] + 1]
        na, nb = a1 - a0, b1 - b0
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
        union = na + nb - inter
        out[t] = inter / union if union > 0 else 0.0
    return out


def pairs_jaccard(sets: ShingleSets, i, j) -> np.ndarray:
    """Exact J for each pair (i[t], j[t]) of documents."""
    _require_sets(sets)
    i, j = pair_arrays(i, j, sets.n)
    return _pairs_jaccard(sets.offsets, sets.hashes, i, j)


def _prefix_matrix(sets: ShingleSets, threshold: float) -> tuple[sp.csr_matrix, np.ndarray]:
    """Rows = documents, columns = shingles, ones on each document's prefix;
    and the global rank key of each document's last prefix shingle."""
    codes, uniques = pd.factorize(sets.hashes, sort=False)
    df = np.bincount(codes, minlength=len(uniques))
    sizes = sets.sizes()
    doc = np.repeat(np.arange(sets.n, dtype=np.int64), sizes)
    # Global order: rarest shingle first (ties by code), then rank within doc.
    rank_key = df[codes].astype(np.int64) * (len(uniques) + 1) + codes
    order = np.lexsort((rank_key, doc))
    pos_in_doc = np.arange(len(order), dtype=np.int64) - np.repeat(sets.offsets[:-1], sizes)
    prefix_len = sizes - np.ceil(threshold * sizes - 1e-9).astype(np.int64) + 1
    keep = pos_in_doc < np.repeat(prefix_len, sizes)
    rows = doc[order][keep]
    cols = codes[order][keep]
    end_key = np.full(sets.n, -1, dtype=np.int64)
    np.maximum.at(end_key, rows, rank_key[order][keep])
    return sp.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)),
                         shape=(sets.n, len(uniques))), end_key


def all_pairs_above(sets: ShingleSets, threshold: float, *, block: int = 1000,
                    active: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (i < j) with exact J >= threshold, and its J, sorted by (i, j).

    ``threshold`` must be > 0 (J >= 0 is every pair). Memory is bounded by one
    block of rows of the prefix product at a time.
    """
    _require_sets(sets)
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    P, end_key = _prefix_matrix(sets, threshold)
    if active is not None:
        P = sp.diags(row_mask(active, sets.n).astype(np.float32)) @ P
    PT = P.T.tocsr()
    sizes = sets.sizes().astype(np.float64)
    rest = np.ceil(threshold * sizes - 1e-9) - 1  # shingles after each prefix
    out_i, out_j, out_s = [], [], []
    for s in range(0, sets.n, block):
        prod = (P[s:s + block] @ PT).tocoo()
        ii = prod.row.astype(np.int64) + s
        jj = prod.col.astype(np.int64)
        c = prod.data.astype(np.float64)
        sa, sb = sizes[ii], sizes[jj]
        need = np.ceil(threshold / (1 + threshold) * (sa + sb) - 1e-9)
        m = ((ii < jj) & (sb >= threshold * sa - 1e-9) & (sa >= threshold * sb - 1e-9)
             & (c + np.where(end_key[ii] <= end_key[jj], rest[ii], rest[jj]) >= need))
        ii, jj = ii[m], jj[m]
        if not len(ii):
            continue
        sim = pairs_jaccard(sets, ii, jj)
        m = sim >= threshold
        out_i.append(ii[m]); out_j.append(jj[m]); out_s.append(sim[m])
    if not out_i:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64)
    ii, jj, ss = np.concatenate(out_i), np.concatenate(out_j), np.concatenate(out_s)
    srt = np.lexsort((jj, ii))
    return ii[srt], jj[srt], ss[srt]


def brute_force_all_pairs(sets: ShingleSets, threshold: float):
    """Reference O(n^2) implementation, for tests on small samples."""
    n = sets.n
    I, J = np.triu_indices(n, 1)
    s = pairs_jaccard(sets, I, J)
    m = s >= threshold
    return I[m].astype(np.int64), J[m].astype(np.int64), s[m]
