"""Text in -> OPH signature out in one pass (calib/sketches/oph_texts.py) gives the
staged path's bits (chunk_sets, then oph.signatures_permuted) for every text and
representation it takes, refuses (writing nothing) the texts it does not take, and is
the path ``signatures_from_texts`` runs for chunks of str texts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.corpora.real_text import paragraphs
from calib.sketches import minhash, oph, oph_texts
from calib.sketches.represent import Representation
from calib.sketches.shingles import chunk_sets

ASCII = st.text(alphabet=st.sampled_from(list("abcXYZ019 .,;!-'\t\n\r\x0b\x0c\x1c")), max_size=80)
# texts that are not ASCII (1-, 2- and 4-byte str buffers): NFKC, case mappings that change length,
# Unicode whitespace, 4-byte characters, a lone surrogate, final sigmas, marks that compose with the
# letter before them and Hangul jamo (those texts normalized in Python), spacing accents
WIDE = st.text(alphabet=st.sampled_from(list("abc X.'\u00a0\u2028\u3000\u00e9\u00c9\ufb01\uff21\u0130\u00df\u03a3"
                                              "\u0391\U0001F600\u6f22\u0301\u0323\ud800\u1100\u1161\uac00\u00b4"
                                              "\ufdfa\u0416")), max_size=40)


def staged(texts: list[str], rep: Representation) -> np.ndarray:
    sets = chunk_sets(texts, rep, unique=False, permuted=oph.parameters(rep.seed)[:2])
    return oph.signatures_permuted(sets.offsets, sets.hashes, rep.num_perm, rep.seed)


reps = st.builds(Representation, shingle=st.sampled_from(["char", "word"]), k=st.integers(1, 9),
                 hashfunc=st.sampled_from(["xxhash", "mmh3"]), num_perm=st.sampled_from([1, 7, 64, 128, 256]),
                 seed=st.integers(0, 2**31 - 1), scheme=st.just("oph"), lowercase=st.booleans(),
                 collapse_ws=st.booleans(), strip_punct=st.booleans())


@given(st.lists(ASCII, min_size=1, max_size=12), reps)
@settings(max_examples=300, deadline=None)
def test_one_pass_gives_the_staged_bits(texts, rep):
    out = np.full((len(texts), rep.num_perm), 7, dtype=np.uint32)
    assert oph_texts.signatures_into(texts, rep, out)
    assert np.array_equal(out, staged(texts, rep))


@pytest.mark.parametrize("rep", [Representation(shingle="char", k=5, num_perm=256, scheme="oph"),
                                 Representation(shingle="word", k=3, num_perm=128, scheme="oph", strip_punct=True)],
                         ids=str)
def test_real_texts(rep):
    texts = paragraphs()
    texts = texts[:2000] + [t for t in texts if not t.isascii()]  # all 23 paragraphs that are not ASCII
    assert any(not t.isascii() for t in texts)
    texts += ["\n\n".join(texts[i:i + 9]) for i in range(0, 900, 9)] + ["", " ", "ab"]
    out = np.empty((len(texts), rep.num_perm), dtype=np.uint32)
    assert oph_texts.signatures_into(texts, rep, out)
    assert np.array_equal(out, staged(texts, rep))


class Sub(str):
    pass


@given(st.lists(st.one_of(ASCII, WIDE), min_size=1, max_size=12), reps)
@settings(max_examples=200, deadline=None)
def test_texts_that_are_not_ascii_give_the_staged_bits_too(texts, rep):
    out = np.full((len(texts), rep.num_perm), 7, dtype=np.uint32)
    assert oph_texts.signatures_into(texts, rep, out)
    assert np.array_equal(out, staged(texts, rep))


@pytest.mark.parametrize("texts", [["abc", Sub("def")], ["d\u00e9f", Sub("d\u00e9f")], ["abc", None], ["x", 12], []],
                         ids=["str subclass", "non-ASCII str subclass", "None", "int", "empty"])
def test_refuses_what_it_does_not_take_and_writes_nothing(texts):
    rep = Representation(shingle="char", k=3, num_perm=16, scheme="oph")
    out = np.full((len(texts), 16), 7, dtype=np.uint32)
    assert not oph_texts.signatures_into(texts, rep, out)
    assert (out == 7).all()


def test_signatures_from_texts_takes_it_for_str_chunks_and_the_staged_path_for_the_rest(monkeypatch):
    rep = Representation(shingle="char", k=5, num_perm=64, scheme="oph")
    ascii_texts, mixed = ["the same text", "another one"], ["the same text", "caf\u00e9 au lait"]
    others = ["the same text", Sub("caf\u00e9 au lait")]
    want = {tuple(t): staged(t, rep) for t in (ascii_texts, mixed)}

    def no_staged(*a, **k):
        raise AssertionError("staged path used")

    monkeypatch.setattr(minhash, "chunk_sets", no_staged)
    assert np.array_equal(minhash.signatures_from_texts(ascii_texts, rep), want[tuple(ascii_texts)])
    assert np.array_equal(minhash.signatures_from_texts(mixed, rep), want[tuple(mixed)])
    with pytest.raises(AssertionError, match="staged path used"):
        minhash.signatures_from_texts(others, rep)
    monkeypatch.undo()
    assert np.array_equal(minhash.signatures_from_texts(others, rep), want[tuple(mixed)])


def test_many_chunks_at_one_and_two_threads_give_the_staged_bits():
    """Real documents, some not ASCII, over several chunks (and batch sizes that cut them) at one and two
    threads: the same rows as the staged path over the whole corpus."""
    import numba

    paras = paragraphs()
    texts = ["\n\n".join(paras[i:i + 6]) for i in range(0, 18_000, 6)]
    assert sum(not t.isascii() for t in texts) >= 10
    rep = Representation(shingle="char", k=5, num_perm=128, scheme="oph", seed=3)
    want = staged(texts, rep)
    old = numba.get_num_threads()
    try:
        for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(threads)
            for batch_size in (20_000, 77):
                assert np.array_equal(minhash.signatures_from_texts(texts, rep, batch_size=batch_size), want)
    finally:
        numba.set_num_threads(old)
