"""The search for the tool that will run the configuration (calib sweep/export --target).

Each target declares what it runs (calib.production.targets.<tool>.CAPABILITIES) and projects any
Config onto it; the search explores and measures only what the tool runs; export refuses a row
the tool cannot run as measured. Checked: the projection is idempotent and is every target's
engine_config; every row of a target's search is a fixed point of its projection; the pick's
figures are targets.json's evidence for it; a tool that verifies nothing picks a steeper split than
calib on a sample whose hard non-duplicates sit just below the duplicates.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _steep import steep_sample

from calib.candidates import lsh
from calib.cli import main
from calib.production import targets as T
from calib.search.capabilities import CALIB
from calib.search.config import Config, config_from_row
from calib.search.from_sample import search
from calib.search.unverified import expected_unverified, shortlist, splits_for
from calib.search.workspace import Workspace
from calib.sketches.represent import Representation

ROOT = Path(__file__).resolve().parents[1]

CONFIGS = [
    Config(),
    Config(Representation(shingle="char", k=5, strip_punct=True, strip_lines=0.02), 21, 6, threshold=0.7,
           policy="star"),
    Config(Representation(shingle="word", k=2, num_perm=256), 64, 4, verify="estimated", threshold=0.57,
           min_shingles=5),
    Config(Representation(k=3), 25, 5, verify="none"),
    Config(Representation(k=3), 20, 5, threshold=0.8, measure="containment", representative="longest",
           max_component=10),
    Config(Representation(k=3, weighting="idf", scheme="dart"), 16, 8, threshold=0.6, measure="weighted_jaccard"),
    Config(Representation(shingle="char", k=4, lowercase=False, nfkc=False), 1, 8, threshold=0.9),
]


def test_target_choices_are_the_registry():
    from calib.cli.sweep import TARGETS
    assert TARGETS == T.TARGET_NAMES == tuple(T.capabilities())
    with pytest.raises(ValueError, match="unknown target 'spark'"):
        T.capabilities("spark")


@pytest.mark.parametrize("name", T.TARGET_NAMES)
@pytest.mark.parametrize("k", range(len(CONFIGS)))
def test_projection_is_idempotent_and_is_the_engine_config(name, k):
    caps, cfg = T.capabilities(name), CONFIGS[k]
    p = caps.project(cfg)
    if p is None:
        return
    assert caps.project(p).fingerprint() == p.fingerprint()
    assert caps.runs_as_is(p)
    assert p.verify in caps.verify and str(p.policy) in caps.policies and p.rep.shingle in caps.shingles
    if caps.keep != "any":
        assert p.representative == caps.keep
    for step in caps.dropped():  # what the tool lacks is not in what it runs
        assert {"strip_lines": not p.rep.strip_lines, "min_shingles": not p.min_shingles,
                "measure": p.measure != "containment", "weighting": p.rep.weighting == "none"}[step]
    if name != "calib":
        assert T.targets(cfg)[name].engine_config.fingerprint() == p.fingerprint()
        assert caps.runs_as_is(cfg) == (not caps.differences(cfg))


def test_calib_runs_everything_as_written():
    for cfg in CONFIGS:
        assert CALIB.project(cfg) is cfg and CALIB.runs_as_is(cfg) and not CALIB.differences(cfg)


def test_what_each_tool_runs_read_from_its_module():
    caps = T.capabilities()
    assert not any(caps[n].verifies for n in ("datatrove", "text_dedup", "nemo_curator"))
    # Milvus: the estimate (mh_search_with_jaccard), or the exact Jaccard its snippet checks on each hit
    assert caps["milvus"].verify == ("exact", "estimated", "none") and caps["milvus"].whole_signature
    assert caps["nemo_curator"].shingles == ("char",) and caps["text_dedup"].shingles == ("word",)
    assert caps["datasketch"].project(replace(Config(), b=1, r=8)) is None  # MinHashLSH refuses b < 2
    assert caps["milvus"].project(replace(Config(), b=10, r=8)) is None     # 128 hashes in 10 bands: no
    d = caps["datatrove"].differences(CONFIGS[1])
    assert any("verification" in x for x in d) and any("star" in x for x in d)
    assert not any("boilerplate" in x for x in d)  # its snippet strips first (CalibPreSteps)


def test_splits_considered():
    assert all(b * r <= 64 and r <= 32 and b >= 2 for _, b, r in splits_for(64, min_bands=2))
    whole = splits_for(None, whole=True)
    assert all(m == b * r and 64 <= m for m, b, r in whole)
    assert (128, 16, 8) in whole and (128, 16, 8) in splits_for(128)


# -- searches on a small sample -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hard():
    """Duplicates lightly edited (J mostly above 0.85) beside pairs labeled not duplicate that share most of
    their text (J 0.62-0.8): verification at ~0.82 separates them, a split alone must be steep there."""
    return Workspace(steep_sample(3, pairs=60, hard=25, singletons=40, edit=(0.0, 0.03), hard_j=(0.62, 0.8)))


@pytest.fixture(scope="module")
def picks(hard):
    out = {}
    for name in ("calib", "datatrove"):
        out[name] = search(hard, max_false_removal_rate=0.01, effort=0.5, target=T.capabilities(name))
    return out


@pytest.mark.slow  # two default searches on 210 documents (~1-2 min on a shared machine)
def test_every_row_of_a_target_search_is_a_fixed_point_and_recorded(picks):
    caps = T.capabilities("datatrove")
    rows = picks["datatrove"].results
    assert (rows["target"] == "datatrove").all() and "target" not in picks["calib"].results
    for _, row in rows.iterrows():
        assert caps.runs_as_is(config_from_row(row)), row["config_fingerprint"]
    assert (rows["verify"] == "none").all() and (rows["representative"] == "union_size").all()


@pytest.mark.slow
def test_unverified_pick_is_steeper_than_calibs_and_holds_the_budget(picks):
    calib, tool = picks["calib"].best, picks["datatrove"].best
    assert calib is not None and tool is not None
    assert calib["verify"] == "exact" and tool["verify"] == "none"
    s50 = lambda row: lsh.s_at_probability(int(row["b"]), int(row["r"]), 0.5)  # noqa: E731
    assert s50(tool) > s50(calib) + 0.1, (s50(tool), s50(calib))
    assert tool["false_removal_rate"] <= 0.01 and tool["pair_recall"] > 0.5


@pytest.mark.slow
def test_pick_figures_are_the_targets_evidence(hard, picks):
    best = picks["datatrove"].best
    cfg = config_from_row(best)
    ev = T.evidence(hard, cfg)["datatrove"]
    assert ev["config_fingerprint"] == cfg.fingerprint()
    for k in ("removed", "false_removals", "true_removals"):
        assert ev[k] == int(best[k])
    for k in ("false_removal_rate", "pair_recall"):
        assert ev[k] == pytest.approx(float(best[k]), abs=1e-12)
    # calib's pick run by datatrove: its own evidence breaks the budget the verified pick held
    calib_cfg = config_from_row(picks["calib"].best)
    assert T.evidence(hard, calib_cfg)["datatrove"]["false_removal_rate"] > 0.01


@pytest.mark.slow
def test_expected_unverified_matches_the_measured_mean_over_seeds(hard):
    """The expected rates rank splits before any is measured: over 8 seeds the measured pair recall's mean
    is within 3 standard errors of the expectation (the S-curve at each duplicate's exact J)."""
    from calib.search.sweep import sweep_configs
    cfg = T.capabilities("datatrove").project(Config(Representation(k=3), 16, 8))
    e = expected_unverified(hard, cfg, 0.3)
    rows = sweep_configs(hard, [replace(cfg, rep=cfg.rep.with_(seed=s)) for s in range(1, 9)])
    rec = rows["pair_recall"].to_numpy(float)
    assert abs(rec.mean() - e["recall"]) <= 3 * rec.std(ddof=1) / np.sqrt(len(rec)) + 0.01
    assert shortlist(hard, cfg, 0.01, 0.3)  # some split is kept by the pair-level step


# -- the command line -------------------------------------------------------------------------------------


@pytest.mark.slow  # evaluates a config and its datatrove projection on the shipped sample (~30 s)
def test_export_refuses_a_row_the_target_cannot_run(tmp_path, capsys):
    first = tmp_path / "calib"
    cfg = Config(Representation(k=3, strip_punct=True), 25, 5, threshold=0.75)
    assert main(["export", "--sample", str(ROOT / "data" / "sample"), "--config", str(_given(cfg, tmp_path / "c.json")),
                 "--out", str(first)]) == 0
    capsys.readouterr()
    assert main(["export", "--sample", str(ROOT / "data" / "sample"), "--config", str(first / "config.json"),
                 "--target", "datatrove", "--out", str(tmp_path / "refused")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    line = [x for x in err if "cannot run" in x]
    assert len(line) == 1 and "exact verification" in line[0] and "false-removal rate" in line[0]
    ev = json.loads((first / "targets.json").read_text())["targets"]["datatrove"]["evidence"]
    assert f"{ev['false_removal_rate']:.1%}" in line[0] or f"{ev['false_removal_rate']:.2%}" in line[0]
    assert not (tmp_path / "refused").exists()


def _given(cfg: Config, path: Path) -> Path:
    """A config document for ``cfg`` (the shape calib export writes)."""
    from calib.production.document import write_config
    write_config(path, cfg)
    return path


@pytest.mark.slow  # a sweep of a typed grid for datatrove on the shipped sample, then two exports
def test_results_record_the_target_and_export_checks_it(tmp_path, capsys):
    out = tmp_path / "r.parquet"
    assert main(["sweep", "--sample", str(ROOT / "data" / "sample"), "--out", str(out), "--target", "datatrove",
                 "--shingles", "word3", "--num-perm", "256", "--splits", "12x16,16x16,8x16", "--thresholds", "0.8",
                 "--budget", "1"]) == 0
    rows = pd.read_parquet(out)
    assert (rows["target"] == "datatrove").all() and (rows["verify"] == "none").all()
    assert len(rows) == 3  # one per split: the threshold is irrelevant without verification
    capsys.readouterr()
    assert main(["export", "--sample", str(ROOT / "data" / "sample"), "--from-sweep", str(out), "--target", "milvus",
                 "--budget", "1", "--out", str(tmp_path / "x")]) == 2
    assert "measured as datatrove runs them, not --target milvus" in capsys.readouterr().err
    assert main(["export", "--sample", str(ROOT / "data" / "sample"), "--from-sweep", str(out), "--budget", "1",
                 "--out", str(tmp_path / "ok")]) == 0  # the table's own target
    doc = json.loads((tmp_path / "ok" / "config.json").read_text())
    assert doc["evidence"]["selection"]["target"] == "datatrove"
    best = rows[rows["recommended"]].iloc[0]
    ev = json.loads((tmp_path / "ok" / "targets.json").read_text())["targets"]["datatrove"]["evidence"]
    assert ev["removed"] == int(best["removed"]) and ev["false_removal_rate"] == pytest.approx(
        float(best["false_removal_rate"]), abs=1e-12)


def test_a_whole_signature_tool_gets_the_split_cut_to_it():
    milvus = T.capabilities("milvus")
    cfg = Config(Representation(k=3), 25, 5, threshold=0.8)
    assert milvus.project(cfg) is None  # 128 hashes do not split into 25 bands
    (got,) = milvus.fixed([cfg])
    assert (got.rep.num_perm, got.b, got.r, got.verify) == (125, 25, 5, cfg.verify) and milvus.runs_as_is(got)


@pytest.mark.parametrize("name", T.REGISTRY_NAMES)
def test_a_pre_step_is_kept_by_the_projection(name, monkeypatch):
    """A step a tool takes as a pre-step (its snippet runs it first) stays in what it runs."""
    module = T._modules()[name]
    monkeypatch.setattr(module, "CAPABILITIES", replace(module.CAPABILITIES, pre_steps=("strip_lines", "min_shingles")))
    # normalized as text-dedup's tokens are: the exported stoplist's lines are the ones its evaluation counts
    cfg = Config(Representation(shingle="char", k=5, nfkc=False, strip_punct=True, strip_lines=0.02), 16, 8,
                 threshold=0.8, min_shingles=5)
    p = T.capabilities(name).project(cfg)
    assert p.rep.strip_lines == 0.02 and p.min_shingles == 5
    if name == "text_dedup":  # another normalization: the stoplist's lines are not the ones text-dedup's would be
        p = T.capabilities(name).project(replace(cfg, rep=cfg.rep.with_(nfkc=True)))
        assert p.rep.strip_lines == 0 and p.min_shingles == 5
