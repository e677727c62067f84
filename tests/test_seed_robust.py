"""Rates averaged over the hash seed, a recommendation that holds on other seeds, containment weighed
by the default search, and a cap that says what it left out."""

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _steep import inside_sample, steep_sample

from calib.clusters.clustering import cluster_pairs
from calib.estimates.metrics import document_outcomes
from calib.estimates.over_hash import expected_precision, pair_uniforms, removal_draws
from calib.reading.sample import from_frames
from calib.search.config import config_from_row
from calib.search.from_sample import search
from calib.search.grid import Grid, grid_from_sample
from calib.search.recommend import recommend
from calib.search.reseed import seed_flags
from calib.search.sweep import sweep, sweep_configs
from calib.search.workspace import Workspace
from calib.sketches.represent import Representation

ROOT = Path(__file__).resolve().parents[1]
OTHER_SEEDS = range(6, 16)  # none of the seeds the search itself ran (1, and 2-5 in its seed check)


# -- the maths, against brute force --------------------------------------------------------------

def test_pair_uniforms_are_a_fixed_uniform_function_of_the_pair():
    i, j = np.arange(4000) // 7, np.arange(4000) // 7 + 1 + np.arange(4000) % 7
    u = pair_uniforms(i, j, 10_000, 8)
    assert u.shape == (8, 4000) and (u >= 0).all() and (u < 1).all()
    assert np.array_equal(u[:, 5:9], pair_uniforms(i[5:9], j[5:9], 10_000, 8))  # per pair, not per position
    assert abs(u.mean() - 0.5) < 0.01 and abs((u < 0.1).mean() - 0.1) < 0.01
    assert abs(np.corrcoef(u[0], u[1])[0, 1]) < 0.05


def test_expected_precision_and_its_hash_sd_against_independent_draws():
    rng = np.random.default_rng(3)
    q = rng.uniform(0.05, 1.0, 300)
    labels = rng.choice([1, 0, -1], 300, p=[0.6, 0.3, 0.1])
    value, sd = expected_precision(q, labels)
    assert value == pytest.approx(q[labels == 1].sum() / q[labels >= 0].sum())
    draws = rng.random((20_000, 300)) < q
    tp, fp = (draws & (labels == 1)).sum(1), (draws & (labels == 0)).sum(1)
    sim = tp / (tp + fp)
    assert sim.mean() == pytest.approx(value, abs=2e-3)  # a ratio of expectations: its bias is second order
    assert sd == pytest.approx(sim.std(), rel=0.05)


def _small_truth():
    from calib.clusters.truth import truth_from_sample
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(40), rng.integers(1, 4, 40))
    n = len(groups)
    docs = pd.DataFrame({"id": [f"d{k}" for k in range(n)], "text": ["x"] * n, "group": groups.astype(str)})
    truth = truth_from_sample(from_frames(docs, name="t", slice_columns=()))
    i, j = np.triu_indices(n, 1)
    keep = (rng.random(len(i)) < 0.03) | (groups[i] == groups[j])  # every duplicate pair, a few others
    return truth, truth.clusters(), i[keep], j[keep], rng.uniform(0.1, 1.0, keep.sum())


@pytest.mark.parametrize("policy", ["connected", "star"])
def test_removal_draws_equal_clustering_each_draw_alone(policy):
    truth, clusters, i, j, q = _small_truth()
    sim = q.copy()
    got = removal_draws(truth, clusters, i, j, sim, q, policy=policy, representative="first", draws=6)
    u = pair_uniforms(i, j, truth.n, 6)
    false = labeled = 0
    miss, rates = [], []
    for k in range(6):
        m = u[k] < q
        out = document_outcomes(truth, cluster_pairs(truth.n, i[m], j[m], sim[m], policy=policy), clusters)
        f, t = int(out["false_removal"].sum()), int(out["true_removal"].sum())
        false, labeled = false + f, labeled + f + t
        rates.append(f / (f + t))
        sizes = np.bincount(clusters)
        miss.append(out["missed"].sum() / (sizes[sizes > 1] - 1).sum())
    assert got["hash_draws"] == 6
    assert got["expected_false_removal_rate"] == pytest.approx(false / labeled)
    assert got["false_removal_rate_hash_sd"] == pytest.approx(np.std(rates, ddof=1))
    assert got["expected_missed_removal_rate"] == pytest.approx(np.mean(miss))


