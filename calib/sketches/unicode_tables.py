"""Per-code-point tables of :func:`calib.sketches.represent.normalize`'s rules, for compiled kernels.

:func:`base` asks ``unicodedata`` and ``str`` about every code point once (a few seconds), and
keeps the answer on disk (``calib.base.cache.cache_dir()``, keyed by Python's and the Unicode
data's versions, with the tables' sha256; in memory only when that folder cannot be written or
others could swap files in it). Every result depends on these tables, so a cached file is read
only as :mod:`calib.base.cache` trusts one (this user's, in a folder no one else can swap files in)
and only when it holds exactly the tables and the sha256 written with them (:func:`trusted`):

* ``nfkc``: NFKC of each code point that NFKC changes (pool and offsets);
* ``ccc``: the canonical combining class;
* flags: MAYBE (the code point may compose with one before it: the second of a
  two-character canonical decomposition, or a Hangul vowel or trailing consonant; a
  superset of NFKC_Quick_Check=Maybe), INERT (a starter nothing composes with: no
  canonical decomposition, the first of no two-character one, no Hangul syllable or
  leading consonant), NONSTARTER (combining class not 0), CASED and IGNORABLE (the Cased and
  Case_Ignorable properties CPython's ``str.lower`` reads for the final sigma, found by
  lowering probes), SPACE (``str.isspace``), PUNCT (categories P*, S*);
* ``lower``: ``ord(chr(c).lower()[0])``.

:func:`kernel_tables` folds them, for one setting of lowercase / nfkc / strip_punct /
collapse, into one word per code point (its final code point and its NFKC's flags, or
"complex" and an index into a pool of its NFKC-and-punctuation output), read by
:mod:`calib.sketches.unicode_norm`.

Why per code point is exact: NFKD(AB) = NFKD(NFKD(A) NFKD(B)) and NFKD(NFKC(c)) = NFKD(c),
so a text's NFKC is the NFKC of t, the concatenation of each code point's own NFKC. When
every code point of t passes the quick check (no MAYBE, and combining classes in canonical
order: no nonzero class after a larger one), t is already NFKC (UAX #15's quick-check YES),
so NFKC(text) = t. A MAYBE code point whose last starter before it in t is INERT (or that
has none) composes with nothing either, so it passes too. ``str.lower`` is per code point but for U+03A3 (final sigma, decided from
the neighbours' Cased / Case_Ignorable) and U+0130 (two code points). Whitespace and the
punctuation rule are per code point. A text whose t fails the quick check is left to Python.
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import unicodedata
import zipfile
from functools import lru_cache
from pathlib import Path

import numpy as np

from calib.base.cache import ADVICE, cache_dir, file_problem, folder_problem, make_folder, open_file, write_cached

N = sys.maxunicode + 1
MAYBE, CASED, IGNORABLE, SPACE, PUNCT, INERT, NONSTARTER = 1, 2, 4, 8, 16, 32, 64
COMPLEX = 1 << 31        # kernel word: the code point's output is in the pool
T_SHIFT = 21             # kernel word of a simple code point: its NFKC's flags from this bit on
CP_MASK = (1 << T_SHIFT) - 1
SIGMA, DOTTED_I = 0x3A3, 0x130
_LAST_CASED = 0x1E921  # ADLAM CAPITAL LETTER SHA, the last code point lower() changes
_VERSION = 3  # of this file's layout (3: with the sha256 of its tables)


def _cache_file():
    return cache_dir() / f"unicode-tables-v{_VERSION}-py{sys.version_info[0]}.{sys.version_info[1]}-" \
                         f"ucd{unicodedata.unidata_version}.npz"


def scan() -> dict[str, np.ndarray]:
    """The tables, by asking ``unicodedata`` and ``str`` about every code point."""
    from calib.sketches import punct_table

    ccc = np.zeros(N, dtype=np.uint8)
    flags = np.zeros(N, dtype=np.uint8)
    changed, pool, lengths = [], [], []
    norm, combining, decomposition = unicodedata.normalize, unicodedata.combining, unicodedata.decomposition
    sig_end, sig_more = "\u03c2", "\u03c3"
    composes = np.zeros(N, dtype=np.bool_)  # decomposes canonically or is the first of a pair
    for c in range(N):
        ch = chr(c)
        ccc[c] = combining(ch)
        f = 0
        d = decomposition(ch)
        if d and not d.startswith("<"):
            composes[c] = True
            parts = d.split()
            if len(parts) == 2:
                flags[int(parts[1], 16)] |= MAYBE
                composes[int(parts[0], 16)] = True
        k = norm("NFKC", ch)
        if k != ch:
            changed.append(c)
            lengths.append(len(k))
            pool.extend(map(ord, k))
        if ch.isspace():
            f |= SPACE
        # the final sigma's context, as lower() reads it: after "aΣ", an ignorable code point lets the
        # next one decide ("aΣ" + ch + "a" keeps σ), a cased one keeps σ, any other makes it final
        at_end, before_a = ("a\u03a3" + ch).lower()[1], ("a\u03a3" + ch + "a").lower()[1]
        if at_end == sig_end and before_a == sig_more:
            f |= IGNORABLE
        elif at_end == sig_more:
            f |= CASED
        flags[c] |= f
    flags[0x1161:0x1176] |= MAYBE  # Hangul vowels and trailing consonants compose with the syllable before
    flags[0x11A8:0x11C3] |= MAYBE
    composes[0x1100:0x1160] = True  # Hangul leading consonants and syllables (decomposed by rule, not by table)
    composes[0xAC00:0xD7A4] = True
    flags[(ccc == 0) & ~composes] |= INERT
    flags[ccc != 0] |= NONSTARTER
    ranges = punct_table.ranges() if punct_table.UNIDATA_VERSION == unicodedata.unidata_version \
        else punct_table.scan()
    for a, b in ranges:
        flags[a:b + 1] |= PUNCT
    lower = lower_table()
    off = np.zeros(len(changed) + 1, dtype=np.int64)
    np.cumsum(lengths, out=off[1:])
    return {"ccc": ccc, "flags": flags, "lower": lower, "nfkc_cp": np.array(changed, dtype=np.uint32),
            "nfkc_off": off, "nfkc_pool": np.array(pool, dtype=np.uint32)}


@lru_cache(maxsize=1)
def lower_table() -> np.ndarray:
    """ord(chr(c).lower()[0]) for every code point c up to the last one lower() changes
    (U+0130 maps to 'i'; the kernels add its U+0307)."""
    return np.array([ord(chr(c).lower()[0]) for c in range(_LAST_CASED + 1)], dtype=np.uint32)


@lru_cache(maxsize=1)
def base() -> dict[str, np.ndarray]:
    """:func:`scan`'s tables, from the disk cache when it holds them for this Python and they can be
    trusted (:func:`trusted`); else scanned, and cached when the folder is safe. A table found there and
    refused is named on stderr: every result of calib depends on it."""
    path = _cache_file()
    try:
        folder = os.stat(path.parent)
    except OSError:
        folder = None  # no folder yet: made below, owner only
    problem = None if folder is None else folder_problem(folder)
    tables, why = (None, "missing") if problem else trusted(path)
    if problem or why not in ("", "missing"):
        print(f"calib: not using the Unicode tables cached at {path}: "
              f"{f'its folder {problem}' if problem else why}; rebuilding them ({ADVICE})", file=sys.stderr)
    if tables is not None:
        return tables
    tables = scan()
    if problem is None:
        try:
            make_folder(path.parent)
            write_cached(path, _pack(tables))
        except OSError:  # a read-only home, another user's file in a sticky folder: rebuilt by the next process
            pass
    return tables


def _digest(tables: dict[str, np.ndarray]) -> bytes:
    """sha256 of the tables: each one's name, dtype, shape and bytes, in name order."""
    h = hashlib.sha256()
    for k in sorted(tables):
        a = np.ascontiguousarray(tables[k])
        h.update(f"{k}:{a.dtype.str}:{a.shape}:".encode("ascii"))
        h.update(a.tobytes())
    return h.digest()


