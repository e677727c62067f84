"""The containment join's fast paths against the O(n^2) reference: the probe from the smaller set's
prefix in (size, row) order, the merge that starts after the prefix and gives up once C >= t is out
of reach, and galloping through a much larger set; the same (i, j, C) exactly, the same budget
failures with the same ``found``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from calib.verification.containment import _suffix_overlap, all_pairs_containment_above, brute_force_containment
from calib.verification.jaccard import TooManyPairs
from test_containment import _csr

THRESHOLDS = (1e-9, 0.05, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 1.0)


def skewed_sets(seed: int, n: int = 50) -> list[set]:
    """Sets from 1 to ~1,500 shingles: small ones mostly drawn from a large one (the galloping case),
    exact copies, equal sets under other rows, empty sets, and common shingles shared by many."""
    rng = np.random.default_rng(seed)
    sets: list[set] = []
    for d in range(n):
        kind = rng.integers(0, 6)
        if kind == 0 or not sets:
            sets.append(set(int(x) for x in rng.integers(0, 5000, size=int(rng.integers(200, 1500)))))
        elif kind == 1:
            big = sorted(max(sets, key=len))
            size = int(rng.integers(1, 40))
            keep = rng.choice(big, size=min(size, len(big)), replace=False)
            sets.append(set(int(x) for x in keep) | set(int(x) for x in rng.integers(0, 5000, rng.integers(0, 4))))
        elif kind == 2:
            sets.append(set(sets[int(rng.integers(0, len(sets)))]))  # an equal set
        elif kind == 3:
            sets.append(set())
        else:
            sets.append(set(int(x) for x in rng.integers(0, 60, size=int(rng.integers(1, 30)))))  # common shingles
    return sets


def _same(got, want):
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        assert np.array_equal(g, w)


@pytest.mark.parametrize("seed", range(30))
def test_join_equals_brute_force_on_skewed_sets(seed):
    sets = _csr(skewed_sets(seed))
    for t in THRESHOLDS:
        want = brute_force_containment(sets, t)
        for block in (5, 4096):
            _same(all_pairs_containment_above(sets, t, block=block), want)
    assert len(brute_force_containment(sets, 1.0)[0]) > 0  # equal sets and contained copies: C = 1


@pytest.mark.parametrize("seed", range(12))
def test_join_with_active_masks(seed):
    py = skewed_sets(100 + seed)
    sets = _csr(py)
    active = np.random.default_rng(seed).random(sets.n) < 0.6
    for t in (1e-9, 0.4, 0.9, 1.0):
        bi, bj, bs = brute_force_containment(sets, t)
        keep = active[bi] & active[bj]
        _same(all_pairs_containment_above(sets, t, block=7, active=active), (bi[keep], bj[keep], bs[keep]))


def _expected_found(sets, t: float, block: int, budget: int) -> int | None:
    """The join's count when it gives up: pairs passing, block by block of the probing row (the pair's
    earlier one in (size, row) order), up to the first block whose running total exceeds the budget."""
    i, j, _ = brute_force_containment(sets, t)
    sz = sets.sizes()
    x = np.where((sz[i] < sz[j]) | ((sz[i] == sz[j]) & (i < j)), i, j)
    running = np.cumsum(np.bincount(x // block, minlength=sets.n // block + 1))
    over = np.flatnonzero(running > budget)
    return int(running[over[0]]) if len(over) else None


@pytest.mark.parametrize("seed", range(10))
def test_budget_raises_with_the_same_found(seed):
    sets = _csr(skewed_sets(200 + seed))
    for t in (0.3, 0.9):
        total = len(brute_force_containment(sets, t)[0])
        for block in (4, 4096):
            for budget in (0, total // 3, total - 1, total):
                found = _expected_found(sets, t, block, budget)
                if found is None:
                    _same(all_pairs_containment_above(sets, t, block=block, max_pairs=budget),
                          brute_force_containment(sets, t))
                    continue
                with pytest.raises(TooManyPairs) as info:
                    all_pairs_containment_above(sets, t, block=block, max_pairs=budget)
                assert info.value.found == found and info.value.limit == budget


def test_hand_cases():
    a = set(range(10))
    fam = [a, set(range(7)) | {50, 51, 52}, set(a), set(), set(), set(range(100)), {3}]
    sets = _csr(fam)
    # rows 0 and 1 share 7 of 10: 0.7 * 10 is 7.000000000000001 in floating point, C = 0.7 passes t = 0.7;
    # row 5 holds every other non-empty row whole
    i, j, s = all_pairs_containment_above(sets, 0.7)
    assert list(zip(i.tolist(), j.tolist(), s.tolist())) == [
        (0, 1, 0.7), (0, 2, 1.0), (0, 5, 1.0), (0, 6, 1.0), (1, 2, 0.7), (1, 5, 1.0), (1, 6, 1.0), (2, 5, 1.0),
        (2, 6, 1.0), (5, 6, 1.0)]
    _same(all_pairs_containment_above(sets, 1.0), brute_force_containment(sets, 1.0))
    # empty sets meet nothing, even at the tiniest threshold
    i, _, _ = all_pairs_containment_above(_csr([set(), set(), {1}]), 1e-12)
    assert len(i) == 0
    i, _, _ = all_pairs_containment_above(_csr([]), 0.5)
    assert len(i) == 0


@given(st.lists(st.sets(st.integers(0, 30), max_size=25), max_size=14),
       st.one_of(st.sampled_from(THRESHOLDS), st.floats(1e-3, 1.0)), st.sampled_from([1, 3, 1000]))
@settings(max_examples=200, deadline=None)
def test_join_property(family, t, block):
    sets = _csr(family)
    _same(all_pairs_containment_above(sets, t, block=block), brute_force_containment(sets, t))


@given(st.sets(st.integers(0, 400), max_size=40), st.sets(st.integers(0, 400), max_size=400), st.integers(-3, 45))
@settings(max_examples=300, deadline=None)
def test_suffix_overlap_is_exact_or_proves_too_few(a, b, need):
    """|A & B| when it reaches ``need``, -1 only when it does not (linear and galloping merges alike)."""
    ranks = np.array(sorted(a) + sorted(b), dtype=np.int32)
    got = _suffix_overlap(ranks, 0, len(a), len(a), len(ranks), need)
    inter = len(a & b)
    assert got == (inter if inter >= need else -1)


@pytest.mark.parametrize("seed", range(3))
def test_a_threshold_below_one_shingle_in_either_join(seed):
    """t |A| < 1e-9 still needs one shared shingle: the prefix is the whole set, not one past its end
    (which read the next document's shingles, and past the last one's)."""
    from calib.verification.jaccard import all_pairs_above, brute_force_all_pairs
    sets = _csr(skewed_sets(300 + seed, n=20))
    for t in (1e-12, 1e-15):
        _same(all_pairs_containment_above(sets, t), brute_force_containment(sets, t))
        _same(all_pairs_above(sets, t), brute_force_all_pairs(sets, t))
