"""LSH banding against brute force and datasketch.MinHashLSH; S-curve theory
against hand-computed values and datasketch's optimal parameter search."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from fractions import Fraction

import numpy as np
import pytest
from datasketch import MinHash, MinHashLSH
from datasketch.lsh import _optimal_param
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from calib.search.config import Config
from calib.candidates.lsh import (TooManyCandidates, band_keys, candidate_pairs, check_split, collides,
    false_negative_area, false_positive_area, max_rows, optimal_split, s_at_probability, s_curve, splits,
    threshold_approx)
from calib.sketches.minhash import signatures_from_texts
from calib.sketches.represent import Representation, shingle_strings
from _util import one_thread

ROOT = Path(__file__).resolve().parents[1]




def brute_pairs(sig, b, r, active=None):
    """All i < j agreeing on every row of at least one band (pure Python)."""
    n = sig.shape[0]
    rows = sig.tolist()
    out = set()
    for i in range(n):
        for j in range(i + 1, n):
            if active is not None and not (active[i] and active[j]):
                continue
            if any(rows[i][band * r:band * r + r] == rows[j][band * r:band * r + r] for band in range(b)):
                out.add((i, j))
    return out


def as_set(ii, jj):
    return set(zip(ii.tolist(), jj.tolist()))


def check_output(ii, jj, n):
    assert ii.dtype == np.int64 and jj.dtype == np.int64 and len(ii) == len(jj)
    pairs = list(zip(ii.tolist(), jj.tolist()))
    assert pairs == sorted(set(pairs)), "pairs must be unique and sorted by (i, j)"
    assert all(0 <= i < j < n for i, j in pairs)


# ---------------------------------------------------------- candidate pairs

@pytest.mark.parametrize("num_perm,b,r", [
    (12, 12, 1), (12, 6, 2), (12, 4, 3), (12, 3, 4), (12, 2, 6), (12, 1, 12),
    (12, 5, 2), (12, 1, 1), (12, 3, 3), (12, 2, 5), (16, 7, 2), (16, 1, 15),
])
@pytest.mark.parametrize("distinct", [2, 3])
def test_candidate_pairs_equal_brute_force(num_perm, b, r, distinct):
    rng = np.random.default_rng(num_perm * 100 + b * 10 + r + distinct)
    sig = rng.integers(0, distinct, (40, num_perm)).astype(np.uint32)
    sig[5] = sig[3]  # a guaranteed duplicate
    ii, jj = candidate_pairs(sig, b, r)
    check_output(ii, jj, 40)
    ref = brute_pairs(sig, b, r)
    assert as_set(ii, jj) == ref
    assert (3, 5) in ref
    assert 0 < len(ref) < 40 * 39 // 2 or r == 1  # collisions happen, but not all pairs


@pytest.mark.parametrize("b,r", [(4, 2), (3, 3), (8, 1)])
def test_active_mask_excludes_documents(b, r):
    rng = np.random.default_rng(b * r)
    sig = rng.integers(0, 2, (30, 9)).astype(np.uint32)
    sig[[0, 1, 2]] = 0xFFFFFFFF  # "empty" documents: all collide unless masked
    active = rng.random(30) < 0.7
    active[[0, 1, 2]] = False
    ii, jj = candidate_pairs(sig, b, r, active=active)
    check_output(ii, jj, 30)
    assert as_set(ii, jj) == brute_pairs(sig, b, r, active)
    assert not ({0, 1, 2} & set(ii.tolist()) | {0, 1, 2} & set(jj.tolist()))
    # the unmasked result is a superset and contains the empty-document pairs
    full = as_set(*candidate_pairs(sig, b, r))
    assert as_set(ii, jj) <= full and {(0, 1), (0, 2), (1, 2)} <= full


@given(st.integers(0, 25), st.integers(1, 12), st.integers(1, 3), st.data())
@settings(max_examples=200, deadline=None)
def test_candidate_pairs_property(n, num_perm, distinct, data):
    r = data.draw(st.integers(1, num_perm))
    b = data.draw(st.integers(1, num_perm // r))
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    sig = rng.integers(0, distinct, (n, num_perm)).astype(np.uint32)
    active = data.draw(st.one_of(st.none(), st.lists(st.booleans(), min_size=n, max_size=n).map(np.array)))
    with one_thread():
        ii, jj = candidate_pairs(sig, b, r, active=active)
        keys = band_keys(sig, b, r)
        ki, kj = candidate_pairs(sig, b, r, active=active, keys=keys)
    check_output(ii, jj, n)
    ref = brute_pairs(sig, b, r, active)
    assert as_set(ii, jj) == ref
    assert as_set(ki, kj) == ref
    i_all, j_all = np.triu_indices(n, 1)
    with one_thread():
        col = collides(sig, i_all, j_all, b, r)
    assert set(zip(i_all[col].tolist(), j_all[col].tolist())) == brute_pairs(sig, b, r)


def test_band_keys_equal_iff_band_values_equal():
    rng = np.random.default_rng(4)
    sig = rng.integers(0, 3, (60, 8)).astype(np.uint32)
    keys = band_keys(sig, 4, 2)
    assert keys.shape == (4, 60) and keys.dtype == np.uint64
    for band in range(4):
        vals = [tuple(row) for row in sig[:, band * 2:band * 2 + 2].tolist()]
        for x in range(60):
            for y in range(60):
                assert (keys[band, x] == keys[band, y]) == (vals[x] == vals[y])
    # the same values in different bands give different keys (band index is mixed in)
    same = np.zeros((1, 4), dtype=np.uint32)
    k2 = band_keys(same, 2, 2)
    assert k2[0, 0] != k2[1, 0]


def test_tiny_inputs():
    for n in (0, 1):
        sig = np.zeros((n, 4), dtype=np.uint32)
        ii, jj = candidate_pairs(sig, 2, 2)
        assert len(ii) == len(jj) == 0
    ii, jj = candidate_pairs(np.zeros((2, 4), dtype=np.uint32), 2, 2)
    assert ii.tolist() == [0] and jj.tolist() == [1]  # emitted once, not once per band


def test_too_many_candidates_counts_distinct_pairs():
    sig = np.zeros((10, 8), dtype=np.uint32)  # every pair collides in every band
    # 45 distinct pairs, each colliding in all 4 bands (180 per-band collisions):
    # the budget applies to the 45 distinct pairs, and the message names them
    with pytest.raises(TooManyCandidates) as info:
        candidate_pairs(sig, 4, 2, max_pairs=44)
    e = info.value
    assert (e.b, e.r, e.distinct, e.upper_bound, e.limit) == (4, 2, 45, 180, 44)
    assert isinstance(e, RuntimeError) and "max_pairs=44" in str(e) and "45 distinct pairs" in str(e)
    assert "180" not in str(e)
    ii, jj = candidate_pairs(sig, 4, 2, max_pairs=45)
    assert len(ii) == 45
    ii, jj = candidate_pairs(sig, 4, 2, max_pairs=None)
    assert len(ii) == 45
    # masked documents do not count towards the bound
    active = np.array([True] * 5 + [False] * 5)
    ii, jj = candidate_pairs(sig, 4, 2, active=active, max_pairs=10)
    assert len(ii) == 10
    with pytest.raises(ValueError, match="max_pairs"):
        candidate_pairs(sig, 4, 2, max_pairs=-1)


def test_budget_on_distinct_pairs_matches_brute_force():
    """Random signatures with many repeated bands: the distinct count that the
    budget is checked against is the number of pairs colliding in some band."""
    rng = np.random.default_rng(7)
    for trial in range(20):
        n, b, r = int(rng.integers(2, 60)), int(rng.integers(1, 6)), int(rng.integers(1, 3))
        sig = rng.integers(0, 3, size=(n, b * r)).astype(np.uint32)
        I, J = np.triu_indices(n, 1)
        hit = collides(sig, I, J, b, r)
        distinct = int(hit.sum())
        ii, jj = candidate_pairs(sig, b, r, max_pairs=distinct)
        assert ii.tolist() == I[hit].tolist() and jj.tolist() == J[hit].tolist()
        if distinct:
            with pytest.raises(TooManyCandidates) as info:
                candidate_pairs(sig, b, r, max_pairs=distinct - 1)
            assert distinct - 1 < info.value.distinct <= distinct


@pytest.mark.parametrize("b,r", [(5, 2), (3, 4), (1, 9), (0, 2), (2, 0), (-1, 1), (2.0, 2), (2, 1.5)])
def test_bad_split_raises(b, r):
    sig = np.zeros((3, 8), dtype=np.uint32)
    for fn in (lambda: candidate_pairs(sig, b, r), lambda: band_keys(sig, b, r),
               lambda: collides(sig, [0], [1], b, r)):
        with pytest.raises(ValueError):
            fn()


def test_b_times_r_message():
    with pytest.raises(ValueError, match="exceeds num_perm"):
        candidate_pairs(np.zeros((3, 8), dtype=np.uint32), 3, 3)


def test_collides_hand_case():
    sig = np.array([[1, 2, 3, 4],
                    [1, 2, 0, 0],   # agrees with 0 on band 0 (r=2)
                    [0, 2, 3, 0],   # agrees with 0 on rows 1, 2: no full band
                    [9, 9, 3, 4]], dtype=np.uint32)
    i = [0, 0, 0, 1, 2, 3]
    j = [1, 2, 3, 2, 3, 3]
    assert collides(sig, i, j, 2, 2).tolist() == [True, False, True, False, False, True]
    assert collides(sig, i, j, 1, 2).tolist() == [True, False, False, False, False, True]
    assert collides(sig, i, j, 4, 1).tolist() == [True, True, True, True, True, True]


# ------------------------------------------------------------ S-curve theory

def test_s_curve_hand_values():
    s = np.linspace(0, 1, 11)
    assert np.allclose(s_curve(s, 1, 1), s)
    for b, r in [(1, 1), (20, 5), (9, 13), (128, 1), (1, 128)]:
        assert s_curve(0.0, b, r) == 0.0
        assert s_curve(1.0, b, r) == 1.0
    # b=20, r=5, s=1/2: 1 - (1 - 1/32)^20 = 1 - (31/32)^20
    assert s_curve(0.5, 20, 5) == pytest.approx(float(1 - Fraction(31, 32) ** 20), rel=1e-12)
    assert s_curve(0.5, 20, 5) == pytest.approx(0.470059, abs=1e-5)
    # b=2, r=1: 1 - (1-s)^2 = 2s - s^2
    assert s_curve(0.3, 2, 1) == pytest.approx(0.51)
    # b=1, r=3: s^3
    assert s_curve(0.5, 1, 3) == pytest.approx(0.125)
    assert s_curve(np.array([0.2, 0.4]), 1, 2).tolist() == pytest.approx([0.04, 0.16])


def test_threshold_approx_hand_values():
    assert threshold_approx(1, 7) == 1.0
    assert threshold_approx(4, 1) == 0.25
    assert threshold_approx(4, 2) == pytest.approx(0.5)
    assert threshold_approx(20, 5) == pytest.approx(0.549280, abs=1e-6)   # 20^(-1/5)
    assert threshold_approx(16, 8) == pytest.approx(2 ** -0.5)


def test_s_at_probability_hand_values():
    assert s_at_probability(1, 1, 0.3) == pytest.approx(0.3)
    assert s_at_probability(4, 1, 0.5) == pytest.approx(1 - 0.5 ** 0.25)
    assert s_at_probability(1, 2, 0.25) == pytest.approx(0.5)
    assert s_at_probability(20, 5) == pytest.approx(0.508701, abs=1e-5)


@given(st.integers(1, 64), st.integers(1, 32), st.floats(1e-4, 1 - 1e-4))
@settings(max_examples=300, deadline=None)
def test_s_at_probability_inverts_s_curve(b, r, p):
    s = s_at_probability(b, r, p)
    assert 0.0 <= s <= 1.0
    assert float(s_curve(s, b, r)) == pytest.approx(p, rel=1e-7, abs=1e-10)
    assert s_at_probability(b, r, min(p + 1e-3, 1 - 1e-5)) >= s  # monotone


@given(st.integers(1, 30), st.integers(1, 20), st.floats(0.01, 0.99))
@settings(max_examples=200, deadline=None)
def test_s_curve_round_trip(b, r, s):
    p = float(s_curve(s, b, r))
    assume(1e-9 < p < 1 - 1e-6)
    assert s_at_probability(b, r, p) == pytest.approx(s, rel=1e-4)


def test_areas_hand_values():
    for t in (0.0, 0.3, 0.5, 0.8, 1.0):
        assert false_positive_area(t, 1, 1) == pytest.approx(t * t / 2)
        assert false_negative_area(t, 1, 1) == pytest.approx((1 - t) ** 2 / 2)
        assert false_positive_area(t, 1, 2) == pytest.approx(t ** 3 / 3)
        assert false_negative_area(t, 1, 2) == pytest.approx((1 - t) - (1 - t ** 3) / 3)
        # b=2, r=1: P = 2s - s^2
        assert false_positive_area(t, 2, 1) == pytest.approx(t * t - t ** 3 / 3)


@pytest.mark.parametrize("num_perm", [16, 64, 128, 256])
@pytest.mark.parametrize("t", [0.0, 0.1, 0.3, 0.5, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0])
def test_optimal_split_equals_datasketch(t, num_perm):
    assert optimal_split(t, num_perm) == _optimal_param(t, num_perm, 0.5, 0.5)


@pytest.mark.parametrize("weights", [(0.2, 0.8), (0.9, 0.1), (1.0, 0.0)])
def test_optimal_split_weights_equal_datasketch(weights):
    for t in (0.5, 0.8):
        assert optimal_split(t, 128, weights) == _optimal_param(t, 128, *weights)


def test_optimal_split_datasketch_default_case():
    assert optimal_split(0.8, 128) == (9, 13)
    assert MinHashLSH(threshold=0.8, num_perm=128).b == 9
    assert MinHashLSH(threshold=0.8, num_perm=128).r == 13
    assert float(s_curve(0.8, 9, 13)) == pytest.approx(0.40, abs=0.005)
    assert s_at_probability(9, 13) == pytest.approx(0.82, abs=0.005)
    cfg = Config(b=9, r=13)  # the split's theory as the app and exports show it
    assert cfg.lsh_threshold == pytest.approx((1 / 9) ** (1 / 13))
    assert f"{cfg.s50:.3f}" == "0.819"


def test_optimal_split_bad_threshold():
    for t in (-0.1, 1.1):
        with pytest.raises(ValueError):
            optimal_split(t, 16)


def test_splits_hand_values():
    assert splits(12) == [(12, 1), (6, 2), (4, 3), (3, 4), (2, 6), (1, 12)]
    assert splits(1) == [(1, 1)]
    loose = splits(6, exact=False)
    assert sorted(loose) == sorted({(b, r) for b in range(1, 7) for r in range(1, 7) if b * r <= 6})
    assert len(loose) == len(set(loose)) == 6 + 3 + 2 + 1 + 1 + 1



@pytest.mark.parametrize("num_perm", [1, 6, 12, 128, 250])
def test_max_rows_is_the_largest_r_check_split_allows(num_perm):
    for b in range(1, num_perm + 1):
        r = max_rows(b, num_perm)
        check_split(b, r, num_perm)  # allowed
        with pytest.raises(ValueError, match="exceeds num_perm"):
            check_split(b, r + 1, num_perm)  # one more row is not
        # and it is the r of the loose split list
        assert r == max(rr for bb, rr in splits(num_perm, exact=False) if bb == b)


@pytest.mark.parametrize("b", [0, 129, -1, 2.0])
def test_max_rows_refuses_a_band_count_outside_num_perm(b):
    with pytest.raises(ValueError, match="b must be an integer"):
        max_rows(b, 128)

# ------------------------------------------------- datasketch MinHashLSH

def planted_corpus(n_base=110, seed=0):
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(3000)])
    base = [list(rng.choice(vocab, int(rng.integers(20, 60)))) for _ in range(n_base)]
    texts = [" ".join(w) for w in base]
    for k in range(n_base - 22):
        w = list(base[k])
        n_edit = int(rng.integers(0, max(1, len(w) // 12)))
        for _ in range(n_edit):
            w[int(rng.integers(0, len(w)))] = str(rng.choice(vocab))
        texts.append(" ".join(w))
    texts += ["", "   ", "one two", "one two"]
    return texts


@pytest.mark.parametrize("b,r", [(9, 13), (16, 8), (32, 4), (20, 5), (64, 2), (5, 3)])
def test_candidate_pairs_equal_datasketch_minhashlsh(b, r):
    texts = planted_corpus()
    assert 190 <= len(texts) <= 210
    rep = Representation(k=3, hashfunc="sha1", num_perm=128, seed=1, scheme="datasketch")
    mhs = []
    for t in texts:
        m = MinHash(num_perm=128, seed=1)  # datasketch default hashfunc: sha1_hash32
        m.update_batch([s.encode("utf-8") for s in shingle_strings(t, rep)])
        mhs.append(m)
    lsh = MinHashLSH(num_perm=128, params=(b, r))
    for d, m in enumerate(mhs):
        lsh.insert(d, m)
    ref = set()
    for d, m in enumerate(mhs):
        for e in lsh.query(m):
            if e != d:
                ref.add((min(d, e), max(d, e)))
    sig = signatures_from_texts(texts, rep)
    ii, jj = candidate_pairs(sig, b, r, max_pairs=None)
    check_output(ii, jj, len(texts))
    assert as_set(ii, jj) == ref
    n = len(texts)
    assert (n - 4, n - 3) in ref and (n - 2, n - 1) in ref   # empties collide, identical docs collide
    assert len(ref) >= 55  # most of the 88 planted near-duplicates are found


def test_non_contiguous_signature_matrix():
    rng = np.random.default_rng(12)
    big = rng.integers(0, 2, (30, 20)).astype(np.uint32)
    sig = big[:, 3:15]            # a column slice: rows are not contiguous
    assert not sig.flags.c_contiguous
    ii, jj = candidate_pairs(sig, 3, 4)
    assert as_set(ii, jj) == brute_pairs(np.ascontiguousarray(sig), 3, 4)
    i_all, j_all = np.triu_indices(30, 1)
    col = collides(sig, i_all, j_all, 3, 4)
    assert set(zip(i_all[col].tolist(), j_all[col].tolist())) == as_set(ii, jj)


# Input validation. pairs_jaccard checks its indices; these entry points pass
# unchecked indices/masks into compiled kernels, which read past the arrays'
# ends (no bounds checks in numba): garbage results, or a segmentation fault
# when a garbage value is then used as a row index. The calls therefore run in
# a subprocess: a crash there fails the check instead of killing pytest.

def run_isolated(code: str) -> list[str]:
    """Run code in a fresh interpreter; its stdout lines ([] if it crashed early)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    return proc.stdout.split() + ([] if proc.returncode == 0 else [f"exit:{proc.returncode}"])


PROBE = """
    import numpy as np
    from calib.candidates.lsh import candidate_pairs, collides
    def probe(fn):
        try:
            fn()
        except ValueError:
            print("raised", flush=True)
        else:
            print("accepted", flush=True)
"""


def test_candidate_pairs_rejects_wrong_length_active():
    out = run_isolated(PROBE + """
    sig = np.zeros((6, 4), dtype=np.uint32)
    probe(lambda: candidate_pairs(sig, 2, 2, active=np.ones(7, dtype=bool)))
    probe(lambda: candidate_pairs(sig, 2, 2, active=np.ones(3, dtype=bool)))
    """)
    assert out == ["raised", "raised"]


def test_collides_rejects_bad_pairs():
    out = run_isolated(PROBE + """
    sig = np.arange(24, dtype=np.uint32).reshape(6, 4)
    probe(lambda: collides(sig, [0], [6], 2, 2))      # one past the last row
    probe(lambda: collides(sig, [-1], [5], 2, 2))     # negative index wraps to the last row
    probe(lambda: collides(sig, [0, 1], [0], 2, 2))   # lengths differ: j read past its end
    """)
    assert out == ["raised"] * 3
