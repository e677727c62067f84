"""Normalize and UTF-8 encode a batch of texts, compiled for the common case.

The result is bit-identical to ``normalize(t, rep).encode("utf-8",
"surrogatepass")`` for every text (:func:`calib.represent.normalize` states
the rules), laid out as one byte buffer plus offsets. Work is split so that
only what needs Unicode tables runs in Python:

* an ASCII text (most of them) is NFKC-invariant, and its lowercase,
  punctuation and whitespace rules are byte-table look-ups: it is encoded
  as is (a copy) and normalized by the compiled kernel;
* a text with a non-ASCII character goes through NFKC, ``str.lower`` and the
  punctuation rule in Python (C-level string methods), and only the
  whitespace collapse runs in the kernel (Unicode whitespace decoded from
  UTF-8: the 25 code points ``str.split()`` splits on).

The kernel releases the GIL (numba ``nogil``): :mod:`calib.chunks` runs
chunks of documents through it in parallel threads. ASCII look-ups applied to an already-normalized non-ASCII text
change nothing (no A-Z or ASCII punctuation is left), so one kernel serves both.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

import numpy as np
from numba import njit

# Every code point for which str.isspace() is true (what str.split() splits on);
# a test recomputes it from the running Python's Unicode tables.
WHITESPACE = (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x85, 0xA0, 0x1680,
              0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A,
              0x2028, 0x2029, 0x202F, 0x205F, 0x3000)
_WS_WIDE = np.array([c for c in WHITESPACE if c >= 0x80], dtype=np.int64)


@lru_cache(maxsize=8)
def _ascii_table(lower: bool, punct: bool, collapse: bool) -> np.ndarray:
    """Byte map over 0..255 for these options: lowercases A-Z, turns ASCII
    punctuation/symbols into a space and (with collapse) every ASCII
    whitespace byte into ' ', derived from the same rules
    :func:`calib.represent.normalize` applies. With collapse the kernel then
    needs one test for whitespace: the mapped byte is 32."""
    from .represent import _punct_re
    tab = np.arange(256, dtype=np.uint8)
    for c in range(128):
        ch = chr(c)
        if lower:
            ch = ch.lower()
        if punct and _punct_re().fullmatch(ch):
            ch = " "
        if collapse and ch.isspace():
            ch = " "
        tab[c] = ord(ch)
    return tab


@njit(inline="always")
def _wide_space(buf, p, e, wide):
    """Length in bytes of the Unicode whitespace character at p (lead byte >= 0xC0), or 0."""
    b0 = np.int64(buf[p])
    if b0 < 0xE0:
        n, cp = 2, b0 & 0x1F
    elif b0 < 0xF0:
        n, cp = 3, b0 & 0x0F
    else:
        return 0  # no whitespace above U+FFFF
    if p + n > e:
        return 0
    for t in range(1, n):
        cp = (cp << 6) | (np.int64(buf[p + t]) & 0x3F)
    for w in wide:
        if w == cp:
            return n
    return 0


@njit(inline="always")
def _next_run(text, q):
    """First position >= q where a run of spaces needs collapsing: a space
    followed by a space or by the end (len(text) when none). 32-byte blocks
    without one are skipped by a test that vectorizes."""
    n = len(text)
    while q + 33 <= n:
        block = text[q:q + 33]
        hit = False
        for i in range(32):
            hit |= (block[i] == 32) & (block[i + 1] == 32)
        if hit:
            break
        q += 32
    while q < n and not (text[q] == 32 and (q + 1 == n or text[q + 1] == 32)):
        q += 1
    return q


@njit(inline="always")
def _copy(dst, src):
    # an indexed loop over two views: it vectorizes (numba's slice assignment
    # checks for overlap and copies element by element)
    for i in range(len(src)):
        dst[i] = src[i]


@njit(inline="always")
def _collapse_ascii(text, res, o):
    """Append ``text`` (bytes already mapped, whitespace as 32) to res[o:] with
    each run of spaces as one space and none at either end; returns the new o.
    Runs of one space are copied with the text around them (prose has few
    longer runs), so the copy moves long segments."""
    n = len(text)
    p = 0
    while p < n and text[p] == 32:
        p += 1
    while p < n:
        q = _next_run(text, p)
        _copy(res[o:o + q - p], text[p:q])
        o += q - p
        while q < n and text[q] == 32:
            q += 1
        if q < n:
            res[o] = 32
            o += 1
        p = q
    return o


@njit(inline="always")
def _collapse_unicode(text, res, o, tab, wide):
    """:func:`_collapse_ascii` for a non-ASCII text: bytes mapped through tab as
    they are read, and the Unicode whitespace in ``wide`` counted as space."""
    n = len(text)
    start = o
    pending = False  # a whitespace run after some text: one space if more text follows
    p = 0
    while p < n:
        c = tab[text[p]]  # identity on bytes >= 0x80 (lead and continuation bytes)
        w = 0
        if c == 32:
            w = 1
        elif c >= 0xC0:
            w = _wide_space(text, p, n, wide)
        if w > 0:
            pending = o > start
            p += w
            continue
        if pending:
            res[o] = 32
            o += 1
            pending = False
        res[o] = c
        o += 1
        p += 1
    return o


@njit(cache=True, nogil=True)
def _normalize(buf, off, ascii_, tab, wide, collapse):
    """Map bytes through tab (in ``buf``); with ``collapse`` also collapse
    whitespace runs to one space and strip the ends (in non-ASCII documents
    the Unicode whitespace in ``wide`` too). Returns (bytes, offsets): ``buf``
    itself when nothing collapses, else a new buffer."""
    n = len(off) - 1
    if not collapse:
        for p in range(len(buf)):
            buf[p] = tab[buf[p]]
        return buf, off
    res = np.empty(len(buf), dtype=np.uint8)  # output never outgrows input
    new_off = np.zeros(n + 1, dtype=np.int64)
    o = 0
    for d in range(n):
        # views indexed from 0: no negative-index wrap check left in the loops
        text = buf[off[d]:off[d + 1]]
        if ascii_[d]:
            for p in range(len(text)):
                text[p] = tab[text[p]]  # vectorizes
            o = _collapse_ascii(text, res, o)
        else:
            o = _collapse_unicode(text, res, o, tab, wide)
        new_off[d + 1] = o
    return res[:o], new_off


@njit(cache=True, nogil=True)
def compact(values, off, length):
    """Segments values[off[d] : off[d] + length[d]] packed end to end: (packed, new offsets)."""
    n = len(off) - 1
    new_off = np.zeros(n + 1, dtype=np.int64)
    for d in range(n):
        new_off[d + 1] = new_off[d] + length[d]
    res = np.empty(new_off[n], dtype=values.dtype)
    for d in range(n):
        res[new_off[d]:new_off[d + 1]] = values[off[d]:off[d] + length[d]]
    return res, new_off


def _python_part(text: str, rep) -> str:
    """The steps of ``normalize`` that need Unicode tables, for a non-ASCII text."""
    from .represent import _punct_re

    if rep.strip_punct:
        text = _punct_re().sub(" ", text)
    if rep.nfkc:
        text = unicodedata.normalize("NFKC", text)
    if rep.lowercase:
        text = text.lower()
    if rep.strip_punct:
        text = _punct_re().sub(" ", text)
    return text


def encode(texts: list[str], rep) -> tuple[np.ndarray, np.ndarray]:
    """Normalized UTF-8 of every text: (buffer uint8, offsets int64[n+1])."""
    ascii_ = np.fromiter((t.isascii() for t in texts), dtype=np.bool_, count=len(texts))
    parts = [t.encode("ascii") if a else _python_part(t, rep).encode("utf-8", "surrogatepass")
             for t, a in zip(texts, ascii_.tolist())]
    off = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, parts), dtype=np.int64, count=len(parts)), out=off[1:])
    buf = np.frombuffer(bytearray().join(parts), dtype=np.uint8)  # writable: normalized in place
    del parts
    collapse = rep.collapse_ws or rep.shingle == "word"
    if not (rep.lowercase or rep.strip_punct or collapse):
        return buf, off
    return _normalize(buf, off, ascii_, _ascii_table(rep.lowercase, rep.strip_punct, collapse), _WS_WIDE, collapse)
