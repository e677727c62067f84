"""Team review from the command line: calib reviews agreement, and calib sweep --reviews with the
label rule and the contested pairs' sensitivity."""

import json
from pathlib import Path

import pandas as pd
import pytest

from calib.review.agreement import agreement_table
from calib.cli import main
from calib.review.sqlite import ReviewStore
from calib.reading.samples import load_sample

ROOT = Path(__file__).resolve().parents[1]
SMALL_GRID = ["--shingles", "word3", "--num-perm", "64", "--splits", "16x4,8x8", "--thresholds", "0.5,0.7,0.9"]


@pytest.fixture(scope="module")
def sample():
    return load_sample(ROOT / "data" / "sample")


def team_store(path, sample):
    """ana and bo on 12 labeled pairs: they agree on 8 (of which bo flips nothing), disagree on 4;
    cy adjudicates one of the 4."""
    p = sample.pairs.head(12)
    ids = sample.ids
    with ReviewStore(path) as store:
        for k, (i, j, dup) in enumerate(zip(p["i"], p["j"], p["is_duplicate"])):
            truth = "duplicate" if dup else "not_duplicate"
            other = "not_duplicate" if dup else "duplicate"
            store.record(ids[i], ids[j], truth, "ana")
            store.record(ids[i], ids[j], truth if k < 8 else other, "bo")
        i, j = p["i"].iloc[8], p["j"].iloc[8]
        store.record(ids[i], ids[j], "duplicate", "cy", kind="adjudication")
        return store.all_decisions()


def test_agreement_cli_prints_the_kappa_table_and_json(tmp_path, sample, capsys):
    db = tmp_path / "r.sqlite"
    team_store(db, sample)
    group = sample.docs.dropna(subset=["group"]).groupby("group")["id"].apply(list)
    listed = set(zip(sample.ids[sample.pairs["i"]], sample.ids[sample.pairs["j"]]))
    a, b = next(tuple(sorted(m[:2])) for m in group[group.str.len() >= 2]
                if tuple(sorted(m[:2])) not in listed)  # two documents of one group that no pair row lists
    with ReviewStore(db) as store:
        store.record(a, b, "duplicate", "ana")
        store.record(a, b, "duplicate", "bo")
        decisions = store.all_decisions()
    assert main(["reviews", "agreement", "--reviews", str(db), "--sample", str(ROOT / "data" / "sample"),
                 "--replicates", "200"]) == 0
    out = capsys.readouterr().out
    want = agreement_table(decisions, replicates=200).iloc[0]
    assert f"{want['kappa']:.3f} [{want['low']:.3f}, {want['high']:.3f}]" in out
    assert "labels: 10 label(s) used (1 adjudicated, 9 unanimous); 3 contested pair(s) excluded" in out
    cats = {line.split()[1]: line.split() for line in out.splitlines() if line.startswith("category")}
    assert set(cats) == {"boilerplate", "(group)"} and cats["(group)"][-4] == "1" and cats["boilerplate"][-4] == "12"
    assert main(["reviews", "agreement", "--reviews", str(db), "--json", "--replicates", "200"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["agreement"][0]["scope"] == "overall" and doc["agreement"][0]["pairs"] == 13
    assert doc["agreement"][0]["kappa"] == pytest.approx(want["kappa"])
    assert doc["labels"]["contested"] == 3
    assert main(["reviews", "agreement", "--reviews", str(tmp_path / "none.sqlite")]) == 2


@pytest.mark.slow
def test_sweep_uses_the_label_rule_and_reports_the_contested_sensitivity(tmp_path, sample, capsys):
    db = tmp_path / "r.sqlite"
    team_store(db, sample)
    out = tmp_path / "r.csv"
    assert main(["sweep", "--sample", str(ROOT / "data" / "sample"), "--out", str(out), "--reviews", str(db),
                 "--budget", "0.05", *SMALL_GRID]) == 0
    err = capsys.readouterr().err
    assert "reviews: 9 pair label(s)" in err and "3 contested pair(s) excluded" in err
    assert "if the 3 contested pair(s) went the other way" in err
    assert "contested -> duplicate:" in err and "contested -> not duplicate:" in err
    assert len(pd.read_csv(out))
