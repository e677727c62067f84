"""LSH banding: b bands of r rows over the first b*r signature columns.

Two documents are candidates when all r values of at least one band agree.
For Jaccard similarity s the probability of that is the S-curve::

    P(s) = 1 - (1 - s^r)^b,     steepest near  t ~ (1/b)^(1/r).

Band keys are 64-bit hashes of a band's r values; candidate pairs come from
sorting each band's keys and pairing documents in runs of equal keys (a pair
is emitted only by the first band it collides in, so no global dedup pass
is needed). Pairs are returned as int64 arrays (i, j) with i < j, sorted.
"""

from __future__ import annotations

import re

import numpy as np
from numba import njit, prange
from scipy.integrate import quad

from calib.base.validate import pair_arrays, row_mask
from calib.candidates.pairs import pair_codes


class TooManyCandidates(RuntimeError):
    """The (b, r) split collides more distinct pairs than allowed.

    ``distinct`` is the number of distinct pairs counted before stopping (at
    least ``limit + 1``); ``upper_bound`` is the sum over bands of colliding
    pairs (a pair colliding in k bands counts k times), known before any
    distinct pair is counted.
    """

    def __init__(self, b: int, r: int, upper_bound: int, limit: int, distinct: int | None = None):
        self.b, self.r, self.upper_bound, self.limit = b, r, upper_bound, limit
        self.distinct = upper_bound if distinct is None else distinct
        super().__init__(f"(b={b}, r={r}) collides at least {self.distinct:,} distinct pairs, more than "
                         f"max_pairs={limit:,}: a split this loose returns most of the corpus")


def check_split(b: int, r: int, num_perm: int) -> None:
    for name, v in (("b", b), ("r", r)):
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    if b * r > num_perm:
        raise ValueError(f"b*r = {b}*{r} = {b * r} exceeds num_perm = {num_perm}")


def max_rows(b: int, num_perm: int) -> int:
    """The largest r with b*r <= num_perm: each of the b bands hashes r of the
    signature's num_perm values, and no value serves two bands."""
    if not isinstance(b, (int, np.integer)) or not 1 <= b <= num_perm:
        raise ValueError(f"b must be an integer in [1, num_perm={num_perm}], got {b!r}")
    return int(num_perm) // int(b)


