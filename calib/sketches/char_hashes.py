"""Char k-gram hashes of one UTF-8 text: xxh32 (with the oph scheme's permutation pi(h) fused
when asked) of every k-gram of code points, one per element of the output, in compiled loops
that vectorize. ASCII text by the byte loop specialized for the common k; other text by runs of
ASCII or by blocks of 256 k-grams, whichever its share of bytes >= 0x80 favours. Called per
document by :func:`calib.sketches.shingles._hash_doc`; tests hold every path to ``xxhash``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from calib.sketches.hashing import read32_at, read32_upto, xxh32, xxh32_fixed_any, xxh32_words
from calib.sketches.oph import permute


@njit(inline="always")
def _is_ascii(text):
    """No byte >= 0x80 (an OR over all bytes, no early exit: it vectorizes)."""
    acc = np.uint8(0)
    for p in range(len(text)):
        acc |= text[p]
    return acc < 0x80


# The per-document loops below index views (text = buf[s:e], dst = out[o:o + c])
# from 0: numba wraps negative indices, and with an offset LLVM cannot rule one
# out, so a select stays in the loop and the loads become gathers; from 0 the
# shingle loop vectorizes (about 7x faster).

@njit(inline="always")
def _xxh32_run(text, k, dst, perm, a, b):
    if perm:  # the oph scheme's permutation, fused (one pass, no hash array read back)
        for t in range(len(dst)):
            dst[t] = permute(xxh32_fixed_any(text, t, k), a, b)
    else:
        for t in range(len(dst)):
            dst[t] = xxh32_fixed_any(text, t, k)


@njit(inline="always")
def _xxh32_ascii_k(text, k, dst, perm, a, b):
    """xxh32 of the byte k-grams of ``text`` into ``dst`` (one per k-gram). The
    common k are passed as literals: the hash then has no loop left and the
    loop over shingles vectorizes (about twice as fast as with k a variable)."""
    if k == 5:
        _xxh32_run(text, 5, dst, perm, a, b)
    elif k == 3:
        _xxh32_run(text, 3, dst, perm, a, b)
    elif k == 4:
        _xxh32_run(text, 4, dst, perm, a, b)
    elif k == 6:
        _xxh32_run(text, 6, dst, perm, a, b)
    elif k == 7:
        _xxh32_run(text, 7, dst, perm, a, b)
    elif k == 8:
        _xxh32_run(text, 8, dst, perm, a, b)
    elif k == 24:
        _xxh32_run(text, 24, dst, perm, a, b)
    elif k < 16:
        _xxh32_run(text, k, dst, perm, a, b)
    else:
        for t in range(len(dst)):
            dst[t] = xxh32(text, t, t + k)
        if perm:
            _permute_all(dst, a, b)


@njit(inline="always")
def _permute_all(dst, a, b):
    for t in range(len(dst)):
        dst[t] = permute(dst[t], a, b)


# A text with few bytes >= 0x80 (a Latin script: an accent every few words) is hashed by runs of
# ASCII, most of its k-grams in the vectorized ASCII loop; one with more (Cyrillic, Greek, CJK,
# Turkish) by blocks, every k-gram in the branch-free loop. On Debian's manual pages
# (bench/speed/throughput_unicode.py's corpus) blocks hashed Russian, Ukrainian and Japanese pages
# 2-2.7x faster than runs, German ones 1.8x slower; a switch at one byte in 16, 10 or 5 gave the
# same whole-corpus figure within noise.
_SPARSE_HIGH = 10
_BLOCK = 256


@njit(inline="always")
def _xxh32_chars(text, k, dst, perm, a, b):
    """xxh32 (with ``perm`` pi(h)) of the char k-grams of a UTF-8 text, one per element of
    ``dst`` (the whole text when it has fewer than k code points): by runs of ASCII
    (:func:`_xxh32_chars_runs`; an ASCII text is one run) when fewer than one byte in
    ``_SPARSE_HIGH`` is >= 0x80, else by blocks (:func:`_xxh32_chars_blocks`)."""
    ascii_ = _is_ascii(text)  # an OR: several times faster than the count below
    high = 0
    if not ascii_:
        for p in range(len(text)):
            high += text[p] >= 0x80
    if high * _SPARSE_HIGH < len(text):
        _xxh32_chars_runs(text, k, dst, perm, a, b, ascii_)
    else:
        _xxh32_chars_blocks(text, k, dst, perm, a, b)


@njit(inline="always")
def _xxh32_words_all(w0, w1, w2, w3, size, dst, perm, a, b):
    """dst[j] = xxh32 of the size[j] (< 16) bytes whose first 16 are the words w0[j] .. w3[j].
    All uint32: eight lanes to an AVX2 register (a uint64 input halves that)."""
    if perm:
        for j in range(len(dst)):
            dst[j] = permute(xxh32_words(w0[j], w1[j], w2[j], w3[j], size[j]), a, b)
    else:
        for j in range(len(dst)):
            dst[j] = xxh32_words(w0[j], w1[j], w2[j], w3[j], size[j])


@njit(nogil=True)
def _xxh32_spans(text, starts, ends, words, out, perm, a, b):
    """out[j] = xxh32 (with ``perm`` pi(h)) of text[starts[j]:ends[j]] for j < len(out), the
    starts increasing, in loops with no data-dependent branch: each span's length and first 16
    bytes as four words into the rows of ``words`` (uint32, 5 x len(out) or more; loads at
    unsigned positions, :func:`calib.sketches.hashing.read32_at`), then the hashes of those
    (:func:`calib.sketches.hashing.xxh32_words`, vectorized). Spans of 16 bytes or more (k >= 4
    with emoji) are hashed again by :func:`calib.sketches.hashing.xxh32`."""
    n = len(text)
    m = len(out)
    w0, w1, w2, w3, size = words[0], words[1], words[2], words[3], words[4]
    safe = m  # the spans from here on start within 16 bytes of the end
    while safe > 0 and starts[safe - 1] + 16 > n:
        safe -= 1
    for j in range(safe):
        u = np.uint64(starts[j])
        w0[j] = read32_at(text, u)
        w1[j] = read32_at(text, u + np.uint64(4))
        w2[j] = read32_at(text, u + np.uint64(8))
        w3[j] = read32_at(text, u + np.uint64(12))
    for j in range(safe, m):
        w0[j] = read32_upto(text, starts[j], n)
        w1[j] = read32_upto(text, starts[j] + 4, n)
        w2[j] = read32_upto(text, starts[j] + 8, n)
        w3[j] = read32_upto(text, starts[j] + 12, n)
    for j in range(m):
        size[j] = ends[j] - starts[j]
    _xxh32_words_all(w0[:m], w1[:m], w2[:m], w3[:m], size[:m], out, perm, a, b)
    for j in range(m):
        if ends[j] - starts[j] >= 16:
            h = xxh32(text, starts[j], ends[j])
            out[j] = permute(h, a, b) if perm else h


@njit(inline="always")
def _xxh32_chars_blocks(text, k, dst, perm, a, b):
    """:func:`_xxh32_chars` in blocks of ``_BLOCK`` k-grams, each in loops with no
    data-dependent branch: the starts of the block's code points (and k more), then
    :func:`_xxh32_spans`."""
    n = len(text)
    starts = np.empty(_BLOCK + k, dtype=np.int64)
    words = np.empty((5, _BLOCK), dtype=np.uint32)
    p = 0
    t0 = 0
    while t0 < len(dst):
        nb = min(_BLOCK, len(dst) - t0)
        need = nb + k  # k-gram j (of this block) ends where code point j + k starts
        c = 0
        q = p
        while q < n:
            starts[c] = q  # a continuation byte's position is overwritten by the next lead byte
            c += (text[q] & 0xC0) != 0x80
            q += 1
            if c == need:
                break
        for j in range(c, need):  # past the last code point: the text's end
            starts[j] = n
        _xxh32_spans(text, starts[:nb], starts[k:k + nb], words, dst[t0:t0 + nb], perm, a, b)
        p = starts[nb]
        t0 += nb


@njit(inline="always")
def _xxh32_chars_runs(text, k, dst, perm, a, b, ascii_):
    """:func:`_xxh32_chars` for a text mostly ASCII, in one pass with no array of code point
    starts: the k-grams inside a run of ASCII bytes (most of a Latin-script text) by the
    vectorized ASCII loop (:func:`_xxh32_ascii_k`); any other one's span (its end found by
    stepping over k UTF-8 sequences) kept, and hashed with the next ``_BLOCK`` such spans by
    :func:`_xxh32_spans`. ``ascii_``: the text is ASCII (one run, not scanned for its end)."""
    n = len(text)
    room = 0 if ascii_ and n >= k else _BLOCK  # an ASCII text keeps no span: no scratch to fill
    spans = np.empty((3, room), dtype=np.int64)  # the kept spans: their k-gram's index, start and end
    at, starts, ends = spans[0], spans[1], spans[2]
    words = np.empty((6, room), dtype=np.uint32)
    hashes = words[5]
    kept = 0
    p = 0
    t = 0
    e = -1  # the end of the k-gram at p when the one before it was kept (it slides by one sequence)
    while t < len(dst):
        if text[p] < 0x80:
            q = n if ascii_ else p + 1
            while q < n and text[q] < 0x80:
                q += 1
            run = q - p - k + 1  # k-grams starting at p .. q - k lie inside the run
            if run > 0:
                _xxh32_ascii_k(text[p:q], k, dst[t:t + run], perm, a, b)
                t += run
                p += run
                e = -1
                continue
        if e < 0:
            e = p
            for _ in range(k):
                if e >= n:
                    break
                c = text[e]
                e += 1 + (c >= 0xC0) + (c >= 0xE0) + (c >= 0xF0)
        elif e < n:
            c = text[e]
            e += 1 + (c >= 0xC0) + (c >= 0xE0) + (c >= 0xF0)
        at[kept] = t
        starts[kept] = p
        ends[kept] = e
        kept += 1
        if kept == _BLOCK:
            _xxh32_spans(text, starts[:kept], ends[:kept], words, hashes[:kept], perm, a, b)
            for j in range(kept):
                dst[at[j]] = hashes[j]
            kept = 0
        c = text[p]
        p += 1 + (c >= 0xC0) + (c >= 0xE0) + (c >= 0xF0)
        t += 1
    if kept:
        _xxh32_spans(text, starts[:kept], ends[:kept], words, hashes[:kept], perm, a, b)
        for j in range(kept):
            dst[at[j]] = hashes[j]
