"""Representation config, normalization and the reference shingler.

Expected values are written by hand (or derived from hashlib / the stated
rules), never taken from the code under test.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calib.sketches.represent import Representation, normalize, shingle_strings

ROOT = Path(__file__).resolve().parents[1]

R = Representation

# The canonical JSON of the default Representation, written out by hand from
# the documented defaults (keys sorted, no spaces).
DEFAULT_JSON = ('{"collapse_ws":true,"hashfunc":"xxhash","k":5,"lowercase":true,"nfkc":true,'
                '"num_perm":128,"scheme":"prefix","seed":1,"shingle":"word","strip_punct":false}')
# The fingerprint is sha256 of the same JSON with renamed values under their
# first names (scheme 'prefix' hashed as 'fast'), computed once and frozen: a
# change means every stored result's fingerprint silently changes.
HASHED_JSON = DEFAULT_JSON.replace('"prefix"', '"fast"')
DEFAULT_FINGERPRINT = "bb8f7be452ce"


# ------------------------------------------------------------------ validation

BAD_FIELDS = [
    ("k", 0), ("k", -3), ("k", 1.5), ("k", "5"), ("k", True), ("k", None),
    ("shingle", "line"), ("shingle", "Word"), ("shingle", None),
    ("hashfunc", "md5"), ("hashfunc", "XXHASH"), ("hashfunc", None),
    ("num_perm", 0), ("num_perm", -1), ("num_perm", 8193), ("num_perm", 128.0), ("num_perm", True),
    ("seed", -1), ("seed", 2**32), ("seed", 1.0), ("seed", False),
    ("scheme", "minhash"), ("scheme", ""),
    ("lowercase", 1), ("lowercase", "yes"), ("nfkc", 0), ("nfkc", None),
    ("strip_punct", "false"), ("collapse_ws", 1.0),
]


@pytest.mark.parametrize("field,value", BAD_FIELDS)
def test_bad_field_raises_naming_the_field(field, value):
    with pytest.raises(ValueError, match=rf"Representation\.{field}\b") as info:
        R(**{field: value})
    assert repr(value) in str(info.value)


@pytest.mark.parametrize("field,value", [("k", 1), ("k", 1000), ("num_perm", 1), ("num_perm", 8192),
                                         ("seed", 0), ("seed", 2**32 - 1), ("shingle", "char"),
                                         ("hashfunc", "sha1"), ("hashfunc", "mmh3"), ("scheme", "datasketch")])
def test_boundary_values_accepted(field, value):
    assert getattr(R(**{field: value}), field) == value


def test_frozen_and_hashable():
    rep = R()
    with pytest.raises(Exception):
        rep.k = 3  # type: ignore[misc]
    assert hash(rep) == hash(R())
    assert {rep, R()} == {rep}
    assert R(k=3) != rep


# ----------------------------------------------------------------- fingerprint

def test_default_canonical_json_and_fingerprint_are_known():
    rep = R()
    assert rep.canonical_json() == DEFAULT_JSON
    assert hashlib.sha256(HASHED_JSON.encode()).hexdigest()[:12] == DEFAULT_FINGERPRINT
    assert rep.fingerprint() == DEFAULT_FINGERPRINT
    assert R(scheme="fast").fingerprint() == DEFAULT_FINGERPRINT  # the old name means the same decision
    assert R(scheme="oph").fingerprint() != DEFAULT_FINGERPRINT


@pytest.mark.parametrize("hashseed", ["0", "1", "4242"])
def test_fingerprint_same_in_fresh_interpreter(hashseed):
    env = dict(os.environ, PYTHONHASHSEED=hashseed, PYTHONPATH=str(ROOT))
    code = ("from calib.sketches.represent import Representation as R;"
            "print(R().fingerprint());"
            "print(R(shingle='char', k=3, seed=7).fingerprint())")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out[0] == DEFAULT_FINGERPRINT
    assert out[1] == R(shingle="char", k=3, seed=7).fingerprint()


ALT_VALUES = {"lowercase": False, "nfkc": False, "strip_punct": True, "collapse_ws": False,
              "shingle": "char", "k": 4, "hashfunc": "mmh3", "num_perm": 127, "seed": 2, "scheme": "datasketch"}


def test_fingerprint_differs_when_any_field_changes():
    assert set(ALT_VALUES) == set(R().to_dict())  # every field is exercised
    fps = {"default": R().fingerprint()}
    for name, value in ALT_VALUES.items():
        fps[name] = R(**{name: value}).fingerprint()
    assert len(set(fps.values())) == len(fps), fps
    assert all(len(f) == 12 and int(f, 16) >= 0 for f in fps.values())


def test_fingerprint_is_sha256_of_sorted_compact_json():
    import json
    for scheme, hashed in (("datasketch", "datasketch"), ("oph", "oph"), ("prefix", "fast")):
        rep = R(shingle="char", k=7, hashfunc="sha1", seed=99, strip_punct=True, scheme=scheme)
        d = rep.to_dict()
        assert d["scheme"] == scheme  # written under its current name ...
        d["scheme"] = hashed          # ... hashed under its first one
        expected = hashlib.sha256(json.dumps(d, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:12]
        assert rep.fingerprint() == expected


def test_shingling_fingerprint_ignores_signature_fields_only():
    a = R(num_perm=64, seed=5, scheme="datasketch")
    assert a.shingling_fingerprint() == R().shingling_fingerprint()
    assert R(k=4).shingling_fingerprint() != R().shingling_fingerprint()
    assert R(hashfunc="sha1").shingling_fingerprint() != R().shingling_fingerprint()


reps = st.builds(R, lowercase=st.booleans(), nfkc=st.booleans(), strip_punct=st.booleans(),
                 collapse_ws=st.booleans(), shingle=st.sampled_from(["word", "char"]),
                 k=st.integers(1, 50), hashfunc=st.sampled_from(["xxhash", "sha1", "mmh3"]),
                 num_perm=st.integers(1, 8192), seed=st.integers(0, 2**32 - 1),
                 scheme=st.sampled_from(["prefix", "fast", "datasketch", "oph"]))


@given(reps)
@settings(max_examples=100, deadline=None)
def test_dict_round_trip(rep):
    d = rep.to_dict()
    assert set(d) == set(ALT_VALUES)
    back = R.from_dict(d)
    assert back == rep
    assert back.fingerprint() == rep.fingerprint()
    import json
    assert R.from_dict(json.loads(rep.canonical_json())) == rep


def test_from_dict_unknown_field():
    with pytest.raises(ValueError, match="unknown Representation field.*bogus"):
        R.from_dict({**R().to_dict(), "bogus": 1})
    with pytest.raises(ValueError, match="aa, zz"):
        R.from_dict({"zz": 1, "aa": 2})


def test_from_dict_partial_uses_defaults_and_validates():
    assert R.from_dict({"k": 3}) == R(k=3)
    with pytest.raises(ValueError, match=r"Representation\.k"):
        R.from_dict({"k": 0})


# ------------------------------------------------------------------ normalize

def test_nfkc_fullwidth_and_ligature():
    assert normalize("ＡＢＣ１２３", R(shingle="char")) == "abc123"
    assert normalize("ＡＢＣ", R(shingle="char", lowercase=False)) == "ABC"
    assert normalize("ﬁne ﬂow", R(shingle="char")) == "fine flow"
    # without NFKC the compatibility characters stay
    assert normalize("ﬁne ＡＢＣ", R(shingle="char", nfkc=False)) == "ﬁne ａｂｃ"
    # composition: e + COMBINING ACUTE -> U+00E9
    assert normalize("e\u0301", R(shingle="char")) == "\u00e9"
    assert normalize("e\u0301", R(shingle="char", nfkc=False)) == "e\u0301"


def test_lowercase_flag():
    assert normalize("Hello WORLD Σ", R()) == "hello world σ"
    assert normalize("Hello WORLD", R(lowercase=False)) == "Hello WORLD"


@pytest.mark.parametrize("text,expected", [
    ("Hello, world! (test)", "hello world test"),
    ("end.Start", "end start"),
    ("snake_case-name", "snake case name"),
    ("«quoted»—dash…", "quoted dash"),           # Pi/Pf, Pd, Po
    ("¿qué? ¡sí!", "qué sí"),
    ("a+b=c €5 ©2024 ~x^", "a b c 5 2024 x"),     # Sm, Sc, So, Sk
    ("hi 😀 there", "hi there"),                  # emoji are So
    ("日本語。テスト、です", "日本語 テスト です"),       # CJK full stop / comma (Po)
    ("مرحبا، عالم؟", "مرحبا عالم"),                # Arabic comma and question mark
    ("x ' y \" z", "x y z"),
    ("!!!", ""),
    ("3.14 and 2,5", "3 14 and 2 5"),
])
def test_strip_punct_makes_punctuation_and_symbols_spaces(text, expected):
    assert normalize(text, R(strip_punct=True)) == expected
    assert normalize(text, R(strip_punct=True, shingle="char")) == expected


def test_punct_table_is_the_scan_of_this_unicode(monkeypatch):
    """The saved P*/S* runs equal a scan of every code point, and punct_re's own scan (no table, as in a
    snippet run without calib) builds the same pattern."""
    from calib.sketches import punct_table, represent
    if punct_table.UNIDATA_VERSION != unicodedata.unidata_version:
        pytest.skip("the table is of another Unicode version (punct_re scans)")
    assert punct_table.ranges() == punct_table.scan()
    fast = represent.punct_re()
    represent.punct_re.cache_clear()
    monkeypatch.setattr(punct_table, "UNIDATA_VERSION", "none")
    try:
        assert represent.punct_re().pattern == fast.pattern
    finally:
        represent.punct_re.cache_clear()


def test_punct_kept_without_strip():
    assert normalize("Hello, world!", R()) == "hello, world!"
    assert normalize("a_b", R(shingle="char")) == "a_b"


def test_strip_punct_keeps_letters_digits_of_all_scripts():
    text = "Ünïcödé ΑΒΓ кириллица עברית 漢字 ひらがな ١٢٣ ½"
    out = normalize(text, R(strip_punct=True, lowercase=False, nfkc=False))
    assert out == text


# Documented rule: only Unicode categories P* and S* become spaces. Combining
# marks (Mn/Mc), format characters (Cf) and controls (Cc) are neither.
@pytest.mark.parametrize("text", [
    "हिंदी भाषा",           # Devanagari vowel signs (Mc) and anusvara (Mn)
    "ที่นี่ ภาษา",            # Thai vowel and tone marks (Mn)
    "שָׁלוֹם",                 # Hebrew points (Mn)
    "a\u0301\u0302",         # stacked combining marks that NFKC cannot compose
])
def test_strip_punct_keeps_combining_marks(text):
    rep = R(strip_punct=True)
    expected = normalize(text, R())  # same pipeline without the punctuation step
    assert not any(unicodedata.category(c)[0] in "PS" for c in expected)
    assert normalize(text, rep) == expected


def test_strip_punct_keeps_format_characters():
    text = "می\u200cخواهم"  # Persian 'I want', ZERO WIDTH NON-JOINER inside the word
    assert normalize(text, R(strip_punct=True)).split() == [text]


def test_whitespace_collapse_char_mode():
    text = "  a \t\n b\u00a0\u3000c\r\n "
    assert normalize(text, R(shingle="char")) == "a b c"
    # without collapse, char mode keeps every whitespace character
    assert normalize(text, R(shingle="char", collapse_ws=False, nfkc=False)) == text
    # NFKC maps NBSP and ideographic space to U+0020
    assert normalize(text, R(shingle="char", collapse_ws=False)) == "  a \t\n b  c\r\n "


def test_word_mode_always_single_spaces():
    text = " one\ttwo\n\nthree \u2003 four\x1c "
    for collapse in (True, False):
        assert normalize(text, R(collapse_ws=collapse)) == "one two three four"


texts = st.text(alphabet=st.one_of(
    st.characters(codec="utf-8"),
    st.sampled_from(list(" \t\n\r\x00\x0b\x0c\u00a0\u2003\u3000.,!?-_'\"«»😀👍🏽\u200d\u0301\u0308ﬁＡβ漢字مرحباשלום")),
), max_size=40)


@given(texts, st.booleans(), st.booleans(), st.booleans())
@settings(max_examples=200, deadline=None)
def test_word_mode_normal_form(text, lower, nfkc, strip):
    out = normalize(text, R(lowercase=lower, nfkc=nfkc, strip_punct=strip, collapse_ws=False))
    assert out == out.strip()
    assert "  " not in out
    assert all(not c.isspace() or c == " " for c in out)


@given(texts)
@settings(max_examples=200, deadline=None)
def test_strip_punct_output_has_no_punct_or_symbol(text):
    out = normalize(text, R(strip_punct=True, shingle="char"))
    assert not any(unicodedata.category(c)[0] in "PS" for c in out)
    assert "_" not in out


@given(texts)
@settings(max_examples=200, deadline=None)
def test_char_mode_without_collapse_keeps_length_without_other_steps(text):
    assert normalize(text, R(shingle="char", collapse_ws=False, lowercase=False, nfkc=False)) == text


# ------------------------------------------------------------ shingle_strings

@pytest.mark.parametrize("rep,text,expected", [
    (R(k=3), "a b c d", ["a b c", "b c d"]),
    (R(k=3), "a b", ["a b"]),                            # fewer than k units: whole text
    (R(k=3), "a b c", ["a b c"]),                        # exactly k: one shingle
    (R(k=1), "x y x", ["x", "y", "x"]),                  # repeats kept
    (R(k=2), "  The  Cat\tsat \n", ["the cat", "cat sat"]),
    (R(k=5), "", []),
    (R(k=1), "", []),
    (R(k=2), " \t\n ", []),
    (R(k=2, strip_punct=True), "!!! ...", []),
    (R(k=2, strip_punct=True), "Hi, there! You.", ["hi there", "there you"]),
    (R(k=2), "Hi, there!", ["hi, there!"]),
    (R(shingle="char", k=3), "abcd", ["abc", "bcd"]),
    (R(shingle="char", k=3), "ab", ["ab"]),
    (R(shingle="char", k=3), "abc", ["abc"]),
    (R(shingle="char", k=3), "", []),
    (R(shingle="char", k=2), "a  b", ["a ", " b"]),      # collapsed first
    (R(shingle="char", k=2, collapse_ws=False), "a  b", ["a ", "  ", " b"]),
    (R(shingle="char", k=1), "😀😀", ["😀", "😀"]),       # code points, not bytes
    (R(shingle="char", k=2), "漢字かな", ["漢字", "字か", "かな"]),
    (R(shingle="char", k=2), "ＡＢ", ["ab"]),
    (R(shingle="char", k=2, nfkc=False, lowercase=False), "ＡＢ", ["ＡＢ"]),
    (R(shingle="char", k=4), "  x  ", ["x"]),
    (R(k=2), "漢字 かな カナ", ["漢字 かな", "かな カナ"]),
])
def test_shingle_strings_hand_cases(rep, text, expected):
    assert shingle_strings(text, rep) == expected


@given(texts, st.sampled_from(["word", "char"]), st.integers(1, 6), st.booleans(), st.booleans())
@settings(max_examples=300, deadline=None)
def test_shingles_tile_the_normalized_text(text, shingle, k, strip, collapse):
    rep = R(shingle=shingle, k=k, strip_punct=strip, collapse_ws=collapse)
    norm = normalize(text, rep)
    sh = shingle_strings(text, rep)
    units = (norm.split(" ") if norm else []) if shingle == "word" else list(norm)
    joiner = " " if shingle == "word" else ""
    n = len(units)
    expected_count = 0 if n == 0 else (1 if n < k else n - k + 1)
    assert len(sh) == expected_count
    if n == 0:
        return
    if n < k:
        assert sh == [norm]
        return
    # every shingle is k units; shingle t starts at unit t; together they rebuild the text
    split = (lambda s: s.split(" ")) if shingle == "word" else list
    pieces = [split(s) for s in sh]
    assert all(len(p) == k for p in pieces)
    rebuilt = [p[0] for p in pieces] + pieces[-1][1:]
    assert joiner.join(rebuilt) == norm


def test_strip_punct_removes_punctuation_that_nfkc_would_split():
    # U+FE49 DASHED OVERLINE (Po) is NFKC " " + U+0305 COMBINING OVERLINE (Mn):
    # found by the hostile-input suite; punctuation as written is removed whole.
    assert unicodedata.normalize("NFKC", "\ufe49") == " \u0305"
    assert normalize(":\ufe49", R(strip_punct=True)) == ""
    assert normalize("a\ufe49b", R(strip_punct=True)) == "a b"