def _pack(tables: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, sha256=np.frombuffer(_digest(tables), dtype=np.uint8), **tables)
    return buf.getvalue()


_SHAPES = {"ccc": (np.uint8, N), "flags": (np.uint8, N), "lower": (np.uint32, _LAST_CASED + 1),
           "nfkc_cp": (np.uint32, None), "nfkc_off": (np.int64, None), "nfkc_pool": (np.uint32, None)}
_MAX_BYTES = 64 << 20  # the tables take ~8 MB


def trusted(path: Path) -> tuple[dict[str, np.ndarray] | None, str]:
    """(the tables cached at ``path``, "") when this user wrote them (:func:`calib.base.cache.file_problem`)
    and they are whole: the tables of :func:`scan` by name, type and shape, with the sha256 they were
    written with; else (None, why not: "missing" when there is no file)."""
    try:
        fd = open_file(path)
    except FileNotFoundError:
        return None, "missing"
    except OSError as exc:
        return None, f"{path.name} cannot be opened ({exc.strerror or exc}; a link?)"
    try:
        why = file_problem(fd, path)
        if why:
            return None, why
        if os.fstat(fd).st_size > _MAX_BYTES:
            return None, f"{path.name} holds {os.fstat(fd).st_size:,} bytes, more than the tables take"
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read()
    finally:
        os.close(fd)
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            tables = {k: z[k] for k in z.files}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None, f"{path.name} is not a table file calib wrote"
    seal = tables.pop("sha256", None)
    if set(tables) != set(_SHAPES) or any(
            tables[k].dtype != t or tables[k].ndim != 1 or (n is not None and len(tables[k]) != n)
            for k, (t, n) in _SHAPES.items()):
        return None, f"{path.name} does not hold the tables calib writes"
    if seal is None or seal.tobytes() != _digest(tables):
        return None, f"{path.name} does not hold the tables written (their sha256 differs from the one kept with them)"
    return tables, ""


