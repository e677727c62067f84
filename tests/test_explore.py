"""The search's exploration of every axis: the cheap estimates it ranks by (held equal to the
sweep's own figures and to brute force), its moves, the knobs table, what it says when nothing fits,
and chaining that grows with the collection."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from calib.clusters.growth import chain_growth
from calib.estimates.figures import chain_text
from calib.search.config import Config
from calib.search.explore import Limits, moves, setting_of
from calib.search.knobs import knobs, knobs_text
from calib.search.recommend import closest
from calib.search import screen
from calib.search.sweep import sweep_configs
from calib.search.workspace import Workspace
from calib.sketches.represent import Representation


@pytest.fixture(scope="module")
def ws(sample):
    return Workspace(sample)


def _py_jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def test_ceiling_is_the_brute_force_scan_of_exact_jaccard(ws):
    """At each threshold: recall = share of duplicate pairs with exact J >= t, and the false-removal
    rate of clustering every pair with J >= t, both from Python sets of the shingle hashes."""
    cfg = Config(Representation(shingle="word", k=3), 16, 8, threshold=0.8)
    c = screen.ceiling(ws, cfg, 0.01)
    assert c.thresholds[0] == 1.0 and np.all(np.diff(c.thresholds) < 0)
    sets = ws.sets(cfg.rep)
    py = [set(sets.of(d).tolist()) for d in range(ws.sample.n)]
    t = ws.truth
    pos = np.array([_py_jaccard(py[a], py[b]) for a, b in zip(t.pos_i, t.pos_j)])
    for k in (0, len(c.thresholds) // 2, len(c.thresholds) - 1):
        th = c.thresholds[k]
        assert c.recall[k] == pytest.approx(np.mean(pos >= th - 1e-12))
    # the rate at one threshold, from the brute-force pairs above it
    th = float(c.thresholds[len(c.thresholds) // 2])
    ri, rj, rs = ws.reference_pairs(cfg.rep, th, None)
    brute = np.array([_py_jaccard(py[a], py[b]) for a, b in zip(ri, rj)])
    np.testing.assert_allclose(rs, brute, atol=1e-12)
    false, true = screen._removals(ws, cfg, ri, rj, rs)
    k = int(np.flatnonzero(np.isclose(c.thresholds, th))[0])
    assert c.false_removal_rate[k] == pytest.approx(false / (false + true))


def test_expected_rates_equal_the_sweeps_own_seed_free_figures(ws):
    """The screen's expected recall and false-removal rate are the sweep row's expected_* columns."""
    cfgs = [Config(Representation(shingle="word", k=3, num_perm=128), 25, 5, threshold=0.75),
            Config(Representation(shingle="char", k=5, num_perm=128), 16, 8, threshold=0.8, policy="star")]
    rows = sweep_configs(ws, cfgs)
    for cfg, (_, row) in zip(cfgs, rows.iterrows()):
        e = screen.expected(ws, cfg)
        assert e["recall"] == pytest.approx(row["expected_pair_recall"], abs=1e-12)
        assert e["frr"] == pytest.approx(row["expected_false_removal_rate"], abs=1e-12)
        assert e["frr_high"] == pytest.approx(row["false_removal_rate_seed_high"], abs=1e-12)


def test_best_cuts_hold_the_budget_by_their_seed_high_rate(ws):
    cfg = setting_of(Config(Representation(shingle="word", k=3), 16, 8, threshold=0.8))
    c = screen.ceiling(ws, cfg, 0.01)
    cuts = screen.best_cuts(ws, cfg, c, 0.01)
    assert cuts and all(x.rep.num_perm in (128, 256) for x in cuts)
    first = screen.expected(ws, cuts[0])
    assert first["frr_high"] <= 0.01
    assert first["recall"] <= c.value + 1e-12  # no split beats the perfect one


def test_moves_cover_every_axis_and_compose():
    cfg = setting_of(Config(Representation(shingle="word", k=5), 16, 8, threshold=0.8))
    ms = moves(cfg, Limits(max_word=12, max_char=16))
    assert {m.axis for m in ms} == {"normalization", "case", "shingle", "measure", "weighting", "strip_lines",
                                    "policy"}
    punct = next(m for m in ms if m.axis == "normalization")
    contain = next(m for m in ms if m.axis == "measure")
    both = (punct + contain).apply(cfg)
    assert both.rep.strip_punct and both.measure == "containment" and str(both.representative) == "longest"
    idf = next(m for m in ms if m.axis == "weighting")
    weighted = idf.apply(cfg)
    assert weighted.rep.weighting == "idf" and weighted.rep.scheme == "dart" and weighted.measure == "weighted_jaccard"
    assert (idf + contain).apply(cfg) is None  # containment has no weighted form
    back = next(m for m in moves(weighted, Limits(12, 16)) if m.axis == "weighting").apply(weighted)
    assert back.rep.weighting == "none" and back.measure == "jaccard" and back.rep.scheme == "prefix"
    assert all(m.apply(cfg).rep.k <= 12 for m in ms if m.axis == "shingle" and m.apply(cfg).rep.shingle == "word")


def _rows(values):
    return pd.DataFrame([{"status": "ok", "shingle": sh, "k": k, "num_perm": 128, "b": 16, "r": 8,
                          "threshold": t, "measure": "jaccard", "policy": "connected", "lowercase": True,
                          "strip_punct": p, "pair_recall": rec, "false_removal_rate": frr, "candidates": 1,
                          "config_fingerprint": f"fp{n}", "representation": f"{sh}{k}", "removed": 10,
                          "false_removals": round(frr * 100), "labeled_removals": 100, "unlabeled_removals": 0}
                         for n, (sh, k, t, p, rec, frr) in enumerate(values)])


def test_knobs_give_each_values_best_row_within_the_budget():
    rows = _rows([("word", 3, 0.8, False, 0.5, 0.005), ("word", 5, 0.8, True, 0.7, 0.009),
                  ("word", 5, 0.9, False, 0.9, 0.05), ("char", 5, 0.85, False, 0.6, 0.0)])
    t = knobs(rows, budget=0.01)
    best = {(a, v): b for a, v, b in zip(t["axis"], t["value"], t["best"])}
    assert best[("shingle", "word5")] == 0.7  # its 0.9 row breaks the budget
    assert best[("shingle", "word3")] == 0.5 and best[("shingle", "char5")] == 0.6
    assert best[("normalization", "lower+nopunct")] == 0.7 and best[("normalization", "lower")] == 0.6
    assert best[("threshold", "0.90-0.95")] == 0.0  # nothing fits there
    spread = dict(zip(t["axis"], t["spread"]))
    assert spread["shingle"] == pytest.approx(0.2) and spread["threshold"] == pytest.approx(0.7)
    assert list(t["axis"])[0] == "threshold"  # widest spread first
    assert "threshold 70.0%" in knobs_text(t)


def test_nothing_within_the_budget_names_the_closest_row_and_what_binds():
    rows = _rows([("word", 3, 0.8, False, 0.5, 0.0101), ("word", 5, 0.8, True, 0.7, 0.03)])
    rows["false_removals"] = [2, 3]
    rows["labeled_removals"] = [198, 100]
    row, text = closest(rows, max_false_removal_rate=0.01)
    assert row["config_fingerprint"] == "fp0"
    assert "1 fewer would fit" in text and "1.01%" in text and "a budget of 1.1%" in text


def test_chain_growth_hand_cases():
    # a path 0-1-2-3: connected keeps 0 and removes 1, 2, 3; 2 and 3 by chaining alone
    i, j, s = np.array([0, 1, 2]), np.array([1, 2, 3]), np.ones(3)
    g = chain_growth(4, i, j, s, halves=0)
    assert (g.chained, g.removed, g.whole) == (2, 3, pytest.approx(2 / 3)) and np.isnan(g.half)
    assert chain_growth(4, i, j, s, policy="star", halves=0).chained == 0
    # long paths: halves cut the chains, so the whole sample's share is larger
    n = 400
    i = np.arange(0, n - 1)
    g = chain_growth(n, i, i + 1, np.ones(n - 1), halves=8, seed=0)
    assert g.whole > g.half + 0.3 and g.growing and "chains lengthen" in chain_text(g)
    # isolated pairs never chain, whole or half
    g = chain_growth(n, np.arange(0, n, 2), np.arange(1, n, 2), np.ones(n // 2))
    assert g.whole == 0 and g.half == 0 and not g.growing


@pytest.mark.slow
def test_default_search_finds_a_row_two_axes_from_the_first_grid():
    """Duplicates re-punctuated, template siblings not: only a configuration without punctuation and
    with a threshold between the siblings and the duplicates finds them. The first pass and its
    one-step refinement find nothing within the budget; the default search (exploration on) finds
    nearly every duplicate, and says what mattered."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parent))
    from _multi_axis import multi_axis_sample
    from calib.search.from_sample import search
    sample = multi_axis_sample(0, duplicates=60, siblings=60, singletons=120)
    ws = Workspace(sample)
    before = search(ws, effort=0, check_top=0)
    assert before.best is None or before.best["pair_recall"] < 0.5
    assert before.best is not None or before.closest_text.startswith(
        ("nothing within the false-removal budget", "no configuration found any labeled duplicate"))
    found = search(ws, check_top=0)
    best = found.best
    assert best is not None and best["pair_recall"] >= 0.9 and best["false_removal_rate"] <= 0.01
    assert bool(best["strip_punct"])
    table = found.knobs()
    norm = table[table["axis"] == "normalization"].set_index("value")["best"]
    assert norm.filter(like="nopunct").max() >= 0.9 > norm.drop(norm.filter(like="nopunct").index).max()


