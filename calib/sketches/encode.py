"""Normalize and UTF-8 encode a batch of texts, compiled.

The result is bit-identical to ``normalize(t, rep).encode("utf-8",
"surrogatepass")`` for every text (:func:`calib.sketches.represent.normalize` states
the rules), laid out as one byte buffer plus offsets. The compiled kernel reads
each ``str`` in its own buffer (:mod:`calib.sketches.str_objects`):

* an ASCII text (most of them) is NFKC-invariant, and its lowercase,
  punctuation and whitespace rules are byte-table look-ups;
* any other text is read as code points (1, 2 or 4 bytes each) and normalized
  through per-code-point tables (:mod:`calib.sketches.unicode_norm`), the final
  sigma included; only a text whose NFKC depends on neighbouring code points (a
  mark that composes with the letter before it, combining marks out of canonical
  order) is normalized in Python, alone.

Objects that are not ``str`` themselves (subclasses, ``numpy.str_``) and other
interpreters take a copying path: NFKC (and the punctuation rule) in Python,
then a kernel lowercases code point by code point and collapses whitespace.

The kernels release the GIL (numba ``nogil``): :mod:`calib.sketches.chunks` runs
chunks of documents through them in parallel threads, and the less of a text
Python touches, the less the threads wait for each other.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

import numpy as np
from numba import njit

from calib.sketches import unicode_tables
from calib.sketches.represent import punct_re
from calib.sketches.str_objects import (ASCII, STR_DATA, WIDE_DATA, ascii_str_bytes, str_addresses, str_heads,
                                        str_ucs2, str_ucs4)
from calib.sketches.unicode_norm import CONTEXT, NO_ROOM, normalize_cps

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
_DOTTED_I = unicode_tables.DOTTED_I
_EMPTY_TABLE = np.zeros(0, dtype=np.uint32)
_lower_table = unicode_tables.lower_table


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


@njit(inline="always")
def normalize_str(address, kind, length, data_at, wide_at, tab, collapse, uni, opts, dst):
    """The normalized UTF-8 of the compact str at ``address`` (its kind and length from
    :func:`calib.sketches.str_objects.str_heads`) into ``dst``: the length written, or
    CONTEXT (Python normalizes it) or NO_ROOM (``dst`` too short). ``uni``:
    :func:`calib.sketches.unicode_tables.kernel_tables`; ``opts``: (lowercase, strip_punct, nfkc)."""
    if kind == ASCII:
        if len(dst) < length:
            return NO_ROOM
        return map_ascii(ascii_str_bytes(address, data_at, length), tab, collapse, dst)
    word, pool_off, pool, flags, ccc, lower = uni
    lowercase, strip_punct, nfkc = opts
    if kind == 1:
        return normalize_cps(ascii_str_bytes(address, wide_at, length), tab, word, pool_off, pool, flags, ccc, lower,
                             lowercase, strip_punct, collapse, nfkc, dst)
    if kind == 2:
        return normalize_cps(str_ucs2(address, wide_at, length), tab, word, pool_off, pool, flags, ccc, lower,
                             lowercase, strip_punct, collapse, nfkc, dst)
    return normalize_cps(str_ucs4(address, wide_at, length), tab, word, pool_off, pool, flags, ccc, lower,
                         lowercase, strip_punct, collapse, nfkc, dst)


@njit(inline="always")
def first_room(kind, length):
    """Output bytes to try first for a str of this kind and length (its UTF-8 length, most often)."""
    return length * (1 if kind == ASCII else 2 if kind == 1 else 3 if kind == 2 else 4) + 8


@njit(cache=True, nogil=True)
def _normalize_strs(address, str_type, data_at, wide_at, tab, collapse, uni, opts, growth):
    """Like :func:`_normalize` for the texts read from the str objects at ``address``.
    Returns (bytes, offsets, context, True), ``context`` marking the texts left empty
    for Python (:data:`calib.sketches.unicode_norm.CONTEXT`); or empty arrays and
    False when an object is not a compact str (see :func:`str_heads`)."""
    n = len(address)
    new_off = np.zeros(n + 1, dtype=np.int64)
    context = np.zeros(n, dtype=np.bool_)
    length, kind, ok = str_heads(address, str_type)
    if not ok:
        return np.empty(0, dtype=np.uint8), new_off, context, False
    room = 0
    for d in range(n):
        room += first_room(kind[d], length[d])
    res = np.empty(room, dtype=np.uint8)
    o = 0
    for d in range(n):
        m = normalize_str(address[d], kind[d], length[d], data_at, wide_at, tab, collapse, uni, opts, res[o:])
        if m == NO_ROOM:
            bigger = np.empty(len(res) + length[d] * growth + 8, dtype=np.uint8)
            bigger[:o] = res[:o]
            res = bigger
            m = normalize_str(address[d], kind[d], length[d], data_at, wide_at, tab, collapse, uni, opts, res[o:])
        if m == CONTEXT:
            context[d] = True
            m = 0
        o += m
        new_off[d + 1] = o
    return res[:o], new_off, context, True


@njit(cache=True, nogil=True)
def _splice(buf, off, at, wide, wide_off):
    """Documents ``at`` (ascending; empty in buf/off) replaced by the texts of wide/wide_off, in order."""
    n = len(off) - 1
    new_off = np.zeros(n + 1, dtype=np.int64)
    j = 0
    for d in range(n):
        m = off[d + 1] - off[d]
        if j < len(at) and at[j] == d:
            m = wide_off[j + 1] - wide_off[j]
            j += 1
        new_off[d + 1] = new_off[d] + m
    res = np.empty(new_off[n], dtype=np.uint8)
    j = 0
    for d in range(n):
        if j < len(at) and at[j] == d:
            res[new_off[d]:new_off[d + 1]] = wide[wide_off[j]:wide_off[j + 1]]
            j += 1
        else:
            res[new_off[d]:new_off[d + 1]] = buf[off[d]:off[d + 1]]
    return res, new_off


def ascii_table(rep) -> tuple[np.ndarray, bool]:
    """(byte map, collapse) of ``rep``'s rules for ASCII text (for :func:`map_ascii`)."""
    collapse = rep.collapse_ws or rep.shingle == "word"
    return _ascii_table(rep.lowercase, rep.strip_punct, collapse), collapse


