"""Exact weighted Jaccard, for pairs and for all pairs above a threshold.

For the sets A, B with weights w_A, w_B (zero outside the set):

    J_w(A, B) = sum_s min(w_A(s), w_B(s)) / sum_s max(w_A(s), w_B(s))

With one weight per shingle (IDF, :mod:`calib.sketches.weighted_minhash`) that is
w(A & B) / w(A | B): shingles common to many documents (boilerplate) count
little in both the shared and the total part. ICWS signatures collide with
probability J_w, so their fraction of equal columns estimates it.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from calib.base.validate import pair_arrays, row_mask
from calib.sketches.minhash import estimate_jaccard
from calib.sketches.shingles import ShingleSets
from calib.sketches.weighted_minhash import entry_weights
from calib.verification.jaccard import TooManyPairs


@njit(cache=True, parallel=True)
def _pairs_weighted(offsets, hashes, weights, i, j):
    out = np.zeros(len(i), dtype=np.float64)
    for t in prange(len(i)):
        a0, a1 = offsets[i[t]], offsets[i[t] + 1]
        b0, b1 = offsets[j[t]], offsets[j[t] + 1]
        lo = 0.0
        hi = 0.0
        while a0 < a1 and b0 < b1:
            x, y = hashes[a0], hashes[b0]
            if x == y:
                wa, wb = weights[a0], weights[b0]
                lo += min(wa, wb)
                hi += max(wa, wb)
                a0 += 1
                b0 += 1
            elif x < y:
                hi += weights[a0]
                a0 += 1
            else:
                hi += weights[b0]
                b0 += 1
        while a0 < a1:
            hi += weights[a0]
            a0 += 1
        while b0 < b1:
            hi += weights[b0]
            b0 += 1
        out[t] = lo / hi if hi > 0 else 0.0
    return out


def pairs_weighted_jaccard(sets: ShingleSets, i, j) -> np.ndarray:
    """Exact J_w = sum min / sum max for each pair (i[t], j[t]) (0 when both are empty)."""
    if not sets.unique:
        raise ValueError("exact weighted Jaccard needs sorted unique shingle sets (unique=True)")
    i, j = pair_arrays(i, j, sets.n)
    return _pairs_weighted(sets.offsets, sets.hashes, entry_weights(sets), i, j)


def estimate_weighted_jaccard(sig: np.ndarray, sizes: np.ndarray, i, j) -> np.ndarray:
    """ICWS estimate of J_w: the fraction of equal columns."""
    return estimate_jaccard(sig, i, j)


def all_pairs_weighted_above(sets: ShingleSets, threshold: float, *, active=None, max_pairs: int | None = None,
                             block: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (i < j) with J_w >= threshold and its J_w, sorted by (i, j).

    Needs one weight per shingle (the same in every document, as IDF gives):
    w(A & B) comes from a sparse product of row blocks with the whole
    document-shingle matrix; the pairs it keeps (with a 1e-9 margin) are
    recomputed by :func:`pairs_weighted_jaccard`, the value every other path
    reports. Raises :class:`calib.verification.jaccard.TooManyPairs` past ``max_pairs``. A block of
    ``block`` rows holds at most block x n products (default: about 4 million, at most 512 rows).
    """
    from scipy.sparse import csr_matrix

    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    n = sets.n
    act = np.ones(n, dtype=np.bool_) if active is None else row_mask(active, n)
    w = entry_weights(sets)
    _, col = np.unique(sets.hashes, return_inverse=True)
    rows = np.repeat(np.arange(n), np.diff(sets.offsets))
    keep = act[rows]
    X = csr_matrix((w[keep], (rows[keep], col[keep])), shape=(n, int(col.max()) + 1 if len(col) else 1))
    B = X.copy()
    B.data[:] = 1.0
    BT = B.T.tocsr()
    total = np.asarray(X.sum(axis=1)).ravel()
    block = block or max(1, min(512, 4_000_000 // max(n, 1)))
    out_i, out_j, found = [], [], 0
    for lo in range(0, n, block):
        P = (X[lo:lo + block] @ BT).tocoo()
        a, b, inter = P.row.astype(np.int64) + lo, P.col.astype(np.int64), P.data
        m = b > a
        a, b, inter = a[m], b[m], inter[m]
        union = total[a] + total[b] - inter
        m = inter >= (threshold - 1e-9) * union
        out_i.append(a[m]); out_j.append(b[m])
        found += int(m.sum())
        if max_pairs is not None and found > 2 * max_pairs + 65536:  # far past the budget before the recheck
            raise TooManyPairs(threshold, found, max_pairs)
    ii = np.concatenate(out_i) if out_i else np.empty(0, np.int64)
    jj = np.concatenate(out_j) if out_j else np.empty(0, np.int64)
    s = pairs_weighted_jaccard(sets, ii, jj)
    m = s >= threshold
    ii, jj, s = ii[m], jj[m], s[m]
    if max_pairs is not None and len(ii) > max_pairs:
        raise TooManyPairs(threshold, len(ii), max_pairs)
    o = np.argsort(ii * np.int64(n) + jj, kind="stable")
    return ii[o], jj[o], s[o]
