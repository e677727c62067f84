"""The Sweep page runs calib sweep's default search: the same recommendation, knobs and nothing-fits
message as the CLI on the same sample (both run here), results files both ways, a run that can be
watched and stopped, and a re-pick that recomputes nothing."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pandas as pd
import pytest
from _steep import steep_sample
from streamlit.testing.v1 import AppTest

from appui import sweep_search
from calib.cli import main
from calib.reading.samples import load_sample
from calib.search.recommend import recommend

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")


def clash_sample():
    """The planted sample plus one exact copy of a document, labeled not duplicate (another group):
    whatever removes the planted duplicates removes it too, 1 false removal in about 31 (over 1%)."""
    from calib.reading.sample import from_frames
    d = steep_sample(0, pairs=30, hard=6, singletons=20).docs[["id", "text", "group"]]
    one = d[d["id"].str.startswith("S")].iloc[0]
    extra = pd.DataFrame([{"id": "X-copy", "text": one["text"], "group": "X-copy"}])
    return from_frames(pd.concat([d, extra], ignore_index=True), name="clash", slice_columns=())


def write_docs(sample, path: Path) -> Path:
    sample.docs[["id", "text", "group"]].to_json(path, orient="records", lines=True)
    return path


def app_on(path: Path | None) -> AppTest:
    """The app on the sample at ``path`` (None: the shipped sample), on the Sweep page."""
    at = AppTest.from_file(APP, default_timeout=120)
    if path is not None:
        s = load_sample(path)
        at.session_state["calib_sample"], at.session_state["calib_sample_hash"] = s, s.content_hash()
        at.session_state["calib_sample_source"] = str(path)
    at.run()
    at.switch_page("pages/2_Sweep.py").run()
    assert not at.exception, at.exception
    return at


def wait(at: AppTest, limit: float = 1200.0) -> AppTest:
    """Rerun the page until the search's thread is done (the page polls it the same way)."""
    t0 = time.monotonic()
    while "calib_search_job" in at.session_state and at.session_state["calib_search_job"] is not None:
        assert time.monotonic() - t0 < limit, "the search did not end"
        time.sleep(0.5)
        at.run()
        assert not at.exception, at.exception
    at.run()
    return at


def cli_sweep(capsys, path: Path, out: Path, *more: str) -> str:
    capsys.readouterr()
    assert main(["sweep", "--sample", str(path), "--out", str(out), *more]) == 0
    return capsys.readouterr().err


def texts(at: AppTest) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption] + [w.value for w in at.warning])


def agree(at: AppTest, capsys, tmp_path: Path, cli_path: Path, cli_run: tuple[Path, str] | None = None) -> None:
    """The page's search gives the CLI's recommendation, knobs and nothing-fits message: ``calib sweep --sample
    cli_path`` is run here, or given as ``cli_run`` (its results table and stderr, as conftest's shipped_search)."""
    if cli_run is None:
        cli_run = tmp_path / "cli.parquet", cli_sweep(capsys, cli_path, tmp_path / "cli.parquet")
    cli_results, err = cli_run
    cli = pd.read_parquet(cli_results)
    at.button(key="run_search").click().run()
    wait(at)
    sweep = at.session_state["calib_sweeps"][at.session_state["calib_sample_hash"]]
    found = sweep.found
    assert not found.stopped
    page = texts(at)
    # the same rows (the CLI's table adds only its recommended mark and the sample hash)
    assert sorted(found.results["config_fingerprint"]) == sorted(cli["config_fingerprint"])
    assert found.added_text() in err  # calib sweep's own summary line, word for word
    for line in found.added_text().split("; "):
        assert line in page
    marked = cli.loc[cli["recommended"], "config_fingerprint"].unique().tolist()
    if marked:
        assert found.best is not None and [found.best["config_fingerprint"]] == marked
        label = next(m.value for m in at.markdown if m.value.startswith("**Recommended under"))
        assert found.best["representation"] in label and f"b={found.best['b']} r={found.best['r']}" in label
        knob_line = next(c.value for c in at.caption if c.value.startswith("what mattered"))
        assert knob_line.split(". Each row")[0] in err  # the CLI's "Which knobs mattered"
    else:
        assert found.best is None and "no configuration keeps the false-removal rate <= 0.01" in err
        warning = next(w.value for w in at.warning if w.value.startswith("No configuration keeps"))
        assert found.closest_text and found.closest_text in err and found.closest_text in warning
    # its download is a table calib export --from-sweep accepts, exporting the same row
    rec_fp = None if found.best is None else found.best["config_fingerprint"]
    for fmt in ("csv", "parquet"):
        data = sweep_search.results_file(found.results, rec_fp, at.session_state["calib_sample_hash"], fmt)
        (tmp_path / f"app.{fmt}").write_bytes(data)
        if rec_fp is not None:
            capsys.readouterr()
            assert main(["export", "--sample", str(cli_path), "--from-sweep", str(tmp_path / f"app.{fmt}"),
                         "--out", str(tmp_path / f"export-{fmt}")]) == 0
            assert rec_fp in (tmp_path / f"export-{fmt}" / "config.json").read_text(encoding="utf-8")
    # and the CLI's results file opens in the app with the CLI's recommended row
    at.file_uploader(key="open_results").set_value(
        ("cli.parquet", cli_results.read_bytes(), "application/octet-stream")).run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert at.session_state["calib_sweeps"][at.session_state["calib_sample_hash"]].source == "opened from cli.parquet"
    label = [m.value for m in at.markdown if m.value.startswith("**Recommended under")]
    if rec_fp is None:
        assert not label
    else:
        assert f"b={found.best['b']} r={found.best['r']}" in label[0]
        assert any("the file's recommended row" in c.value for c in at.caption)


