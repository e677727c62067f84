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
        # a store every time instead of a branch: a bin's minimum changes about ln(n/k) times,
        # at random places, so the branch is mispredicted about as often as it is taken
        v = y[t]
        j = np.int64((np.uint64(v) * np.uint64(k)) >> np.uint64(32))
        r = row[j]
        row[j] = v if v < r else r
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
def _signatures(offsets, hashes, a, b, key, permuted, out):
    """Rows of ``out`` (n, num_perm), written here: their first touch too runs without the GIL."""
    filled = np.empty(out.shape[1], dtype=np.bool_)
    for d in range(len(offsets) - 1):
        _row(hashes[offsets[d]:offsets[d + 1]], a, b, key, out[d], filled, permuted)
    return out


def signatures(offsets: np.ndarray, hashes: np.ndarray, num_perm: int, seed: int) -> np.ndarray:
    """(n, num_perm) uint32 OPH signatures of CSR shingle hashes (repeats allowed)."""
    a, b, key = parameters(seed)
    out = np.empty((len(offsets) - 1, int(num_perm)), dtype=np.uint32)
    return _signatures(offsets, hashes, np.uint32(a), np.uint32(b), np.uint64(key), False, out)


def signatures_permuted(offsets: np.ndarray, values: np.ndarray, num_perm: int, seed: int,
                        out: np.ndarray | None = None) -> np.ndarray:
    """:func:`signatures` of hashes given as pi(h) under ``seed`` (``calib.sketches.shingles.chunk_sets``
    with ``permuted=parameters(seed)[:2]`` computes them in its hashing loop): the same signatures,
    written into ``out`` (C-contiguous uint32 rows, e.g. a slice of a larger matrix) when given."""
    a, b, key = parameters(seed)
    if out is None:
        out = np.empty((len(offsets) - 1, int(num_perm)), dtype=np.uint32)
    elif out.shape != (len(offsets) - 1, int(num_perm)) or out.dtype != np.uint32 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous uint32 array of shape {(len(offsets) - 1, int(num_perm))}")
    return _signatures(offsets, values, np.uint32(a), np.uint32(b), np.uint64(key), True, out)
