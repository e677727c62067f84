"""Exact Jaccard (pairs and all pairs above t) against Python set arithmetic on
the reference shingle hashes."""

from __future__ import annotations

from contextlib import nullcontext

import mmh3
import numpy as np
import pytest
import xxhash
from datasketch.hashfunc import sha1_hash32
from hypothesis import given, settings
from hypothesis import strategies as st

import calib.verification.jaccard as jaccard_mod
from calib.verification.jaccard import TooManyPairs, all_pairs_above, brute_force_all_pairs, pairs_jaccard
from calib.sketches.represent import Representation, shingle_strings
from calib.sketches.shingles import ShingleSets, shingle_hashes
from _util import one_thread

R = Representation
REF = {"xxhash": xxhash.xxh32_intdigest, "mmh3": lambda b: mmh3.hash(b, 0, signed=False), "sha1": sha1_hash32}




def ref_set(text, rep):
    return {REF[rep.hashfunc](s.encode("utf-8")) for s in shingle_strings(text, rep)}


def py_jaccard(a: set, b: set) -> float:
    u = len(a | b)
    return len(a & b) / u if u else 0.0


def py_all_pairs(sets: list[set], t: float) -> dict:
    out = {}
    for i in range(len(sets)):
        for j in range(i + 1, len(sets)):
            s = py_jaccard(sets[i], sets[j])
            if s >= t:
                out[(i, j)] = s
    return out


def make_sets(list_of_sets, unique=True) -> ShingleSets:
    lists = [sorted(s) for s in list_of_sets]
    off = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in lists], out=off[1:])
    h = np.array([v for x in lists for v in x], dtype=np.uint32)
    return ShingleSets(offsets=off, hashes=h, unique=unique)


def as_dict(ii, jj, ss):
    return dict(zip(zip(ii.tolist(), jj.tolist()), ss.tolist()))


def check_sorted(ii, jj):
    pairs = list(zip(ii.tolist(), jj.tolist()))
    assert pairs == sorted(set(pairs))
    assert all(i < j for i, j in pairs)


# ------------------------------------------------------------ pairs_jaccard

def test_pairs_jaccard_hand_cases():
    a, b, c, d = 10, 20, 30, 40
    sets = make_sets([{a, b, c}, {b, c, d}, set(), set(), {a}, {a, b, c, d}, {2**32 - 1, 0}])
    i = [0, 2, 0, 0, 4, 0, 6, 6]
    j = [1, 3, 2, 0, 0, 5, 6, 0]
    got = pairs_jaccard(sets, i, j).tolist()
    assert got == [0.5, 0.0, 0.0, 1.0, 1 / 3, 0.75, 1.0, 0.0]
    assert pairs_jaccard(sets, [], []).tolist() == []


def test_pairs_jaccard_text_hand_case():
    rep = R(k=1)
    sets = shingle_hashes(["a b c", "b c d", "", "A  B C c"], rep)
    assert pairs_jaccard(sets, [0, 0, 2, 1], [1, 3, 2, 2]).tolist() == [0.5, 1.0, 0.0, 0.0]


TEXTS = st.lists(st.lists(st.sampled_from(["a", "b", "c", "d", "e", "ü", "漢", "😀", "A", "b."]), max_size=10)
                 .map(" ".join), min_size=1, max_size=8)


@given(TEXTS, st.sampled_from(["word", "char"]), st.integers(1, 4), st.sampled_from(["xxhash", "mmh3", "sha1"]),
       st.booleans())
@settings(max_examples=150, deadline=None)
def test_pairs_jaccard_equals_python_sets(texts, shingle, k, hashfunc, strip):
    rep = R(shingle=shingle, k=k, hashfunc=hashfunc, strip_punct=strip)
    with one_thread():
        sets = shingle_hashes(texts, rep)
        i, j = np.meshgrid(np.arange(len(texts)), np.arange(len(texts)))
        got = pairs_jaccard(sets, i.ravel(), j.ravel())
    refs = [ref_set(t, rep) for t in texts]
    want = [py_jaccard(refs[x], refs[y]) for x, y in zip(i.ravel().tolist(), j.ravel().tolist())]
    assert got.tolist() == want