def _nfkc_of(t: dict, c: int) -> list[int]:
    at = int(np.searchsorted(t["nfkc_cp"], c))
    if at < len(t["nfkc_cp"]) and t["nfkc_cp"][at] == c:
        return t["nfkc_pool"][t["nfkc_off"][at]:t["nfkc_off"][at + 1]].tolist()
    return [c]


@lru_cache(maxsize=16)
def kernel_tables(lowercase: bool, nfkc: bool, strip_punct: bool, collapse: bool):
    """(word, pool_off, pool, flags, ccc, lower) for :func:`calib.sketches.unicode_norm.normalize_cps`.

    word[c] of a simple code point (one code point after punctuation and NFKC, combining class
    0, no MAYBE, not U+03A3 or U+0130 to lowercase) is its final code point (lowercased,
    punctuation and, with ``collapse``, whitespace as 32) and, from bit T_SHIFT on, its NFKC's flags;
    of any other, COMPLEX | i, its NFKC-and-punctuation output being pool[pool_off[i]:pool_off[i+1]]."""
    t = base()
    flags, ccc, lower = t["flags"], t["ccc"], t["lower"]
    first = np.arange(N, dtype=np.uint32)   # each code point's first code point after punctuation and NFKC
    complex_ = np.zeros(N, dtype=np.bool_)
    if nfkc:
        lens = np.diff(t["nfkc_off"])
        first[t["nfkc_cp"]] = t["nfkc_pool"][t["nfkc_off"][:-1]]
        complex_[t["nfkc_cp"][lens != 1]] = True
    if strip_punct:
        is_p = (flags & PUNCT) != 0
        first[is_p] = 32
        complex_[is_p] = False
    if nfkc:
        complex_ |= ((flags[first] & MAYBE) != 0) | (ccc[first] != 0)
    if lowercase:
        complex_ |= (first == SIGMA) | (first == DOTTED_I)
    final = first.copy()
    if lowercase:
        low = final < len(lower)
        final[low] = lower[final[low]]
    if strip_punct:
        final[(flags[final] & PUNCT) != 0] = 32
    if collapse:
        final[(flags[final] & SPACE) != 0] = 32
    word = final | (flags[first].astype(np.uint32) << np.uint32(T_SHIFT))
    which = np.flatnonzero(complex_)
    seqs = [[32] if strip_punct and flags[c] & PUNCT else (_nfkc_of(t, c) if nfkc else [c]) for c in which.tolist()]
    pool_off = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in seqs], out=pool_off[1:])
    pool = np.array([u for s in seqs for u in s], dtype=np.uint32)
    word[which] = np.uint32(COMPLEX) | np.arange(len(which), dtype=np.uint32)
    return word.astype(np.uint32), pool_off, pool, flags, ccc, lower


def max_growth(tables) -> int:
    """The most UTF-8 bytes one code point can become (a bound for output buffers)."""
    pool_off = tables[1]
    longest = int(np.diff(pool_off).max()) if len(pool_off) > 1 else 1
    return 4 * max(longest, 1) + 3  # each pool code point at most 4 bytes (U+0130's two: 3), and a space owed
