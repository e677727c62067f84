"""Boilerplate stripping (calib.sketches.boilerplate) against a brute-force reference on the shipped sample's text."""

from collections import Counter

import numpy as np
import pytest

from calib.sketches.boilerplate import Stoplist, shingle_stoplist, stoplist, strip_shingles
from calib.sketches.represent import Representation, normalize
from calib.sketches.shingles import shingle_hashes

REPS = (Representation(shingle="word", k=5),
        # punctuation stripping normalizes slowly (a regex over every line): seconds per case
        pytest.param(Representation(shingle="char", k=5, strip_punct=True, lowercase=False), marks=pytest.mark.slow))


def brute_stoplist(texts, rep, share):
    """Counter of each document's distinct normalized non-empty lines; > share * n and >= 2 (share 0: off)."""
    if share == 0:
        return {}
    df = Counter()
    for t in texts:
        df.update({normalize(line, rep) for line in t.splitlines()} - {""})
    return {x: c for x, c in df.items() if c > share * len(texts) and c >= 2}


def brute_strip(text, rep, stop):
    return "".join(x for x in text.splitlines(keepends=True) if normalize(x, rep) not in stop)


@pytest.mark.parametrize("rep", REPS)
@pytest.mark.parametrize("share", [0.0, 0.005, 0.03, 0.2])
def test_stoplist_and_strip_match_brute_force(sample, rep, share):
    texts = sample.texts
    want = brute_stoplist(texts, rep, share)
    got = stoplist(texts, rep, share)
    assert dict(zip(got.lines, got.documents)) == want
    assert list(got.lines) == sorted(got.lines) and got.n_docs == len(texts)
    if share == 0.03:  # the site header and footers of the boilerplate category recur in ~5% of documents
        assert len(got) >= 3
    for t in texts[:400]:
        assert got.strip(t, rep) == brute_strip(t, rep, set(want))


def test_lines_counted_once_per_document_and_one_document_is_never_boilerplate():
    rep = Representation()
    texts = ["Footer\nbody one\nFooter", "footer\nbody two", "body three", "Only here\nonly HERE"]
    st = stoplist(texts, rep, 0.2)  # limit 0.8 documents, yet a line must be in >= 2 documents
    assert dict(zip(st.lines, st.documents)) == {"footer": 2}
    assert st.strip(texts[0], rep) == "body one\n"
    assert st.strip(texts[3], rep) == texts[3]


def test_empty_after_strip_is_an_empty_set_not_a_dropped_document():
    rep = Representation(shingle="char", k=3)
    texts = ["Menu\nCookies", "Menu\nCookies", "Menu\nreal text here"]
    st = stoplist(texts, rep, 0.5)  # menu (3 docs) and cookies (2 docs) are > 1.5 documents
    stripped = st.strip_all(texts, rep)
    assert stripped == ["", "", "real text here"]
    sets = shingle_hashes(stripped, rep)
    assert sets.n == 3 and list(sets.sizes()[:2]) == [0, 0] and sets.sizes()[2] > 0


def test_deterministic_and_round_trips(sample):
    rep = Representation(shingle="word", k=5)
    a, b = stoplist(sample.texts, rep, 0.01), stoplist(list(reversed(sample.texts)), rep, 0.01)
    assert a.to_json(rep) == b.to_json(rep) and a.sha256(rep) == b.sha256(rep)
    back = Stoplist.from_doc(a.to_doc(rep))
    assert back.lines == a.lines and back.documents == a.documents and back.share == a.share
    with pytest.raises(ValueError, match="field 'lines\\[0\\]'"):
        Stoplist.from_doc({**a.to_doc(rep), "lines": [{"text": 3, "documents": 1}]})
    with pytest.raises(ValueError, match="share in \\[0, 1\\]"):
        stoplist(sample.texts, rep, 1.5)


def test_shingle_stripping_matches_brute_force(sample):
    rep = Representation(shingle="char", k=5)
    sets = shingle_hashes(sample.texts[:600], rep)
    stop = shingle_stoplist(sets, 0.05)
    df = Counter(h for d in range(sets.n) for h in sets.of(d).tolist())
    assert set(stop.tolist()) == {h for h, c in df.items() if c > 0.05 * sets.n and c >= 2}
    out, stop_set = strip_shingles(sets, stop), set(stop.tolist())
    assert len(stop_set) > 0
    for d in range(sets.n):
        assert out.of(d).tolist() == [h for h in sets.of(d).tolist() if h not in stop_set]


def test_a_line_is_normalized_exactly_as_normalize_does_it():
    """normalize_line (the ASCII lines' punctuation by a translation table, then no regex) gives
    normalize's bytes under every normalization: every ASCII character, random ASCII lines, and
    lines that are not ASCII (which go to normalize itself)."""
    import itertools
    import random
    from calib.sketches.line_table import normalize_line
    rng = random.Random(0)
    lines = ["".join(map(chr, range(128))), "", "  A.B,c;D--e\tF\r\n", "Ünïcödé — «x», café ©", "ΣΑΣ. x\u2028y"]
    lines += ["".join(chr(rng.randrange(0, 128)) for _ in range(rng.randrange(0, 40))) for _ in range(2000)]
    for shingle, lower, nfkc, punct, ws in itertools.product(("word", "char"), *[(True, False)] * 4):
        rep = Representation(shingle=shingle, k=3, lowercase=lower, nfkc=nfkc, strip_punct=punct, collapse_ws=ws)
        assert [normalize_line(x, rep) for x in lines] == [normalize(x, rep) for x in lines], rep
