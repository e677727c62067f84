"""The Streamlit app through streamlit.testing.v1.AppTest (no browser)."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from appui import export, loading, reviews
from appui.paths import PathNotAllowed, resolve_allowed
from calib.base.atomic import write_frame_atomic
from calib.search.config import Config
from calib.production.document import load_config, validate_doc
from calib.production.manifest import MANIFEST_COLUMNS, manifest
from calib.production.targets import targets
from calib.review.sqlite import ReviewStore
from calib.search.config import config_from_row
from calib.search.recommend import recommend
from calib.reading.samples import SampleError, load_sample
from calib.search.grid import Grid

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
PAGES = ["pages/1_Sample.py", "pages/2_Sweep.py", "pages/3_Curves.py", "pages/4_Clusters.py",
         "pages/5_Review.py", "pages/6_Export.py", "pages/7_Label.py"]
DOCS_CSV = (b"id,text,domain\n"
            b"a,the quick brown fox jumps over the lazy dog near the river bank,x\n"
            b"b,the quick brown fox jumps over the lazy dog near the river bank today,x\n"
            b"c,an entirely different text about numerical linear algebra and sparse matrices,y\n"
            b"d,yet another unrelated sentence concerning licences and their many clauses,y\n")
PAIRS_CSV = b"id_a,id_b,label,category\na,b,duplicate,edit\na,c,not_duplicate,other\n"


def start() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, at.exception
    return at


def errors(at) -> list[str]:
    return [e.value for e in at.error]


def metric(at, label: str) -> str:
    for m in at.metric:
        if m.label == label:
            return m.value
    raise AssertionError(f"no metric {label!r} in {[m.label for m in at.metric]}")


def small_sweep(at, splits: str = "16x8, 12x8, 8x16", thresholds=(0.7, 0.8), measures=("jaccard",),
                num_perms=(128,), more: dict | None = None, timeout: float | None = None) -> AppTest:
    """A small grid: word 5-grams, 128 hashes, three splits, two thresholds (by default);
    ``more``: other multiselects of the form (key -> values)."""
    at.switch_page("pages/2_Sweep.py").run()
    at.multiselect(key="g_word_k").set_value([5])
    at.multiselect(key="g_char_k").set_value([])
    at.multiselect(key="g_num_perms").set_value(list(num_perms))
    at.radio(key="g_split_mode").set_value("a list")
    at.run()
    at.text_input(key="g_splits").set_value(splits)
    at.multiselect(key="g_thresholds").set_value(list(thresholds))
    at.multiselect(key="g_measures").set_value(list(measures))
    for key, values in (more or {}).items():
        at.multiselect(key=key).set_value(list(values))
    at.run()
    at.button(key="run_sweep").click().run(timeout=timeout)
    assert not at.exception, at.exception
    assert not errors(at), errors(at)
    return at


def test_each_test_here_has_a_review_store_of_its_own(tmp_path):
    """tests/conftest.py's _clean, shared by the files of APP_TEST_FILES (it also empties Streamlit's caches)."""
    assert os.environ["CALIB_REVIEW_DB"] == str(tmp_path / "reviews" / "r.sqlite")
    assert "CALIB_ALLOWED_DIRS" not in os.environ


def test_home_loads_shipped_sample():
    at = start()
    assert at.title[0].value == "MinHash-LSH calibration workbench"
    assert metric(at, "Documents") == "2,396"
    assert at.session_state["calib_sample"].n == 2396
    assert isinstance(at.session_state["calib_config"], Config)


@pytest.mark.parametrize("page", PAGES)
def test_every_page_runs_without_exception(page):
    at = start()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    assert not errors(at), errors(at)
    assert at.title[0].value == Path(page).stem.split("_", 1)[1]


@pytest.mark.parametrize("page", ["pages/3_Curves.py", "pages/4_Clusters.py", "pages/5_Review.py"])
def test_pages_run_with_a_configuration_without_threshold(page):
    """Rule none (every candidate is a duplicate) has no threshold: the pages that show one cope."""
    at = start()
    at.session_state["calib_config"] = Config(verify="none", threshold=None)
    at.switch_page(page).run()
    assert not at.exception, at.exception
    assert not errors(at), errors(at)


def test_sweep_page_starts_from_the_sample_grid():
    """The form's defaults are the grid `calib sweep` and `calib export` choose from the sample, stated above the button."""
    from calib.search.grid import grid_from_sample
    from calib.search.workspace import Workspace
    at = start()
    at.switch_page("pages/2_Sweep.py").run()
    g, choice = grid_from_sample(Workspace(load_sample(ROOT / "data" / "sample")))
    assert at.multiselect(key="g_word_k").value == sorted(r.k for r in g.representations if r.shingle == "word")
    assert at.multiselect(key="g_char_k").value == sorted(r.k for r in g.representations if r.shingle == "char")
    assert at.multiselect(key="g_num_perms").value == list(g.num_perms)
    assert at.multiselect(key="g_thresholds").value == list(g.thresholds)
    assert at.radio(key="g_split_mode").value == "a list"
    assert at.text_input(key="g_splits").value == ", ".join(f"{b}x{r}" for b, r in g.splits)
    assert str(g) in [c.value for c in at.caption] and choice.text(g) in [c.value for c in at.caption]