def test_apply_warns_when_its_chained_share_outgrows_the_samples():
    from calib.clusters.growth import chained_share_warning
    evidence = {"metrics": {"chained_removals": 4, "removed": 100}}
    assert chained_share_warning(evidence, 5, 100) is None  # 5% against 4%: within 2 points
    text = chained_share_warning(evidence, 30, 200)
    assert "15.0%" in text and "4.0%" in text and "star policy" in text
    assert chained_share_warning(None, 30, 200) is None and chained_share_warning(evidence, 0, 0) is None


def test_a_tool_with_a_minimum_of_bands_still_moves_every_axis_it_runs():
    """The canonical setting's cut (b=1) is below datasketch's 2 bands: its moves are projected with a
    split it takes, so stripping, star clusters, shingles and normalization are all explored for it."""
    from calib.production.targets import capabilities
    from calib.search.explore import _moved
    caps = capabilities("datasketch")
    s = setting_of(Config(Representation(k=3, strip_punct=True)), caps)
    moved = {mv.axis: m for mv in moves(s, Limits(12, 16, True)) if (m := _moved(mv, s, caps)) is not None}
    assert {"normalization", "case", "shingle", "strip_lines", "policy"} <= set(moved)
    assert moved["policy"].policy == "star" and moved["strip_lines"].rep.strip_lines > 0
    assert "measure" not in moved and "weighting" not in moved  # containment and idf: datasketch runs neither
    assert all(m.b == s.b for m in moved.values())  # still the canonical cut
