"""Weighted MinHash (calib.sketches.weighted_minhash): datasketch's ICWS bit for bit,
exact weighted Jaccard against a brute-force reference, the estimator's bias
over many seeds, and the document-frequency table file."""

from __future__ import annotations

import math

import numpy as np
import pytest
from datasketch import WeightedMinHashGenerator

from _weighted import write_boiler_sample

from calib.verification.jaccard import pairs_jaccard
from calib.sketches.shingles import ShingleSets
from calib.sketches.weighted_minhash import DocumentFrequencies, WeightedSets, frequencies_from_sets, icws_dense, sketch
from calib.verification.weighted_jaccard import all_pairs_weighted_above, pairs_weighted_jaccard


def _random_docs(rng, n, dim, max_size, integer=False):
    docs = []
    for _ in range(n):
        m = int(rng.integers(1, max_size))
        idx = np.sort(rng.choice(dim, m, replace=False))
        w = (rng.integers(1, 4, m) if integer else rng.gamma(1.0, 2.0, m) + 0.01).astype(np.float32)
        docs.append((idx, w))
    off = np.cumsum([0] + [len(i) for i, _ in docs]).astype(np.int64)
    return docs, off, np.concatenate([i for i, _ in docs]), np.concatenate([w for _, w in docs])


@pytest.mark.parametrize("seed,dim,num_perm,integer", [(1, 50, 16, True), (3, 300, 64, False), (11, 1000, 32, False)])
def test_icws_dense_equals_datasketch_bit_for_bit(seed, dim, num_perm, integer):
    rng = np.random.default_rng(seed)
    gen = WeightedMinHashGenerator(dim, num_perm, seed=seed)
    docs, off, idx, w = _random_docs(rng, 25, dim, min(dim, 80), integer)
    ks, ts = icws_dense(off, idx, w, gen.rs, gen.ln_cs, gen.betas)
    for d, (i, x) in enumerate(docs):
        v = np.zeros(dim, np.float32)
        v[i] = x
        hv = gen.minhash(v).hashvalues
        np.testing.assert_array_equal(ks[d], hv[:, 0])
        np.testing.assert_array_equal(ts[d], hv[:, 1])


def _brute_weighted(a: dict, b: dict) -> float:
    keys = set(a) | set(b)
    hi = sum(max(a.get(k, 0.0), b.get(k, 0.0)) for k in keys)
    return sum(min(a.get(k, 0.0), b.get(k, 0.0)) for k in keys) / hi if hi else 0.0


def _sets_from_dicts(dicts, weights_by_doc=True):
    offsets = np.cumsum([0] + [len(d) for d in dicts]).astype(np.int64)
    hashes = np.concatenate([np.array(sorted(d), dtype=np.uint32) for d in dicts] or [np.empty(0, np.uint32)])
    w = np.concatenate([np.array([d[k] for k in sorted(d)], dtype=np.float64) for d in dicts] or [np.empty(0)])
    return WeightedSets(offsets, hashes, True, w)


def test_pairs_weighted_jaccard_matches_brute_force():
    rng = np.random.default_rng(5)
    dicts = [{int(k): float(rng.gamma(2.0, 1.0)) for k in rng.choice(40, rng.integers(0, 15), replace=False)}
             for _ in range(30)]
    sets = _sets_from_dicts(dicts)
    i, j = np.triu_indices(len(dicts), 1)
    got = pairs_weighted_jaccard(sets, i, j)
    want = np.array([_brute_weighted(dicts[a], dicts[b]) for a, b in zip(i, j)])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    # hand-computed: {1: 2, 2: 1} vs {2: 3, 5: 1}: min sum 1, max sum 2 + 3 + 1 = 6
    hand = _sets_from_dicts([{1: 2.0, 2: 1.0}, {2: 3.0, 5: 1.0}])
    assert pairs_weighted_jaccard(hand, [0], [1])[0] == pytest.approx(1 / 6)


def test_unit_weights_give_plain_jaccard():
    rng = np.random.default_rng(2)
    dicts = [{int(k): 1.0 for k in rng.choice(60, rng.integers(1, 30), replace=False)} for _ in range(20)]
    ws = _sets_from_dicts(dicts)
    plain = ShingleSets(ws.offsets, ws.hashes, True)
    i, j = np.triu_indices(20, 1)
    np.testing.assert_allclose(pairs_weighted_jaccard(plain, i, j), pairs_jaccard(plain, i, j), atol=1e-15)


