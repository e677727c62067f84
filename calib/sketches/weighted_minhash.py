"""Weighted MinHash: IDF weights and ICWS signatures.

Weights (``weighting = "idf"``). A shingle's weight is its smoothed inverse
document frequency

    w(s) = ln(1 + N / df(s))

N the documents of the table, df(s) the documents holding s (at least 1: a
shingle the table never saw weighs as a shingle of one document). Always > 0
(ln 2 for a shingle in every document), so no shingle drops out and a document
keeps its whole set. The table is the sample's own (default) or a corpus the
user names (:func:`document_frequencies`); exported, it is a file beside the
config (:meth:`DocumentFrequencies.save`), so that every engine weighs alike.

Signatures estimate the weighted Jaccard J_w (:mod:`calib.verification.weighted_jaccard`).

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
from numba import njit

from calib.sketches.shingles import ShingleSets

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
        if data is None:  # the one input check: a regular file (not /dev/zero), within a share of memory
            from calib.base.inputs import InputError, memory_share_bound, read_regular
            try:
                data = read_regular(path, max_bytes=memory_share_bound(), what="a document-frequency table",
                                    name=str(path))
            except InputError as exc:
                if exc.detail == "file not found":
                    raise FileNotFoundError(str(path)) from None
                raise
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