_NO_TABLES = (np.zeros(0, dtype=np.uint32), np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.uint32),
              np.zeros(0, dtype=np.uint8), np.zeros(0, dtype=np.uint8), np.zeros(0, dtype=np.uint32))


def unicode_arguments(rep, wide: bool) -> tuple[tuple, tuple, int]:
    """(tables, options, growth) of ``rep`` for :func:`normalize_str`: the per-code-point
    tables when some text is not ASCII (``wide``), else empty ones of the same types."""
    collapse = rep.collapse_ws or rep.shingle == "word"
    uni = unicode_tables.kernel_tables(rep.lowercase, rep.nfkc, rep.strip_punct, collapse) if wide else _NO_TABLES
    return uni, (rep.lowercase, rep.strip_punct, rep.nfkc), unicode_tables.max_growth(uni)


def str_sources(texts: list[str]) -> tuple[np.ndarray, bool] | None:
    """(address, wide) for the kernels that read texts in place: ``address`` holds
    each text's ``id`` (see :func:`str_addresses`), ``wide`` whether some text is not
    ASCII. None when an object is not a ``str`` itself (a subclass, ``numpy.str_``,
    not text: the copying path takes the chunk) or this interpreter's strings are
    not laid out as the kernels expect."""
    address = str_addresses(texts)
    if address is None:
        return None
    wide = False
    for t in texts:
        if type(t) is not str:
            return None
        wide = wide or not t.isascii()  # a flag of the object: O(1)
    return address, wide


def python_normalized(texts: list[str], context: np.ndarray, rep) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(at, bytes, offsets): the texts a kernel marked in ``context`` (their NFKC depends on
    neighbouring code points), normalized by the copying path, in order."""
    at = np.flatnonzero(context)
    wide, wide_off = _encode_copying([texts[d] for d in at.tolist()], rep)
    return at, np.ascontiguousarray(wide), wide_off


def _encode_strs(texts: list[str], rep) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`encode` of ``str`` texts read from their own buffers, or None when an
    object is not a ``str`` itself or not compact."""
    sources = str_sources(texts)
    if sources is None:
        return None
    address, wide = sources
    buf, off, context, ok = _normalize_strs(address, id(str), STR_DATA, WIDE_DATA, *ascii_table(rep),
                                            *unicode_arguments(rep, wide))
    if not ok:
        return None
    if context.any():
        buf, off = _splice(buf, off, *python_normalized(texts, context, rep))
    return buf, off


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
    if texts and (read := _encode_strs(texts, rep)) is not None:
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