def test_all_pairs_weighted_matches_brute_force():
    rng = np.random.default_rng(9)
    weight = {k: float(rng.gamma(2.0, 1.0)) for k in range(30)}   # one weight per shingle (as IDF gives)
    base = [set(rng.choice(30, 12, replace=False).tolist()) for _ in range(8)]
    dicts = []
    for b in base:  # near copies so that pairs cross every threshold
        for _ in range(5):
            s = set(b)
            s.symmetric_difference_update(rng.choice(30, rng.integers(0, 4), replace=False).tolist())
            dicts.append({k: weight[k] for k in s})
    sets = _sets_from_dicts(dicts)
    I, J = np.triu_indices(len(dicts), 1)
    allj = np.array([_brute_weighted(dicts[a], dicts[b]) for a, b in zip(I, J)])
    for t in (0.3, 0.6, 0.9):
        i, j, s = all_pairs_weighted_above(sets, t, block=7)
        m = allj >= t
        np.testing.assert_array_equal(i, I[m])
        np.testing.assert_array_equal(j, J[m])
        np.testing.assert_allclose(s, allj[m], rtol=1e-12)
    active = np.arange(len(dicts)) % 3 != 0
    i, j, _ = all_pairs_weighted_above(sets, 0.5, active=active)
    m = (allj >= 0.5) & active[I] & active[J]
    np.testing.assert_array_equal(i, I[m])


def test_icws_estimate_is_unbiased_over_seeds():
    # two documents with a known weighted Jaccard; 300 seeds x 64 columns = 19,200 trials
    a = {k: 1.0 + k % 5 for k in range(0, 40)}
    b = {k: (1.0 + k % 5) * (0.5 if k % 2 else 1.0) for k in range(10, 60)}
    sets = _sets_from_dicts([a, b])
    jw = _brute_weighted(a, b)
    eq = [(sig[0] == sig[1]).mean() for sig in (sketch(sets.offsets, sets.hashes, 64, s, sets.weights)
                                                 for s in range(300))]
    se = math.sqrt(jw * (1 - jw) / (300 * 64))
    assert abs(np.mean(eq) - jw) < 4 * se
    # and the per-column collision variance is binomial's (columns independent)
    assert np.var(eq) == pytest.approx(jw * (1 - jw) / 64, rel=0.3)


def test_icws_signature_properties():
    sets = _sets_from_dicts([{1: 2.0, 7: 0.5}, {}, {1: 2.0, 7: 0.5}, {1: 4.0, 7: 1.0}])
    sig = sketch(sets.offsets, sets.hashes, 32, 1, sets.weights)
    assert sig.dtype == np.uint32 and sig.shape == (4, 32)
    assert (sig[1] == 0xFFFFFFFF).all()                       # empty document: datasketch's empty row
    np.testing.assert_array_equal(sig[0], sig[2])             # same weighted set, same signature
    assert not (sig[0] == sig[3]).all()                       # doubled weights: J_w = 2.5 / 5, not 1
    # repeats of a shingle (unsorted, with duplicates) change nothing
    rep = sketch(np.array([0, 4]), np.array([7, 1, 7, 1], np.uint32), 32, 1, np.array([0.5, 2.0, 0.5, 2.0]))
    np.testing.assert_array_equal(rep[0], sig[0])
    unit = sketch(sets.offsets, sets.hashes, 32, 1, None)
    np.testing.assert_array_equal(unit[0], unit[3])           # unit weights: plain sets, equal


def test_document_frequencies_weights_and_file(tmp_path):
    sets = ShingleSets(np.array([0, 2, 3, 5]), np.array([1, 5, 5, 1, 5], np.uint32), True)
    table = frequencies_from_sets(sets)
    assert table.documents == 3 and table.hashes.tolist() == [1, 5] and table.df.tolist() == [2, 3]
    w = table.weights(np.array([1, 5, 99], np.uint32))
    np.testing.assert_allclose(w, [math.log(1 + 3 / 2), math.log(1 + 3 / 3), math.log(1 + 3 / 1)])
    sha = table.save(tmp_path / "df.bin")
    back = DocumentFrequencies.load(tmp_path / "df.bin", sha)
    np.testing.assert_allclose(back.weights(np.array([1, 5, 99], np.uint32)), w)
    assert (tmp_path / "df.bin").read_bytes() == table.to_bytes()   # same table, same bytes
    with pytest.raises(ValueError, match="sha256"):
        DocumentFrequencies.load(tmp_path / "df.bin", "0" * 64)
    (tmp_path / "bad.bin").write_bytes(b"nope")
    with pytest.raises(ValueError, match="CALIBDF1"):
        DocumentFrequencies.load(tmp_path / "bad.bin")


