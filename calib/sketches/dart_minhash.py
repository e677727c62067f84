"""Weighted MinHash by dart throwing (DartMinHash, Christiani 2020): O(n + k log k) per document.

The process. Give each shingle s the strip [0, inf) of a weight axis and above
it a rank axis [0, inf). Darts fall on every (s, weight, rank) as a Poisson
process of rate k per unit area, each labelled with a column j uniform in
0..k-1, so the darts of one column form a Poisson process of rate 1 per unit
area, independent of the other columns. The darts are a hash of (seed, s):
fixed before any document is seen. A document A with weights w_A covers the
region R_A = {(s, x, r): x < w_A(s)}, and its value in column j is the dart of
column j with the least rank in R_A.

The estimator. For documents A and B, the least-rank dart of column j in
R_A | R_B lies in R_A & R_B with probability

    area(R_A & R_B) / area(R_A | R_B) = sum_s min(w_A, w_B) / sum_s max(w_A, w_B) = J_w,

and is then the least in both regions (equal columns); otherwise it lies in
one region only and the columns hold different darts. So a column collides
with probability exactly J_w (plus the 2^-32 chance that two darts share
their 32-bit value), the columns are independent, and the fraction of equal
columns is an unbiased estimate of J_w with the binomial variance
J_w (1 - J_w) / k: the guarantees of ICWS (:mod:`calib.sketches.weighted_minhash`).

The work. Only darts of rank below R = (ln k + 2) / W_A (W_A the sum of A's
weights) are drawn: about k (ln k + 2) of them in R_A, so each column has one
with probability about exp(-e^-2) = 0.87. When a column has none, R doubles
and the document is done again; the darts below the old R are among those
below the new, so the result is the one a larger R would give from the start.
A shingle's weight axis is cut into bands, band 0 = [0, 1) and band
b = [2^(b-1), 2^b): a band's darts, in increasing rank, are a chain of hashes
of (seed, s, band) (exponential rank gaps of rate k x width, a uniform place
across the band, a uniform column), so a band with no dart below R costs one
hash and one comparison with exp(-k width R), and the part of a top band
above the weight is drawn and rejected (at most as many darts as are kept).
Christiani's grid of dyadic cells in both axes adapts to weights of any
scale; these bands suit weights of about 1 or more (IDF weights are >= ln 2):
smaller weights stay exact but draw about 1/w darts per dart kept
(below :data:`MIN_WEIGHT` they are refused: scale all weights up, J_w is scale-free).

Repeated shingles (the CSR input allows them) draw the same darts: at one
weight they change nothing; at different weights the largest counts (the
union of their strips). Not prefix-stable: a dart's column depends on k.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from calib.sketches.weighted_minhash import _seed_base, _slot, _splitmix64

EMPTY = np.uint32(0xFFFFFFFF)
# Below this weight a document of such weights would draw about 1/w darts per dart kept (band 0
# is [0, 1)): refused rather than left to run for hours.
MIN_WEIGHT = 1e-3
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(inline="always")
def _open_unit(z):
    """The top 53 bits of z as a uniform in (0, 1] (never 0: its log is finite)."""
    return (np.float64(z >> np.uint64(11)) + 1.0) * (1.0 / 9007199254740992.0)


@njit(cache=True, nogil=True)
def _unique_max(hashes, weights, s, e, keys, wts):
    """The distinct hashes of entries s..e into ``keys`` (first-seen order), each with
    its largest weight in ``wts``; returns their count. A small open-addressing set:
    repeats are a third or more of char shingles in prose, and each would draw its darts again."""
    size = 16
    while size < 2 * (e - s):
        size *= 2
    slot_of = np.full(size, -1, dtype=np.int64)
    mask = size - 1
    m = 0
    for q in range(s, e):
        x = hashes[q]
        slot = _slot(x, mask)
        while slot_of[slot] >= 0 and keys[slot_of[slot]] != x:
            slot = (slot + 1) & mask
        if slot_of[slot] < 0:
            slot_of[slot] = m
            keys[m] = x
            wts[m] = weights[q]
            m += 1
        else:
            wts[slot_of[slot]] = max(wts[slot_of[slot]], weights[q])
    return m


@njit(cache=True, nogil=True)
def _darts(offsets, hashes, weights, num_perm, base):
    n = len(offsets) - 1
    k = num_perm
    kf = np.float64(k)
    out = np.full((n, k), np.uint32(0xFFFFFFFF), dtype=np.uint32)
    best = np.empty(k, dtype=np.float64)
    value = np.empty(k, dtype=np.uint32)
    gate = np.empty(1100, dtype=np.float64)  # exp(-k width_b R) per band (2^1024 overflows a double)
    widest = 0
    for d in range(n):
        widest = max(widest, offsets[d + 1] - offsets[d])
    keys = np.empty(widest, dtype=np.uint32)
    wts = np.empty(widest, dtype=np.float64)
    lead = np.log(kf) + 2.0
    for d in range(n):
        if offsets[d] == offsets[d + 1]:
            continue
        m = _unique_max(hashes, weights, offsets[d], offsets[d + 1], keys, wts)
        total = 0.0
        top = 0.0
        for q in range(m):
            total += wts[q]
            top = max(top, wts[q])
        bands = 1
        edge = 1.0
        while edge < top:
            edge *= 2.0
            bands += 1
        limit = lead / total
        while True:
            width = 1.0
            for b in range(bands):
                gate[b] = np.exp(-kf * width * limit)
                if b > 0:
                    width *= 2.0
            best[:] = np.inf
            filled = 0
            for q in range(m):
                x = wts[q]
                h = _splitmix64(base ^ np.uint64(keys[q]))
                lo = 0.0
                width = 1.0
                b = 0
                while lo < x:
                    z = _splitmix64(h + np.uint64(b) * _GOLDEN) if b > 0 else h
                    u = _open_unit(z)
                    if u > gate[b]:  # the band's first dart, rank -ln(u)/rate, lies below the limit
                        rate = kf * width
                        rank = -np.log(u) / rate
                        while rank < limit:
                            # the chain never depends on x: a dart is the same whatever the weight
                            z = _splitmix64(z)
                            if lo + width * _open_unit(z) <= x:
                                c = _splitmix64(z ^ _GOLDEN)
                                j = np.int64(((c & np.uint64(0xFFFFFFFF)) * np.uint64(k)) >> np.uint64(32))
                                if rank < best[j]:
                                    if best[j] == np.inf:
                                        filled += 1
                                    best[j] = rank
                                    value[j] = np.uint32(c >> np.uint64(32))
                            z = _splitmix64(z)
                            rank += -np.log(_open_unit(z)) / rate
                    lo += width
                    width = lo
                    b += 1
            if filled == k:
                break
            limit *= 2.0
        out[d, :] = value
    return out


def sketch(offsets, hashes, num_perm: int, seed: int, weights=None) -> np.ndarray:
    """(n, num_perm) uint32 dart-throwing signatures of CSR shingle hashes.
    ``weights`` (float64 per entry, finite and > 0): None for unit weights
    (the estimate is then plain J)."""
    w = np.ones(len(hashes)) if weights is None else np.ascontiguousarray(weights, dtype=np.float64)
    if len(w) and not (np.all(np.isfinite(w)) and w.min() > 0):
        raise ValueError("dart weights must be finite and > 0")
    if len(w) and w.min() < MIN_WEIGHT:
        raise ValueError(f"dart weights below {MIN_WEIGHT:g} (got {w.min():g}) would draw about 1/w darts per "
                         "dart kept: multiply every weight by one constant (J_w does not change) or use icws")
    return _darts(np.asarray(offsets, np.int64), np.asarray(hashes, np.uint32), w, int(num_perm),
                  _seed_base(int(seed)))
