"""Normalize and UTF-8 encode a batch of texts, compiled for the common case.

The result is bit-identical to ``normalize(t, rep).encode("utf-8",
"surrogatepass")`` for every text (:func:`calib.sketches.represent.normalize` states
the rules), laid out as one byte buffer plus offsets. Work is split so that
only what needs Unicode tables runs in Python:

* an ASCII text (most of them) is NFKC-invariant, and its lowercase,
  punctuation and whitespace rules are byte-table look-ups: the compiled
  kernel reads it in its own ``str`` buffer (:mod:`calib.sketches.str_objects`;
  a copy on other interpreters) and normalizes it;
* a text with a non-ASCII character goes through NFKC (and the punctuation
  rule) in Python, then the kernel lowercases it code point by code point
  (a table of ``str.lower``) and collapses its whitespace (the 25 code points
  ``str.split()`` splits on). Python lowercases only a text holding a capital
  sigma (its lowercase depends on the letters around it) or under the
  punctuation rule (which comes after the lowercase).

The kernel releases the GIL (numba ``nogil``): :mod:`calib.sketches.chunks` runs
chunks of documents through it in parallel threads, and the less of a text
Python touches, the less the threads wait for each other.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

import numpy as np
from numba import njit

from calib.sketches.represent import punct_re
from calib.sketches.str_objects import STR_DATA, ascii_str_bytes, ascii_str_lengths, str_addresses

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
    :func:`calib.sketches.represent.normalize` applies. With collapse the kernel then
    needs one test for whitespace: the mapped byte is 32."""
    tab = np.arange(256, dtype=np.uint8)
    for c in range(128):
        ch = chr(c)
        if lower:
            ch = ch.lower()
        if punct and punct_re().fullmatch(ch):
            ch = " "
        if collapse and ch.isspace():
            ch = " "
        tab[c] = ord(ch)
    return tab


# str.lower() is context-free for every code point but U+03A3 (capital sigma:
# final or not depends on the letters around it), maps one code point to one
# except U+0130 (-> "i" + U+0307), changes nothing above U+1E921, and is
# idempotent; a test checks all four against the running Python.
SIGMA = "\u03a3"
_DOTTED_I = 0x130
_EMPTY_TABLE = np.zeros(0, dtype=np.uint32)


_LAST_CASED = 0x1E921  # ADLAM CAPITAL LETTER SHA, the last code point lower() changes


@lru_cache(maxsize=1)
def _lower_table() -> np.ndarray:
    """ord(chr(c).lower()) for every code point c up to the last one lower()
    changes (U+0130 maps to 'i'; the kernel adds its U+0307)."""
    return np.array([ord(chr(c).lower()[0]) for c in range(_LAST_CASED + 1)], dtype=np.uint32)


@njit(inline="always")
def _map_copy(text, tab, dst):
    """dst[i] = tab[text[i]] (views indexed from 0: the loop has no wrap check)."""
    for i in range(len(text)):
        dst[i] = tab[text[i]]


@njit(inline="always")
def _map_collapse_ascii(text, tab, dst):
    """Write ``text`` mapped through tab (whitespace mapped to 32) into ``dst``
    with each run of spaces as one space and none at either end; returns the
    length written. Branch-free: every byte is stored at the write position,
    which moves on unless the byte is a space after a space (or at the start),
    so the cost is the same for prose and for text indented by runs of spaces
    (about 3x less than copying the segments between runs). The position is
    unsigned, so the store needs no negative-index check."""
    q = np.uint64(0)
    prev = np.uint64(1)  # "after a space" at the start: leading spaces are dropped
    for p in range(len(text)):
        c = tab[text[p]]
        space = np.uint64(c == 32)
        dst[q] = c
        q += np.uint64(1) - (space & prev)
        prev = space
    if q > 0 and dst[q - np.uint64(1)] == 32:
        q -= np.uint64(1)  # one trailing space is left of a final run
    return np.int64(q)


@njit(inline="always")
def _put_utf8(res, o, cp):
    """UTF-8 of code point cp (surrogates too, as surrogatepass writes them) at res[o]; the new o."""
    if cp < 0x80:
        res[o] = cp
        return o + 1
    if cp < 0x800:
        res[o] = 0xC0 | (cp >> 6)
        res[o + 1] = 0x80 | (cp & 0x3F)
        return o + 2
    if cp < 0x10000:
        res[o] = 0xE0 | (cp >> 12)
        res[o + 1] = 0x80 | ((cp >> 6) & 0x3F)
        res[o + 2] = 0x80 | (cp & 0x3F)
        return o + 3
    res[o] = 0xF0 | (cp >> 18)
    res[o + 1] = 0x80 | ((cp >> 12) & 0x3F)
    res[o + 2] = 0x80 | ((cp >> 6) & 0x3F)
    res[o + 3] = 0x80 | (cp & 0x3F)
    return o + 4