def test_seed_flags_mark_rows_whose_budget_standing_swings():
    rows = pd.DataFrame({"config_fingerprint": list("abcd"), "false_removal_rate": [0.0, 0.002, 0.02, 0.0],
                         "expected_false_removal_rate": [0.008, 0.002, 0.006, np.nan],
                         "false_removal_rate_hash_sd": [0.002, 0.0, 0.001, np.nan]})
    flagged = seed_flags(rows, 0.01)
    # a: 0.008 + 1.645 x 0.002 > 1%; b: steady; c: measured over, expected under; d: no expectation
    assert flagged["seed_swing"].tolist() == [True, False, True, False]


# -- the sweep's expected rates against the mean over real seeds ---------------------------------------

@pytest.fixture(scope="module")
def steep():
    return Workspace(steep_sample(0))


@pytest.mark.slow
def test_expected_rates_match_the_mean_over_seeds(steep):
    frames = [sweep(steep, Grid(representations=(Representation(shingle="char", k=5, seed=seed),), num_perms=(128,),
                                splits=((16, 8), (11, 11), (32, 4)), thresholds=(0.7, 0.75, 0.8)))
              for seed in range(1, 13)]
    allrows = pd.concat(frames)
    for name in ("pair_precision", "false_removal_rate", "missed_removal_rate"):
        g = allrows.groupby(["b", "r", "threshold"])
        mean, se = g[name].mean(), g[name].std() / np.sqrt(len(frames))
        expected = g[f"expected_{name}"].agg(["min", "max"])
        assert (expected["min"] == expected["max"]).all()  # seed-free: the same on every seed
        gap = (expected["min"] - mean).abs()
        assert (gap <= 3 * se + 0.01).all(), (name, pd.concat([mean, se, expected["min"]], axis=1))


# -- the pick holds on other seeds ----------------------------------------------------------------

def _within_on_other_seeds(ws, row, budget=0.01) -> int:
    cfg = config_from_row(row)
    rows = sweep_configs(ws, [replace(cfg, rep=cfg.rep.with_(seed=s)) for s in OTHER_SEEDS])
    return int(((rows["false_removal_rate"].fillna(0.0) <= budget) & (rows["status"] == "ok")).sum())


@pytest.mark.slow
def test_recommendation_holds_the_budget_on_other_seeds_where_the_luckiest_seed_does_not(steep):
    # the seed check alone (no exploration, whose rows a lucky seed no longer outranks here)
    found = search(steep, effort=0)
    assert found.best is not None and found.check is not None
    assert _within_on_other_seeds(steep, found.best) >= 9
    assert "seed check: the best 5 re-run on 4 more seeds each" in found.added_text()
    assert found.best["seeds_held"] == "5/5" and not found.best["seed_swing"]
    assert set(found.results["search_pass"]) == {1, 2, 3}
    # the old rule (the measured rate on seed 1 only) picks a row that seed luck put within the budget
    lucky = recommend(found.results[found.results["search_pass"] <= 2], any_seed=False)
    assert lucky["config_fingerprint"] != found.best["config_fingerprint"]
    assert _within_on_other_seeds(steep, lucky) < 9
    assert bool(found.results.loc[found.results["config_fingerprint"] == lucky["config_fingerprint"],
                                  "seed_swing"].iloc[0])
    # reseed check: seed 1's candidate-recall interval holds seed 2's value
    first = found.results[found.results["search_pass"] <= 2].drop_duplicates(
        ["representation", "num_perm", "b", "r"]).head(40)
    assert len(first) == 40
    cfgs = [config_from_row(r) for _, r in first.iterrows()]
    again = sweep_configs(steep, [replace(c, rep=c.rep.with_(seed=2)) for c in cfgs]).set_index("config_fingerprint")
    other = again.loc[[replace(c, rep=c.rep.with_(seed=2)).fingerprint() for c in cfgs], "candidate_recall"].to_numpy()
    held = (first["candidate_recall_low"].to_numpy() <= other) & (other <= first["candidate_recall_high"].to_numpy())
    assert held.sum() >= 36


