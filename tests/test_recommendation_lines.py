"""What `calib sweep` and `calib export` say about a recommendation, and what they carry from one to the
other: the rule and its confidence, the clustering policy, the probability that the rate exceeds the
budget, the categories the sweep ignored; and a sample with no labels refused before any work."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from _util import needs_clough
from calib import cli
from calib.estimates.exceedance import exceed_probability
from calib.estimates.figures import probability
from calib.labeling.draw import draw, write_drawn
from calib.reading.clough import CLOUGH_DIR
from calib.reading.samples import load_sample
from calib.search.from_sample import SearchResult

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample"
SMALL = ["--shingles", "word5,char5", "--num-perm", "64", "--splits", "8x8,16x4", "--thresholds", "0.7,0.8"]


def run(capsys, argv) -> tuple[int, list[str]]:
    code = cli.main([str(a) for a in argv])
    return code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def _row(fp: str, recall: float, policy: str = "star") -> pd.Series:
    return pd.Series({"config_fingerprint": fp, "pair_recall": recall, "representation": "word2 nopunct",
                      "num_perm": 256, "b": 64, "r": 4, "verify": "exact", "threshold": 0.57, "policy": policy,
                      "measure": "jaccard"})


def test_the_pass_summary_names_the_clustering_policy():
    first, best = _row("a", 0.9, "connected"), _row("b", 0.95, "star")
    found = SearchResult(pd.DataFrame({"search_pass": [1, 2]}), None, None, 0, first, best, 3, True, best)
    text = found.added_text()
    assert "the recommendation moved from pair recall 90.0% to 95.0% (word2 nopunct num_perm=256 b=64 r=4 " \
           "exact t=0.57 star clusters)" in text, text


@pytest.mark.slow
def test_sweep_and_export_lines_state_the_rule_the_policy_and_the_probability(tmp_path, capsys):
    res = tmp_path / "r.parquet"
    code, lines = run(capsys, ["sweep", "--sample", SAMPLE, "--out", res, *SMALL, "--policies", "star",
                               "--budget", "0.02", "--confidence", "0.95"])
    assert code == 0, lines
    table = pd.read_parquet(res)
    rec = table[table["recommended"]].iloc[0]
    assert (table["confidence"] == 0.95).all() and (table["budget"] == 0.02).all()  # the rule, with the table
    line = next(x for x in lines if x.startswith("recommended ("))
    p = exceed_probability(rec["false_removal_rate"], rec["false_removal_rate_low"], rec["false_removal_rate_high"],
                           0.02)
    assert "(max pair recall, false-removal rate's 95% one-sided upper bound <= 2.00%" in line, line
    assert f"t={rec['threshold']} star clusters:" in line, line
    assert f"P(false-removal rate > 2.00%) = {probability(p)}" in line, line
    # export --from-sweep takes the sweep's confidence (said so) and records it in config.json
    code, lines = run(capsys, ["export", "--sample", SAMPLE, "--from-sweep", res, "--budget", "0.02",
                               "--out", tmp_path / "e"])
    assert code == 0, lines
    assert any("recommended with --confidence 0.95 (as the sweep was)" in x for x in lines), lines
    line = next(x for x in lines if x.startswith("recommended ("))
    assert "95% one-sided upper bound <= 2.00%" in line and f"= {probability(p)}" in line, line
    selection = json.loads((tmp_path / "e" / "config.json").read_text())["evidence"]["selection"]
    assert selection["confidence"] == 0.95 and selection["max_false_removal_rate"] == 0.02
    # a stricter confidence than the row holds is refused, naming the bound and the sweep's budget
    code, lines = run(capsys, ["export", "--sample", SAMPLE, "--from-sweep", res, "--confidence", "0.999",
                               "--out", tmp_path / "e2"])
    assert code == 2 and len(lines) == 1, lines
    assert "99.9% one-sided upper bound" in lines[0] and "under --budget 0.02" in lines[0], lines


def test_a_drawn_set_not_labeled_yet_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    d = tmp_path / "d"
    write_drawn(d, draw(SAMPLE / "docs.jsonl", docs=200, pairs=30, seed=0))
    sample = load_sample(d)
    assert sample.unlabeled_pairs() == 30
    text = str(sample)
    assert "0 labeled pairs (0 duplicate), 30 pairs not labeled yet" in text and "0 exclusions" in text, text

    def no_work(*a, **k):  # the sweep's work starts with the workspace
        raise AssertionError("a workspace was built for a sample with no labels")
    monkeypatch.setattr("calib.search.workspace.Workspace.__init__", no_work)
    code, lines = run(capsys, ["sweep", "--sample", d, "--out", tmp_path / "r.csv"])
    assert code == 3 and len(lines) == 1, lines
    assert "has no duplicate labels" in lines[0] and "30 pairs not labeled yet" in lines[0], lines
    assert "exclusion" not in lines[0] and "nothing swept" in lines[0]
    assert not (tmp_path / "r.csv").exists()


@needs_clough
@pytest.mark.slow
def test_export_from_sweep_carries_the_ignored_categories(tmp_path, capsys):
    res = tmp_path / "r.csv"
    # the default search's pick there: with the heavy revisions counted, 11 of its 36 labeled removals are false
    grid = ["--shingles", "char5", "--num-perm", "128", "--splits", "128x1", "--thresholds", "0.45",
            "--measures", "containment", "--representative", "longest"]
    code, lines = run(capsys, ["sweep", "--sample", CLOUGH_DIR, "--out", res, *grid, "--ignore-categories", "heavy"])
    assert code == 0, lines
    rec = pd.read_csv(res).query("recommended").iloc[0]
    assert rec["ignored_categories"] == "heavy"
    code, lines = run(capsys, ["export", "--sample", CLOUGH_DIR, "--from-sweep", res, "--out", tmp_path / "e"])
    assert code == 0, lines
    assert any("--ignore-categories heavy (as the sweep was" in x for x in lines), lines
    doc = json.loads((tmp_path / "e" / "config.json").read_text())
    assert doc["evidence"]["ignored"]["categories"] == ["heavy"]
    assert doc["evidence"]["metrics"]["false_removal_rate"] == pytest.approx(rec["false_removal_rate"], abs=1e-9)
    # other categories than the sweep's: refused in one line naming both
    code, lines = run(capsys, ["export", "--sample", CLOUGH_DIR, "--from-sweep", res, "--ignore-categories", "non",
                               "--out", tmp_path / "e2"])
    assert code == 2 and len(lines) == 1, lines
    assert "swept with --ignore-categories heavy" in lines[0] and "--ignore-categories non" in lines[0], lines
