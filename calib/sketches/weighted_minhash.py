"""Weighted MinHash: IDF weights, exact weighted Jaccard and ICWS signatures.

Weights (``weighting = "idf"``). A shingle's weight is its smoothed inverse
document frequency

    w(s) = ln(1 + N / df(s))

N the documents of the table, df(s) the documents holding s (at least 1: a
shingle the table never saw weighs as a shingle of one document). Always > 0
(ln 2 for a shingle in every document), so no shingle drops out and a document
keeps its whole set. The table is the sample's own (default) or a corpus the
user names (:func:`document_frequencies`); exported, it is a file beside the
config (:meth:`DocumentFrequencies.save`), so that every engine weighs alike.

Weighted Jaccard (the sets A, B with weights w_A, w_B, zero outside the set):

    J_w(A, B) = sum_s min(w_A(s), w_B(s)) / sum_s max(w_A(s), w_B(s))

With one weight per shingle (IDF) that is w(A & B) / w(A | B): shingles common
to many documents (boilerplate) count little in both the shared and the total part.

Signatures: improved consistent weighted sampling (Ioffe 2010, ICWS), as
``datasketch.WeightedMinHashGenerator`` computes it. For hash function p and
each shingle s of weight w, with r, c ~ Gamma(2, 1) and beta ~ U(0, 1) drawn
per (p, s):

    t = floor(ln w / r + beta),  ln y = r (t - beta),  ln a = ln c - ln y - r

and the sample is the (s, t) of the shingle with the least ln a. Two
documents draw the same (s, t) with probability J_w, so the fraction of
equal columns estimates J_w and the LSH S-curve over J_w is the usual
1 - (1 - J_w^r)^b. datasketch draws (r, c, beta) from a dense (num_perm,
dim) table; here they come from a hash of (seed, p, s) (:func:`_variates`),
so the shingle space need not be enumerated. Given datasketch's tables
(:func:`icws_dense`) the kernel returns datasketch's (k, t) pairs bit for bit.

One integer per column for banding: the pair (s, t) of column p becomes
``splitmix64(((s << 32) | (t mod 2^32)) ^ salt_p) >> 32`` (uint32), salt_p a
hash of (seed, p). Equal pairs give equal integers (and the key is a
bijection of (s, t), so different pairs differ in 64 bits); after the
truncation to 32 bits different pairs collide with probability ~2^-32,
which adds at most that to each column's collision probability.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit, prange

from calib.base.validate import pair_arrays, row_mask
from calib.sketches.shingles import ShingleSets

from calib.sketches.represent import WEIGHTINGS  # noqa: F401 (declared with the field)
EMPTY = np.uint32(0xFFFFFFFF)
_MAGIC = b"CALIBDF1"
RULE = "w = ln(1 + N / max(df, 1))"


# -- weights --------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class DocumentFrequencies:
    """Document frequency of each shingle hash: ``hashes`` sorted uint32,
    ``df`` int64 (>= 1) aligned with them, over ``documents`` documents."""

    documents: int
    hashes: np.ndarray
    df: np.ndarray

    def weights(self, hashes: np.ndarray) -> np.ndarray:
        """IDF weight of each hash (float64): ln(1 + N / max(df, 1))."""
        hashes = np.asarray(hashes, dtype=np.uint32)
        pos = np.searchsorted(self.hashes, hashes)
        pos = np.minimum(pos, max(len(self.hashes) - 1, 0))
        found = (self.hashes[pos] == hashes) if len(self.hashes) else np.zeros(len(hashes), dtype=bool)
        df = np.where(found, self.df[pos] if len(self.df) else 1, 1)
        return np.log1p(self.documents / np.maximum(df, 1).astype(np.float64))

    def compact(self) -> "DocumentFrequencies":
        """The table without df = 1 entries (an unseen shingle weighs as df 1: same weights)."""
        keep = self.df >= 2
        return DocumentFrequencies(self.documents, self.hashes[keep], self.df[keep])

    def to_bytes(self) -> bytes:
        """``CALIBDF1``, N and the entry count (uint64 LE), then the hashes and the
        df values (uint32 LE): the same table gives the same bytes."""
        t = self.compact()
        return (_MAGIC + struct.pack("<QQ", t.documents, len(t.hashes)) + t.hashes.astype("<u4").tobytes()
                + np.minimum(t.df, 0xFFFFFFFF).astype("<u4").tobytes())

    def sha256(self) -> str:
        return hashlib.sha256(self.to_bytes()).hexdigest()

    def save(self, path) -> str:
        """Write the table atomically; returns its sha256."""
        from calib.base.atomic import write_bytes_atomic
        data = self.to_bytes()
        write_bytes_atomic(path, data)
        return hashlib.sha256(data).hexdigest()

    @classmethod
    def from_bytes(cls, data: bytes, where: str = "document-frequency table") -> "DocumentFrequencies":
        if len(data) < 24 or data[:8] != _MAGIC:
            raise ValueError(f"{where}: not a calib document-frequency table (no {_MAGIC.decode()} header)")
        n, m = struct.unpack("<QQ", data[8:24])
        if len(data) != 24 + 8 * m:
            raise ValueError(f"{where}: {len(data)} bytes, expected {24 + 8 * m} for {m} entries")
        hashes = np.frombuffer(data, dtype="<u4", count=m, offset=24).astype(np.uint32)
        df = np.frombuffer(data, dtype="<u4", count=m, offset=24 + 4 * m).astype(np.int64)
        if m and (np.any(np.diff(hashes.astype(np.int64)) <= 0) or df.min() < 1 or n < 1):
            raise ValueError(f"{where}: hashes not strictly increasing, or a df < 1, or N < 1")
        return cls(int(n), hashes, df)

    @classmethod
    def load(cls, path, sha256: str | None = None, data: bytes | None = None) -> "DocumentFrequencies":
        """Read a saved table (or its ``data``, read elsewhere); with ``sha256``, refuse a file whose hash differs."""
        data = Path(path).read_bytes() if data is None else data
        if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
            raise ValueError(f"{path}: sha256 {hashlib.sha256(data).hexdigest()} differs from the config "
                             f"document's {sha256} (the table was changed or replaced)")
        return cls.from_bytes(data, str(path))


def frequencies_from_sets(sets: ShingleSets) -> DocumentFrequencies:
    """Document frequencies of unique shingle sets (each document counts a shingle once)."""
    if not sets.unique:
        raise ValueError("document frequencies need sorted unique shingle sets (unique=True)")
    h, c = np.unique(sets.hashes, return_counts=True)
    return DocumentFrequencies(int(sets.n), h.astype(np.uint32), c.astype(np.int64))


def merge_frequencies(tables: list[DocumentFrequencies]) -> DocumentFrequencies:
    """One table over the union of the tables' documents (df and N added)."""
    h = np.concatenate([t.hashes for t in tables])
    d = np.concatenate([t.df for t in tables])
    u, inv = np.unique(h, return_inverse=True)
    return DocumentFrequencies(sum(t.documents for t in tables), u.astype(np.uint32),
                               np.bincount(inv, weights=d, minlength=len(u)).astype(np.int64))


