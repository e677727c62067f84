"""Containment C(A, B) = |A & B| / |A| (A the smaller set): exact kernel against
Python sets, the all-pairs join against brute force, the estimate from the
Jaccard estimate and the sizes, and containment as a Config/Grid/sweep measure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calib import cli
from calib.cli.sweep import grid_from_args
from calib.search.config import Config
from calib.verification.containment import (all_pairs_containment_above, brute_force_containment,
    containment_from_jaccard, estimate_containment, jaccard_from_containment, pairs_containment)
from calib.verification.jaccard import TooManyPairs, pairs_jaccard
from calib.verification.measures import MEASURE_NAMES, get_measure
from calib.sketches.minhash import signatures
from calib.sketches.represent import Representation
from calib.reading.sample import Sample, from_frames
from calib.sketches.shingles import ShingleSets
from calib.search.grid import Grid
from calib.search.sweep import config_from_row, evaluate, sweep
from calib.search.workspace import Workspace
from _util import needs_clough


def nested_sets(seed: int, n: int = 60, vocab: int = 400) -> tuple[ShingleSets, list[set]]:
    """Random sets of very different sizes, a third of them mostly drawn from a larger one
    (a short document copied, with a few changes, inside a long one)."""
    rng = np.random.default_rng(seed)
    sets: list[set] = []
    for d in range(n):
        size = int(rng.integers(1, 120)) if d % 7 else 0  # some empty sets
        if sets and d % 3 == 0 and size:
            src = sorted(sets[int(rng.integers(0, len(sets)))])
            if src:
                keep = rng.choice(src, size=min(size, len(src)), replace=False)
                extra = rng.integers(0, vocab, size=int(rng.integers(0, 5)))
                sets.append(set(int(x) for x in keep) | set(int(x) for x in extra))
                continue
        sets.append(set(int(x) for x in rng.integers(0, vocab, size=size)))
    return _csr(sets), sets


def _csr(sets: list[set]) -> ShingleSets:
    offsets = np.zeros(len(sets) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in sets], out=offsets[1:])
    hashes = np.concatenate([np.array(sorted(s), dtype=np.uint32) for s in sets]) if offsets[-1] else \
        np.zeros(0, np.uint32)
    return ShingleSets(offsets, hashes, True)


def _c(a: set, b: set) -> float:
    small = min(len(a), len(b))
    return len(a & b) / small if small else 0.0


@pytest.mark.parametrize("seed", range(8))
def test_exact_containment_is_the_smaller_sets_share(seed):
    sets, py = nested_sets(seed)
    i, j = np.triu_indices(sets.n, 1)
    got = pairs_containment(sets, i, j)
    want = np.array([_c(py[a], py[b]) for a, b in zip(i, j)])
    assert np.array_equal(got, want)
    assert np.array_equal(pairs_containment(sets, j, i), got)  # symmetric: always the smaller set's share


def test_containment_hand_case():
    sets = _csr([{1, 2, 3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {1, 9}, set()])
    assert pairs_containment(sets, [0, 0, 1, 0], [1, 2, 2, 3]).tolist() == [1.0, 0.5, 1.0, 0.0]
    # J of the first pair is 4/12: its C from J and the sizes is 1
    j = pairs_jaccard(sets, [0], [1])
    assert j[0] == pytest.approx(1 / 3)
    assert containment_from_jaccard(j, 4, 12)[0] == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("t", [0.05, 0.3, 0.5, 0.8, 1.0])
def test_all_pairs_equals_brute_force(seed, t):
    sets, _ = nested_sets(seed)
    got = all_pairs_containment_above(sets, t, block=7)  # small blocks: several rounds
    want = brute_force_containment(sets, t)
    for g, w in zip(got, want):
        assert np.array_equal(g, w)


def test_all_pairs_active_mask_and_budget():
    sets, _ = nested_sets(3)
    active = np.arange(sets.n) % 2 == 0
    i, j, _ = all_pairs_containment_above(sets, 0.3, active=active)
    bi, bj, _ = brute_force_containment(sets, 0.3)
    keep = active[bi] & active[bj]
    assert np.array_equal(i, bi[keep]) and np.array_equal(j, bj[keep])
    with pytest.raises(TooManyPairs, match="max_pairs=2"):
        all_pairs_containment_above(sets, 0.3, max_pairs=2)
    with pytest.raises(ValueError, match="threshold"):
        all_pairs_containment_above(sets, 0.0)


@pytest.mark.parametrize("seed", range(5))
def test_containment_from_exact_jaccard_is_exact(seed):
    """With the exact J the conversion is an identity, and jaccard_from_containment inverts it."""
    sets, _ = nested_sets(seed)
    i, j = np.triu_indices(sets.n, 1)
    sz = sets.sizes()
    c = pairs_containment(sets, i, j)
    jac = pairs_jaccard(sets, i, j)
    np.testing.assert_allclose(containment_from_jaccard(jac, sz[i], sz[j]), c, atol=1e-12)
    np.testing.assert_allclose(jaccard_from_containment(c, sz[i], sz[j]), jac, atol=1e-12)


def test_estimated_containment_tracks_exact_over_seeds():
    """Over 30 hash seeds the estimate's mean error on contained pairs is small and its
    spread shrinks with num_perm (the estimate of J carries all of its error)."""
    sets, _ = nested_sets(11)
    i, j = np.triu_indices(sets.n, 1)
    sz = sets.sizes()
    c = pairs_containment(sets, i, j)
    m = (c >= 0.5) & (np.minimum(sz[i], sz[j]) >= 10)
    i, j, c = i[m], j[m], c[m]
    assert len(i) >= 10
    errs = {}
    for num_perm in (64, 256):
        e = np.array([estimate_containment(signatures(sets, num_perm, seed), sz, i, j) - c for seed in range(30)])
        assert abs(e.mean()) < 0.05, num_perm
        errs[num_perm] = np.sqrt((e ** 2).mean())
    assert errs[256] < errs[64]


# -- the measure as a setting --------------------------------------------------------

def test_measure_registry_and_config():
    assert MEASURE_NAMES[:2] == ("jaccard", "containment")  # then the others registered (weighted_jaccard)
    assert get_measure("Containment").symbol == "C"
    c = Config(measure="CONTAINMENT", representative="longest", threshold=0.4)
    assert c.measure == "containment" and "exact C >= 0.4" in str(c)
    with pytest.raises(ValueError, match="Config.measure must be one of"):
        Config(measure="cosine")
    with pytest.raises(ValueError, match="keeps the longest document"):
        Config(measure="containment")  # representative 'first' would keep the contained copy
    # a Jaccard config fingerprints as before the field existed (no 'measure' key in the hash)
    assert Config(measure="jaccard").fingerprint() == Config().fingerprint()
    assert c.fingerprint() != Config(representative="longest", threshold=0.4).fingerprint()
    assert "measure" not in Config().doc_sections()["verification"]
    assert c.doc_sections()["verification"]["measure"] == "containment"


def test_grid_measures_axis_and_cli_flag():
    g = Grid(representations=(Representation(k=3),), num_perms=(64,), splits=((16, 4),), thresholds=(0.5,),
             measures=("jaccard", "containment"))
    got = list(g.configs())
    rep = Representation(k=3, num_perm=64)
    assert got == [Config(rep, 16, 4, "exact", 0.5), Config(rep, 16, 4, "exact", 0.5, representative="longest",
                                                                measure="containment")]
    with pytest.raises(ValueError, match="Grid.measures"):
        Grid(measures=("overlap",))
    a = cli.build_parser().parse_args(["sweep", "--sample", "x", "--out", "y.csv", "--measures",
                                       "jaccard,containment"])
    assert grid_from_args(a)[0].measures == ("jaccard", "containment")


# -- in a sweep -------------------------------------------------------------------------

WORDS = [f"w{k}" for k in range(3000)]


def copy_sample(seed: int = 0) -> Sample:
    """Long sources, short excerpts copied out of them (duplicates of their source), and
    unrelated short texts (not duplicates of the source they are paired with)."""
    rng = np.random.default_rng(seed)
    docs, pairs = [], []
    for s in range(12):
        src = [WORDS[x] for x in rng.integers(0, len(WORDS), 400)]
        docs.append({"id": f"src{s}", "text": " ".join(src)})
        for e in range(3):
            a = int(rng.integers(0, 300))
            docs.append({"id": f"ex{s}_{e}", "text": " ".join(src[a:a + 60])})
            pairs.append((f"ex{s}_{e}", f"src{s}", "duplicate"))
        other = [WORDS[x] for x in rng.integers(0, len(WORDS), 60)]
        docs.append({"id": f"non{s}", "text": " ".join(other)})
        pairs.append((f"non{s}", f"src{s}", "not_duplicate"))
    p = pd.DataFrame(pairs, columns=["id_a", "id_b", "label"])
    return from_frames(pd.DataFrame(docs), p)


def test_containment_finds_copies_jaccard_misses_and_removes_the_shorter():
    sample = copy_sample()
    ws = Workspace(sample)
    rep = Representation(shingle="word", k=3, num_perm=128)
    g = Grid(representations=(rep,), num_perms=(128,), splits=((128, 1),), thresholds=(0.5,),
             measures=("jaccard", "containment"))
    res = sweep(ws, g).set_index("measure")
    # an excerpt of 60 words in a source of 400 has J ~ 0.15: Jaccard at 0.5 verifies none
    assert res.loc["jaccard", "pair_recall"] == 0.0
    assert res.loc["containment", "pair_recall"] == 1.0
    assert res.loc["containment", "false_removal_rate"] == 0.0
    ev = evaluate(ws, Config(rep, 128, 1, threshold=0.5, measure="containment", representative="longest"))
    removed = set(sample.ids[ev.clustering.removed])
    assert removed == {f"ex{s}_{e}" for s in range(12) for e in range(3)}  # the short copies, never a source
    # the verified pairs carry exact C, equal to the brute force
    sets = ws.sets(rep)
    np.testing.assert_array_equal(ev.verified.exact, pairs_containment(sets, ev.verified.i, ev.verified.j))


@pytest.mark.parametrize("verify", ["exact", "estimated"])
def test_apply_equals_the_sweeps_evaluation(tmp_path, verify):
    """`calib apply` on the corpus file runs the containment rule as evaluate() does on the sample."""
    from calib.production import manifest as M
    from calib.production.engines.local import apply_config
    sample = copy_sample(1)
    corpus = tmp_path / "corpus.jsonl"
    sample.docs[["id", "text"]].to_json(corpus, orient="records", lines=True)
    cfg = Config(Representation(shingle="word", k=3, num_perm=128), 64, 2, verify, 0.5, measure="containment",
                 representative="longest")
    res = apply_config(cfg, corpus, batch_size=10)
    expected = M.manifest(evaluate(Workspace(sample), cfg), sample).drop(columns="label")
    pd.testing.assert_frame_equal(res.manifest, expected)
    assert all(d.startswith("ex") for d in res.manifest["doc_id"])  # only the short copies
    assert len(res.manifest) >= 20  # of 36 copies at J ~ 0.15 a 64x2 split finds ~77% (its S-curve)


def test_targets_list_containment_as_unsupported_and_run_jaccard():
    from calib.production.targets import targets
    cfg = Config(Representation(shingle="char", k=5), 16, 8, "exact", 0.5, measure="containment",
                 representative="longest")
    for name, t in targets(cfg).items():
        assert {"field": "/verification/measure", "value": "containment"}.items() <= t.unsupported[0].items(), name
        assert t.engine_config is None or t.engine_config.measure == "jaccard", name
    assert all(not any(u["field"] == "/verification/measure" for u in t.unsupported)
               for t in targets(Config()).values())


@pytest.mark.slow
@needs_clough
def test_clough_containment_recommendation():
    """The real Clough & Stevenson corpus, heavy excluded (README): containment at zero false
    removals verifies 36 of the 38 cut+light pairs; the two it misses share at most 1.3% of their
    word 3-grams with the source, less than the 6.5% a non answer does (the labels' ceiling)."""
    from calib.reading.clough import load_clough
    from calib.search.recommend import recommend
    sample = load_clough(heavy="exclude")
    ws = Workspace(sample)
    rep = Representation(shingle="word", k=3)
    res = sweep(ws, Grid(representations=(rep,), num_perms=(128,), splits=((128, 1), (64, 2)),
                         measures=("containment",), thresholds=(0.05, 0.1, 0.15, 0.3)))
    best = recommend(res, max_false_removal_rate=0.0)
    assert best["measure"] == "containment" and best["false_removals"] == 0
    assert best["pair_recall"] == pytest.approx(36 / 38)
    ev = evaluate(ws, config_from_row(best))
    cat = sample.docs["category"].to_numpy()
    cl = ev.clustering
    # no independent answer is removed in favour of a source; each removed source is contained
    # in a longer answer (the rule keeps the longer text)
    assert not (cat[cl.representative[cl.removed & (cat == "non")]] == "orig").any()
    sizes = ws.sets(rep).sizes()
    gone = np.flatnonzero(cl.removed & (cat == "orig"))
    assert (sizes[cl.representative[gone]] > sizes[gone]).all()
    p = sample.pairs
    c = pairs_containment(ws.sets(rep), p["i"].to_numpy(), p["j"].to_numpy())
    pos = p["is_duplicate"].to_numpy(bool)
    assert (c[pos] > c[~pos].max()).sum() == 36  # no threshold verifies a 37th without a non answer


def test_cli_sweeps_containment_and_names_it(tmp_path, capsys):
    from calib.reading.writing import write_sample
    write_sample(copy_sample(2), tmp_path / "s")
    out = tmp_path / "r.csv"
    assert cli.main(["sweep", "--sample", str(tmp_path / "s"), "--out", str(out), "--shingles", "word3",
                     "--num-perm", "128", "--splits", "128x1", "--thresholds", "0.5", "--measures",
                     "jaccard,containment"]) == 0
    res = pd.read_csv(out)
    assert res["measure"].tolist() == ["jaccard", "containment"]
    assert res.loc[res["recommended"], "measure"].tolist() == ["containment"]  # J of a 60-in-400 copy is ~0.15
    assert " exact containment t=0.5 connected clusters: pair recall 100.0%" in capsys.readouterr().err
    assert cli.main(["sweep", "--sample", str(tmp_path / "s"), "--out", str(tmp_path / "x.csv"),
                     "--measures", "overlap"]) == 2
    assert "Grid.measures must be some of ('jaccard', 'containment'" in capsys.readouterr().err
