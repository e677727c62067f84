"""Shingling: texts -> hashed shingle sets for a whole sample at once.

The result is CSR-like: ``offsets`` (int64[n+1]) and ``hashes`` (uint32),
document d owning ``hashes[offsets[d]:offsets[d+1]]``. Texts are normalized
and encoded to one UTF-8 byte buffer by :mod:`calib.sketches.encode` (compiled for
ASCII text), and the compiled kernels enumerate shingle byte spans and hash
them: no Python object per shingle. The work runs in chunks of documents over
threads (:mod:`calib.sketches.chunks`). Rules (short documents, empty ones) are stated in
:mod:`calib.sketches.represent`.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

import numpy as np
from numba import njit

from calib.sketches import chunks
from calib.sketches.char_hashes import _is_ascii, _permute_all, _xxh32_chars
from calib.sketches.hashing import murmur3_32, xxh32
from calib.sketches.encode import compact, encode
from calib.sketches.represent import Representation

_HASH_CODES = {"xxhash": 0, "mmh3": 1, "sha1": 2}


@dataclass(frozen=True, eq=False)
class ShingleSets:
    """Hashed shingles of n documents, CSR layout.

    ``unique`` tells whether each document's hashes are sorted and distinct
    (a set), which exact Jaccard requires; signatures accept either.
    """

    offsets: np.ndarray  # int64[n + 1]
    hashes: np.ndarray   # uint32[offsets[-1]]
    unique: bool

    @property
    def n(self) -> int:
        return len(self.offsets) - 1

    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def of(self, d: int) -> np.ndarray:
        return self.hashes[self.offsets[d]:self.offsets[d + 1]]


@njit(inline="always")
def _walk_words(buf, s, e, starts, ends, fill):
    """Number of words (runs of non-space bytes) in buf[s:e]; with ``fill``
    also each word's start and end."""
    m = 0
    p = s
    while p < e:
        while p < e and buf[p] == 32:
            p += 1
        if p >= e:
            break
        if fill:
            starts[m] = p
        while p < e and buf[p] != 32:
            p += 1
        if fill:
            ends[m] = p
        m += 1
    return m


@njit(cache=True)
def _unit_starts(buf, s, e, word):
    """Byte offsets where each unit starts, plus one past the last unit's end.

    char: a unit is a code point (UTF-8 lead byte). word: a unit is a run of
    non-space bytes (text already joined by single spaces); for words the
    returned ``ends`` give each token's end. Units are counted first so the
    arrays hold m + 1 entries, not one per byte (a 50 MB document would
    otherwise take 800 MB here).
    """
    m = 0
    if word:
        none = np.empty(0, dtype=np.int64)
        m = _walk_words(buf, s, e, none, none, False)
        starts = np.empty(m + 1, dtype=np.int64)
        ends = np.empty(m + 1, dtype=np.int64)
        _walk_words(buf, s, e, starts, ends, True)
    else:
        for p in range(s, e):
            if (buf[p] & 0xC0) != 0x80:
                m += 1
        starts = np.empty(m + 1, dtype=np.int64)
        u = 0
        for p in range(s, e):
            if (buf[p] & 0xC0) != 0x80:
                starts[u] = p
                u += 1
        starts[m] = e
        ends = starts[1:]  # a unit ends where the next one starts
    return starts, ends, m


@njit(cache=True)
def _n_shingles(m, k):
    if m == 0:
        return 0
    if m < k:
        return 1
    return m - k + 1


@njit(cache=True, nogil=True)
def _shingle_offsets(buf, doc_off, k, word):
    """CSR offsets of the documents' shingles: out[d + 1] - out[d] shingles in document d."""
    n = len(doc_off) - 1
    out = np.zeros(n + 1, dtype=np.int64)
    for d in range(n):
        out[d + 1] = out[d] + _doc_shingles(buf[doc_off[d]:doc_off[d + 1]], k, word)
    return out


