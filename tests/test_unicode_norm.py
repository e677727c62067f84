"""Normalization of any Unicode text in compiled code (calib/sketches/unicode_norm.py, read by
encode and oph_texts from the str objects' own buffers) gives exactly the bytes of Python's
``normalize`` under every normalization setting, and hands to Python only the texts whose
NFKC needs their neighbours."""

from __future__ import annotations

import itertools
import sys
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calib.sketches import encode as encode_module
from calib.sketches import unicode_tables
from calib.sketches.encode import encode
from calib.sketches.represent import Representation, normalize
from calib.sketches.unicode_norm import CONTEXT, NO_ROOM, normalize_cps

SETTINGS = list(itertools.product((True, False), repeat=4))  # lowercase, nfkc, strip_punct, collapse_ws


def rep_of(setting, shingle="char") -> Representation:
    lowercase, nfkc, strip_punct, collapse_ws = setting
    return Representation(shingle=shingle, lowercase=lowercase, nfkc=nfkc, strip_punct=strip_punct,
                          collapse_ws=collapse_ws)


def reference(text: str, rep: Representation) -> bytes:
    return normalize(text, rep).encode("utf-8", "surrogatepass")


def compiled(text: str, rep: Representation) -> bytes | int:
    """The kernel's bytes for ``text`` read as UTF-32 code points, or CONTEXT."""
    collapse = rep.collapse_ws or rep.shingle == "word"
    tables = unicode_tables.kernel_tables(rep.lowercase, rep.nfkc, rep.strip_punct, collapse)
    src = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    dst = np.empty(len(src) * unicode_tables.max_growth(tables) + 8, dtype=np.uint8)
    tab = encode_module.ascii_table(rep)[0]
    m = normalize_cps(src, tab, *tables, rep.lowercase, rep.strip_punct, collapse, rep.nfkc, dst)
    assert m != NO_ROOM
    return m if m == CONTEXT else dst[:m].tobytes()


# Code points where a rule depends on context or changes a length: combining sequences (composing,
# out of canonical order, after spacing accents that NFKC turns into a space and a mark), Hangul
# jamo and syllables, the capital sigma and what decides its final form (cased letters,
# case-ignorable apostrophes, soft hyphen, combining marks, modifier letters; U+03F9 and
# U+1D6BA that NFKC makes a sigma), NFKC expansions (U+FDFA is 18 code points), the dotted
# capital I, Unicode whitespace, punctuation and symbols, lone surrogates and astral characters.
SPECIAL = ([chr(c) for c in (0x301, 0x300, 0x308, 0x323, 0x327, 0x302, 0x345, 0x344, 0x94D, 0x93C, 0xE38, 0x64B,
                             0x651, 0x5B0, 0x1EB9, 0xB47, 0xB3E, 0xB4B, 0xE9, 0x65, 0xB4, 0xA8, 0x385, 0x2D9)]
           + [chr(c) for c in (0x1100, 0x1112, 0x1161, 0x1175, 0x11A8, 0x11C2, 0xAC00, 0xAC01, 0xD7A3, 0x3131)]
           + [chr(c) for c in (0x3A3, 0x3C3, 0x3C2, 0x3F9, 0x1D6BA, 0x391, 0x3B1, 0x27, 0x2019, 0xAD, 0x2BC, 0x2E,
                               0x3A, 0xB7, 0x1D2C, 0x2D0)]
           + [chr(c) for c in (0xFDFA, 0xFB01, 0xFF21, 0x2460, 0x3392, 0x1F160, 0xBD, 0x2026, 0x2025, 0xFE49, 0x130,
                               0xDF, 0x1E9E, 0x212A, 0x2126, 0x1E921, 0x10400)]
           + [chr(c) for c in encode_module.WHITESPACE] + list("aZ09 .,!-_'\"\t\n\x00")
           + ["\ud800", "\udfff", "\U0001F600", "\U00020000", "\U000E0001", "\u200b", "\u200d", "\u180e"])
TEXT = st.text(alphabet=st.one_of(st.characters(), st.sampled_from(SPECIAL)), max_size=40)


@given(TEXT, st.sampled_from(SETTINGS))
@settings(max_examples=1500, deadline=None)
def test_kernel_gives_pythons_bytes_or_hands_the_text_to_python(text, setting):
    rep = rep_of(setting)
    got = compiled(text, rep)
    if got == CONTEXT:
        assert rep.nfkc  # only NFKC looks across code points; Python must then change something or keep it
        return
    assert got == reference(text, rep)


@given(st.lists(TEXT, min_size=1, max_size=8), st.sampled_from(SETTINGS), st.sampled_from(["char", "word"]))
@settings(max_examples=400, deadline=None)
def test_str_buffers_of_every_kind_give_pythons_bytes(texts, setting, shingle):
    """encode reads each str in its own buffer (ASCII, 1, 2 or 4 bytes a character); the texts the
    kernel hands back are normalized in Python and spliced in place."""
    rep = rep_of(setting, shingle)
    assert encode_module._encode_strs(texts, rep) is not None
    buf, off = encode(texts, rep)
    assert [buf[off[d]:off[d + 1]].tobytes() for d in range(len(texts))] == [reference(t, rep) for t in texts]


