"""The distinct-line table (calib.sketches.line_table) against the line-by-line reference it replaced
(tests/_boilerplate_reference.py): the same stoplists, counts and stripped texts, byte for byte."""

import itertools

import numpy as np
import pytest
import xxhash

from calib.reading.clough import CLOUGH_DIR
from calib.search.workspace import Workspace
from calib.sketches import line_table
from calib.sketches.boilerplate import Stoplist, count_lines, stoplist
from calib.sketches.line_table import LineTable, normalize_line
from calib.sketches.represent import Representation

import _boilerplate_reference as ref
from _util import needs_clough

BREAKS = ("\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
BODIES = ("menu: Home | About", "MENU  home about", "return", "}", "", "   ", "!!! ---", "...", "\t",
          "ＡＢＣ ﬁle №5", "abc file no5", "ΟΔΟΣ", "οδος", "Straße", "x\u0301", "footer © 2024", "bad \udcff byte")


def _hand_texts(seed: int = 0, n: int = 24) -> list[str]:
    """Documents of the bodies above joined by every kind of line break, some ending without one."""
    rng = np.random.default_rng(seed)
    out = []
    for d in range(n):
        k = int(rng.integers(0, 9))
        lines = [BODIES[i] + BREAKS[j] for i, j in zip(rng.integers(0, len(BODIES), k), rng.integers(0, len(BREAKS), k))]
        if d % 3 == 0 and lines:
            lines[-1] = lines[-1].rstrip("".join(BREAKS)) or "tail"  # a last line without a break
        out.append("".join(lines))
    return out + ["", "\n", "\r\n\r\n", "only one line"]


def _every_normalization():
    for shingle, lower, nfkc, punct, ws in itertools.product(("word", "char"), *[(False, True)] * 4):
        yield Representation(shingle=shingle, k=3, lowercase=lower, nfkc=nfkc, strip_punct=punct, collapse_ws=ws)


def _same_as_reference(corpus, texts, rep, share, table=None, sample_table=None):
    want_st, want = ref.stripped(corpus, texts, rep, share)
    got_st = stoplist(table if table is not None else corpus, rep, share)
    got = got_st.strip_all(sample_table if sample_table is not None else texts, rep)
    assert got_st.lines == want_st.lines and got_st.documents == want_st.documents
    assert got_st.n_docs == want_st.n_docs and got_st.to_json(rep) == want_st.to_json(rep)  # the sha256 hashes this
    assert got == want and all(type(x) is str for x in got)
    kept = sample_table.texts if sample_table is not None else texts
    for g, w in zip(got, kept):  # a text losing no line is kept as it is
        assert g is w or g != w
    return got_st


@pytest.mark.parametrize("rep", list(_every_normalization()), ids=lambda r: r.normalization_label() + r.shingle)
def test_hand_cases_under_every_normalization(rep):
    texts = _hand_texts()
    table = LineTable(texts)
    want = ref.count_lines(texts, rep, {})
    got = count_lines(table, rep)
    assert np.array_equal(got.hashes, want.hashes) and np.array_equal(got.counts, want.counts)
    assert got.hashes.dtype == np.uint64 and got.counts.dtype == np.int64
    stripped_some = False
    for share in (0.0, 0.05, 0.2, 0.5, 1.0):
        st = _same_as_reference(texts, texts, rep, share, table, table)
        stripped_some |= share == 0.05 and len(st) > 0
    assert stripped_some
    # the stoplist of one corpus applied to other texts
    other = _hand_texts(seed=1)
    _same_as_reference(texts, other, rep, 0.05, table, LineTable(other))


def test_a_line_normalizes_with_its_break_as_without_under_a_collapse():
    """What the table's stripping relies on when whitespace is collapsed (line_table's docstring)."""
    for rep in _every_normalization():
        if rep.collapse_ws or rep.shingle == "word":
            for body, brk in itertools.product(BODIES + ("ΑΣ", "aΣ", "ﬀ", "a\u0308", "x\udcff"), BREAKS):
                assert normalize_line(body + brk, rep) == normalize_line(body, rep), (rep, body, brk)


def test_a_stoplist_with_hash_collisions_is_the_reference_one(monkeypatch):
    """Lines of one hash share a count, and the scan for the stoplist's texts stops where the reference's did."""
    for buckets in (2, 3, 5, 11):
        monkeypatch.setattr(line_table, "_line_hash", lambda s, m=buckets: xxhash.xxh3_64_intdigest(s.encode("utf-8", "surrogatepass")) % m)
        texts = _hand_texts(seed=buckets)
        for rep in (Representation(shingle="word", k=3), Representation(shingle="char", k=3, lowercase=False)):
            for share in (0.05, 0.3):
                _same_as_reference(texts, texts, rep, share)


def test_no_text_and_no_line():
    rep = Representation(shingle="word", k=3)
    for texts in ([], [""], ["", ""], ["\n", " \n"]):
        _same_as_reference(texts, texts, rep, 0.1)
        assert count_lines(texts, rep).n_docs == len(texts)


def test_a_loaded_stoplist_strips_as_the_reference():
    rep = Representation(shingle="char", k=3, collapse_ws=False)
    texts = _hand_texts()
    st = Stoplist(0.1, 5, ("return\n", "}", "menu: home | about\r\n"), (3, 3, 3))
    assert st.strip_all(texts, rep) == ref.strip_all(st, texts, rep, {})
    assert [st.strip(t, rep) for t in texts] == ref.strip_all(st, texts, rep, {})


SEARCH_REPS = [Representation(shingle="word", k=5, strip_punct=True, collapse_ws=True),
               Representation(shingle="word", k=5, strip_punct=False, collapse_ws=True),
               Representation(shingle="word", k=5, lowercase=False, strip_punct=True, collapse_ws=True),
               Representation(shingle="char", k=5, strip_punct=True, collapse_ws=True),
               Representation(shingle="char", k=5, collapse_ws=False)]


@pytest.mark.slow
def test_the_shipped_sample_as_the_reference(sample):
    table = LineTable(sample.texts)
    for rep in SEARCH_REPS:
        for share in (0.005, 0.02, 0.2):
            _same_as_reference(sample.texts, sample.texts, rep, share, table, table)


@pytest.mark.slow
@needs_clough
def test_the_clough_corpus_as_the_reference():
    texts = [p.read_text(encoding="utf-8", errors="surrogateescape") for p in sorted(CLOUGH_DIR.glob("*.txt"))]
    for rep in SEARCH_REPS[:2] + SEARCH_REPS[4:]:
        for share in (0.01, 0.05):
            _same_as_reference(texts, texts, rep, share)


def test_workspace_strips_as_the_reference_and_splits_once(sample):
    rep = Representation(shingle="word", k=5, strip_lines=0.02)
    ws = Workspace(sample)
    st, texts = ws.stripped(rep)
    want_st, want = ref.stripped(sample.texts, sample.texts, rep, 0.02)
    assert st.lines == want_st.lines and st.documents == want_st.documents and texts == want
    st2, texts2 = ws.stripped(rep.with_(strip_lines=0.05))  # another share: the same table and normalization
    assert list(ws._lines) == ["sample"] and len(ws._lines["sample"]._norm) == 1
    want_st2, want2 = ref.stripped(sample.texts, sample.texts, rep, 0.05)
    assert st2.lines == want_st2.lines and texts2 == want2
    corpus = sample.texts[::3]  # a named line corpus: counted there, the sample stripped
    ws = Workspace(sample, line_corpus=corpus)
    st, texts = ws.stripped(rep)
    want_st, want = ref.stripped(corpus, sample.texts, rep, 0.02)
    assert st.lines == want_st.lines and st.documents == want_st.documents and st.n_docs == len(corpus)
    assert texts == want