# -- wired as a setting: Representation.weighting, the icws scheme, the weighted_jaccard measure -------------

@pytest.fixture(scope="module")
def boiler_sample(tmp_path_factory):
    from calib.reading.samples import load_sample
    return load_sample(write_boiler_sample(tmp_path_factory.mktemp("boiler")))


def test_workspace_weights_are_the_samples_idf(boiler_sample):
    from calib.sketches.represent import Representation
    from calib.search.workspace import Workspace
    ws = Workspace(boiler_sample)
    plain = Representation(shingle="char", k=5)
    weighted = ws.sets(plain.with_(scheme="icws", weighting="idf"))
    sets = ws.sets(plain)
    docs = [set(sets.of(d).tolist()) for d in range(sets.n)]
    n = len(docs)
    want = np.array([math.log(1 + n / sum(h in s for s in docs)) for h in sets.hashes.tolist()])
    np.testing.assert_allclose(weighted.weights, want, rtol=1e-12)
    np.testing.assert_array_equal(weighted.hashes, sets.hashes)


def test_weighting_needs_icws_and_weighted_jaccard():
    from calib.search.config import Config
    from calib.sketches.represent import Representation
    with pytest.raises(ValueError, match="weighted signature scheme"):
        Representation(weighting="idf")
    with pytest.raises(ValueError, match="weighting must be one of"):
        Representation(weighting="tfidf", scheme="icws")
    with pytest.raises(ValueError, match="weighted_jaccard"):
        Config(Representation(weighting="idf", scheme="icws"), measure="jaccard")
    rep = Representation(weighting="idf", scheme="icws")
    assert rep.to_dict()["weighting"] == "idf" and "weighting" not in Representation().to_dict()
    assert rep.fingerprint() != rep.with_(weighting="none").fingerprint()
    assert rep.label().endswith(" idf") and rep.shingling() == Representation().shingling()


def test_grid_pairs_idf_with_dart_and_weighted_jaccard(boiler_sample):
    from calib.search.config import config_from_row
    from calib.sketches.represent import Representation
    from calib.search.grid import Grid
    from calib.search.sweep import sweep
    from calib.search.workspace import Workspace
    g = Grid(representations=(Representation(shingle="char", k=5),), num_perms=(32,), splits=((8, 4),),
             thresholds=(0.3, 0.6), weightings=("none", "idf"), measures=("jaccard", "containment"),
             representative="longest")
    cfgs = list(g.configs())
    idf = [c for c in cfgs if c.rep.weighting == "idf"]
    assert {(c.rep.scheme, c.measure) for c in idf} == {("dart", "weighted_jaccard")}   # containment: no idf form
    assert len(idf) == 2 and len(cfgs) == 2 + 2 * 2
    ws = Workspace(boiler_sample)
    rows = sweep(ws, Grid(representations=g.representations, num_perms=(32,), splits=((8, 4),),
                          thresholds=(0.3, 0.6), weightings=("none", "idf")))
    assert rows["weighting"].tolist() == ["none", "none", "idf", "idf"]
    for _, row in rows.iterrows():
        cfg = config_from_row(row)
        assert cfg.fingerprint() == row["config_fingerprint"]
        # similar pairs: every pair whose exact (weighted) Jaccard reaches the threshold, by brute force
        sets = ws.sets(cfg.rep)
        I, J = np.triu_indices(sets.n, 1)
        sim = pairs_weighted_jaccard(sets, I, J) if cfg.rep.weighting == "idf" else pairs_jaccard(sets, I, J)
        assert row["similar_pairs"] == int((sim >= cfg.threshold).sum())
    # the shared footer: J of a boilerplate pair is well above its weighted J
    sets_n, sets_w = ws.sets(Representation(shingle="char", k=5)), ws.sets(config_from_row(rows.iloc[2]).rep)
    assert pairs_jaccard(sets_n, [2], [3])[0] > 2 * pairs_weighted_jaccard(sets_w, [2], [3])[0]


def test_default_rows_have_no_weighting_column(boiler_sample):
    from calib.search.grid import Grid
    from calib.search.sweep import sweep
    rows = sweep(boiler_sample, Grid(num_perms=(16,), splits=((4, 4),), thresholds=(0.5,)))
    assert "weighting" not in rows.columns