def document_frequencies(texts, rep, *, batch: int = 20_000) -> DocumentFrequencies:
    """Document frequencies of the shingles of ``texts`` under ``rep``'s shingling,
    in batches (memory grows with the distinct shingles, not the corpus)."""
    from calib.sketches.shingles import shingle_hashes
    rep = rep.with_(weighting="none")
    tables = [frequencies_from_sets(shingle_hashes(list(texts[s:s + batch]), rep, unique=True))
              for s in range(0, len(texts), batch)]
    return merge_frequencies(tables) if tables else DocumentFrequencies(0, np.empty(0, np.uint32),
                                                                        np.empty(0, np.int64))


@dataclass(frozen=True, eq=False)
class WeightedSets(ShingleSets):
    """Shingle sets with one float64 weight per entry (``weights`` aligned with ``hashes``)."""

    weights: np.ndarray = None

    @classmethod
    def from_table(cls, sets: ShingleSets, table: DocumentFrequencies) -> "WeightedSets":
        return cls(sets.offsets, sets.hashes, sets.unique, table.weights(sets.hashes))


def weigh(sets: ShingleSets, rep, frequencies: DocumentFrequencies | None) -> ShingleSets:
    """The sets as ``rep`` sketches and verifies them: weighted by the table when
    ``rep.weighting`` is idf (which then needs one), unchanged otherwise."""
    if rep.weighting == "none":
        return sets
    if frequencies is None:
        raise ValueError(f"weighting {rep.weighting!r} needs a document-frequency table")
    return WeightedSets.from_table(sets, frequencies)


def entry_weights(sets: ShingleSets) -> np.ndarray:
    """The sets' weights, or ones (plain sets: weighted Jaccard is then Jaccard)."""
    w = getattr(sets, "weights", None)
    return np.ones(len(sets.hashes)) if w is None else w


# -- exact weighted Jaccard -------------------------------------------------------

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
    from calib.sketches.minhash import estimate_jaccard
    return estimate_jaccard(sig, i, j)