def splits(num_perm: int, *, exact: bool = True) -> list[tuple[int, int]]:
    """All (b, r) with b*r == num_perm (exact) or b*r <= num_perm."""
    out = []
    for r in range(1, num_perm + 1):
        if exact:
            if num_perm % r == 0:
                out.append((num_perm // r, r))
        else:
            out.extend((b, r) for b in range(1, num_perm // r + 1))
    return out


_SPLIT = re.compile(r"(\d+)\s*[x×*]\s*(\d+)")


def parse_splits(text: str) -> tuple[tuple[int, int], ...] | None:
    """'16x8, 32x4' -> ((16, 8), (32, 4)): b (bands) first, r (rows) second;
    'all' -> None (every split with b*r == num_perm). Separators: ',', ';' or space."""
    t = str(text or "").strip()
    if t.lower() == "all":
        return None
    found = _SPLIT.findall(t)
    if not found or re.search(r"[^\s,;]", _SPLIT.sub("", t)):
        raise ValueError(f"splits must be 'all' or like '16x8, 32x4' (bands x rows), got {text!r}")
    out = tuple((int(b), int(r)) for b, r in found)
    bad = [f"{b}x{r}" for b, r in out if b < 1 or r < 1]
    if bad:
        raise ValueError(f"splits need b >= 1 and r >= 1, got {', '.join(bad)}")
    return out


# -- theory -------------------------------------------------------------------

def s_curve(s, b: int, r: int) -> np.ndarray:
    """P(candidate | Jaccard s) = 1 - (1 - s^r)^b."""
    s = np.asarray(s, dtype=np.float64)
    return 1.0 - (1.0 - s ** r) ** b


def threshold_approx(b: int, r: int) -> float:
    """The classic approximation of the S-curve's threshold, (1/b)^(1/r)."""
    return (1.0 / b) ** (1.0 / r)


def s_at_probability(b: int, r: int, p: float = 0.5) -> float:
    """The similarity where the S-curve reaches probability p (exact inverse)."""
    return float((1.0 - (1.0 - p) ** (1.0 / b)) ** (1.0 / r))


def false_positive_area(threshold: float, b: int, r: int) -> float:
    """Integral of P(s) over [0, t]: chance mass of candidates below t."""
    return quad(lambda s: 1 - (1 - s ** r) ** b, 0.0, threshold)[0]


def false_negative_area(threshold: float, b: int, r: int) -> float:
    """Integral of 1 - P(s) over [t, 1]: chance mass of misses above t."""
    return quad(lambda s: (1 - s ** r) ** b, threshold, 1.0)[0]


def optimal_split(threshold: float, num_perm: int, weights: tuple[float, float] = (0.5, 0.5)) -> tuple[int, int]:
    """(b, r) minimizing w_fp*FP-area + w_fn*FN-area over b*r <= num_perm.

    The same grid search and the same tie-break (first minimum, b outer
    loop) as ``datasketch.lsh._optimal_param``, so it returns what
    ``MinHashLSH(threshold, num_perm, weights)`` would use.
    """
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold}")
    w_fp, w_fn = weights
    best, opt = float("inf"), (0, 0)
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            err = w_fp * false_positive_area(threshold, b, r) + w_fn * false_negative_area(threshold, b, r)
            if err < best:
                best, opt = err, (b, r)
    return opt


# -- banding ------------------------------------------------------------------

@njit(cache=True, parallel=True)
def _band_keys(sig, b, r):
    n = sig.shape[0]
    keys = np.empty((b, n), dtype=np.uint64)
    for d in prange(n):
        for band in range(b):
            h = np.uint64(0x9E3779B97F4A7C15) ^ np.uint64(band)
            for t in range(band * r, band * r + r):
                h ^= np.uint64(sig[d, t])
                h *= np.uint64(0x100000001B3)
                h ^= h >> np.uint64(29)
            h ^= h >> np.uint64(33)
            h *= np.uint64(0xFF51AFD7ED558CCD)
            h ^= h >> np.uint64(33)
            keys[band, d] = h
    return keys


def band_keys(sig: np.ndarray, b: int, r: int) -> np.ndarray:
    """(b, n) uint64: a hash of each document's r values in each band."""
    check_split(b, r, sig.shape[1])
    return _band_keys(np.ascontiguousarray(sig), b, r)


@njit(inline="always")
def _run_end(sk, band, s):
    """End of the run of equal keys starting at column s of the sorted band."""
    e = s + 1
    while e < sk.shape[1] and sk[band, e] == sk[band, s]:
        e += 1
    return e


@njit(cache=True, parallel=True)
def _count_pairs(sk, order, active):
    """Per band: sum over runs of equal keys of C(active members, 2)."""
    b, n = sk.shape
    counts = np.zeros(b, dtype=np.int64)
    for band in prange(b):
        c = 0
        s = 0
        while s < n:
            e = _run_end(sk, band, s)
            if e - s > 1:
                m = 0
                for t in range(s, e):
                    if active[order[band, t]]:
                        m += 1
                c += m * (m - 1) // 2
            s = e
        counts[band] = c
    return counts


@njit(cache=True)
def _is_first(keys_t, lo, hi, band):
    """Does the pair (lo, hi) collide in no band before ``band``?"""
    for prev in range(band):
        if keys_t[lo, prev] == keys_t[hi, prev]:
            return False
    return True


@njit(cache=True, parallel=True)
def _first_pairs(sk, order, active, keys_t, bands, emit, offsets, out_i, out_j):
    """Per band of ``bands``: the pairs whose first colliding band it is
    (checked on the row-major copy ``keys_t`` (n, b)); summed over all bands,
    the distinct candidate pairs, so no dedup pass is needed. Counts them, and
    with ``emit`` writes them (lo, hi) from ``offsets[band]`` on."""
    n = sk.shape[1]
    counts = np.zeros(len(bands), dtype=np.int64)
    for t in prange(len(bands)):
        band = bands[t]
        o = offsets[band] if emit else 0
        c = 0
        s = 0
        while s < n:
            e = _run_end(sk, band, s)
            for x in range(s, e):
                p = order[band, x]
                if not active[p]:
                    continue
                for y in range(x + 1, e):
                    q = order[band, y]
                    if active[q] and _is_first(keys_t, min(p, q), max(p, q), band):
                        if emit:
                            out_i[o + c] = min(p, q)
                            out_j[o + c] = max(p, q)
                        c += 1
            s = e
        counts[t] = c
    return counts


def _first_counts(sk, order, active, keys_t, bands):
    empty = np.empty(0, np.int64)
    return _first_pairs(sk, order, active, keys_t, bands, False, empty, empty, empty)


def _distinct_counts(sk: np.ndarray, order: np.ndarray, active: np.ndarray, keys_t: np.ndarray,
                    upper: int, max_pairs: int | None) -> np.ndarray | int:
    """Distinct candidate pairs per band (counted at their first colliding band).

    When the per-band sum ``upper`` is within ``max_pairs`` every band is
    counted at once (the work is bounded by ``upper``); otherwise band by
    band, stopping as soon as the distinct total exceeds ``max_pairs``, and
    that partial total (an int) is returned instead of the per-band counts.
    """
    b = sk.shape[0]
    if max_pairs is None or upper <= max_pairs:
        return _first_counts(sk, order, active, keys_t, np.arange(b, dtype=np.int64))
    counts = np.zeros(b, dtype=np.int64)
    for band in range(b):
        counts[band] = _first_counts(sk, order, active, keys_t, np.array([band], dtype=np.int64))[0]
        if counts[:band + 1].sum() > max_pairs:
            return int(counts[:band + 1].sum())
    return counts


def candidate_pairs(sig: np.ndarray, b: int, r: int, *, active: np.ndarray | None = None,
                    keys: np.ndarray | None = None, max_pairs: int | None = 50_000_000
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (i < j, sorted) colliding in at least one of the b bands.

    ``active`` (bool[n]) masks documents out of banding: documents with no
    shingle must be masked, since their all-max signatures would all collide.
    Raises :class:`TooManyCandidates` when there are more than ``max_pairs``
    distinct candidate pairs, counted before any pair is materialized (so
    memory stays within 16 bytes x ``max_pairs`` plus the band arrays).
    """
    n = sig.shape[0]
    if keys is None:
        keys = band_keys(sig, b, r)
    act = np.ones(n, dtype=np.bool_) if active is None else row_mask(active, n)
    if keys.shape != (b, n):
        raise ValueError(f"keys must have shape (b, n) = ({b}, {n}), got {keys.shape}")
    if max_pairs is not None and max_pairs < 0:
        raise ValueError(f"max_pairs must be >= 0 or None, got {max_pairs}")
    order = np.argsort(keys, axis=1)
    sk = np.take_along_axis(keys, order, axis=1)
    upper = int(_count_pairs(sk, order, act).sum())
    keys_t = np.ascontiguousarray(keys.T)
    del keys
    counts = _distinct_counts(sk, order, act, keys_t, upper, max_pairs)
    if isinstance(counts, int):
        raise TooManyCandidates(b, r, upper, max_pairs, counts)
    total = int(counts.sum())
    if max_pairs is not None and total > max_pairs:
        raise TooManyCandidates(b, r, upper, max_pairs, total)
    offsets = np.zeros(b + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    ii = np.empty(offsets[b], dtype=np.int64)
    jj = np.empty(offsets[b], dtype=np.int64)
    _first_pairs(sk, order, act, keys_t, np.arange(b, dtype=np.int64), True, offsets, ii, jj)
    del sk, order, keys_t
    srt = np.argsort(pair_codes(ii, jj, n), kind="stable")
    return ii[srt], jj[srt]


@njit(cache=True, parallel=True)
def _band_hits(sig, i, j, b, r, all_bands):
    """Per pair: colliding bands counted (all_bands) or up to the first one."""
    count = np.zeros(len(i), dtype=np.int32)
    first = np.full(len(i), -1, dtype=np.int32)
    for t in prange(len(i)):
        x, y = i[t], j[t]
        for band in range(b):
            same = True
            for c in range(band * r, band * r + r):
                if sig[x, c] != sig[y, c]:
                    same = False
                    break
            if same:
                if count[t] == 0:
                    first[t] = band
                count[t] += 1
                if not all_bands:
                    break
    return count, first


def band_hits(sig: np.ndarray, i: np.ndarray, j: np.ndarray, b: int, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Per pair: in how many of the b bands documents i and j collide (int32),
    and the first band they collide in (-1 if none). ``count > 0`` is
    :func:`collides`; the counts feed the band jackknife (:mod:`calib.estimates.jackknife`)."""
    check_split(b, r, sig.shape[1])
    i, j = pair_arrays(i, j, sig.shape[0])
    return _band_hits(sig, i, j, b, r, True)


def collides(sig: np.ndarray, i: np.ndarray, j: np.ndarray, b: int, r: int) -> np.ndarray:
    """bool per pair: do documents i and j agree on all r rows of some band?

    The direct test, used for labeled and reference pairs without
    materializing every candidate.
    """
    check_split(b, r, sig.shape[1])
    i, j = pair_arrays(i, j, sig.shape[0])
    return _band_hits(sig, i, j, b, r, False)[0] > 0
