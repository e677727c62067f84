"""Exact copies collapse to one canonical row; expanding canonical pairs by
multiplicity gives exactly the brute-force document pairs."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from calib.verification.copies import Copies, copies_from_digests, find_copies, set_digests, spread
from calib.verification.jaccard import all_pairs_above, brute_force_all_pairs
from calib.candidates.lsh import candidate_pairs
from calib.sketches.minhash import signatures
from calib.sketches.shingles import ShingleSets
from _util import one_thread


def make_sets(family) -> ShingleSets:
    lists = [sorted(s) for s in family]
    off = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in lists], out=off[1:])
    return ShingleSets(off, np.array([v for x in lists for v in x], dtype=np.uint32), True)


# families with many copies: a few distinct sets (one empty) drawn with repetition
FAMILIES = st.lists(st.sets(st.integers(0, 9), max_size=6), min_size=1, max_size=5).flatmap(
    lambda base: st.lists(st.sampled_from(base + [set()]), max_size=40))


@given(FAMILIES)
@settings(max_examples=200, deadline=None)
def test_canonical_is_the_smallest_row_with_the_same_set(family):
    with one_thread():
        cp = find_copies(make_sets(family))
    want = [x if not family[x] else min(y for y in range(len(family)) if family[y] == family[x])
            for x in range(len(family))]
    assert cp.canonical.tolist() == want
    assert cp.multiplicity.sum() == len(family)


@given(FAMILIES, st.sampled_from([0.01, 0.3, 0.5, 1.0]))
@settings(max_examples=150, deadline=None)
def test_expanded_join_equals_brute_force(family, t):
    sets = make_sets(family)
    with one_thread():
        cp = find_copies(sets)
        ci, cj, cs = all_pairs_above(sets, t, active=cp.is_canonical)
        assert cp.pair_count(ci, cj) == len(brute_force_all_pairs(sets, t)[0])
        ii, jj, src = cp.expand(ci, cj)
    s = spread(cs, src, 1.0)
    bi, bj, bs = brute_force_all_pairs(sets, t)
    assert ii.tolist() == bi.tolist() and jj.tolist() == bj.tolist()
    assert np.array_equal(s, bs)


@given(FAMILIES, st.sampled_from([(4, 2), (2, 4), (8, 1)]))
@settings(max_examples=100, deadline=None)
def test_expanded_candidates_equal_banding_every_row(family, split):
    sets = make_sets(family)
    b, r = split
    sig = signatures(sets, 8, 1, "fast")
    active = sets.sizes() > 0
    with one_thread():
        cp = find_copies(sets)
        ci, cj = candidate_pairs(sig, b, r, active=active & cp.is_canonical, max_pairs=None)
        ii, jj, _ = cp.expand(ci, cj)
        bi, bj = candidate_pairs(sig, b, r, active=active, max_pairs=None)
    assert ii.tolist() == bi.tolist() and jj.tolist() == bj.tolist()
    assert cp.pair_count(ci, cj) == len(bi)


def test_digest_collision_keeps_documents_apart():
    """Equal digests with different sets (forced here) never merge documents."""
    sets = make_sets([{1, 2}, {3, 4}, {1, 2}, {3, 4}])
    forged = np.zeros((4, 2), dtype=np.uint64)  # every set "collides"
    cp = copies_from_digests(forged, sets.sizes())
    assert cp.canonical.tolist() == [0, 0, 0, 0]  # what the digests alone would say
    real = find_copies(sets)
    assert real.canonical.tolist() == [0, 1, 0, 1]
    assert set_digests(sets)[0].tolist() == set_digests(sets)[2].tolist()
    assert set_digests(sets)[0].tolist() != set_digests(sets)[1].tolist()


def test_hand_case_counts():
    # rows 0, 2, 5 are one set; 1 and 4 another; 3 empty, 6 and 7 empty
    cp = Copies(np.array([0, 1, 0, 3, 1, 0, 6, 7]))
    assert cp.multiplicity.tolist() == [3, 2, 0, 1, 0, 0, 1, 1] and cp.n_copies == 3
    # canonical pair (0, 1) stands for 3 x 2 pairs; groups add C(3,2) + C(2,2)
    assert cp.pair_count(np.array([0]), np.array([1])) == 6 + 3 + 1
    ii, jj, src = cp.expand(np.array([0]), np.array([1]))
    got = sorted(zip(ii.tolist(), jj.tolist(), src.tolist()))
    assert got == sorted([(0, 1, 0), (0, 4, 0), (1, 2, 0), (2, 4, 0), (1, 5, 0), (4, 5, 0),
                          (0, 2, -1), (0, 5, -1), (2, 5, -1), (1, 4, -1)])