@njit(inline="always")
def _unicode_doc(text, res, o, tab, wide, collapse, lower_cp):
    """Append a non-ASCII text (UTF-8) to res[o:]: ASCII bytes mapped through
    tab, other code points through ``lower_cp`` (when not empty), and with
    ``collapse`` whitespace runs (the Unicode whitespace in ``wide`` too) as
    one space, none at either end. Returns the new o."""
    n = len(text)
    start = o
    pending = False  # a whitespace run after some text: one space if more text follows
    p = 0
    while p < n:
        b0 = np.int64(text[p])
        if b0 < 0x80:
            c = tab[b0]
            if collapse and c == 32:
                pending = o > start
                p += 1
                continue
            if pending:
                res[o] = 32
                o += 1
                pending = False
            res[o] = c
            o += 1
            p += 1
            continue
        if b0 < 0xE0:
            m, cp = 2, b0 & 0x1F
        elif b0 < 0xF0:
            m, cp = 3, b0 & 0x0F
        else:
            m, cp = 4, b0 & 0x07
        for t in range(1, m):
            cp = (cp << 6) | (np.int64(text[p + t]) & 0x3F)
        p += m
        if collapse:
            space = False
            for w in wide:
                space |= w == cp
            if space:
                pending = o > start
                continue
        if pending:
            res[o] = 32
            o += 1
            pending = False
        if cp < len(lower_cp):
            if cp == _DOTTED_I:
                res[o] = 0x69  # "i", then U+0307 COMBINING DOT ABOVE
                o += 1
                cp = 0x307
            else:
                cp = np.int64(lower_cp[cp])
        o = _put_utf8(res, o, cp)
    return o


@njit(cache=True, nogil=True)
def _normalize(buf, off, ascii_, tab, wide, collapse, lower_cp):
    """Map ASCII bytes through tab and (with a non-empty ``lower_cp``) other
    code points of non-ASCII documents through it; with ``collapse`` also
    collapse whitespace runs to one space and strip the ends. Returns (bytes,
    offsets): ``buf`` itself, mapped in place, when no length can change."""
    n = len(off) - 1
    if not collapse and (len(lower_cp) == 0 or ascii_.all()):
        for p in range(len(buf)):
            buf[p] = tab[buf[p]]
        return buf, off
    room = len(buf)
    for d in range(n):
        if not ascii_[d]:
            room += (off[d + 1] - off[d]) // 2  # lower() turns a few 2-byte letters into 3 bytes
    res = np.empty(room, dtype=np.uint8)
    new_off = np.zeros(n + 1, dtype=np.int64)
    o = 0
    for d in range(n):
        # views indexed from 0: no negative-index wrap check left in the loops
        text = buf[off[d]:off[d + 1]]
        if ascii_[d]:
            if collapse:
                o += _map_collapse_ascii(text, tab, res[o:o + len(text)])
            else:
                _map_copy(text, tab, res[o:o + len(text)])
                o += len(text)
        else:
            o = _unicode_doc(text, res, o, tab, wide, collapse, lower_cp)
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


# -- texts read in CPython's own buffers (calib.sketches.str_objects) -----------


@njit(inline="always")
def map_ascii(text, tab, collapse, dst):
    """``text`` (ASCII) mapped through ``tab`` into ``dst``, whitespace runs
    collapsed with ``collapse``; returns the length written."""
    if collapse:
        return _map_collapse_ascii(text, tab, dst)
    _map_copy(text, tab, dst)
    return len(text)


@njit(cache=True, nogil=True)
def _normalize_ascii_strs(address, str_type, data_at, tab, collapse, wide, wide_off):
    """Like :func:`_normalize` for texts read from the str objects at ``address``,
    and for address 0 the next of the normalized texts ``wide`` (offsets
    ``wide_off``). Returns (bytes, offsets, True), or empty arrays and False
    when an object is not a compact ASCII str (see :func:`ascii_str_lengths`)."""
    n = len(address)
    new_off = np.zeros(n + 1, dtype=np.int64)
    length, ok = ascii_str_lengths(address, str_type)
    if not ok:
        return np.empty(0, dtype=np.uint8), new_off, False
    res = np.empty(length.sum() + len(wide), dtype=np.uint8)
    o = j = 0
    for d in range(n):
        if address[d] == 0:
            m = wide_off[j + 1] - wide_off[j]
            res[o:o + m] = wide[wide_off[j]:wide_off[j + 1]]
            o += m
            j += 1
        else:
            o += map_ascii(ascii_str_bytes(address[d], data_at, length[d]), tab, collapse, res[o:o + length[d]])
        new_off[d + 1] = o
    return res[:o], new_off, True


def ascii_table(rep) -> tuple[np.ndarray, bool]:
    """(byte map, collapse) of ``rep``'s rules for ASCII text (for :func:`map_ascii`)."""
    collapse = rep.collapse_ws or rep.shingle == "word"
    return _ascii_table(rep.lowercase, rep.strip_punct, collapse), collapse


