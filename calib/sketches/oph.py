"""One-permutation hashing with optimal densification (the ``oph`` scheme).

Shrivastava, "Optimal Densification for Fast and Accurate Minwise Hashing",
ICML 2017. One hash per shingle instead of ``num_perm``: O(n + k) per
document instead of the O(n k) of every classic k-permutation scheme.

With ``k = num_perm`` bins and a seeded bijection ``pi`` of the 32-bit
shingle hashes::

    y        = pi(h) = fmix32(a * fmix32(h) + b)      (mod 2^32, a odd)
    bin(y)   = floor(y * k / 2^32)                    (bins are intervals of y)
    sig[j]   = min { y : bin(y) = j }                 (bin j not empty)

An empty bin j copies the value of the first non-empty bin in a probe
sequence ``q_j(0), q_j(1), ...`` that depends on (seed, j, t) only, never on
the document (256 hashed probes, then j+1, j+2, ... cyclically, so it always
ends). For two documents A, B both follow the same sequence; they agree in
column j exactly when the first bin of the sequence that is non-empty in
A u B holds the minimum of A u B in that bin in both, i.e. with probability
J(A, B): the estimator (fraction of equal columns) is unbiased, and since
values of different bins are different numbers a copied value never agrees
by accident. Bins that copy the same source are correlated, so the variance
exceeds classic MinHash's J(1-J)/k only when many bins are empty (documents
with fewer shingles than k); with no empty bin it is the variance of
sampling without replacement, slightly below J(1-J)/k.

The columns are not prefix-stable (bins depend on k): a sweep computes one
matrix per hash count. A document with no shingle gets the all-0xFFFFFFFF
row, like the other schemes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from calib.sketches.hashing import fmix32

EMPTY = np.uint32(0xFFFFFFFF)
PROBES = 256  # hashed probes per empty bin before the cyclic fallback
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64(x: int) -> int:
    m = (1 << 64) - 1
    z = (x + 0x9E3779B97F4A7C15) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    return z ^ (z >> 31)


def parameters(seed: int) -> tuple[int, int, int]:
    """(a, b, probe_key) of the permutation and probe sequence drawn from ``seed``; a is odd."""
    base = (seed * 0x9E3779B97F4A7C15 + 0x6F70682D) & ((1 << 64) - 1)  # 'oph-': apart from the prefix scheme
    a = (_splitmix64(base) & 0xFFFFFFFF) | 1
    b = _splitmix64(base + 1) & 0xFFFFFFFF
    return a, b, _splitmix64(base + 2)


@njit(inline="always")
def _mix64(z):
    z = z + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(inline="always")
def _probe(key, j, t, k):
    z = _mix64(key ^ ((np.uint64(j) << np.uint64(32)) | np.uint64(t)))
    return np.int64(((z >> np.uint64(32)) * np.uint64(k)) >> np.uint64(32))


@njit(inline="always")
def permute(h, a, b):
    """pi(h) = fmix32(a * fmix32(h) + b) mod 2^32 (a, b uint32)."""
    return fmix32(np.uint32(np.uint32(a * fmix32(h)) + b))


@njit(inline="always")
def _row(hashes, a, b, key, row, filled, permuted):
    """The signature of one document's shingle hashes (a view: indices from 0
    let the loop below vectorize) into ``row``; ``permuted``: the hashes are pi(h) already."""
    k = len(row)
    if permuted:
        y = hashes
    else:
        # pi of every shingle first, in a loop of arithmetic alone (it vectorizes),
        # then the scatter of each value into its bin (a third less time than one loop)
        y = np.empty(len(hashes), dtype=np.uint32)
        for t in range(len(hashes)):
            y[t] = permute(hashes[t], a, b)
    row[:] = 0xFFFFFFFF
    for t in range(len(y)):
        v = y[t]
        j = np.int64((np.uint64(v) * np.uint64(k)) >> np.uint64(32))
        if v < row[j]:
            row[j] = v
    # a bin is filled when its minimum is below EMPTY, or (the last bin only) when it holds the value EMPTY
    m = 0
    for j in range(k):
        f = row[j] != 0xFFFFFFFF
        filled[j] = f
        m += f
    if not filled[k - 1]:
        for t in range(len(y)):
            if y[t] == 0xFFFFFFFF:
                filled[k - 1] = True
                m += 1
                break
    if m == 0 or m == k:
        return
    # densify: only originally filled bins are sources (filled[] is not updated)
    for j in range(k):
        if filled[j]:
            continue
        src = -1
        for t in range(PROBES):
            q = _probe(key, j, t, k)
            if filled[q]:
                src = q
                break
        if src < 0:
            q = j + 1
            while True:
                if q == k:
                    q = 0
                if filled[q]:
                    src = q
                    break
                q += 1
        row[j] = row[src]


@njit(cache=True, nogil=True)
def _signatures(offsets, hashes, num_perm, a, b, key, permuted):
    n = len(offsets) - 1
    out = np.empty((n, num_perm), dtype=np.uint32)
    filled = np.empty(num_perm, dtype=np.bool_)
    for d in range(n):
        _row(hashes[offsets[d]:offsets[d + 1]], a, b, key, out[d], filled, permuted)
    return out


def signatures(offsets: np.ndarray, hashes: np.ndarray, num_perm: int, seed: int) -> np.ndarray:
    """(n, num_perm) uint32 OPH signatures of CSR shingle hashes (repeats allowed)."""
    a, b, key = parameters(seed)
    return _signatures(offsets, hashes, int(num_perm), np.uint32(a), np.uint32(b), np.uint64(key), False)


def signatures_permuted(offsets: np.ndarray, values: np.ndarray, num_perm: int, seed: int) -> np.ndarray:
    """:func:`signatures` of hashes given as pi(h) under ``seed`` (``calib.sketches.shingles.chunk_sets``
    with ``permuted=parameters(seed)[:2]`` computes them in its hashing loop): the same signatures."""
    a, b, key = parameters(seed)
    return _signatures(offsets, values, int(num_perm), np.uint32(a), np.uint32(b), np.uint64(key), True)