def test_pairs_jaccard_errors():
    sets = make_sets([{1, 2}, {2, 3}])
    with pytest.raises(ValueError, match="unique"):
        pairs_jaccard(make_sets([{1, 2}, {2, 3}], unique=False), [0], [1])
    with pytest.raises(ValueError, match="unique"):
        pairs_jaccard(shingle_hashes(["a b", "b c"], R(k=1), unique=False), [0], [1])
    with pytest.raises(ValueError, match="length"):
        pairs_jaccard(sets, [0, 1], [1])
    for i, j in (([-1], [0]), ([0], [2]), ([5], [0])):
        with pytest.raises(ValueError, match="outside"):
            pairs_jaccard(sets, i, j)


# --------------------------------------------------------- all_pairs_above

def planted_texts(seed: int, n_base: int = 40):
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(120)] + ["ü", "漢字", "😀"]
    base = [list(rng.choice(vocab, int(rng.integers(1, 30)))) for _ in range(n_base)]
    texts = [" ".join(w) for w in base]
    for w in base[: n_base // 2]:
        w = list(w)
        for _ in range(int(rng.integers(0, 4))):
            op = rng.integers(0, 3)
            p = int(rng.integers(0, len(w) + 1))
            if op == 0 and w:
                w[min(p, len(w) - 1)] = str(rng.choice(vocab))
            elif op == 1:
                w.insert(p, str(rng.choice(vocab)))
            elif w:
                del w[min(p, len(w) - 1)]
        texts.append(" ".join(w))
    texts += [texts[0], texts[3], "", "  ", "solo"]
    return texts


THRESHOLDS = [1e-6, 0.05, 0.2, 1 / 3, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0]


@pytest.mark.parametrize("rep,seed", [(R(k=2), 1), (R(k=1, hashfunc="mmh3"), 2),
                                      (R(shingle="char", k=4, hashfunc="sha1"), 3)],
                         ids=["word2", "word1-mmh3", "char4-sha1"])
def test_all_pairs_above_equals_references(rep, seed):
    texts = planted_texts(seed)
    sets = shingle_hashes(texts, rep)
    refs = [ref_set(t, rep) for t in texts]
    n_found = {}
    for t in THRESHOLDS:
        want = py_all_pairs(refs, t)
        bi, bj, bs = brute_force_all_pairs(sets, t)
        assert as_dict(bi, bj, bs) == want
        for block in (1, 7, 1000):
            # block=1 makes one tiny parallel kernel launch per document: run
            # those on one thread (launch overhead on a busy machine); the
            # block=1000 call keeps the parallel path covered
            with one_thread() if block < 1000 else nullcontext():
                ii, jj, ss = all_pairs_above(sets, t, block=block)
            assert ii.dtype == np.int64 and jj.dtype == np.int64 and ss.dtype == np.float64
            check_sorted(ii, jj)
            assert as_dict(ii, jj, ss) == want, (t, block)
        n_found[t] = len(want)
    # the sample is non-trivial: exact duplicates at t=1, many more pairs at low t
    assert n_found[1.0] >= 2 and n_found[0.05] > n_found[0.5] > n_found[1.0]


SETS = st.lists(st.sets(st.integers(0, 14), max_size=12), max_size=14)


@given(SETS, st.one_of(st.sampled_from(THRESHOLDS + [0.25, 0.4, 2 / 3, 0.1]), st.floats(1e-3, 1.0)),
       st.sampled_from([1, 2, 7, 1000]))
@settings(max_examples=200, deadline=None)
def test_all_pairs_above_property(family, t, block):
    sets = make_sets(family)
    with one_thread():
        ii, jj, ss = all_pairs_above(sets, t, block=block)
        bi, bj, bs = brute_force_all_pairs(sets, t)
    want = py_all_pairs(family, t)
    check_sorted(ii, jj)
    assert as_dict(ii, jj, ss) == want
    assert as_dict(bi, bj, bs) == want


@given(SETS, st.sampled_from([0.2, 0.5, 0.8, 1.0]), st.data())
@settings(max_examples=100, deadline=None)
def test_all_pairs_above_active_mask(family, t, data):
    active = data.draw(st.lists(st.booleans(), min_size=len(family), max_size=len(family)))
    with one_thread():
        ii, jj, ss = all_pairs_above(make_sets(family), t, active=np.array(active, dtype=bool))
    want = {p: s for p, s in py_all_pairs(family, t).items() if active[p[0]] and active[p[1]]}
    assert as_dict(ii, jj, ss) == want


@given(SETS, st.sampled_from([0.2, 0.5, 1.0]), st.sampled_from([1, 3, 1000]), st.integers(0, 30))
@settings(max_examples=150, deadline=None)
def test_all_pairs_above_budget_and_emission_chunks(family, t, chunk, budget):
    """Any emission chunk gives the same pairs; the budget raises exactly
    when more than max_pairs pairs have J >= t, naming a count above it."""
    want = py_all_pairs(family, t)
    old = jaccard_mod._EMIT
    jaccard_mod._EMIT = chunk
    try:
        with one_thread():
            ii, jj, ss = all_pairs_above(make_sets(family), t, block=2)
            assert as_dict(ii, jj, ss) == want
            if len(want) > budget:
                with pytest.raises(TooManyPairs) as info:
                    all_pairs_above(make_sets(family), t, block=2, max_pairs=budget)
                e = info.value
                assert budget < e.found <= len(want) and e.limit == budget
                assert f"J >= {t:g}" in str(e) and f"max_pairs={budget:,}" in str(e)
            else:
                ii, jj, ss = all_pairs_above(make_sets(family), t, block=2, max_pairs=budget)
                assert as_dict(ii, jj, ss) == want
    finally:
        jaccard_mod._EMIT = old


def test_all_pairs_above_budget_bounds_memory():
    """3,000 copies of one set are 4.5M pairs above any threshold: with a
    budget of 1,000 the join stops with TooManyPairs, having held a few MB."""
    import tracemalloc
    sets = make_sets([{7, 8, 9}] * 3000 + [{1, 2}])
    all_pairs_above(make_sets([{1}, {1}]), 0.5, max_pairs=10)  # compiled before measuring
    tracemalloc.start()
    try:
        with pytest.raises(TooManyPairs) as info:
            all_pairs_above(sets, 0.9, max_pairs=1000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert info.value.found > 1000
    assert peak < 8 * 2**20, peak  # materializing the pairs would take 4.5M x 24 B = 108 MB
    with pytest.raises(ValueError, match="max_pairs"):
        all_pairs_above(sets, 0.9, max_pairs=-1)


def test_all_pairs_above_hand_case():
    sets = make_sets([{1, 2, 3}, {2, 3, 4}, {1, 2, 3}, set(), set(), {9}])
    ii, jj, ss = all_pairs_above(sets, 0.5)
    assert list(zip(ii.tolist(), jj.tolist(), ss.tolist())) == [(0, 1, 0.5), (0, 2, 1.0), (1, 2, 0.5)]
    ii, jj, ss = all_pairs_above(sets, 0.51)
    assert list(zip(ii.tolist(), jj.tolist())) == [(0, 2)]
    # two empty sets have J = 0: never a pair
    ii, _, _ = all_pairs_above(make_sets([set(), set()]), 1e-9)
    assert len(ii) == 0
    ii, _, _ = all_pairs_above(make_sets([]), 0.5)
    assert len(ii) == 0


def test_all_pairs_above_boundary_ties():
    # sizes 10 and 10 sharing 7 of 13 -> J = 7/13; 0.7 * 10 is 7.000000000000001 in floating point
    a = set(range(10))
    b = set(range(3, 13))
    c = set(range(7)) | {100, 101, 102}   # |a & c| = 7, |a | c| = 13
    family = [a, b, c, set(range(7)) | {200, 201, 202}]
    sets = make_sets(family)
    for t in (7 / 13, 0.7, 0.5, 2 / 3, 0.4):
        for block in (1, 1000):
            ii, jj, ss = all_pairs_above(sets, t, block=block)
            assert as_dict(ii, jj, ss) == py_all_pairs(family, t)
    # J exactly 0.7: 7 shared of union 10 (sizes 7 and 10)
    fam = [set(range(10)), set(range(7))]
    ii, _, ss = all_pairs_above(make_sets(fam), 0.7)
    assert ss.tolist() == [0.7]


@pytest.mark.parametrize("t", [0.0, -0.5, 1.0000001, 2.0, float("nan")])
def test_all_pairs_above_bad_threshold(t):
    with pytest.raises(ValueError, match="threshold"):
        all_pairs_above(make_sets([{1}, {1}]), t)


def test_all_pairs_above_needs_unique_sets():
    texts = ["a b c", "a b c"]
    with pytest.raises(ValueError, match="unique"):
        all_pairs_above(shingle_hashes(texts, R(k=1), unique=False), 0.5)
    with pytest.raises(ValueError, match="unique"):
        brute_force_all_pairs(shingle_hashes(texts, R(k=1), unique=False), 0.5)
