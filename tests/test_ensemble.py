"""LSH Ensemble candidates against datasketch's MinHashLSHEnsemble and brute force.

What is compared, exactly: on generated sets of very different sizes (some
mostly copied inside larger ones), with datasketch-identical signatures
(scheme 'datasketch'), datasketch's index is built over every document and
each document queries it; calib's :func:`ensemble_directed` is given the
same partition bounds (datasketch's ``uppers``) and the same threshold,
num_perm, m and weights. The (b, r) tables are equal, and the directed
candidate sets (query -> indexed document, the query itself left out) are
equal, document by document.
"""

from __future__ import annotations

import numpy as np
import pytest
from datasketch import MinHash, MinHashLSHEnsemble

from calib.verification.containment import brute_force_containment
from calib.candidates.ensemble import (XQS, Ensemble, containment_s_curve, ensemble_directed, ensemble_pairs,
    equi_depth_uppers, lookup, param_table)
from calib.sketches.minhash import signatures

from test_containment import nested_sets


def _datasketch(sig, sizes, ens):
    index = MinHashLSHEnsemble(threshold=ens.threshold, num_perm=ens.num_perm, num_part=ens.num_part, m=ens.m,
                               weights=ens.weights)
    # the signatures are datasketch 2.x affine32 values (scheme "datasketch"), handed over as such
    mhs = [MinHash(num_perm=ens.num_perm, hashvalues=sig[d], scheme="affine32") for d in range(len(sizes))]
    index.index([(d, mhs[d], int(sizes[d])) for d in range(len(sizes)) if sizes[d] > 0])
    return index, mhs


@pytest.mark.parametrize("threshold", [0.3, 0.6, 0.9])
def test_param_table_is_datasketchs(threshold):
    index = MinHashLSHEnsemble(threshold=threshold, num_perm=64, num_part=4, m=4)
    assert np.array_equal(param_table(threshold, 64, 4), index.params)
    np.testing.assert_array_equal(XQS, index.xqs)
    for u, q in ((10, 3), (3, 10), (100, 1), (1, 1000), (5, 5)):
        assert tuple(param_table(threshold, 64, 4)[lookup(param_table(threshold, 64, 4), u, q)]) == \
            tuple(index._get_optimal_param(u, q))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("threshold,num_part", [(0.5, 4), (0.8, 8)])
def test_candidates_equal_datasketch_lsh_ensemble(seed, threshold, num_part):
    sets, _ = nested_sets(seed, n=80)
    sizes = sets.sizes()
    ens = Ensemble(threshold, num_perm=64, num_part=num_part, m=4)
    sig = signatures(sets, 64, seed, "datasketch")
    index, mhs = _datasketch(sig, sizes, ens)
    uppers = np.array([u for u in index.uppers if u is not None])
    q, x = ensemble_directed(sig, sizes, ens, uppers=uppers)
    got = {d: set() for d in range(sets.n)}
    for a, c in zip(q.tolist(), x.tolist()):
        got[a].add(c)
    for d in range(sets.n):
        want = set() if sizes[d] == 0 else set(index.query(mhs[d], int(sizes[d]))) - {d}
        assert got[d] == want, d
    assert len(q) > 0


@pytest.mark.slow
@pytest.mark.parametrize("threshold,weights", [(0.5, (0.5, 0.5)), (0.7, (0.2, 0.8))])
def test_equi_depth_partitions_match_datasketchs_recall_at_its_cost(threshold, weights):
    """With its own (equi-depth) partitions, over 10 seeds, ensemble_pairs finds the brute-force
    pairs with C >= t (smaller set in larger) at least as often as datasketch's index with its
    optimized partitions (each document querying it, a pair counted from its smaller side),
    within 0.02, for at most 10% more candidates."""
    ours, theirs = [], []
    for seed in range(10):
        sets, _ = nested_sets(seed, n=120)
        sizes = sets.sizes()
        bi, bj, _ = brute_force_containment(sets, threshold)
        ens = Ensemble(threshold, num_perm=128, num_part=8, m=8, weights=weights)
        sig = signatures(sets, 128, seed, "datasketch")
        i, j = ensemble_pairs(sig, sizes, ens)
        assert np.all(i < j)
        mine = set(zip(i.tolist(), j.tolist()))
        index, mhs = _datasketch(sig, sizes, ens)
        ds = set()
        for d in np.flatnonzero(sizes > 0).tolist():
            for x in index.query(mhs[d], int(sizes[d])):
                if x != d and (sizes[d], d) < (sizes[x], x):
                    ds.add((min(d, x), max(d, x)))
        truth = list(zip(bi.tolist(), bj.tolist()))
        assert len(truth) >= 10
        ours.append((np.mean([p in mine for p in truth]), len(mine)))
        theirs.append((np.mean([p in ds for p in truth]), len(ds)))
    (r_ours, c_ours), (r_ds, c_ds) = np.mean(ours, axis=0), np.mean(theirs, axis=0)
    assert r_ours >= r_ds - 0.02 and r_ours >= 0.9
    assert c_ours <= 1.1 * c_ds
    assert c_ours < 120 * 119 / 2 / 4  # far fewer than all pairs


def test_equi_depth_and_s_curve():
    ups = equi_depth_uppers(np.array([0, 1, 1, 2, 3, 5, 8, 13, 21, 34]), 3)
    assert ups.tolist() == [2, 8, 34]  # the 3rd, 6th and 9th of the 9 non-empty sizes
    assert equi_depth_uppers(np.array([4, 4, 4, 4]), 3).tolist() == [4]
    # containment c of a query in a set u/q = 1 times its size: J = c / (2 - c)
    assert containment_s_curve(1.0, 4, 2, 1.0) == pytest.approx(1.0)
    assert containment_s_curve(0.5, 1, 1, 1.0) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="num_part"):
        Ensemble(0.5, 64, num_part=0)
