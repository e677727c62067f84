"""Hostile input, round six (second half): a shared cache that is trusted, a drawn set's design
without its digests, edited evidence in config.json, a grid with nothing left to sweep, and shares
that cannot be measured. Each test reproduces its case first."""

from __future__ import annotations

import json
import math
import os
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from test_hostile_inputs_28 import one_line, run, write_corpus, write_labeled  # calib in-process

REPO = Path(__file__).resolve().parents[1]
TINY_GRID = ["--shingles", "word3", "--num-perm", "32", "--splits", "8x4", "--thresholds", "0.7"]
BASE = "the quick brown fox jumps over the lazy dog near the river bank today and tomorrow again"


def write_sample(folder: Path, docs: list[tuple[str, str]], pairs: list[tuple[str, str, str]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "docs.jsonl").write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in docs))
    (folder / "pairs.csv").write_text("id_a,id_b,label\n" + "".join(f"{a},{b},{lab}\n" for a, b, lab in pairs))
    return folder


# ------------------------------------------------------------------ a grid with nothing left to sweep

def _long_text(rng, words: int) -> list[str]:
    return [f"w{rng.randrange(5000)}" for _ in range(words)]


def _exact_copy_nonduplicate(folder: Path) -> Path:
    """The duplicates differ by a word; the pair labeled not-duplicate is an exact copy (J = 1)."""
    other = "completely different words about cats and mice living in old houses by the sea"
    return write_sample(folder, [("a", BASE), ("b", BASE + " indeed"), ("c", other), ("d", other)],
                        [("a", "b", "duplicate"), ("c", "d", "not_duplicate")])


def _near_one_nonduplicates(folder: Path) -> Path:
    """Long documents: the duplicates share 90% of their words, the non-duplicates all but one word."""
    rng = random.Random(1)
    a = _long_text(rng, 4000)
    b = a[:3600] + _long_text(rng, 400)
    c = _long_text(rng, 4000)
    d = c[:-1] + ["changed"]
    return write_sample(folder, [("a", " ".join(a)), ("b", " ".join(b)), ("c", " ".join(c)), ("d", " ".join(d))],
                        [("a", "b", "duplicate"), ("c", "d", "not_duplicate")])


@pytest.mark.parametrize("make", [_exact_copy_nonduplicate, _near_one_nonduplicates])
def test_an_empty_grid_ends_with_the_nothing_fits_message(tmp_path, capsys, make):
    """Every configuration of the chosen grid sits below the non-duplicates' floor and is skipped: the
    default search says nothing fits (exit status 0, as when nothing fits the budget), with the reason,
    and writes the table (no row) rather than ending in KeyError: 'status'."""
    sample = make(tmp_path / "s")
    out = tmp_path / "r.csv"
    code, lines = run(capsys, "sweep", "--sample", sample, "--out", out)
    text = "\n".join(lines)
    assert code == 0, text
    assert "Traceback" not in text and "KeyError" not in text
    assert lines[-1] == "no configuration keeps the false-removal rate <= 0.01", text
    assert "configurations of the grid were skipped, so none was measured" in text
    assert out.exists() and pd.read_csv(out).empty and "recommended" in pd.read_csv(out).columns
    code, lines = run(capsys, "export", "--sample", sample, "--from-sweep", out, "--out", tmp_path / "e")
    one_line((code, lines), "no recommended row")


def test_the_recommendation_of_an_empty_table_is_none():
    from calib.search.recommend import closest, ranked, recommend
    empty = pd.DataFrame()
    assert ranked(empty).empty and recommend(empty) is None
    assert closest(empty) == (None, "no configuration was swept")


# ------------------------------------------------------------------ shares not measured, in words

def test_a_share_no_half_measures_is_said_in_words(tmp_path, capsys):
    """Two documents, one pair: no half of the sample removes anything; the CLI said 'nan%'."""
    sample = write_sample(tmp_path / "s", [("a", BASE), ("b", BASE + " indeed")], [("a", "b", "duplicate")])
    code, lines = run(capsys, "sweep", "--sample", sample, "--out", tmp_path / "r.csv", *TINY_GRID,
                      "--thresholds", "0.5")
    assert code == 0, lines
    chaining = [x for x in lines if x.startswith("chaining:")]
    assert chaining == ["chaining: 0 of 1 removals by chaining alone (0.0%; not measured on half the sample: "
                        "no half of it removes anything)"], lines
    assert not any("nan" in x.lower().replace("nanos", "") for x in lines), lines