@njit(cache=True, nogil=True)
def _spans(buf, doc_off, out_off, k, word):
    """Byte span (start, end) of every shingle, in CSR order."""
    n = len(doc_off) - 1
    total = out_off[n]
    span_s = np.empty(total, dtype=np.int64)
    span_e = np.empty(total, dtype=np.int64)
    for d in range(n):
        starts, ends, m = _unit_starts(buf, doc_off[d], doc_off[d + 1], word)
        o = out_off[d]
        c = out_off[d + 1] - o
        for t in range(c):
            last = min(t + k, m) - 1
            span_s[o + t] = starts[t]
            span_e[o + t] = ends[last]
    return span_s, span_e


@njit(nogil=True)
def _hash_doc(text, k, word, code, perm, a, b, dst):
    """The hashes of one document's shingles (``len(dst)`` of them) into ``dst``;
    with ``perm`` the oph scheme's pi(h) instead (:func:`calib.sketches.oph.permute`)."""
    if code == 0 and not word:
        _xxh32_chars(text, k, dst, perm, a, b)
        return
    if not word and _is_ascii(text):
        # one unit per byte: shingle t is text[t : t + k] (the whole text when shorter)
        for t in range(len(dst)):
            dst[t] = murmur3_32(text, t, min(t + k, len(text)))
    else:
        starts, ends, m = _unit_starts(text, 0, len(text), word)
        for t in range(len(dst)):
            last = min(t + k, m) - 1
            if code == 0:
                dst[t] = xxh32(text, starts[t], ends[last])
            else:
                dst[t] = murmur3_32(text, starts[t], ends[last])
    if perm:
        _permute_all(dst, a, b)


@njit(inline="always")
def _doc_shingles(text, k, word):
    """How many shingles one normalized document has."""
    if not word:
        m = 0
        for p in range(len(text)):  # code points: the bytes that are not UTF-8 continuation bytes
            m += (text[p] & 0xC0) != 0x80
        return _n_shingles(m, k)
    none = np.empty(0, dtype=np.int64)
    return _n_shingles(_walk_words(text, 0, len(text), none, none, False), k)


@njit(cache=True, nogil=True)
def _hash_spans(buf, doc_off, out_off, k, word, code, perm, a, b):
    """Every shingle's hash in CSR order; with ``perm`` the oph scheme's pi(h) instead
    (:func:`calib.sketches.oph.permute`)."""
    n = len(doc_off) - 1
    out = np.empty(out_off[n], dtype=np.uint32)
    for d in range(n):
        _hash_doc(buf[doc_off[d]:doc_off[d + 1]], k, word, code, perm, a, b, out[out_off[d]:out_off[d + 1]])
    return out


def _sort_unique(offsets, hashes):
    counts, tmp = _sort_unique_segments(offsets, hashes)
    out, new_off = compact(tmp, offsets, counts)
    return new_off, out


@njit(inline="always")
def _radix_sort_u32(v, scratch, cnt):
    """Sort uint32 ``v`` in place: LSD radix, four passes of 8 bits through ``scratch`` (as long as
    ``v``) with ``cnt`` (256 counters). About 8x numba's np.sort on a document's 1,000 hashes."""
    src, dst = v, scratch
    for shift in range(0, 32, 8):
        cnt[:] = 0
        for t in range(len(src)):
            cnt[(src[t] >> shift) & 255] += 1
        acc = 0
        for b in range(256):
            c = cnt[b]
            cnt[b] = acc
            acc += c
        for t in range(len(src)):
            x = src[t]
            b = (x >> shift) & 255
            dst[cnt[b]] = x
            cnt[b] += 1
        src, dst = dst, src  # four passes: the result ends in v


@njit(cache=True, nogil=True)
def _sort_unique_segments(offsets, hashes):
    n = len(offsets) - 1
    tmp = hashes.copy()
    counts = np.zeros(n, dtype=np.int64)
    longest = 0
    for d in range(n):
        longest = max(longest, offsets[d + 1] - offsets[d])
    scratch = np.empty(longest, dtype=hashes.dtype)
    cnt = np.zeros(256, dtype=np.int64)
    for d in range(n):
        s, e = offsets[d], offsets[d + 1]
        if e == s:
            continue
        v = tmp[s:e]
        if e - s < 64:
            v[:] = np.sort(v)
        else:
            _radix_sort_u32(v, scratch[:e - s], cnt)
        c = 1
        for t in range(1, e - s):
            if v[t] != v[c - 1]:
                v[c] = v[t]
                c += 1
        counts[d] = c
    return counts, tmp