@pytest.mark.slow
def test_sweep_recommend_and_state_follows_pages():
    at = small_sweep(start())
    res = at.session_state["calib_results"]
    assert len(res) == 6 and set(res["num_perm"]) == {128}
    assert at.get("vega_lite_chart"), "the Pareto chart is drawn"
    assert len(at.dataframe) >= 1, "the results table is drawn"
    # under 1% this grid recommends 16x8 t=0.8, which is the default configuration: the page says so
    # instead of offering a button that would change nothing
    assert recommend(res)["config_fingerprint"] == Config().fingerprint() == at.session_state["calib_config"].fingerprint()
    assert any("current configuration is this recommendation" in m.value for m in at.success)
    assert not [b for b in at.button if b.key == "use_recommended"]
    # a 5% budget recommends another row (16x8 t=0.7); the button makes exactly that row current
    at.number_input(key="budget_pct").set_value(5.0).run()
    rec = recommend(res, max_false_removal_rate=0.05)
    assert rec["config_fingerprint"] != Config().fingerprint()
    if "recommended" in res:  # the sweep's own mark (default budget) is the 1% row
        assert res.loc[res["recommended"], "config_fingerprint"].tolist() == [Config().fingerprint()]
    at.button(key="use_recommended").click().run()
    cfg = at.session_state["calib_config"]
    assert cfg.fingerprint() == rec["config_fingerprint"] and (cfg.b, cfg.r, cfg.threshold) == (16, 8, 0.7)
    assert cfg == config_from_row(rec)
    assert at.session_state["calib_config_source"].startswith("recommended")
    assert any("Current configuration set" in m.value for m in at.success)  # shown once after the rerun
    assert any("recommended by the sweep" in c.value for c in at.sidebar.caption)  # sidebar is up to date
    assert any("current configuration is this recommendation" in m.value for m in at.success)
    table = at.dataframe[0].value
    # rates are shown in percent points with fixed digits (the frame holds them x 100)
    assert table.loc[table["mark"] == "★ current", "pair_recall"].tolist() == [pytest.approx(rec["pair_recall"] * 100)]
    # the config and the sample follow the user to other pages
    at.switch_page("pages/6_Export.py").run()
    assert cfg.fingerprint() in at.code[0].value
    assert at.session_state["calib_sample"].n == 2396
    at.switch_page("pages/3_Curves.py").run()
    assert at.slider(key="curve_b").value == cfg.b and r_slider(at).value == cfg.r
    at.switch_page("pages/2_Sweep.py").run()
    assert at.session_state["calib_results"] is res  # results survive a page switch too
    assert at.multiselect(key="g_num_perms").value == [128]  # grid choices are restored


def test_sweep_table_shows_decision_columns_first():
    at = small_sweep(start())
    table = at.dataframe[0]
    cols = list(table.value.columns)
    assert cols[:8] == ["configuration", "pair_recall", "false_removal_rate", "pair_recall_95", "pair_precision",
                        "pair_precision_95", "false_removal_rate_95", "candidates"]
    res = at.session_state["calib_results"]
    shown = table.value
    row = shown.iloc[0]  # the recommended row first (here also the current one)
    assert row["mark"] == "★ current" and row["configuration"].startswith("★● ")
    src = res.set_index("config_fingerprint").loc[row["config_fingerprint"]]
    assert row["pair_recall"] == pytest.approx(src["pair_recall"] * 100)  # percent points
    assert row["pair_recall_95"] == f"{src['pair_recall_low'] * 100:.1f}–{src['pair_recall_high'] * 100:.1f}%"
    # then the rows within the 1% budget, highest recall first, then the rest by false-removal rate
    within = shown["false_removal_rate"].iloc[1:] <= 1.0
    n_in = int(within.sum())
    assert within.iloc[:n_in].all()
    assert shown["pair_recall"].iloc[1:1 + n_in].is_monotonic_decreasing
    assert shown["false_removal_rate"].iloc[1 + n_in:].dropna().is_monotonic_increasing
    config = json.loads(table.proto.columns)
    headers = {c: config.get(c, {}).get("label") for c in cols[:9]}
    # the pinned rates have short headers (three pinned columns fit at 800 px) and their full names in the help
    assert headers["false_removal_rate"] == "false rem." and headers["pair_recall_95"] == "recall 95% CI"
    assert config["false_removal_rate"]["help"] == "false-removal rate"
    assert table.value["mark"].tolist().count("★ current") == 1  # default config = the 1% recommendation

    # the Pareto chart: colour = shingle kind, size = k (a few legend entries, below the plot, not one
    # shape per representation), rate axes that label nothing beyond 0-100%
    spec = json.loads(at.get("vega_lite_chart")[0].proto.spec)
    points = spec["layer"][0]
    assert points["mark"]["type"] == "point"
    color, size = points["encoding"]["color"], points["encoding"]["size"]
    assert color["field"] == "shingle_kind" and color["scale"]["domain"] == sorted(
        {r.split("[")[0].rstrip("0123456789 ") for r in res["representation"]})
    assert size["field"] == "shingle_k" and color["legend"]["orient"] == size["legend"]["orient"] == "bottom"
    for axis in ("x", "y"):
        enc = points["encoding"][axis]
        lo, hi = enc["scale"]["domain"]
        col = res[enc["field"]].dropna()
        if axis == "y":  # the rows a choice is made among (false removals within 3x the budget) are in view
            col = res.loc[res["false_removal_rate"] <= 0.03, enc["field"]].dropna()
        assert lo <= col.min() and col.max() <= hi and -0.05 < lo and hi < 1.05
        assert "datum.value > 1" in enc["axis"]["labelExpr"] and "datum.value < " in enc["axis"]["labelExpr"]


