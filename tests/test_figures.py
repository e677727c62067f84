"""One figure, one computation: a configuration's rates, intervals and counts read the same on the Sweep,
Clusters and Export pages, in the CLI and in config.json (calib.estimates.figures writes them all, from the
one result row the engine computed); a value that cannot be measured is said in words; what an interval
covers is generated from the row's own method column."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calib.estimates import figures
from calib.estimates.bootstrap import ClusterBootstrap
from calib.estimates.metrics import counted_rate
from calib.estimates.stats import wilson
from test_app import small_sweep, start

ROOT = Path(__file__).resolve().parents[1]
NOT_NUMBERS = re.compile(r"\b(nan|inf|NaN|None)\b|±\s*inf")


def test_values_that_cannot_be_measured_are_said_in_words():
    for bad in (float("nan"), float("inf"), None, pd.NA, np.float64("nan")):
        assert figures.pct(bad, "false_removal_rate") == "not measured"
        assert figures.span(bad, 0.1) == "" and figures.span(0.0, bad) == ""
        assert figures.number(bad) == "not measured"
    row = {"false_removal_rate": float("nan"), "false_removal_rate_low": float("nan"),
           "false_removal_rate_high": float("inf"), "pair_recall": 0.5, "pair_recall_low": 0.4,
           "pair_recall_high": float("inf"), "removed": 0}
    assert figures.rate_text(row, "false_removal_rate") == "not measured (no labeled removal)"
    assert figures.rate_text(row, "pair_recall") == "50.0%"  # an interval with an infinite end is not shown
    text = figures.summary(row)
    assert not NOT_NUMBERS.search(text), text
    assert text == "pair recall 50.0%, false-removal rate not measured (no labeled removal), 0 documents removed"


def test_digits_and_interval_text():
    row = {"false_removal_rate": 0.0035, "false_removal_rate_low": 0.0, "false_removal_rate_high": 0.0112,
           "false_removal_rate_interval": "cluster-bootstrap+hash"}
    assert figures.rate_text(row, "false_removal_rate") == "0.35% (95% interval 0.00–1.12%)"
    assert figures.rate_text(row, "false_removal_rate", covers=True) == (
        "0.35% (95% interval 0.00–1.12%: sampling of whole true-duplicate clusters (cluster bootstrap) and the hash "
        "seed (the value another seed gives))")
    assert figures.pct(0.776, "pair_recall") == "77.6%" and figures.count(1, "label") == "1 label"
    assert figures.count(1234, "label") == "1,234 labels"


def test_interval_words_come_from_the_method_column():
    assert "hash seed" in figures.interval_words("cluster-bootstrap+hash")
    assert "hash seed" not in figures.interval_words("cluster-bootstrap")
    assert figures.interval_words("envelope of per-seed wilson+hash").startswith(figures.SEEDS_WORDS)
    assert figures.interval_words("") == "" and figures.interval_words("no-such-method") == ""
    assert figures.covers(["wilson", "wilson"], "pair_recall") == (
        "The pair recall's 95% interval (wilson) covers binomial sampling of independent labeled trials.")
    row = {"pair_recall_interval": "wilson", "false_removal_rate_interval": "wilson", "pair_precision_interval": ""}
    assert figures.covers_row(row, ("pair_recall", "false_removal_rate", "pair_precision")) == (
        "The pair recall's and the false-removal rate's 95% intervals (wilson) cover binomial sampling of "
        "independent labeled trials.")


def test_docs_list_every_interval_method_in_the_words_of_the_code():
    """docs/guides/rates-and-intervals.md says what each method covers in the same words as the pages."""
    page = (ROOT / "docs" / "guides" / "rates-and-intervals.md").read_text()
    for method, words in figures.METHODS.items():
        assert f"| `{method}` |" in page and words in page, method
    assert figures.HASH_WORDS in page and figures.SEEDS_WORDS in page
    # the rates whose rows carry +hash are not said to get "the sampling interval only"
    assert "sampling interval only" not in page


def test_a_rate_at_zero_has_an_interval_with_width():
    """0 false removals of 198 read '95% upper 0.00%' (the percentile bootstrap: every resample gives 0); the
    interval is now Wilson's over the clusters holding the trials."""
    units = np.repeat(np.arange(50), 4)  # 50 clusters of 4 documents: the trials share clusters
    boot = ClusterBootstrap(units, replicates=200)
    docs = np.arange(len(units))
    for k_docs, want_rate in ((np.zeros(len(units)), 0.0), (np.ones(len(units)), 1.0)):
        out = counted_rate("r", boot.doc_counts(docs, k_docs), boot)
        lo, hi = (float(x) for x in wilson(want_rate * 50, 50))
        assert out["r"] == want_rate and out["r_interval"] == "wilson-clusters"
        assert (out["r_low"], out["r_high"]) == pytest.approx((lo, hi))
        assert out["r_high"] - out["r_low"] > 0.05  # 50 clusters: about 7% wide, not 0
    some = np.zeros(len(units))
    some[:12] = 1  # three whole clusters: the bootstrap proper
    assert counted_rate("r", boot.doc_counts(docs, some), boot)["r_interval"] == "cluster-bootstrap"


