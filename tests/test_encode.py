"""Compiled normalization + encoding (calib.sketches.encode) is bit-identical to the
Python rules of calib.sketches.represent.normalize, on arbitrary text and on the real
texts shipped in data/base, at one and two threads."""

from __future__ import annotations

import itertools
import sys

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.corpora.real_text import paragraphs
from calib.sketches import encode as encode_module
from calib.sketches.encode import WHITESPACE, encode
from calib.sketches.represent import Representation, normalize

R = Representation
OPTIONS = [R(lowercase=lw, nfkc=nf, strip_punct=sp, collapse_ws=ws, shingle=sh)
           for lw, nf, sp, ws, sh in itertools.product((True, False), (True, False), (True, False), (True, False),
                                                       ("word", "char"))]


def reference(texts: list[str], rep: Representation) -> list[bytes]:
    return [normalize(t, rep).encode("utf-8", "surrogatepass") for t in texts]


def split(buf: np.ndarray, off: np.ndarray) -> list[bytes]:
    assert buf.dtype == np.uint8 and off.dtype == np.int64 and off[0] == 0 and off[-1] == len(buf)
    return [buf[off[d]:off[d + 1]].tobytes() for d in range(len(off) - 1)]


def test_whitespace_table_is_what_str_split_splits_on():
    assert WHITESPACE == tuple(c for c in range(sys.maxunicode + 1) if chr(c).isspace())
    for c in WHITESPACE:
        assert f"a{chr(c)}b".split() == ["a", "b"]


# Characters that exercise every branch: ASCII case, punctuation and the six
# ASCII-range whitespace controls, Unicode whitespace of 2 and 3 UTF-8 bytes,
# NFKC-changed letters (ligature, full-width, U+FE49 that NFKC splits into a
# space and a combining mark), case mappings that change length, 4-byte emoji,
# lone surrogates (encoded with surrogatepass), NUL.
SPECIAL = list("aZ09 .,!-_'\"`~\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x00") + [
    "\u0085", "\u00a0", "\u1680", "\u2000", "\u200a", "\u200b", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000",
    "é", "É", "ﬁ", "Ａ", "\ufe49", "İ", "ß", "ẞ", "Σ", "K", "😀", "漢", "\u0301", "\ud800", "\udfff", "\u180e"]
texts_st = st.lists(st.text(alphabet=st.one_of(st.characters(), st.sampled_from(SPECIAL)), max_size=40),
                    min_size=1, max_size=8)


@given(texts_st, st.sampled_from(OPTIONS))
@settings(max_examples=400, deadline=None)
@pytest.mark.slow
def test_bit_identical_to_python_rules_on_arbitrary_text(texts, rep):
    buf, off = encode(texts, rep)
    assert split(buf, off) == reference(texts, rep)


@given(st.lists(st.text(alphabet=st.sampled_from(SPECIAL), max_size=60), min_size=1, max_size=8),
       st.sampled_from(OPTIONS))
@settings(max_examples=300, deadline=None)
@pytest.mark.slow
def test_bit_identical_on_dense_special_characters(texts, rep):
    buf, off = encode(texts, rep)
    assert split(buf, off) == reference(texts, rep)


@given(st.lists(st.text(alphabet=st.sampled_from(list("aZ. \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f")), max_size=50),
                min_size=1, max_size=8), st.sampled_from(OPTIONS))
@settings(max_examples=300, deadline=None)
def test_ascii_runs_of_whitespace_at_either_end_and_between(texts, rep):
    """ASCII batches take the branch-free map-and-collapse path: every run, leading or trailing."""
    buf, off = encode(texts, rep)
    assert split(buf, off) == reference(texts, rep)


@pytest.mark.parametrize("rep", [R(shingle="char"), R(), R(strip_punct=True, nfkc=False),
                                 R(lowercase=False, collapse_ws=False, shingle="char")], ids=str)
def test_real_texts_at_one_and_two_threads(rep):
    texts = paragraphs()  # every paragraph of data/base (18,790), plus some multi-paragraph documents
    texts = texts + ["\n\n".join(texts[i:i + 7]) for i in range(0, 7000, 7)]
    assert any(not t.isascii() for t in texts) and any(t.isascii() for t in texts)
    ref = reference(texts, rep)
    old = numba.get_num_threads()
    try:
        for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(threads)
            buf, off = encode(texts, rep)
            assert split(buf, off) == ref, threads
    finally:
        numba.set_num_threads(old)


class Sub(str):
    """A str subclass: CPython keeps its characters apart from its header, so it takes the copying path."""


@given(st.lists(st.text(alphabet=st.one_of(st.characters(max_codepoint=127), st.sampled_from(SPECIAL)), max_size=60),
                min_size=1, max_size=10), st.sampled_from(OPTIONS))
