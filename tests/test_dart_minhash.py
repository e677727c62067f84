"""Dart-throwing weighted MinHash (calib.sketches.dart_minhash): each column collides with
probability the exact weighted Jaccard (sum min / sum max) over many seeds, columns are
independent (binomial variance), weights that differ between documents, span several bands
or lie below 1 are handled alike, and the scheme is the default weighted one of a sweep,
exported and applied."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from _weighted import write_boiler_sample
from calib.sketches.dart_minhash import sketch
from calib.sketches.weighted_minhash import WeightedSets


def _sets(dicts):
    offsets = np.cumsum([0] + [len(d) for d in dicts]).astype(np.int64)
    hashes = np.concatenate([np.array(sorted(d), dtype=np.uint32) for d in dicts])
    w = np.concatenate([np.array([d[k] for k in sorted(d)], dtype=np.float64) for d in dicts])
    return WeightedSets(offsets, hashes, True, w)


def _exact(a: dict, b: dict) -> float:
    keys = set(a) | set(b)
    return (sum(min(a.get(k, 0.0), b.get(k, 0.0)) for k in keys)
            / sum(max(a.get(k, 0.0), b.get(k, 0.0)) for k in keys))


def _pairs():
    rng = np.random.default_rng(7)
    # weights differing between the two documents (not one weight per shingle), across bands and below 1
    a = {k: 1.0 + k % 5 for k in range(0, 40)}
    b = {k: (1.0 + k % 5) * (0.5 if k % 2 else 1.0) for k in range(10, 60)}
    c = {int(k): float(rng.gamma(0.7, 3.0) + 0.05) for k in rng.choice(500, 120, replace=False)}
    d = {k: (w * rng.uniform(0.3, 3.0) if rng.random() < 0.7 else w) for k, w in c.items() if rng.random() < 0.8}
    d.update({int(k): 0.2 for k in rng.choice(np.arange(500, 600), 20, replace=False)})
    e = {k: 1.0 for k in range(30)}                       # unit weights: plain Jaccard 20 / 40
    f = {k: 1.0 for k in range(10, 40)}
    g = {k: 40.0 + k for k in range(10)}                  # large weights, many bands, a tiny shared part
    h = {k: 0.3 * (40.0 + k) if k < 5 else 40.0 + k for k in range(3, 12)}
    return [(a, b), (c, d), (e, f), (g, h)]


@pytest.mark.parametrize("pair", range(4))
def test_collision_rate_per_column_is_the_exact_weighted_jaccard(pair):
    a, b = _pairs()[pair]
    jw = _exact(a, b)
    sets = _sets([a, b])
    seeds, k = 400, 32
    eq = np.array([sketch(sets.offsets, sets.hashes, k, s, sets.weights) for s in range(seeds)])
    hit = eq[:, 0, :] == eq[:, 1, :]                      # (seed, column)
    se = math.sqrt(jw * (1 - jw) / (seeds * k))
    assert abs(hit.mean() - jw) < 4 * se, (hit.mean(), jw)
    # every column on its own: rate J_w (a column with a bias of its own would show here)
    per_col = hit.mean(axis=0)
    z = (per_col - jw) / math.sqrt(jw * (1 - jw) / seeds)
    assert np.abs(z).max() < 4.2 and abs(z.mean()) < 4 / math.sqrt(k)
    # columns independent: the estimate's variance is binomial's
    assert hit.mean(axis=1).var() == pytest.approx(jw * (1 - jw) / k, rel=0.25)


def test_signature_properties():
    sets = _sets([{1: 2.0, 7: 0.5}, {3: 1.0}, {1: 2.0, 7: 0.5}, {1: 4.0, 7: 1.0}])
    sig = sketch(sets.offsets, sets.hashes, 64, 1, sets.weights)
    assert sig.dtype == np.uint32 and sig.shape == (4, 64)
    np.testing.assert_array_equal(sig[0], sig[2])             # same weighted set, same signature
    assert not (sig[0] == sig[3]).all()                       # doubled weights: J_w = 2.5 / 5, not 1
    np.testing.assert_array_equal(sig, sketch(sets.offsets, sets.hashes, 64, 1, sets.weights))  # deterministic
    assert not (sig == sketch(sets.offsets, sets.hashes, 64, 2, sets.weights)).all()          # the seed matters
    empty = sketch(np.array([0, 0, 1]), np.array([5], np.uint32), 8, 1, np.array([1.0]))
    assert (empty[0] == 0xFFFFFFFF).all() and not (empty[1] == 0xFFFFFFFF).all()
    # repeats of a shingle change nothing; with different weights the largest counts (union of the strips)
    rep = sketch(np.array([0, 5]), np.array([7, 1, 7, 1, 7], np.uint32), 64, 1, np.array([0.5, 2.0, 0.5, 2.0, 0.2]))
    np.testing.assert_array_equal(rep[0], sig[0])
    unit = sketch(sets.offsets, sets.hashes, 64, 1, None)
    np.testing.assert_array_equal(unit[0], unit[3])           # unit weights: plain sets, equal
    for bad in (0.0, -1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="finite and > 0"):
            sketch(np.array([0, 1]), np.array([1], np.uint32), 8, 1, np.array([bad]))
    with pytest.raises(ValueError, match="multiply every weight"):   # would run for hours, not fail
        sketch(np.array([0, 1]), np.array([1], np.uint32), 8, 1, np.array([1e-9]))


def test_signatures_do_not_depend_on_the_chunking():
    rng = np.random.default_rng(3)
    dicts = [{int(k): float(rng.gamma(1.0, 2.0) + 0.1) for k in rng.choice(5000, int(rng.integers(1, 300)))}
             for _ in range(40)]
    sets = _sets(dicts)
    whole = sketch(sets.offsets, sets.hashes, 48, 5, sets.weights)
    lo, hi = sets.offsets[17], sets.offsets[40]
    part = sketch(sets.offsets[17:] - lo, sets.hashes[lo:hi], 48, 5, sets.weights[lo:hi])
    np.testing.assert_array_equal(whole[17:], part)


def test_default_weighted_scheme_is_dart_and_export_apply_agree(tmp_path, capsys):
    from calib.cli import main
    from calib.production import export as E
    from calib.reading.samples import load_sample
    from calib.search.config import Config
    from calib.search.grid import Grid
    from calib.search.sweep import evaluate
    from calib.search.workspace import Workspace
    from calib.sketches.represent import Representation

    g = Grid(representations=(Representation(shingle="char", k=5),), num_perms=(64,), splits=((16, 4),),
             thresholds=(0.5,), weightings=("idf",))
    assert {c.rep.scheme for c in g.configs()} == {"dart"}
    d = write_boiler_sample(tmp_path)
    sample = load_sample(d)
    ws = Workspace(sample)
    cfg = Config(Representation(shingle="char", k=5, scheme="dart", weighting="idf", num_perm=64), b=16, r=4,
                 threshold=0.5, measure="weighted_jaccard")
    out = tmp_path / "exp"
    E.write_export(out, cfg, evaluation=evaluate(ws, cfg), sample=sample, workspace=ws)
    assert E.load_config(out / "config.json")[0] == cfg
    code = main(["apply", "--config", str(out / "config.json"), "--corpus", str(d / "docs.jsonl"),
                 "--out", str(tmp_path / "app"), "--batch-size", "5"])
    assert code == 0, capsys.readouterr().err
    got = pd.read_csv(tmp_path / "app" / "manifest.csv", dtype=str)
    want = pd.read_csv(out / "manifest.csv", dtype=str)
    assert len(want) >= 2 and got["doc_id"].tolist() == want["doc_id"].tolist()
    assert got["representative_id"].tolist() == want["representative_id"].tolist()