def test_chain_text_never_writes_nan():
    from calib.clusters.growth import ChainGrowth
    from calib.estimates.figures import chain_text
    assert chain_text(ChainGrowth(float("nan"), float("nan"), 0, 0)) == "chaining: nothing removed"
    assert chain_text(ChainGrowth(0.5, 0.25, 1, 2)) == ("chaining: 1 of 2 removals by chaining alone (50.0%; 25.0% "
                                                       "on half the sample); chains lengthen with the collection: "
                                                       "on the whole corpus expect a larger share, and compare calib "
                                                       "apply's chained share (or use the star policy, which removes "
                                                       "no document by chaining alone)")
    for whole, half in ((float("nan"), 0.1), (0.1, float("nan")), (float("inf"), float("nan"))):
        assert "nan" not in chain_text(ChainGrowth(whole, half, 1, 3)) and "inf" not in chain_text(
            ChainGrowth(whole, half, 1, 3))


# ------------------------------------------------------------------ edited evidence in config.json

@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    """config.json with evidence, exported from a small labeled sample (connected clusters)."""
    from calib.production.document import write_config
    from calib.reading.samples import load_sample
    from calib.search.config import Config
    from calib.search.sweep import evaluate
    from calib.search.workspace import Workspace
    from calib.sketches.represent import Representation
    base = tmp_path_factory.mktemp("exported")
    sample = load_sample(write_labeled(base / "s"))
    cfg = Config(rep=Representation(shingle="word", k=3, num_perm=32), b=8, r=4, threshold=0.7)
    write_config(base / "config.json", cfg, evaluation=evaluate(Workspace(sample), cfg), sample=sample)
    m = json.loads((base / "config.json").read_text())["evidence"]["metrics"]
    assert m["removed"] > 0 and m["chained_removals"] >= 0
    return base / "config.json"


EVIDENCE_EDITS = {  # name -> (edit of config.json's text, the field named)
    "chained Infinity": (lambda t: _metric(t, "chained_removals", "Infinity"), "chained_removals"),
    "removed 1e400": (lambda t: _metric(t, "removed", "1e400"), "removed"),
    "chained -1000": (lambda t: _metric(t, "chained_removals", "-1000"), "chained_removals"),
    "chained NaN": (lambda t: _metric(t, "chained_removals", "NaN"), "chained_removals"),
    "chained above removed": (lambda t: _metric(t, "chained_removals", "100000"), "chained_removals"),
    "removed a fraction": (lambda t: _metric(t, "removed", "2.5"), "removed"),
    "recall above 1": (lambda t: _metric(t, "pair_recall", "3.0"), "pair_recall"),
}


def _metric(text: str, key: str, value: str) -> str:
    doc = json.loads(text)
    doc["evidence"]["metrics"][key] = "@@"
    return json.dumps(doc, indent=2).replace('"@@"', value)


@pytest.mark.parametrize("name", list(EVIDENCE_EDITS))
def test_edited_evidence_is_refused_before_apply_reads_the_corpus(exported, tmp_path, capsys, name):
    """apply wrote the manifest, then crashed on Infinity or 1e400 (OverflowError) or printed
    'against -205.8% on the sample': the figures are checked when config.json is read."""
    edit, field = EVIDENCE_EDITS[name]
    cfg = tmp_path / "config.json"
    text = exported.read_text()
    cfg.write_text(edit(text))
    assert cfg.read_text() != text
    out = tmp_path / "out"
    line = one_line(run(capsys, "apply", "--config", cfg, "--corpus", write_corpus(tmp_path / "c.jsonl"),
                        "--out", out), str(cfg), f"/evidence/metrics/{field}")
    assert "Traceback" not in line and "%" not in line
    assert not (out / "manifest.csv").exists() and not (out / "manifest.parquet").exists()


def test_unedited_evidence_still_applies(exported, tmp_path, capsys):
    code, lines = run(capsys, "apply", "--config", exported, "--corpus", write_corpus(tmp_path / "c.jsonl"),
                      "--out", tmp_path / "out")
    assert code == 0, lines


def test_the_chaining_warning_never_overflows():
    from calib.clusters.growth import chained_share_warning
    for metrics in ({"chained_removals": math.inf, "removed": 10}, {"chained_removals": 1, "removed": 1e400},
                    {"chained_removals": -1000, "removed": 485}, {"chained_removals": 50, "removed": 10}):
        assert chained_share_warning({"metrics": metrics}, 30, 100) is None
