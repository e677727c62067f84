"""Normalize a text of any code points in compiled code: :func:`calib.sketches.represent.normalize`'s bytes.

:func:`normalize_cps` reads a text as an array of code points (a CPython str's own buffer of
1, 2 or 4 bytes a character, :mod:`calib.sketches.str_objects`, or UTF-32) and writes the
UTF-8 of its normalized form, with the GIL released, from the per-code-point tables of
:mod:`calib.sketches.unicode_tables` (which also says why that is exact). Two cases depend on
the neighbours and are decided here: the final sigma (``str.lower``: U+03A3 after a cased
letter and not before one, case-ignorable code points skipped, becomes U+03C2) and NFKC's
quick check over the code points' NFKC (a code point that may compose with the one before
it, or combining marks out of canonical order); the second returns -1 and the caller hands
that text to Python.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from calib.sketches.unicode_tables import (CASED, COMPLEX, CP_MASK, DOTTED_I, IGNORABLE, INERT, MAYBE, NONSTARTER,
                                           PUNCT, SIGMA, SPACE, T_SHIFT)

CONTEXT = -1   # normalize_cps: the text needs Python (NFKC across code points)
NO_ROOM = -2   # normalize_cps: dst is too short


@njit(inline="always")
def _put(dst, o, cp, pending):
    """UTF-8 of cp at dst[o] (a space first when ``pending``); the new o."""
    if pending:
        dst[o] = 32
        o += 1
    if cp < 0x80:
        dst[o] = cp
        return o + 1
    if cp < 0x800:
        dst[o] = 0xC0 | (cp >> 6)
        dst[o + 1] = 0x80 | (cp & 0x3F)
        return o + 2
    if cp < 0x10000:
        dst[o] = 0xE0 | (cp >> 12)
        dst[o + 1] = 0x80 | ((cp >> 6) & 0x3F)
        dst[o + 2] = 0x80 | (cp & 0x3F)
        return o + 3
    dst[o] = 0xF0 | (cp >> 18)
    dst[o + 1] = 0x80 | ((cp >> 12) & 0x3F)
    dst[o + 2] = 0x80 | ((cp >> 6) & 0x3F)
    dst[o + 3] = 0x80 | (cp & 0x3F)
    return o + 4


# The two loops below read a view from 0 and write at an unsigned position: numba checks a
# signed index for a negative value on every access, which here costs about as much as the work.

@njit(inline="always")
def _map_collapse_run(run, tab, prev, dst, o):
    """The ASCII code points ``run`` mapped through ``tab`` into dst[o:], each space after a
    space (or, with ``prev``, at the start) dropped, branch-free (as
    :func:`calib.sketches.encode._map_collapse_ascii`); the new o."""
    q = np.uint64(o)
    after = np.uint64(prev)
    for p in range(len(run)):
        c = tab[run[p]]
        space = np.uint64(c == 32)
        dst[q] = c
        q += np.uint64(1) - (space & after)
        after = space
    return np.int64(q)


@njit(inline="always")
def _map_run(run, tab, dst, o):
    """The ASCII code points ``run`` mapped through ``tab`` into dst[o:]; the new o."""
    q = np.uint64(o)
    for p in range(len(run)):
        dst[q + np.uint64(p)] = tab[run[p]]
    return o + len(run)


@njit(inline="always")
def _flags_before(src, i, q, word, pool_off, pool, flags, skip):
    """The flags of the last code point of the NFKC before pool entry q of src[i] (entries
    pool_off[k]..q-1 of it, then src[i-1], ...) that has none of the flags ``skip``; -1 when
    there is none."""
    k = word[src[i]] & ~np.uint32(COMPLEX)
    for p in range(q - 1, np.int64(pool_off[k]) - 1, -1):
        f = flags[pool[p]]
        if f & skip == 0:
            return np.int64(f)
    for j in range(i - 1, -1, -1):
        v = word[src[j]]
        if v & COMPLEX == 0:
            f = (v >> T_SHIFT) & 0x7F
            if f & skip == 0:
                return np.int64(f)
            continue
        k = v & ~np.uint32(COMPLEX)
        for p in range(np.int64(pool_off[k + 1]) - 1, np.int64(pool_off[k]) - 1, -1):
            f = flags[pool[p]]
            if f & skip == 0:
                return np.int64(f)
    return np.int64(-1)


@njit(nogil=True)
def normalize_cps(src, tab, word, pool_off, pool, flags, ccc, lower, lowercase, strip_punct, collapse, nfkc, dst):
    """The normalized UTF-8 of the code points ``src`` into ``dst``: the length written, or
    CONTEXT (the text needs Python) or NO_ROOM (``dst`` is too short; see
    :func:`calib.sketches.unicode_tables.max_growth`). Tables: ``tab`` the byte map of ASCII
    (:func:`calib.sketches.encode.ascii_table`), the others :func:`calib.sketches.unicode_tables.kernel_tables`."""
    cap = len(dst)
    n = len(src)
    o = 0
    pending = False     # collapse: a whitespace run after some text, one space if more text follows
    last_ccc = 0        # combining class of the NFKC's last code point (canonical order check)
    sigma_at = -1       # where a σ (U+03C3, CF 83) waits for the next not case-ignorable code point
    n_lower = len(lower)
    i = -1
    while i + 1 < n:
        i += 1
        if src[i] < 0x80 and sigma_at < 0:
            # a run of ASCII code points (most of a Latin-script text, the spaces of any other): the byte
            # table, and with collapse the branch-free loop of calib.sketches.encode._map_collapse_ascii
            if o + (n - i) + 1 > cap:
                return NO_ROOM
            last_ccc = 0
            rest = src[i:]
            r = 1
            while r < len(rest) and rest[r] < 0x80:
                r += 1
            j = i + r
            if collapse:
                prev = 1 if o == 0 or pending else 0  # after a space: spaces are dropped
                if pending:
                    dst[o] = 32
                    o += 1
                o = _map_collapse_run(src[i:j], tab, prev, dst, o)
                pending = o > 0 and dst[o - 1] == 32  # a trailing space is owed only if text follows
                if pending:
                    o -= 1
                    pending = o > 0
            else:
                o = _map_run(src[i:j], tab, dst, o)
            i = j - 1
            continue
        v = word[src[i]]
        if v & COMPLEX == 0:
            if sigma_at >= 0 and (v >> T_SHIFT) & IGNORABLE == 0:
                if (v >> T_SHIFT) & CASED == 0:
                    dst[sigma_at + 1] = 0x82  # final: ς
                sigma_at = -1
            last_ccc = 0
            cp = v & CP_MASK
            if collapse and cp == 32:
                pending = o > 0
                continue
            if o + 5 > cap:
                return NO_ROOM
            o = _put(dst, o, cp, pending)
            pending = False
            continue
        k = v & ~np.uint32(COMPLEX)
        start, end = np.int64(pool_off[k]), np.int64(pool_off[k + 1])
        if o + 4 * (end - start) + 4 > cap:
            return NO_ROOM
        for q in range(start, end):
            u = pool[q]
            f = flags[u]
            if nfkc:
                if f & MAYBE:  # composes unless its last starter is inert
                    last = _flags_before(src, i, q, word, pool_off, pool, flags, NONSTARTER)
                    if last >= 0 and last & INERT == 0:
                        return CONTEXT
                cc = ccc[u]
                if cc != 0 and last_ccc > cc:
                    return CONTEXT
                last_ccc = cc
            if sigma_at >= 0 and f & IGNORABLE == 0:
                if f & CASED == 0:
                    dst[sigma_at + 1] = 0x82
                sigma_at = -1
            if lowercase and u == SIGMA:
                o = _put(dst, o, 0x3C3, pending)
                pending = False
                before = _flags_before(src, i, q, word, pool_off, pool, flags, IGNORABLE)
                if before >= 0 and before & CASED:
                    sigma_at = o - 2
                continue
            if lowercase and u == DOTTED_I:
                o = _put(dst, o, 0x69, pending)
                o = _put(dst, o, 0x307, False)
                pending = False
                continue
            cp = u
            if lowercase and u < n_lower:
                cp = lower[u]
            if strip_punct and flags[cp] & PUNCT:  # the second punctuation pass, after lower()
                cp = 32
            if collapse and (cp == 32 or flags[cp] & SPACE):
                pending = o > 0
                continue
            o = _put(dst, o, cp, pending)
            pending = False
    if sigma_at >= 0:
        dst[sigma_at + 1] = 0x82  # nothing cased after it: final
    return o