def all_pairs_weighted_above(sets: ShingleSets, threshold: float, *, active=None, max_pairs: int | None = None,
                             block: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (i < j) with J_w >= threshold and its J_w, sorted by (i, j).

    Needs one weight per shingle (the same in every document, as IDF gives):
    w(A & B) comes from a sparse product of row blocks with the whole
    document-shingle matrix; the pairs it keeps (with a 1e-9 margin) are
    recomputed by :func:`pairs_weighted_jaccard`, the value every other path
    reports. Raises :class:`calib.jaccard.TooManyPairs` past ``max_pairs``. A block of
    ``block`` rows holds at most block x n products (default: about 4 million, at most 512 rows).
    """
    from scipy.sparse import csr_matrix

    from calib.verification.jaccard import TooManyPairs
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


# -- ICWS -----------------------------------------------------------------------------

@njit(inline="always")
def _splitmix64(x):
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(inline="always")
def _unit(bits):
    """A 32-bit integer as a uniform in (0, 1)."""
    return (np.float64(bits & np.uint64(0xFFFFFFFF)) + 0.5) * (1.0 / 4294967296.0)


@njit(inline="always")
def _variates(base, p, x):
    """(r, ln c, beta) of hash function p and shingle x: r, c ~ Gamma(2, 1), beta ~ U(0, 1)."""
    z1 = _splitmix64(base ^ ((np.uint64(x) << np.uint64(32)) | np.uint64(p)))
    z2 = _splitmix64(z1)
    z3 = _splitmix64(z2)
    r = -np.log(_unit(z1) * _unit(z1 >> np.uint64(32)))
    c = -np.log(_unit(z2) * _unit(z2 >> np.uint64(32)))
    return r, np.log(c), _unit(z3)


@njit(inline="always")
def _icws_step(lw, r, ln_c, beta):
    """Ioffe's (ln a, t) of one element of log-weight ``lw`` (datasketch's operation order)."""
    t = np.floor((lw / r) + beta)
    ln_y = (t - beta) * r
    return ln_c - ln_y - r, t


@njit(inline="always")
def pack(x, t, salt):
    """One uint32 for the ICWS pair (shingle x, t) of the column whose salt is ``salt``."""
    key = (np.uint64(x) << np.uint64(32)) | (np.uint64(np.int64(t) & np.int64(0xFFFFFFFF)))
    return np.uint32(_splitmix64(key ^ salt) >> np.uint64(32))


@njit(cache=True, nogil=True)
def _icws(offsets, hashes, logw, num_perm, base):
    n = len(offsets) - 1
    out = np.full((n, num_perm), np.uint32(0xFFFFFFFF), dtype=np.uint32)
    for d in range(n):
        s, e = offsets[d], offsets[d + 1]
        if s == e:
            continue
        for p in range(num_perm):
            best = np.inf
            bx = np.uint32(0)
            bt = 0.0
            for q in range(s, e):
                r, ln_c, beta = _variates(base, p, hashes[q])
                ln_a, t = _icws_step(logw[q], r, ln_c, beta)
                if ln_a < best:
                    best, bx, bt = ln_a, hashes[q], t
            out[d, p] = pack(bx, bt, _splitmix64(base + np.uint64(p)))
    return out


def _seed_base(seed: int) -> np.uint64:
    with np.errstate(over="ignore"):
        return np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(0x243F6A8885A308D3)


def sketch(offsets, hashes, num_perm: int, seed: int, weights=None) -> np.ndarray:
    """(n, num_perm) uint32 ICWS signatures of CSR shingle hashes (repeats allowed: a
    repeated shingle draws the same variates, so it cannot change the sample).
    ``weights`` (float64 per entry, > 0): None for unit weights (the estimate is then plain J)."""
    logw = np.zeros(len(hashes)) if weights is None else np.log(np.asarray(weights, dtype=np.float64))
    if weights is not None and len(logw) and not np.all(np.isfinite(logw)):
        raise ValueError("ICWS weights must be finite and > 0")
    return _icws(np.asarray(offsets, np.int64), np.asarray(hashes, np.uint32), logw, int(num_perm),
                 _seed_base(int(seed)))


@njit(cache=True)
def _icws_dense(offsets, idx, logw, rs, ln_cs, betas):
    n = len(offsets) - 1
    k = rs.shape[0]
    ks = np.full((n, k), -1, dtype=np.int64)
    ts = np.zeros((n, k), dtype=np.int64)
    for d in range(n):
        for p in range(k):
            best = np.inf
            for q in range(offsets[d], offsets[d + 1]):
                c = idx[q]
                ln_a, t = _icws_step(logw[q], rs[p, c], ln_cs[p, c], betas[p, c])
                if ln_a < best:
                    best = ln_a
                    ks[d, p] = c
                    ts[d, p] = np.int64(t)
    return ks, ts


def icws_dense(offsets, idx, weights, rs, ln_cs, betas) -> tuple[np.ndarray, np.ndarray]:
    """ICWS with datasketch's dense variate tables (``WeightedMinHashGenerator``'s
    ``rs``, ``ln_cs``, ``betas``, float32 (num_perm, dim)): each document's
    (k, t) per hash function, k the dimension index. ``idx`` ascending per
    document, ``weights`` > 0. The arithmetic is datasketch's, in float32 and in
    its order (the log of the weights by numpy, as datasketch takes it), and
    ties go to the lowest index as ``np.nanargmin``'s do."""
    logw = np.log(np.asarray(weights, dtype=np.float32))
    return _icws_dense(np.asarray(offsets, np.int64), np.asarray(idx, np.int64), logw, rs, ln_cs, betas)