def _sha1_hashes(buf: np.ndarray, span_s: np.ndarray, span_e: np.ndarray) -> np.ndarray:
    # datasketch.hashfunc.sha1_hash32; sha1 has no compiled path here (it is
    # the slow, compatibility-only choice), so hash spans with hashlib.
    raw = buf.tobytes()
    sha1 = hashlib.sha1
    unpack = struct.Struct("<I").unpack_from
    return np.fromiter((unpack(sha1(raw[s:e]).digest())[0] for s, e in zip(span_s.tolist(), span_e.tolist())),
                       dtype=np.uint32, count=len(span_s))


def chunk_sets(texts: list[str], rep: Representation, unique: bool, permuted: tuple | None = None) -> ShingleSets:
    """Hashed shingles of a few texts, all in the calling thread (the kernels release the GIL).
    ``permuted``: the oph scheme's (a, b): each hash h comes out as pi(h), computed in the hashing
    loop (:func:`calib.sketches.oph.signatures_permuted` takes them; not with sha1)."""
    buf, doc_off = encode(texts, rep)
    word = rep.shingle == "word"
    out_off = _shingle_offsets(buf, doc_off, rep.k, word)
    if rep.hashfunc == "sha1":
        if permuted is not None:
            raise ValueError("chunk_sets: permuted hashes need a compiled hash (xxhash or mmh3), not sha1")
        span_s, span_e = _spans(buf, doc_off, out_off, rep.k, word)
        hashes = _sha1_hashes(buf, span_s, span_e)
    else:
        perm, (a, b) = permuted is not None, (permuted or (0, 0))
        hashes = _hash_spans(buf, doc_off, out_off, rep.k, word, _HASH_CODES[rep.hashfunc], perm, np.uint32(a),
                                np.uint32(b))
    if unique:
        out_off, hashes = _sort_unique(out_off, hashes)
    return ShingleSets(offsets=out_off, hashes=hashes, unique=unique)


def text_chunks(texts: list[str], max_docs: int | None = None) -> list[tuple[int, int]]:
    """Document ranges of about :data:`calib.sketches.chunks.TARGET` characters each."""
    return chunks.bounds(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)), max_items=max_docs)


def concat_sets(parts: list[ShingleSets]) -> ShingleSets:
    """The documents of ``parts`` (one or more), in order, as one :class:`ShingleSets`."""
    if len(parts) == 1:
        return parts[0]
    unique = all(p.unique for p in parts)
    base = np.cumsum([0] + [p.offsets[-1] for p in parts])
    offsets = np.concatenate([p.offsets[:-1] + b for p, b in zip(parts, base[:-1].tolist())] + [base[-1:]])
    return ShingleSets(offsets=offsets.astype(np.int64, copy=False),
                       hashes=np.concatenate([p.hashes for p in parts]), unique=unique)


def shingle_hashes(texts: list[str], rep: Representation, *, unique: bool = True) -> ShingleSets:
    """Hashed shingles of every text under ``rep`` (sets when ``unique``),
    computed in chunks of documents over :func:`calib.sketches.chunks.num_threads` threads."""
    spans = text_chunks(texts)
    if not spans:
        return ShingleSets(np.zeros(1, dtype=np.int64), np.empty(0, dtype=np.uint32), unique=unique)
    return concat_sets(list(chunks.run(lambda s, e: chunk_sets(texts[s:e], rep, unique), spans)))


def hash_bytes(b: bytes, hashfunc: str) -> int:
    """The 32-bit shingle hash of one UTF-8 shingle, via the reference library."""
    if hashfunc == "xxhash":
        import xxhash
        return xxhash.xxh32_intdigest(b)
    if hashfunc == "mmh3":
        import mmh3
        return mmh3.hash(b, 0, signed=False)
    if hashfunc == "sha1":
        from datasketch.hashfunc import sha1_hash32
        return sha1_hash32(b)
    raise ValueError(f"unknown hashfunc {hashfunc!r}")