# -- containment weighed, the Jaccard part unchanged -------------------------------------------------

@pytest.fixture(scope="module")
def inside():
    return Workspace(inside_sample(0))


def test_containment_part_leaves_the_jaccard_grid_as_it_was(inside):
    grid, choice = grid_from_sample(inside)
    plain, plain_choice = grid_from_sample(inside, given=("measures",))
    assert [p.measures for p in grid.also] == [("containment",)] and not plain.also
    assert replace(grid, also=()) == plain
    assert list(grid.configs())[:plain.size()] == list(plain.configs())
    text = choice.text(grid)
    assert "containment swept beside Jaccard: 100% of the labeled duplicates sit inside a longer document" in text
    assert "containment part: thresholds" in text and "containment" not in plain_choice.text(plain)


def test_the_cap_counts_configurations_per_seed_and_names_what_it_left_out(inside):
    base = Grid()
    grid, choice = grid_from_sample(inside, base, given=("measures",))
    seeded, _ = grid_from_sample(inside, replace(base, seeds=(1, 2, 3)), given=("measures",))
    assert seeded.thresholds == grid.thresholds and seeded.size() == 3 * grid.size()  # seeds shrink nothing
    assert len(grid.thresholds) == 4
    cap = 3 * grid.size() // 4  # room for three of the four thresholds
    small, small_choice = grid_from_sample(inside, replace(base, max_configs=cap), given=("measures",))
    left = [t for t in grid.thresholds if t not in small.thresholds]
    assert len(left) == 1 and small.size() == cap
    text = small_choice.text(small)
    assert f"left out thresholds {left[0]:g} ({grid.size()} configurations with them; --max-configs {grid.size()} " \
           "sweeps them, or give --thresholds)" in text
    assert "left out" not in choice.text(grid) and "cap" not in choice.text(grid)
    tiny, tiny_choice = grid_from_sample(inside, replace(base, max_configs=5), given=("measures",))
    assert len(tiny.thresholds) == 3 and "still over it with 3 thresholds" in tiny_choice.text(tiny)


@pytest.mark.slow
def test_default_sweep_picks_containment_for_copies_inside_long_documents(tmp_path):
    docs = tmp_path / "inside.jsonl"
    inside_sample(0).docs[["id", "text", "group"]].to_json(docs, orient="records", lines=True)
    out = tmp_path / "r.csv"
    proc = subprocess.run([sys.executable, "-m", "calib", "sweep", "--sample", str(docs), "--out", str(out)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    res = pd.read_csv(out)
    best = res[res["recommended"]]
    assert len(best) == 1 and best["measure"].iloc[0] == "containment"
    assert best["pair_recall"].iloc[0] >= 0.95 and best["false_removal_rate"].iloc[0] <= 0.01
    assert res.loc[res["measure"] == "jaccard", "pair_recall"].max() < 0.8  # no Jaccard row gets there
    assert "containment swept beside Jaccard" in proc.stderr and "seed check:" in proc.stderr
    assert "held the budget on 5 of 5 seeds" in proc.stderr
    assert {"seed_swing", "seeds_held", "expected_false_removal_rate", "false_removal_rate_seed_high"} <= set(res)


def test_docs_page_lists_every_seed_column_as_declared():
    from calib.estimates.over_hash import COLUMNS
    page = (ROOT / "docs" / "seed-robust-search.md").read_text(encoding="utf-8")
    for name, text in COLUMNS.items():
        assert f"- `{name}`: {text}" in page, name
