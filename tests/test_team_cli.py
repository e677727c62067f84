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


def test_export_says_what_its_review_labels_stand_on(tmp_path, capsys):
    """calib export --reviews prints the label counts and kappa it records in evidence.reviews."""
    from calib.production.document import write_config
    from calib.search.config import Config
    folder = tmp_path / "sample"
    folder.mkdir()
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    (folder / "docs.jsonl").write_text("".join(json.dumps({"id": f"d{k}", "text": " ".join(words[k:] + words[:k])})
                                               + "\n" for k in range(8)))
    (folder / "pairs.csv").write_text("id_a,id_b,label\nd0,d1,not_duplicate\n")
    db = tmp_path / "r.sqlite"
    with ReviewStore(db) as store:  # ana and bo: agree on d2/d3 (duplicate) and d4/d5, disagree on d6/d7
        for a, b, ana, bo in (("d2", "d3", "duplicate", "duplicate"), ("d4", "d5", "not_duplicate", "not_duplicate"),
                              ("d6", "d7", "duplicate", "not_duplicate"), ("d0", "d7", "duplicate", "unsure")):
            store.record(a, b, ana, "ana")
            store.record(a, b, bo, "bo")
    write_config(tmp_path / "given.json", Config())
    out = tmp_path / "export"
    assert main(["export", "--sample", str(folder), "--config", str(tmp_path / "given.json"),
                 "--out", str(out), "--reviews", str(db)]) == 0
    err = capsys.readouterr().err
    evidence = json.loads((out / "config.json").read_text())["evidence"]["reviews"]
    assert evidence["labels"]["contested"] == 1 and evidence["labels"]["unanimous"] == 3
    line = next(x for x in err.splitlines() if x.startswith(f"reviews in {db}: "))
    assert "3 review label(s): 0 adjudicated, 3 unanimous (not used as labels" in line
    assert "1 contested and 0 undecided pair(s) left out; 4 double-reviewed pair(s), 1 unsure decision(s)" in line
    # 3 pairs rated twice: p_o = 2/3, ana duplicate 2/3, bo 1/3: p_e = 2/9 + 2/9 = 4/9, kappa = (2/9) / (5/9) = 0.4
    assert evidence["agreement"]["kappa"] == pytest.approx(0.4, abs=1e-6)
    assert "cohen kappa 0.400 [" in line and "over 3 pair(s) rated twice or more, 2 agreed" in line


def test_one_count_of_double_reviewed_pairs_and_of_unsure_decisions(tmp_path, capsys):
    """25 pairs decided by two reviewers, 2 of them with one 'unsure' vote: 25 double-reviewed pairs and
    2 unsure decisions on the label line, in the kappa table, the JSON and the export's evidence; kappa
    rates the 23 others."""
    from calib.review.adjudication import review_labels
    from calib.review.agreement import review_evidence
    db = tmp_path / "r.sqlite"
    with ReviewStore(db) as store:
        for k in range(25):
            store.record(f"a{k:02d}", f"b{k:02d}", "duplicate" if k % 3 else "not_duplicate", "ana")
            store.record(f"a{k:02d}", f"b{k:02d}", "unsure" if k < 2 else "duplicate" if k % 4 else "not_duplicate",
                         "bo")
        decisions = store.all_decisions()
    _, counts = review_labels(decisions)
    table = agreement_table(decisions, replicates=50)
    evidence = review_evidence(decisions, labels_from_reviews=False, replicates=50)
    assert counts.double_reviewed == evidence["agreement"]["double_reviewed"] == 25
    assert counts.unsure == table.iloc[0]["unsure"] == evidence["agreement"]["unsure"] == 2
    assert table.iloc[0]["pairs"] == evidence["agreement"]["pairs_rated"] == 23
    assert main(["reviews", "agreement", "--reviews", str(db), "--replicates", "50"]) == 0
    out = capsys.readouterr().out
    assert "25 double-reviewed pair(s), 23 of them rated twice or more (in kappa); 2 unsure decision(s)" in out
    assert "2 unsure decision(s); 25 double-reviewed pair(s)" in out.split("labels: ")[1]