@pytest.mark.parametrize("text", ["\u00e9t\u00e9 \u00c9T\u00c9", "\u0416\u0416 \u0436\u043e\u0440\u0430",
                                  "\u6f22\u5b57 \uff21\uff22", "\U0001F600 \U0001D400", "\u039f\u0394\u039f\u03a3. \u03a3",
                                  "\ud55c\uad6d\uc5b4 \ud55c\uae00", "caf\u00e9 \u00b4 \u00a8 \u00b8", "\u0915\u094d\u0937"])
def test_common_scripts_stay_in_compiled_code(text):
    """Letters with accents, Cyrillic, CJK, astral letters, Greek capitals with sigmas, Hangul
    syllables, spacing accents (NFKC: a space and a mark), Devanagari with a virama."""
    for setting in SETTINGS:
        rep = rep_of(setting)
        assert compiled(text, rep) == reference(text, rep)


@pytest.mark.parametrize("text", ["e\u0301", "\u1100\u1161", "\uac00\u11a8", "a\u0323\u0301\u0302",
                                  "\u1eb9\u0302", "\u0b47\u0b3e", "a\u0301\u0323"])
def test_composition_across_code_points_goes_to_python(text):
    rep = rep_of((True, True, False, True))
    assert unicodedata.normalize("NFKC", text) != text or text == "a\u0301\u0323"
    assert compiled(text, rep) == CONTEXT
    assert compiled(text, rep_of((True, False, False, True))) == reference(text, rep_of((True, False, False, True)))


@pytest.mark.slow
def test_every_code_point_alone_and_after_every_starter_that_composes():
    """Each of the 1.1 M code points alone under the default setting and with punctuation
    stripped; then every code point that may compose after a letter that decomposes or starts
    a composition pair, an inert one, a space and a Hangul syllable."""
    for setting in [(True, True, False, True), (True, True, True, False)]:
        rep = rep_of(setting)
        texts = [chr(c) for c in range(sys.maxunicode + 1)]
        buf, off = encode(texts, rep)
        got = [buf[off[d]:off[d + 1]].tobytes() for d in range(len(texts))]
        assert got == [reference(t, rep) for t in texts]
    flags = unicode_tables.base()["flags"]
    maybe = np.flatnonzero(flags & unicode_tables.MAYBE).tolist()
    firsts = sorted({int(d.split()[0], 16) for c in range(sys.maxunicode + 1)
                     if (d := unicodedata.decomposition(chr(c))) and not d.startswith("<") and len(d.split()) == 2})
    starters = firsts[::7] + [0x20, 0x61, 0x6F, 0x436, 0x1100, 0xAC00, 0xAC01, 0xE9, 0x1EB9, 0xB47, 0x6F22]
    texts = [chr(s) + chr(u) for s in starters for u in maybe] + [chr(s) + "\u0323" + chr(u) for s in starters
                                                                   for u in maybe[::5]]
    rep = rep_of((True, True, False, True))
    buf, off = encode(texts, rep)
    assert [buf[off[d]:off[d + 1]].tobytes() for d in range(len(texts))] == [reference(t, rep) for t in texts]


def test_flags_against_unicodedata():
    """MAYBE holds every code point NFKC composes with a letter before it; INERT starters compose
    with nothing that follows (checked against every MAYBE code point)."""
    flags = unicode_tables.base()["flags"]
    maybe = np.flatnonzero(flags & unicode_tables.MAYBE).tolist()
    for c in range(sys.maxunicode + 1):
        d = unicodedata.decomposition(chr(c))
        if d and not d.startswith("<") and len(d.split()) == 2 and unicodedata.normalize("NFC", chr(c)) == chr(c):
            assert flags[int(d.split()[1], 16)] & unicode_tables.MAYBE, hex(c)
    inert = np.flatnonzero(flags & unicode_tables.INERT)
    for s in inert[::997].tolist() + [0x20, 0x61 + 25]:
        if flags[s] & unicode_tables.INERT:
            for u in maybe:
                assert unicodedata.normalize("NFC", chr(s) + chr(u)) == unicodedata.normalize("NFC", chr(s)) + \
                    unicodedata.normalize("NFC", chr(u)), (hex(s), hex(u))


def test_tables_are_cached_on_disk_by_version(tmp_path, monkeypatch):
    monkeypatch.setenv("CALIB_CACHE_DIR", str(tmp_path))
    path = unicode_tables._cache_file()
    assert unicodedata.unidata_version in path.name and f"py{sys.version_info[0]}.{sys.version_info[1]}" in path.name
    before = unicode_tables.base()  # this process's tables (another cache folder)
    # a file as this user's calib writes it (with its sha256), of other tables: read back as they are
    path.write_bytes(unicode_tables._pack({k: v[:0] if k == "nfkc_cp" else v for k, v in before.items()}))
    unicode_tables.base.cache_clear()
    try:
        assert len(unicode_tables.base()["nfkc_cp"]) == 0  # read from the file, not scanned again
    finally:
        unicode_tables.base.cache_clear()