def str_sources(texts: list[str], rep) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(address, wide, wide_off) for the kernels that read texts in place:
    ``address`` holds each text's ``id`` (see :func:`str_addresses`), or 0 for
    a text that is not ASCII; those texts are normalized here, in order, into
    ``wide`` (offsets ``wide_off``) by :func:`encode`'s copying path, whose
    Python part (Unicode normalization) holds the GIL for them alone. None,
    before any text is normalized, when an object is not a ``str`` itself (a
    subclass, ``numpy.str_``, not text: the copying path takes the chunk) or
    this interpreter's strings are not laid out as the kernels expect."""
    address = str_addresses(texts)
    if address is None:
        return None
    at = []
    for d, t in enumerate(texts):
        if type(t) is not str:
            return None
        if not t.isascii():  # a flag of the object: O(1)
            at.append(d)
    if not at:
        return address, _NO_BYTES, _NO_OFFSETS
    address[at] = 0
    wide, wide_off = _encode_copying([texts[d] for d in at], rep)
    return address, np.ascontiguousarray(wide), wide_off


_NO_BYTES = np.empty(0, dtype=np.uint8)
_NO_OFFSETS = np.zeros(1, dtype=np.int64)


def _encode_ascii_strs(texts: list[str], rep) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`encode` of ``str`` texts, the ASCII ones from their own buffers, or
    None when an object is not a ``str`` itself or an ASCII one is not compact."""
    sources = str_sources(texts, rep)
    if sources is None:
        return None
    buf, off, ok = _normalize_ascii_strs(sources[0], id(str), STR_DATA, *ascii_table(rep), *sources[1:])
    return (buf, off) if ok else None


def _python_part(text: str, rep, kernel_lower: bool) -> str:
    """The steps of ``normalize`` that need Unicode tables, for a non-ASCII
    text. With ``kernel_lower`` the kernel lowercases, unless the text holds a
    capital sigma after NFKC (which makes one of U+03F9 too)."""

    if rep.strip_punct:
        text = punct_re().sub(" ", text)
    if rep.nfkc:
        text = unicodedata.normalize("NFKC", text)
    if rep.lowercase and (not kernel_lower or SIGMA in text):
        text = text.lower()
    if rep.strip_punct:
        text = punct_re().sub(" ", text)
    return text


def encode(texts: list[str], rep) -> tuple[np.ndarray, np.ndarray]:
    """Normalized UTF-8 of every text: (buffer uint8, offsets int64[n+1])."""
    if texts and (read := _encode_ascii_strs(texts, rep)) is not None:
        return read
    return _encode_copying(texts, rep)


def _encode_copying(texts: list[str], rep) -> tuple[np.ndarray, np.ndarray]:
    """:func:`encode` through copies of the texts (any str objects)."""
    joined = "".join(texts)
    if joined.isascii():  # the common chunk: a few C passes, no Python step per text
        off = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)), out=off[1:])
        # numpy's copy releases the GIL, so the page faults of the fresh buffer do not hold up the
        # other threads (bytearray(joined, "ascii") faulted them in under the GIL)
        buf = np.frombuffer(joined.encode("ascii"), dtype=np.uint8).copy()
        del joined
        return _normalized(buf, off, np.ones(len(texts), dtype=np.bool_), rep, False)
    del joined
    ascii_ = np.fromiter((t.isascii() for t in texts), dtype=np.bool_, count=len(texts))
    # The kernel lowercases non-ASCII texts by code point, except a text with a
    # capital sigma (context-dependent) and with strip_punct (whose second pass
    # comes after the lowercase); Python's lower() first is harmless there,
    # since lowering twice changes nothing.
    kernel_lower = rep.lowercase and not rep.strip_punct
    parts = [t.encode("ascii") if a else
             _python_part(t, rep, kernel_lower).encode("utf-8", "surrogatepass")
             for t, a in zip(texts, ascii_.tolist())]
    off = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, parts), dtype=np.int64, count=len(parts)), out=off[1:])
    buf = np.frombuffer(bytearray().join(parts), dtype=np.uint8)  # writable: normalized in place
    del parts
    return _normalized(buf, off, ascii_, rep, kernel_lower)


def _normalized(buf, off, ascii_, rep, kernel_lower: bool) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's part of :func:`encode` over the encoded texts (``buf`` writable: mapped in place)."""
    collapse = rep.collapse_ws or rep.shingle == "word"
    if not (rep.lowercase or rep.strip_punct or collapse):
        return buf, off
    lower_cp = _lower_table() if kernel_lower and not ascii_.all() else _EMPTY_TABLE
    return _normalize(buf, off, ascii_, _ascii_table(rep.lowercase, rep.strip_punct, collapse), _WS_WIDE,
                      collapse, lower_cp)