def test_rate_domain_pads_within_reason():
    from appui.charts import rate_domain
    assert rate_domain([0.0, 1.0]) == pytest.approx([-0.04, 1.04])  # the margin; labels stop at 0 and 100%
    assert rate_domain([0.5, 0.7], include=0.01) == pytest.approx([0.01 - 0.04 * 0.69, 0.7 + 0.04 * 0.69])
    assert rate_domain([0.3, 0.3]) == pytest.approx([0.3 - 0.0008, 0.3 + 0.0008])  # a single value: 2% span
    assert rate_domain([float("nan"), 1.7]) == pytest.approx([1.0 - 0.0008, 1.0 + 0.0008])  # clipped to a rate


def test_sweep_without_labels_says_so_once(tmp_path, monkeypatch):
    """No labels: one message, no recommendation, no chart, no column of empty rates."""
    docs = tmp_path / "nolabels" / "docs.jsonl"
    docs.parent.mkdir()
    sample = load_sample(ROOT / "data" / "sample")
    sample.docs[["id", "text"]].head(300).to_json(docs, orient="records", lines=True)
    monkeypatch.setenv("CALIB_ALLOWED_DIRS", str(tmp_path))
    at = start()
    at.switch_page("pages/1_Sample.py").run()
    at.radio(key="sample_source_choice").set_value("Path on this machine").run()
    at.text_input(key="sample_path").set_value(str(docs.parent)).run()
    at.button(key="load_path").click().run()
    assert at.session_state["calib_sample"].n == 300
    at = small_sweep(at)
    warnings = [w.value for w in at.warning]
    assert len(warnings) == 1 and "no duplicate labels" in warnings[0], warnings
    assert not at.get("vega_lite_chart") and not at.metric
    assert not [b for b in at.button if b.key == "use_recommended"]
    table = at.dataframe[0].value
    assert "pair_recall" not in table and "false_removal_rate" not in table
    assert list(table.columns[:4]) == ["configuration", "candidates", "removed", "reduction"]
    assert table[["candidates", "removed"]].notna().all().all() and len(table) == 6


def test_budget_slider_changes_recommendation():
    at = small_sweep(start())
    at.number_input(key="budget_pct").set_value(0.0).run()
    strict = metric(at, "Pair recall")
    at.number_input(key="budget_pct").set_value(10.0).run()
    loose = metric(at, "Pair recall")
    assert float(loose.rstrip("%")) >= float(strict.rstrip("%"))
    assert at.session_state["calib_budget"] == pytest.approx(0.10)


def test_curves_sliders_change_numbers():
    at = start()
    at.switch_page("pages/3_Curves.py").run()
    before = metric(at, "P at threshold")
    at.slider(key="curve_t").set_value(0.6).run()
    assert not at.exception
    after = metric(at, "P at threshold")
    assert after != before
    s50 = metric(at, "50% point")
    at.slider(key="curve_b").set_value(8).run()
    assert metric(at, "50% point") != s50
    # the optimizer callout: t=0.8, 128 hashes -> b=9, r=13, P=0.40, 50% at 0.82
    text = " ".join(w.value for w in at.warning)
    assert "b=9, r=13" in text and "0.40" in text and "0.82" in text


def r_slider(at):
    """The Curves page's r slider (its key names its range, e.g. curve_r_1_5), None when r is fixed at 1."""
    return next((sl for sl in at.slider if str(sl.key).startswith("curve_r_")), None)


def test_curves_r_slider_follows_b():
    """b from 16 to 25 (128 hashes): r's slider is a new one from 1 to 5 at 5, the r every figure uses (the
    browser kept the old slider's handle at 1 when only its maximum changed under the same key)."""
    at = start()
    at.switch_page("pages/3_Curves.py").run()
    first = r_slider(at)
    assert (first.value, first.max) == (8, 8)
    at.slider(key="curve_b").set_value(25).run()
    r = r_slider(at)
    assert r.key != first.key and (r.value, r.max) == (5, 5)
    assert metric(at, "Hashes used") == "125/128"
    r.set_value(3).run()
    assert metric(at, "Hashes used") == "75/128"
    at.slider(key="curve_b").set_value(16).run()  # a wider range again: r stays at the chosen 3
    assert (r_slider(at).value, r_slider(at).max) == (3, 8) and metric(at, "Hashes used") == "48/128"