@pytest.mark.slow
def test_app_and_cli_agree_on_a_planted_sample(tmp_path, capsys):
    path = write_docs(steep_sample(0, pairs=30, hard=6, singletons=20), tmp_path / "steep.jsonl")
    agree(app_on(path), capsys, tmp_path, path)


@pytest.mark.slow
def test_app_and_cli_agree_when_nothing_fits(tmp_path, capsys):
    path = write_docs(clash_sample(), tmp_path / "clash.jsonl")
    agree(app_on(path), capsys, tmp_path, path)


@pytest.mark.slow
def test_app_and_cli_agree_on_the_shipped_sample(tmp_path, capsys, shipped_search):
    agree(app_on(None), capsys, tmp_path, ROOT / "data" / "sample", shipped_search)


@pytest.mark.slow
def test_a_budget_objective_or_bound_change_re_picks_without_recomputing(tmp_path, capsys, monkeypatch):
    import calib.search.from_sample as from_sample
    import calib.search.sweep as sweep_mod
    path = write_docs(steep_sample(0, pairs=30, hard=6, singletons=20), tmp_path / "steep.jsonl")
    at = app_on(path)
    at.button(key="run_search").click().run()
    wait(at)
    rows = at.session_state["calib_results"]
    calls = {"score": 0, "search": 0, "split": 0}

    def counting(name, fn):
        def wrapped(*a, **k):
            calls[name] += 1
            return fn(*a, **k)
        return wrapped
    monkeypatch.setattr(sweep_mod, "_score", counting("score", sweep_mod._score))
    monkeypatch.setattr(sweep_mod, "_SplitState", counting("split", sweep_mod._SplitState))
    monkeypatch.setattr(from_sample, "search", counting("search", from_sample.search))
    main_rows = rows[rows["search_pass"] != 3]
    for budget in (5.0, 0.0, 0.37):
        at.number_input(key="budget_pct").set_value(budget).run()
        assert not at.exception, at.exception
        want = recommend(main_rows, max_false_removal_rate=budget / 100)
        label = [m.value for m in at.markdown if m.value.startswith("**Recommended under")]
        if want is None:
            assert not label and any(w.value.startswith("No configuration keeps") for w in at.warning)
        else:
            assert label and f"b={want['b']} r={want['r']}" in label[0]
            assert any("re-picked from the" in c.value and "without running anything again" in c.value
                       for c in at.caption)
    at.selectbox(key="confidence").set_value(0.95).run()
    assert not at.exception, at.exception
    want = recommend(main_rows, max_false_removal_rate=0.0037, confidence=0.95)
    label = [m.value for m in at.markdown if m.value.startswith("**Recommended under")]
    assert bool(label) == (want is not None)
    at.radio(key="objective").set_value("candidate_recall").run()
    assert not at.exception, at.exception
    assert calls == {"score": 0, "search": 0, "split": 0}, calls  # nothing measured again
    assert at.session_state["calib_results"] is rows