def test_the_shipped_default_configuration_has_no_zero_width_interval(sample):
    from calib.search.config import Config
    from calib.search.sweep import evaluate
    row = evaluate(sample, Config()).row
    assert row["false_removals"] == 0 and row["labeled_removals"] > 100
    assert row["false_removal_rate_high"] > 0.01, row["false_removal_rate_high"]
    assert row["false_removal_rate_interval"] == "wilson-clusters+hash"


def _cli(*args: str) -> str:
    run = subprocess.run([sys.executable, "-m", "calib", *args], cwd=ROOT, capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stderr
    return run.stderr


@pytest.mark.slow
def test_one_configuration_reads_the_same_everywhere(tmp_path):
    """The default configuration (word5, 128 hashes, 16x8, exact J >= 0.8, connected) on the shipped sample:
    its pair recall, false-removal rate, intervals and removals are the same text on the Sweep page (its
    recommendation and table), the Clusters page's policies table, the Export page, `calib sweep`,
    `calib export` and config.json."""
    from calib.search.config import Config
    results = tmp_path / "results.parquet"
    sweep_err = _cli("sweep", "--sample", "data/sample", "--shingles", "word5", "--num-perm", "128", "--splits",
                     "16x8", "--thresholds", "0.8", "--policies", "connected", "--budget", "0.05", "--out",
                     str(results))
    export_err = _cli("export", "--sample", "data/sample", "--from-sweep", str(results), "--out", str(tmp_path / "x"))
    row = pd.read_parquet(results).iloc[0]
    assert row["config_fingerprint"] == Config().fingerprint()
    doc = json.loads((tmp_path / "x" / "config.json").read_text())
    metrics = doc["evidence"]["metrics"]
    want = figures.summary(row)
    assert want == figures.summary(metrics)
    assert not NOT_NUMBERS.search(want), want
    assert want in sweep_err and want in export_err, (want, sweep_err, export_err)
    frr = figures.rate_text(row, "false_removal_rate")

    at = small_sweep(start(), splits="16x8", thresholds=(0.8,))
    assert not at.exception, at.exception
    captions = " ".join(c.value for c in at.caption)
    assert want[0].upper() + want[1:] in captions, captions
    table = at.dataframe[0].value
    shown = table[table["config_fingerprint"] == row["config_fingerprint"]].iloc[0]
    assert shown["false_removal_rate_95"] == figures.span(row["false_removal_rate_low"],
                                                          row["false_removal_rate_high"], "false_removal_rate")
    assert f"{shown['false_removal_rate']:.2f}%" == figures.pct(row["false_removal_rate"], "false_removal_rate")

    at.switch_page("pages/4_Clusters.py").run()
    assert not at.exception, at.exception
    policies = next(t.value for t in at.table if "connected" in t.value.columns)["connected"]
    unescape = lambda v: str(v).replace("\\", "")  # noqa: E731 - st.table cells are escaped Markdown
    assert unescape(policies["false-removal rate"]) == figures.pct(row["false_removal_rate"], "false_removal_rate")
    assert unescape(policies["false-removal 95% CI"]) in frr
    assert unescape(policies["removed"]) == figures.number(row["removed"])

    at.switch_page("pages/6_Export.py").run()
    assert not at.exception, at.exception
    evidence = next(c.value for c in at.caption if c.value.startswith("Evidence stored with it"))
    assert f"pair recall {figures.rate_text(row, 'pair_recall')}" in evidence
    assert f"false-removal rate {frr}" in evidence
    assert math.isclose(metrics["false_removal_rate_high"], row["false_removal_rate_high"], rel_tol=1e-12)


def test_the_group_category_is_named_and_pair_categories_are_not_flagged(sample):
    """The Clusters slice table's '(group)' pairs are the ones `calib samples summary` counts as
    pairs_within_groups_not_listed; pair categories differ by design and are never flagged."""
    from appui import labels
    from calib.reading.sample import summary
    from calib.search.config import Config
    from calib.search.sweep import evaluate, slice_breakdown
    sb = slice_breakdown(evaluate(sample, Config()), sample)
    group = sb[(sb["metric"] == "pair_recall") & (sb["value"] == "(group)")]
    assert int(group["n"].iloc[0]) == summary(sample)["groups"]["pairs_within_groups_not_listed"] == 73
    assert labels.category("(group)") == "same group, not listed"
    assert not sb.loc[sb["level"] == "pair", "flagged"].any()
    assert sb.loc[sb["level"] == "document", "flagged"].any()  # document slices are still compared and flagged