@pytest.mark.slow
def test_curves_says_which_configuration_it_draws():
    """After a sweep the current configuration stays calib's default until the recommendation is made current:
    the Curves page says it draws the current one and offers the recommendation."""
    at = start()
    at.switch_page("pages/3_Curves.py").run()
    assert any(c.value.startswith("This page draws the current configuration:") for c in at.caption)
    at = small_sweep(at, thresholds=(0.7,))  # the default's threshold is 0.8: the recommendation is another
    at.switch_page("pages/3_Curves.py").run()
    assert any("not the sweep's recommendation" in i.value for i in at.info), [i.value for i in at.info]
    at.button(key="curve_use_recommended").click().run()
    assert not at.exception, at.exception
    assert at.session_state["calib_config"].threshold == 0.7
    assert any(c.value.startswith("This page draws the current configuration (the sweep's recommendation)")
               for c in at.caption)


def test_curves_r_lowered_with_a_note_when_b_grows(caplog):
    at = start()
    at.switch_page("pages/3_Curves.py").run()
    assert any("b x r may not exceed num_perm = 128" in c.value for c in at.caption)
    at.slider(key="curve_b").set_value(64).run()
    assert not at.exception
    assert r_slider(at).value == 2 and r_slider(at).max == 2  # 128 // 64
    notes = [i.value for i in at.info if "r lowered from 8 to 2" in i.value]
    assert notes and "b x r may not exceed num_perm = 128" in notes[0] and "128 // 64 = 2" in notes[0]
    at.slider(key="curve_b").set_value(100).run()  # one row per band: no r slider (min = max), r = 1
    assert not at.exception and r_slider(at) is None
    assert any("r lowered from 2 to 1" in i.value for i in at.info)
    assert metric(at, "Hashes used") == "100/128"
    # the sliders' state is set before they are drawn: no "default value but also set via the
    # Session State API" warning from Streamlit
    assert "Session State API" not in caplog.text


@pytest.mark.slow
def test_curves_split_becomes_the_current_configuration():
    at = start()
    at.switch_page("pages/3_Curves.py").run()
    assert not [b for b in at.button if b.key == "curve_use"]  # the sliders show the current configuration
    at.slider(key="curve_b").set_value(32).run()
    r_slider(at).set_value(4).run()
    at.slider(key="curve_t").set_value(0.7).run()
    button = at.button(key="curve_use")
    assert "b=32, r=4, threshold 0.7" in button.label
    button.click().run()
    cfg = at.session_state["calib_config"]
    assert (cfg.b, cfg.r, cfg.threshold) == (32, 4, 0.7) and cfg.rep == Config().rep
    assert at.session_state["calib_config_source"] == "explored on the Curves page"
    assert any("Current configuration set to" in m.value for m in at.success)
    assert not [b for b in at.button if b.key == "curve_use"]
    at.switch_page("pages/6_Export.py").run()
    assert cfg.fingerprint() in at.code[0].value


def upload(at, docs: bytes, pairs: bytes) -> AppTest:
    """Load docs.csv + pairs.csv through the Sample page's file uploaders."""
    at.switch_page("pages/1_Sample.py").run()
    at.radio(key="sample_source_choice").set_value("Upload files").run()
    at.file_uploader(key="upload_docs").set_value(("docs.csv", docs, "text/csv"))
    at.file_uploader(key="upload_pairs").set_value(("pairs.csv", pairs, "text/csv"))
    at.run()
    return at.button(key="load_upload").click().run()


def test_upload_via_file_uploader():
    at = upload(start(), DOCS_CSV, PAIRS_CSV)
    assert not at.exception and not errors(at), errors(at)
    s = at.session_state["calib_sample"]
    assert s.n == 4 and len(s.pairs) == 2 and s.name == "docs"
    assert metric(at, "Documents") == "4"
    at.switch_page("pages/4_Clusters.py").run()  # the new sample follows
    assert not at.exception and at.session_state["calib_sample"].n == 4


def test_bad_upload_shows_error_not_traceback():
    at = start()
    at.switch_page("pages/1_Sample.py").run()
    at.radio(key="sample_source_choice").set_value("Upload files").run()
    at.file_uploader(key="upload_docs").set_value(("docs.csv", b"id,body\na,hello\n", "text/csv")).run()
    at.button(key="load_upload").click().run()
    assert not at.exception
    assert errors(at) and "could not be loaded" in errors(at)[0] and "docs.csv" in errors(at)[0]
    assert at.session_state["calib_sample"].n == 2396  # the previous sample stays


def test_dominant_group_and_missing_values_on_the_sample_page():
    """NA is no group (4 singletons, no warning); a real group holding 3 of 4 documents is warned about."""
    at = start()
    at.switch_page("pages/1_Sample.py").run()
    at.radio(key="sample_source_choice").set_value("Upload files").run()
    na = b"id,text,group\n" + b"".join(f"d{k},text number {k} about something,NA\n".encode() for k in range(4))
    at.file_uploader(key="upload_docs").set_value(("docs.csv", na, "text/csv")).run()
    at.button(key="load_upload").click().run()
    assert not at.exception and at.session_state["calib_sample"].docs["group"].isna().all()
    assert not [w.value for w in at.warning if "holds" in w.value]
    big = na.replace(b",NA\n", b",g7\n", 3)
    at.file_uploader(key="upload_docs").set_value(("docs.csv", big, "text/csv")).run()
    at.button(key="load_upload").click().run()
    warned = [w.value for w in at.warning if "holds" in w.value]
    assert len(warned) == 1 and "g7" in warned[0] and "3 of 4 documents" in warned[0]