@pytest.mark.slow
def test_the_search_can_be_watched_and_stopped_keeping_what_was_measured(tmp_path):
    path = write_docs(steep_sample(0, pairs=30, hard=6, singletons=20), tmp_path / "steep.jsonl")
    at = app_on(path)
    at.button(key="run_search").click().run()
    job = at.session_state["calib_search_job"]
    assert at.button(key="stop_search") is not None
    assert at.get("progress"), "no progress bar while the search runs"
    assert any(c.value.startswith("Elapsed ") for c in at.caption)
    t0 = time.monotonic()
    while not job.batches:  # stopped after a first row is measured (a stop before it: tests/test_search_watch.py)
        assert job.running and time.monotonic() - t0 < 600, "no row measured"
        time.sleep(0.2)
    at.button(key="stop_search").click().run()
    wait(at)
    assert job.stop_event.is_set() and job.fraction == 1.0 and job.updates > 0
    sweep = at.session_state["calib_sweeps"][at.session_state["calib_sample_hash"]]
    assert sweep.found.stopped and sweep.source == "the default search, stopped"
    assert len(sweep.rows) > 0 and len(sweep.rows) == sum(len(b) for b in job.batches)
    assert "stopped on request" in texts(at)


def test_a_results_file_of_another_sample_is_refused_and_the_own_one_opens(tmp_path):
    at = app_on(None)
    frame = pd.DataFrame({"config_fingerprint": ["x"], "status": ["ok"], "false_removal_rate": [0.0],
                          "sample_hash": ["0" * 64]})
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    at.file_uploader(key="open_results").set_value(("r.parquet", buf.getvalue(), "application/octet-stream")).run()
    assert any("swept on another sample" in e.value for e in at.error)
    assert at.session_state["calib_results"] is None if "calib_results" in at.session_state else True
    with pytest.raises(ValueError, match="not a calib sweep results table"):
        sweep_search.read_results("t.csv", b"a,b\n1,2\n")


def test_thresholds_can_be_any_number():
    at = app_on(None)  # the grid form's thresholds: picked from the list or typed (0.57: not on it)
    at.multiselect(key="g_thresholds").set_value([0.57, "0.6"]).run()
    assert not at.exception, at.exception
    assert any("thresholds 0.57, 0.6 x" in c.value for c in at.caption), [c.value for c in at.caption]
    at.multiselect(key="g_thresholds").set_value(["1.5"]).run()
    assert any("'1.5'" in e.value and "expected a number between 0 and 1" in e.value for e in at.error), [e.value for e in at.error]


def test_a_sample_left_and_loaded_again_finds_its_sweep_and_curves_reads_it(tmp_path):
    """Sweep the shipped sample (a small grid of your own), make its pick current, load another sample,
    come back: the sweep is there, and Curves says it draws the recommendation, with no stale r note."""
    at = app_on(None)
    at.multiselect(key="g_word_k").set_value([5])
    at.multiselect(key="g_char_k").set_value([])
    at.multiselect(key="g_num_perms").set_value([128])
    at.radio(key="g_split_mode").set_value("a list").run()
    at.text_input(key="g_splits").set_value("16x8, 32x4")
    at.multiselect(key="g_thresholds").set_value([0.7, 0.8]).run()
    at.button(key="run_sweep").click().run()
    assert not at.exception, at.exception
    swept = at.session_state["calib_results"]
    at.button(key="use_recommended").click().run()
    at.switch_page("pages/3_Curves.py").run()
    at.slider(key="curve_b").set_value(64).run()  # r must drop: the page says so, for this move only
    assert any("r lowered from" in i.value for i in at.info)
    at.switch_page("pages/1_Sample.py").run()
    at.radio(key="sample_source_choice").set_value("Upload files").run()
    docs = b"id,text\n" + b"".join(f"d{k},some words of document {k % 5} here\n".encode() for k in range(8))
    pairs = b"id_a,id_b,label\nd0,d5,duplicate\nd0,d1,not_duplicate\n"
    at.file_uploader(key="upload_docs").set_value(("d.csv", docs, "text/csv"))
    at.file_uploader(key="upload_pairs").set_value(("p.csv", pairs, "text/csv")).run()
    at.button(key="load_upload").click().run()
    assert not at.exception, at.exception
    at.switch_page("pages/2_Sweep.py").run()
    assert any(i.value.startswith("No sweep for this sample yet") for i in at.info)
    at.switch_page("pages/1_Sample.py").run()
    at.radio(key="sample_source_choice").set_value("Shipped sample").run()
    at.button(key="use_shipped").click().run()
    at.switch_page("pages/2_Sweep.py").run()
    assert not any(i.value.startswith("No sweep for this sample yet") for i in at.info)
    assert at.session_state["calib_results"] is swept
    at.switch_page("pages/3_Curves.py").run()
    assert not at.exception, at.exception
    assert not any("not the sweep's recommendation" in i.value for i in at.info), [i.value for i in at.info]
    assert any("(the sweep's recommendation)" in c.value for c in at.caption)
    assert not any("r lowered from" in i.value for i in at.info), [i.value for i in at.info]