@settings(max_examples=300, deadline=None)
def test_str_objects_read_in_place_give_the_copying_paths_bytes(texts, rep):
    """Compact ASCII str objects are read in their own buffers by the kernel, the other texts of the
    chunk normalized in Python beside them; the same texts as str subclass objects go through
    ``"".join(...).encode()``: both give the Python rules' bytes."""
    assert encode_module.STR_DATA > 0  # this CPython's layout passed the import-time check: the fast path runs
    assert encode_module._encode_strs(texts, rep) is not None
    assert encode_module._encode_strs([Sub(t) for t in texts], rep) is None
    got = split(*encode(texts, rep))
    assert got == split(*encode([Sub(t) for t in texts], rep)) == reference(texts, rep)


def test_only_the_texts_whose_nfkc_needs_their_neighbours_are_normalized_in_python(monkeypatch):
    rep = R(shingle="char")
    composing = ["e\u0301t\u00e9", "\u1100\u1161"]  # a mark and a Hangul vowel composing with the letter before
    texts = ["Abc  D", "d\u00e9F", "x" * 1000, composing[0], "\U0001F600 Z \u03a3\u03a3", "", composing[1],
             "\ufdfa \u00bd \uff21"]
    seen = []
    python_part = encode_module._python_part
    monkeypatch.setattr(encode_module, "_python_part", lambda t, *a: seen.append(t) or python_part(t, *a))
    assert split(*encode(texts, rep)) == reference(texts, rep)
    assert seen == composing
    address, wide = encode_module.str_sources(texts)
    assert address.tolist() == [id(t) for t in texts] and wide
    assert not encode_module.str_sources([texts[0], texts[2]])[1]  # all ASCII: no Unicode tables needed
    # a chunk holding an object that is not a str itself goes to the copying path before any text is
    # normalized in Python: each text that is not ASCII once, not once a path
    seen.clear()
    others = texts + [Sub("x")]
    assert encode_module.str_sources(others) is None
    assert split(*encode(others, rep)) == reference(others, rep)
    assert seen == [t for t in texts if not t.isascii()]


def test_objects_that_are_not_compact_ascii_str_take_the_copying_path():
    rep = R(shingle="char")
    for texts in (["abc", Sub("def")], ["abc", "x" * 100_000, Sub("\U0001F600")], [Sub("d\u00e9f"), "abc"]):
        assert encode_module._encode_strs(texts, rep) is None
        assert split(*encode(texts, rep)) == reference(texts, rep)
    for texts in (["abc", None], ["abc", 5, "x"], [b"abc"], ["d\u00e9f", None]):  # only headers are read
        assert encode_module._encode_strs(texts, rep) is None
        with pytest.raises(TypeError):
            encode(texts, rep)


def test_edge_cases():
    rep = R(shingle="char")
    assert split(*encode([], rep)) == []
    texts = ["", " ", "\u3000", "A", " A\u00a0 B ", "x\u2028\u2029y", "\u00a0\u00a0"]
    assert split(*encode(texts, rep)) == [b"", b"", b"", b"a", b"a b", b"x y", b""]


def test_lower_table_facts_hold_for_this_python():
    # calib.sketches.encode lowercases non-ASCII texts by code point in the kernel; that
    # is str.lower() only because of these facts about the running Python
    from calib.sketches.encode import _lower_table

    table = _lower_table()
    every = [c for c in range(sys.maxunicode + 1)]
    changed = [c for c in every if chr(c).lower() != chr(c)]
    assert max(changed) == len(table) - 1
    assert [c for c in every if len(chr(c).lower()) != 1] == [0x130]
    assert all(chr(c).lower().lower() == chr(c).lower() for c in changed)  # idempotent
    assert all(table[c] == ord(chr(c).lower()[0]) for c in changed)


@pytest.mark.parametrize("rep", [R(), R(shingle="char"), R(shingle="char", collapse_ws=False), R(nfkc=False)])
def test_every_code_point_lower_changes_the_length_of(rep):
    # each letter whose lowercase has another UTF-8 length, alone, between words, twice,
    # and in texts with a capital sigma (handed to Python's lower: final sigma depends on context)
    odd = [chr(c) for c in range(sys.maxunicode + 1)
           if chr(c).lower() != chr(c) and len(chr(c).lower().encode()) != len(chr(c).encode())]
    assert len(odd) >= 20
    texts = [c for c in odd] + [f"Ab {c}{c} cd" for c in odd] + ["".join(odd)]
    texts += ["ΟΔΟΣ ΟΔΟΣ.", "ΑΣ", "Σ", "AΣb", "ȺΣ İ", "ΣΑΣ  σ", "ΑϹ", "ϹϹ b"]  # NFKC makes U+03F9 a sigma
    buf, off = encode(texts, rep)
    assert split(buf, off) == reference(texts, rep)