def test_upload_handler_directly(tmp_path):
    loaded = loading.load_upload(("../../evil/docs.csv", DOCS_CSV), ("pairs.csv", PAIRS_CSV))
    assert loaded.sample.n == 4 and len(loaded.sample.pairs) == 2
    assert loaded.content_hash == loaded.sample.content_hash()
    assert not (ROOT / "docs.csv").exists()
    with pytest.raises(SampleError, match="must end in"):
        loading.load_upload(("notes.txt", b"x"))
    with pytest.raises(SampleError):
        loading.load_upload(("docs.jsonl", b'{"id": "a"}\n'))


def test_path_outside_allowed_folders_is_refused():
    at = start()
    at.switch_page("pages/1_Sample.py").run()
    at.radio(key="sample_source_choice").set_value("Path on this machine").run()
    at.text_input(key="sample_path").set_value("/etc").run()
    at.button(key="load_path").click().run()
    assert not at.exception
    assert errors(at) and "outside the allowed folders" in errors(at)[0]
    at.text_input(key="sample_path").set_value("data/sample").run()
    at.button(key="load_path").click().run()
    assert not errors(at), errors(at)
    assert at.session_state["calib_sample"].n == 2396


def test_allowed_dirs_env_and_symlinks(tmp_path, monkeypatch):
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    (allowed / "s").mkdir(parents=True)
    outside.mkdir()
    (allowed / "s" / "docs.csv").write_bytes(DOCS_CSV)
    (outside / "docs.csv").write_bytes(DOCS_CSV)
    (allowed / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(PathNotAllowed):
        resolve_allowed(str(allowed / "s"))
    monkeypatch.setenv("CALIB_ALLOWED_DIRS", os.pathsep.join(["/nonexistent-dir", str(allowed)]))
    assert resolve_allowed(str(allowed / "s")) == (allowed / "s").resolve()
    with pytest.raises(PathNotAllowed, match="outside"):
        resolve_allowed(str(allowed / "link"))  # a link inside pointing outside
    with pytest.raises(PathNotAllowed, match="outside"):
        resolve_allowed(str(allowed / ".." / "outside"))
    with pytest.raises(PathNotAllowed, match="does not exist"):
        resolve_allowed(str(allowed / "missing"))
    at = start()
    at.switch_page("pages/1_Sample.py").run()
    at.radio(key="sample_source_choice").set_value("Path on this machine").run()
    at.text_input(key="sample_path").set_value(str(allowed / "s")).run()
    at.button(key="load_path").click().run()
    assert not errors(at), errors(at)
    assert at.session_state["calib_sample"].n == 4


def test_engine_error_is_a_readable_message():
    at = start()
    at.switch_page("pages/1_Sample.py").run()
    at.radio(key="sample_source_choice").set_value("Upload files").run()
    at.file_uploader(key="upload_docs").set_value(("one.csv", b"id,text\na,just one document\n", "text/csv")).run()
    at.button(key="load_upload").click().run()
    assert at.session_state["calib_sample"].n == 1
    at.switch_page("pages/3_Curves.py").run()
    assert not at.exception
    assert errors(at) and "at least 2" in errors(at)[0]


def test_review_flow(tmp_path):
    at = start()
    at.switch_page("pages/5_Review.py").run()
    assert not at.exception and not errors(at), errors(at)
    assert at.text_input(key="review_db_input").value == os.environ["CALIB_REVIEW_DB"]
    # no reviewer yet: no decision can be written, and the page says why
    assert at.button(key="decide_duplicate").disabled
    assert any("reviewer name" in w.value for w in at.warning), [w.value for w in at.warning]
    at.text_input(key="reviewer_input").set_value("ana").run()
    queue_before = at.subheader[0].value
    # the shipped sample's not-judged documents (group '?'): pairs without a sample label come first
    m = re.fullmatch(r"Queue of ana: ([\d,]+) pairs left \(([\d,]+) without a sample label, .*\)", queue_before)
    left, unlabeled = (int(x.replace(",", "")) for x in m.groups())
    assert 10 <= unlabeled <= 40 and unlabeled < left
    assert "sample label: unlabeled" in shown_pair(at)
    assert not any("already has a sample label" in c.value for c in at.caption)
    at.button(key="decide_not_duplicate").click().run()
    assert not at.exception and not errors(at), errors(at)
    assert metric(at, "Decisions") == "1"
    assert metric(at, "Labels used") == "1" and metric(at, "Unanimous") == "1"
    assert at.subheader[0].value.startswith(f"Queue of ana: {left - 1:,} pairs left ({unlabeled - 1:,} without a "
                                            "sample label")
    assert Path(os.environ["CALIB_REVIEW_DB"]).exists()
    pairs_before = len(at.session_state["calib_sample"].pairs)
    at.button(key="use_reviews").click().run()
    s = at.session_state["calib_sample"]
    assert s.name.endswith("+reviews")
    assert len(s.pairs) == pairs_before + 1  # the reviewed pair had no label: a new one
    assert (s.pairs["category"] == "review").sum() == 1
    assert at.session_state.get("calib_results") is None or at.session_state["calib_results_hash"] != \
        at.session_state["calib_sample_hash"]


REVIEW_DOCS = (b"id,text\n"
               b"a,the quick brown fox jumps over the lazy dog near the river bank\n"
               b"b,the quick brown fox jumps over the lazy dog near the river bank today\n"
               b"e,seven tired sailors rowed their small boat across the cold grey harbour\n"
               b"f,seven tired sailors rowed their small boat across the cold grey harbour today\n"
               b"g,our committee approved the annual budget after a long and heated debate\n"
               b"h,our committee approved the annual budget after a long and heated debate today\n"
               b"c,an entirely different text about numerical linear algebra and sparse matrices\n")
REVIEW_PAIRS = b"id_a,id_b,label\na,b,duplicate\ng,h,not_duplicate\na,c,not_duplicate\n"


def shown_pair(at) -> str:
    """The Review page's line naming the pair under review."""
    return next(m.value for m in at.markdown if " vs **" in m.value)


def test_review_queue_unlabeled_first_and_contradictions_flagged():
    at = upload(start(), REVIEW_DOCS, REVIEW_PAIRS)
    assert at.session_state["calib_sample"].n == 7
    at.switch_page("pages/5_Review.py").run()
    assert not at.exception and not errors(at), errors(at)
    # three verified pairs (J 0.9, 0.89, 0.9): only e-f has no sample label, so it comes first
    at.text_input(key="reviewer_input").set_value("ana").run()
    assert at.subheader[0].value == "Queue of ana: 3 pairs left (1 without a sample label, 0 second reviews)"
    assert shown_pair(at).startswith("**e** vs **f**")
    at.button(key="decide_duplicate").click().run()
    assert not at.warning, [w.value for w in at.warning]  # no label, nothing to contradict
    # then the labeled pairs, closest to the threshold first, with a note that they carry a label
    assert shown_pair(at).startswith("**g** vs **h**") and "sample label: not duplicate" in shown_pair(at)
    assert any("already has a sample label (not duplicate)" in c.value for c in at.caption)
    at.button(key="decide_not_duplicate").click().run()  # agrees with the label
    assert not at.warning, [w.value for w in at.warning]
    assert shown_pair(at).startswith("**a** vs **b**") and "sample label: duplicate" in shown_pair(at)
    at.button(key="decide_not_duplicate").click().run()  # contradicts it
    notes = [w.value for w in at.warning]
    assert any("contradicts the sample's label (duplicate) for a / b" in w for w in notes), notes
    table = next(d.value for d in at.dataframe if "contradicts" in d.value.columns)
    flagged = {(r.id_a, r.id_b): r.contradicts for r in table.itertuples()}
    assert flagged == {("e", "f"): False, ("a", "b"): True, ("g", "h"): False}
    assert dict(zip(zip(table["id_a"], table["id_b"]), table["sample_label"])) == {
        ("e", "f"): "unlabeled", ("a", "b"): "duplicate", ("g", "h"): "not duplicate"}
    assert any("1 of the 3 decisions shown contradicts the sample's label" in w.value for w in at.warning), \
        [w.value for w in at.warning]


def test_review_db_path_must_be_sqlite():
    at = start()
    at.switch_page("pages/5_Review.py").run()
    at.text_input(key="review_db_input").set_value("/tmp/not-a-db.txt").run()
    assert not at.exception
    assert errors(at) and ".sqlite" in errors(at)[0]


def test_merge_review_labels_overrides_and_skips():
    s = load_sample(ROOT / "data" / "sample")
    p0 = s.pairs.iloc[0]
    a, b = s.ids[p0["i"]], s.ids[p0["j"]]
    flipped = "not_duplicate" if p0["is_duplicate"] else "duplicate"
    labels = pd.DataFrame({"id_a": [b, s.ids[0], "ghost"], "id_b": [a, s.ids[1], s.ids[2]],
                           "label": [flipped, "duplicate", "duplicate"], "category": "review"})
    new, used, skipped = reviews.merge_review_labels(s, labels)
    assert (used, skipped) == (2, 1)
    assert len(new.pairs) == len(s.pairs) + 1
    row = new.pairs[(new.pairs["i"] == p0["i"]) & (new.pairs["j"] == p0["j"])]
    assert len(row) == 1 and bool(row["is_duplicate"].iloc[0]) != bool(p0["is_duplicate"])
    assert new.content_hash() != s.content_hash()
    assert (new.pairs["i"] < new.pairs["j"]).all()


def shown_rows(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Showing "))


@pytest.mark.slow
def test_export_page_config_targets_manifest():
    at = start()
    at.switch_page("pages/6_Export.py").run()
    assert not at.exception, at.exception
    assert not errors(at), errors(at)
    cfg = at.session_state["calib_config"]
    assert any("Nothing is deleted" in i.value for i in at.info)
    # 1. the versioned, validated config JSON
    doc = json.loads(at.code[0].value)
    assert doc["format_version"] == 1 and doc["config_fingerprint"] == cfg.fingerprint()
    assert metric(at, "Format version") == "1"
    assert any(f"`{cfg.fingerprint()}`" in m.value and "Config fingerprint" in m.value for m in at.markdown)
    assert doc["evidence"]["sample"]["n_docs"] == 2396 and "pair_recall" in doc["evidence"]["metrics"]
    validate_doc(doc)
    assert any(s.value.startswith("Valid:") for s in at.success)
    # 2. one tab per production target, each with a snippet and its unsupported table
    labels = [t.label for t in at.tabs]
    assert len(labels) == 5 and labels[0].startswith("datasketch") and labels[1].startswith("Milvus (")
    langs = [c.language for c in at.code[1:]]
    assert langs.count("python") == 4 and langs.count("bash") == 1
    assert "MinHashLSH" in at.code[1].value and "MINHASH_LSH" in at.code[2].value
    # each target's own figures beside the config's (a tool's own defaults are not calib's): the same LSH without verification
    # (datatrove) removes 297 documents with 32 false removals instead of 219 and 0
    ev_table = pd.concat([at.table[0].value, at.table[1].value], axis=1)  # three targets a table
    assert list(ev_table.columns) == ["calibrated config", "datasketch", "Milvus MINHASH_LSH", "datatrove",
                                      "text-dedup", "NeMo Curator"]
    assert ev_table.loc["documents removed", "calibrated config"] == "219"
    assert ev_table.loc["documents removed", "datatrove"] == "297"
    assert ev_table.loc["false removals", "datatrove"] == "32"
    assert ev_table.loc["documents removed", "datasketch"] == "219"
    assert ev_table.loc["verification", "datatrove"] == "none"
    assert ev_table.loc["kept per cluster", "datatrove"] == "union-find root (size)"
    # two evidence tables, then: datasketch expresses the default config; the four others each list what they cannot
    assert len(at.table) == 2 + 4 and any(s.value.startswith("datasketch expresses") for s in at.success)
    assert any("cannot express" in w.value for w in at.warning)
    # the export never hides a loss: each target whose figures differ from calib's, named with its own
    # (the lines calib export prints: calib.production.targets.losses), datasketch not (it runs it as calib does)
    loss = next(w.value for w in at.warning if w.value.startswith("**Where it runs, it is not this configuration"))
    assert "datatrove\\: false\\-removal rate" in loss and "297 removals \\(32 false\\)" in loss
    assert "calib\\: 219 removals \\(0 false\\)" in loss and "\n- datasketch" not in loss
    assert sum("**Keeps per cluster:**" in m.value for m in at.markdown) == 5
    # 3. the manifest preview
    assert metric(at, "Proposed removals") == "219"
    assert shown_rows(at).startswith("**Showing 219 of 219")
    table = at.dataframe[0].value
    assert list(table.columns[:len(MANIFEST_COLUMNS)]) == list(MANIFEST_COLUMNS) and len(table) == 219
    keys = [b.key for b in at.download_button]
    assert keys == ["download_config", "download_targets", "download_manifest_csv", "download_manifest_parquet"]
    at.download_button(key="download_manifest_csv").click().run()
    assert not at.exception


@pytest.mark.slow
def test_export_manifest_filters_change_row_count():
    at = start()
    at.switch_page("pages/6_Export.py").run()
    total = len(at.dataframe[0].value)
    at.checkbox(key="export_chained_only").check().run()  # the edit families: 27 removed by chaining alone
    chained = at.dataframe[0].value
    assert shown_rows(at).startswith(f"**Showing 27 of {total}") and len(chained) == 27 and chained["chained"].all()
    at.checkbox(key="export_chained_only").uncheck().run()
    at.selectbox(key="export_slice_col").set_value("domain").run()
    at.selectbox(key="export_slice_value").set_value("numpy").run()
    view = at.dataframe[0].value
    assert 0 < len(view) < total and set(view["domain"]) == {"numpy"}
    at.selectbox(key="export_slice_col").set_value("(all)").run()
    cid = at.selectbox(key="export_cluster").options[1]
    at.selectbox(key="export_cluster").set_value(int(cid)).run()
    view = at.dataframe[0].value
    assert len(view) >= 1 and set(view["cluster_id"]) == {int(cid)}
    assert not at.exception and not errors(at)


@pytest.mark.slow
def test_export_manifest_shows_review_status():
    at = start()
    at.switch_page("pages/6_Export.py").run()
    first = at.dataframe[0].value.iloc[0]
    with ReviewStore(os.environ["CALIB_REVIEW_DB"]) as store:
        store.record(first["doc_id"], first["representative_id"], "not_duplicate", "ana")
    at.run()
    table = at.dataframe[0].value
    row = table[table["doc_id"] == first["doc_id"]].iloc[0]
    assert row["review_status"] == "not_duplicate"
    assert (table["review_status"] == "unreviewed").sum() == len(table) - 1


def test_export_bytes_are_valid_files(tmp_path):
    from calib.search.sweep import evaluate
    s = load_sample(ROOT / "data" / "sample")
    cfg = Config()
    ev = evaluate(s, cfg)
    doc = export.config_document(cfg, evaluation=ev, sample=s, sel=export.selection("recommended by the sweep",
                                                                                   0.01, "pair_recall"))
    data = export.config_bytes(doc)
    (tmp_path / "config.json").write_bytes(data)
    loaded, loaded_doc = load_config(tmp_path / "config.json")  # validates, recomputes fingerprints
    assert loaded.fingerprint() == cfg.fingerprint()
    assert loaded_doc["evidence"]["selection"] == {"method": "recommend", "source": "recommended by the sweep",
                                                   "max_false_removal_rate": 0.01, "objective": "pair_recall"}
    assert data == export.config_bytes(export.config_document(
        cfg, evaluation=ev, sample=s, sel=loaded_doc["evidence"]["selection"]))  # deterministic
    t = json.loads(export.targets_bytes(cfg))
    assert t["config_fingerprint"] == cfg.fingerprint()
    assert set(t["targets"]) == {"datasketch", "milvus", "datatrove", "text_dedup", "nemo_curator"}
    assert all(isinstance(v["unsupported"], list) for v in t["targets"].values())
    frame = manifest(ev, s)
    csv = export.frame_bytes(frame, "csv")
    back = pd.read_csv(io.BytesIO(csv))
    assert list(back.columns[:len(MANIFEST_COLUMNS)]) == list(MANIFEST_COLUMNS) and len(back) == len(frame)
    assert "config_fingerprint" in back.columns and "review_status" in back.columns
    assert csv == write_frame_atomic(frame, tmp_path / "m.csv").read_bytes()  # same bytes as `calib export`
    pq = pd.read_parquet(io.BytesIO(export.frame_bytes(frame, "parquet")))
    pd.testing.assert_frame_equal(pq, pd.read_parquet(write_frame_atomic(frame, tmp_path / "m.parquet")))
    u = export.unsupported_frame(targets(cfg)["milvus"].to_dict())
    assert list(u.columns) == ["field", "value", "reason"] and len(u) >= 1 and u["reason"].str.len().min() > 10
    with pytest.raises(ValueError):
        export.frame_bytes(frame, "xlsx")


@pytest.mark.slow
def test_clusters_giant_guard_changes_the_configuration():
    at = start()
    at.switch_page("pages/4_Clusters.py").run()
    assert at.session_state["calib_config"].max_component is None
    at.number_input(key="giant_guard").set_value(2).run()
    assert not at.exception, at.exception
    cfg = at.session_state["calib_config"]
    assert cfg.max_component == 2
    # every cluster larger than 2 is now flagged; the metric reports them
    assert metric(at, "Giant members") != ""
    at.switch_page("pages/6_Export.py").run()  # the guard travels with the configuration
    assert not at.exception, at.exception
    assert at.session_state["calib_config"].max_component == 2


def test_clusters_page_breaks_rates_down_by_slice():
    at = start()
    at.switch_page("pages/4_Clusters.py").run()
    assert not at.exception, at.exception
    assert int(metric(at, "Slices compared").replace(",", "")) > 10
    flagged = int(metric(at, "Flagged slices").replace(",", ""))
    at.checkbox(key="slices_flagged_only").check().run()
    assert not at.exception, at.exception
    tables = [d.value for d in at.dataframe if "p_adjusted" in d.value.columns]
    assert tables and len(tables[0]) == flagged and tables[0]["flagged"].all()


def headers(table) -> list[str]:
    """The headers a dataframe element shows: its column_config label, else the column name."""
    cfg = json.loads(table.proto.columns or "{}")
    return [cfg.get(c, {}).get("label") or c for c in table.value.columns]


def test_clusters_tables_have_human_headers():
    at = start()
    at.switch_page("pages/4_Clusters.py").run()
    assert not at.exception, at.exception
    shown = [headers(d) for d in at.dataframe]
    assert len(shown) >= 4  # risk, slices, components, the cluster's members (the policies are an HTML table)
    for h in shown:
        assert not [x for x in h if "_" in x], h
    risk = next(h for h in shown if "risk" in h)
    assert risk[:5] == ["cluster", "representative", "documents", "risk", "chained"]  # risk on screen at 1000 px
    policies = next(t.value for t in at.table if "connected" in t.value.columns)
    assert "false-removal rate" in policies.index and not [x for x in policies.index if "_" in x]


def test_clusters_page_opens_on_a_chained_family():
    """On the shipped sample (its edit families chain) the page shows chaining at once: chained
    removals, connected removing more than star, and the first cluster in the graph has members
    removed without being a verified pair with the representative."""
    from appui.charts import CHAINED_ROLE
    at = start()
    at.switch_page("pages/4_Clusters.py").run()
    assert not at.exception, at.exception
    assert int(metric(at, "Chained").replace(",", "")) > 0
    policies = next(t.value for t in at.table if "connected" in t.value.columns)
    removed = policies.loc["removed"].astype(str).str.replace(",", "").astype(int)
    assert removed["star"] < removed["connected"]
    assert at.selectbox(key="graph_cluster").index == 0  # the riskiest cluster, shown without a choice
    members = next(d.value for d in at.dataframe if "role" in d.value.columns)
    assert (members["role"] == CHAINED_ROLE).sum() >= 2 and len(members) >= 4


def test_review_page_says_why_a_store_cannot_open():
    # a file that is not SQLite where the review database should be: one message, no traceback, no queue
    bad = Path(os.environ["CALIB_REVIEW_DB"])
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text("this is not a SQLite database\n" * 100)
    at = start()
    at.switch_page("pages/5_Review.py").run()
    assert not at.exception, at.exception
    assert any("Cannot open the review store" in e for e in errors(at)), errors(at)
    assert not [b for b in at.button if b.key == "decide_duplicate"]