def test_the_search_pick_stands_only_for_the_settings_it_ran_with():
    from appui.picking import same_settings
    ran = {"max_false_removal_rate": 0.01, "effort": 1.0, "objective": "pair_recall"}
    assert same_settings(ran, dict(ran))
    assert same_settings(ran, {**ran, "effort": 3.0})  # effort changes what is measured, not the rule
    assert not same_settings(ran, {**ran, "max_false_removal_rate": 0.0057})
    assert not same_settings(ran, {**ran, "objective": "candidate_recall"})
    assert not same_settings(ran, {**ran, "target": "datasketch"})  # a control the search did not run with


def test_the_target_control_runs_the_search_for_that_tool(monkeypatch):
    """The Sweep page's target reaches the search as calib sweep --target passes it: that tool's capabilities."""
    from appui import engine
    from calib.search import from_sample
    seen = {}

    def fake(ws, grid, **kw):
        seen.update(kw)
        return "found"
    monkeypatch.setattr(from_sample, "search", fake)
    ws = engine.Workspace(load_sample(ROOT / "data" / "sample"))
    for name in ("datatrove", "calib"):
        got = engine.search_call(ws, {"max_false_removal_rate": 0.01, "effort": 0.0, "objective": "pair_recall",
                                      "confidence": None, "target": name})
        assert got == "found" and seen["target"].name == name and seen["confidence"] is None


def test_the_export_page_names_what_the_chosen_tool_lacks():
    at = AppTest.from_file(APP, default_timeout=240)
    at.run()
    at.switch_page("pages/6_Export.py").run()
    assert not at.exception, at.exception
    at.selectbox(key="export_target").set_value("datatrove").run()
    assert not at.exception, at.exception
    refused = [e.value for e in at.error if "datatrove cannot run this configuration as measured" in e.value]
    assert refused and "it lacks" in refused[0] and "calib sweep --target datatrove" in refused[0]
    at.selectbox(key="export_target").set_value("calib").run()
    assert not [e for e in at.error if "cannot run this configuration" in e.value]


def test_a_search_stopped_before_its_first_row_says_so(tmp_path, monkeypatch):
    """Stop pressed before anything is measured: a note, no error, and no empty sweep in its place."""
    from appui import search_job
    path = write_docs(steep_sample(0, pairs=30, hard=6, singletons=20), tmp_path / "steep.jsonl")
    at = app_on(path)
    start = search_job.start

    def stopped_at_once(*args, **kwargs):
        job = start(*args, **kwargs)
        job.stop()
        return job
    monkeypatch.setattr(search_job, "start", stopped_at_once)
    at.button(key="run_search").click().run()
    wait(at)
    assert not at.error, [e.value for e in at.error]
    assert any("stopped before it measured a configuration" in i.value for i in at.info), [i.value for i in at.info]
    sweeps = at.session_state["calib_sweeps"] if "calib_sweeps" in at.session_state else {}
    assert sweeps.get(at.session_state["calib_sample_hash"]) is None
