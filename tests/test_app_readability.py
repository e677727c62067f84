"""Pages that read at a glance. Human headers, one number format
per column, counts with thousands separators, sentences whose verb agrees with the
count, no button offered for what is already done (AppTest, no browser; the look
itself is checked in screenshots by bench/screenshots/every_page.py)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from appui import charts, tables
from appui.text import agree, count
from calib.candidates.ensemble import containment_s_curve
from test_app import REVIEW_DOCS, REVIEW_PAIRS, errors, small_sweep, start, upload  # noqa: F401


def config_of(table) -> dict:
    return json.loads(table.proto.columns or "{}")


def shown_headers(table) -> list[str]:
    cfg = config_of(table)
    return [cfg.get(c, {}).get("label") or c for c in table.value.columns]


def test_count_and_agree():
    assert count(1, "decision") == "1 decision"
    assert count(0, "decision") == "0 decisions"
    assert count(494198, "pair") == "494,198 pairs"
    assert count(2, "signature matrix", "signature matrices") == "2 signature matrices"
    assert count(np.int64(1), "time") == "1 time"
    assert agree(1, "contradicts", "contradict") == "contradicts"
    assert agree(3, "contradicts", "contradict") == "contradict"


def test_view_scales_percents_and_formats_counts():
    frame = pd.DataFrame({"pair_recall": [0.311, 0.3175], "false_removal_rate": [0.0082, 0.01],
                          "pairs_in_sample": [494198, 3], "candidates": [5027.0, np.nan], "flag": [True, False]})
    shown, cfg = tables.view(frame, percent=("pair_recall", "false_removal_rate"))
    # percent points with fixed digits: 31.1% and 31.8% (one decimal), false removals 0.82% and 1.00%
    assert shown["pair_recall"].tolist() == pytest.approx([31.1, 31.75])
    assert cfg["pair_recall"]["type_config"]["format"] == "%.1f%%"
    assert cfg["false_removal_rate"]["type_config"]["format"] == "%.2f%%"
    assert frame["pair_recall"].tolist() == [0.311, 0.3175]  # the caller's frame is left alone
    for col in ("pairs_in_sample", "candidates"):  # an int column, and a float count (NaN where stopped)
        assert cfg[col]["type_config"]["format"] == "%,d"
    assert "format" not in (cfg["flag"].get("type_config") or {})  # a boolean is no count
    assert [cfg[c]["label"] for c in frame] == ["pair recall", "false-removal rate", "pairs in the document sample",
                                                "candidates", "flag"]
    assert tables.pct(0.0082, "false_removal_rate") == "0.82%" and tables.pct(0.84, "pair_recall") == "84.0%"
    assert tables.interval(pd.Series([0.0023]), pd.Series([0.0294]), "false_removal_rate").tolist() == ["0.23–2.94%"]


def test_sweep_table_formats_and_the_current_row_cannot_be_used_again():
    at = small_sweep(start())
    table = at.dataframe[0]
    cfg = config_of(table)
    res = at.session_state["calib_results"]
    # every rate column of the table has one fixed format, whatever the value (31.1% beside 31.75% before)
    for col, digits in (("pair_recall", 1), ("pair_precision", 1), ("false_removal_rate", 2)):
        assert cfg[col]["type_config"]["format"] == f"%.{digits}f%%"
    assert cfg["candidates"]["type_config"]["format"] == "%,d"
    # "★ recommended" whole (it was cut to "★ curr")
    shown = table.value
    assert cfg["mark"]["width"] >= max(tables.text_px(m) for m in shown["mark"]) + tables.PAD_PX
    # what decides stays in view: the compact configuration and the two rates come first, pinned
    assert list(shown.columns[:3]) == ["configuration", "pair_recall", "false_removal_rate"]
    assert all(cfg[c].get("pinned") for c in shown.columns[:3]) and not cfg["pair_precision"].get("pinned")
    for text, (_, row) in zip(shown["configuration"], res.set_index("config_fingerprint").loc[
            shown["config_fingerprint"]].reset_index().iterrows()):
        assert f"{row['b']}x{row['r']}" in text and f"J≥{row['threshold']:g}" in text, text
        assert text.split()[0 if text[0] not in "★●" else 1] in row["representation"], text
    src = res.set_index("config_fingerprint").loc[shown["config_fingerprint"]]
    assert shown["false_removal_rate"].to_numpy() == pytest.approx(src["false_removal_rate"].to_numpy() * 100,
                                                                    nan_ok=True)
    current = [k for k, m in enumerate(shown["mark"]) if m in ("current", "★ current")]
    assert len(current) == 1
    other = next(k for k in range(len(shown)) if k not in current)
    # ticking another row offers it; ticking the current row disables the button and says why
    at.session_state["results_table"] = {"selection": {"rows": [other], "columns": [], "cells": []}}
    at.run()
    button = next(b for b in at.button if b.key == "use_selected")
    assert not button.disabled
    at.session_state["results_table"] = {"selection": {"rows": current, "columns": [], "cells": []}}
    at.run()
    assert not at.exception, at.exception
    button = next(b for b in at.button if b.key == "use_selected")
    assert button.disabled
    assert any(c.value == "The selected row is the current configuration already." for c in at.caption)


def test_pareto_chart_marks_in_a_legend_not_on_the_points():
    at = small_sweep(start())
    spec = json.loads(at.get("vega_lite_chart")[0].proto.spec)
    assert spec["title"]["text"] == "Pair recall vs false-removal rate" and len(spec["title"]["subtitle"]) == 2
    assert all(len(line) <= 80 for line in spec["title"]["subtitle"])  # fits at 1000 px
    assert not [layer for layer in spec["layer"] if layer["mark"]["type"] == "text"
                and "mark" in json.dumps(layer["encoding"].get("text", {}))]
    marked = [layer for layer in spec["layer"] if layer["encoding"].get("shape", {}).get("field") == "mark"]
    assert len(marked) == 1
    # one row is both recommended and current: the legend names that one mark only
    assert marked[0]["encoding"]["shape"]["scale"]["domain"] == ["recommended = current"]


def test_marked_rows_name_each_mark():
    df = pd.DataFrame({"config_fingerprint": ["a", "b", "c"], "x": [1, 2, 3]})
    assert charts.marked_rows(df, "a", "b")[["config_fingerprint", "mark"]].values.tolist() == [
        ["a", "recommended"], ["b", "current"]]
    assert charts.marked_rows(df, "c", "c")["mark"].tolist() == ["recommended = current"]
    assert charts.marked_rows(df, None, None).empty


def test_curves_tables_have_human_headers_and_flat_curves_are_explained():
    at = start()
    at.switch_page("pages/3_Curves.py").run()
    assert not at.exception, at.exception
    for table in at.dataframe:
        assert not [h for h in shown_headers(table) if "_" in h], shown_headers(table)
    per_bin = next(t for t in at.dataframe if "rate_low" in t.value)
    assert config_of(per_bin)["rate"]["type_config"]["format"] == "%.1f%%"
    cfg = at.session_state["calib_config"]
    # at c = 1 a pair of size ratio x has J = 1/x: the split's S-curve there is the curve's ceiling
    ceiling = float(containment_s_curve(1.0, cfg.b, cfg.r, 2.0))
    assert ceiling == pytest.approx(1 - (1 - 0.5 ** cfg.r) ** cfg.b)
    caption = next(c.value for c in at.caption if c.value.startswith("Banding sees Jaccard"))
    assert f"2x (J ≤ 0.5, {cfg.b}x{cfg.r}): {tables.pct(ceiling)}" in caption
    if 1 - (1 - 0.25 ** cfg.r) ** cfg.b < 0.05:
        assert "4x" in caption.split("lie flat")[0].split(". The ")[-1]


def test_estimate_scatter_legend_lists_only_kinds_present():
    df = pd.DataFrame({"exact": [0.9, 0.2], "estimated": [0.88, 0.25], "kind": ["duplicate", "not duplicate"],
                       "id_a": ["a", "c"], "id_b": ["b", "d"], "category": ["x", "y"]})
    spec = charts.estimate_scatter(df, 128, 0.8).to_dict()
    color = next(layer["encoding"]["color"] for layer in spec["layer"] if "color" in layer.get("encoding", {}))
    assert color["scale"]["domain"] == ["duplicate", "not duplicate"]  # no "unlabeled" without such a point


def test_graph_labels_stay_off_the_edges():
    """The centre's label lies in the widest angle between its own edges, each member's outside the circle."""
    for n in (1, 2, 3, 5):
        rows = np.arange(n + 1)
        pos = charts.circle_layout(rows, 0)
        nodes = pd.DataFrame({"row": rows, "x": [pos[r][0] for r in rows], "y": [pos[r][1] for r in rows]})
        lab = charts.label_positions(nodes)  # a full star: every member is a spoke
        label_angle = np.arctan2(lab["ly"].iloc[0], lab["lx"].iloc[0])
        spokes = np.arctan2(nodes["y"][1:], nodes["x"][1:])
        gap = np.abs((spokes - label_angle + np.pi) % (2 * np.pi) - np.pi).min()
        assert gap == pytest.approx(np.pi / n)  # as far from every spoke as the layout allows
        member = lab.iloc[1:]
        assert (np.hypot(member["lx"], member["ly"]) > 1.1).all()  # outside the unit circle
    # only two spokes, to the top (90°) and to the right (0°), in either direction of the edge:
    # the widest empty angle is 90°..360°, so the label goes to 225° (down and left)
    nodes = pd.DataFrame({"x": [0.0, 0.0, 1.0, -1.0], "y": [0.0, 1.0, 0.0, 0.0]})
    edges = pd.DataFrame({"x": [0.0, 1.0, 1.0], "y": [0.0, 0.0, 0.0], "x2": [0.0, 0.0, -1.0],
                          "y2": [1.0, 0.0, 0.0]})  # centre-top, right-centre, and a chord
    centre = charts.label_positions(nodes, edges).iloc[0]
    assert np.degrees(np.arctan2(centre["ly"], centre["lx"])) % 360 == pytest.approx(225)
    assert centre["align"] == "right"
    assert charts.widest_gap(np.array([])) == pytest.approx(-np.pi / 2)  # no edge: below the node


def test_clusters_tables_put_risk_and_false_removals_first():
    at = start()
    at.switch_page("pages/4_Clusters.py").run()
    assert not at.exception, at.exception
    # one column per policy (HTML, whole at 800 px), what is removed and its false-removal rate first
    policy = next(t.value for t in at.table if "connected" in t.value.columns)
    assert list(policy.index[:3]) == ["removed", "false-removal rate", "false-removal 95% CI"]
    assert policy.loc["clusters (with single documents)", "connected"] == "2,177"
    members = next(t for t in at.dataframe if "role" in t.value)
    assert list(members.value.columns[:2]) == ["id", "role"]


def test_review_sentences_agree_with_their_counts():
    at = upload(start(), REVIEW_DOCS, REVIEW_PAIRS)
    at.switch_page("pages/5_Review.py").run()
    at.text_input(key="reviewer_input").set_value("ana").run()
    queue = next(t for t in at.dataframe if "distance" in t.value)
    assert shown_headers(queue) == ["document A", "document B", "exact J", "chained only", "|J - threshold|",
                                    "sample label", "second review"]
    at.button(key="decide_not_duplicate").click().run()  # e-f: no sample label
    at.button(key="decide_duplicate").click().run()  # g-h, labeled not duplicate: contradicts
    at.button(key="decide_not_duplicate").click().run()  # a-b, labeled duplicate: contradicts
    assert not at.exception and not errors(at), errors(at)
    warning = next(w.value for w in at.warning if "decisions shown" in w.value)
    assert warning.startswith("2 of the 3 decisions shown contradict the sample's label")
    assert "replaces those labels" in warning
    table = next(t for t in at.dataframe if "contradicts" in t.value)
    assert list(table.value.columns[:5]) == ["id_a", "id_b", "decision", "sample_label", "contradicts"]
    assert not [h for h in shown_headers(table) if "_" in h], shown_headers(table)
    assert set(table.value["decision"]) == {"duplicate", "not duplicate"}


def test_fit_width_holds_the_longest_formatted_value_and_the_header():
    # "1009" was drawn as "10" in a column sized for two digits: the width follows "1,009" and the header
    assert tables.formatted(pd.Series([1009, 2332, np.nan]), tables.COUNT).tolist() == ["1,009", "2,332", ""]
    px = tables.CHAR_WIDTHS
    assert tables.text_px("1,009") == pytest.approx(4 * px["0"] + px[","])  # digits are as wide as each other
    assert tables.fit_width(pd.Series([1009, 2332, 35]), "documents", tables.COUNT) == math.ceil(
        tables.text_px("documents") + tables.PAD_PX)
    assert tables.fit_width(pd.Series([1234567]), "n", tables.COUNT) == math.ceil(
        tables.text_px("1,234,567") + tables.PAD_PX)
    assert tables.fit_width(pd.Series([77.64]), "pair recall", "%.1f%%") == math.ceil(
        tables.text_px("pair recall") + tables.PAD_PX)
    assert tables.fit_width(pd.Series([1]), "n", tables.COUNT) == tables.MIN_PX
    assert tables.fit_width(pd.Series(["x" * 500]), "text") == tables.MAX_PX
    assert tables.text_px("★") > tables.text_px("x") and tables.text_px("\u4e00") == tables.WIDE_PX


def test_sweep_table_columns_are_as_wide_as_their_values():
    at = small_sweep(start())
    table = at.dataframe[0]
    cfg, shown = config_of(table), table.value
    for col in shown.columns:
        fmt = (cfg[col].get("type_config") or {}).get("format")
        longest = max([tables.text_px(cfg[col].get("label") or col)]
                      + [tables.text_px(t) for t in tables.formatted(shown[col], fmt)])
        assert cfg[col]["width"] >= min(tables.MAX_PX, longest + tables.PAD_PX), (col, cfg[col])


def test_sweep_order_recommended_then_within_budget_by_recall_then_over_by_false_removals():
    res = pd.DataFrame({"config_fingerprint": list("abcdef"), "status": ["ok"] * 5 + ["stopped"],
                        "pair_recall": [0.9, 0.7, 0.8, 0.95, 0.99, np.nan],
                        "false_removal_rate": [0.02, 0.005, 0.008, 0.015, 0.05, np.nan],
                        "candidates": [10, 20, 30, 40, 50, 60]})
    got = tables.sweep_order(res, 0.01, "pair_recall", recommended_fp="b")["config_fingerprint"].tolist()
    assert got == ["b", "c", "d", "a", "e", "f"]


def test_words_for_people():
    from appui import labels
    assert labels.word("light_edit") == "light edit" and labels.word("same_topic") == "same topic"
    assert labels.word("doc_id") == "document" and labels.word("via_id") == "linked through"
    assert labels.word("review_status") == "review status" and labels.word("format_version") == "format version"
    assert labels.word("some_new_column") == "some new column"
    assert labels.measure("jaccard") == "Jaccard" and labels.measure("weighted_jaccard") == "weighted Jaccard"
    shown = tables.small_table(pd.DataFrame({"value": ["light_edit", "exact"], "documents": [1009, 2332]}), "value")
    assert shown.index.tolist() == ["light edit", "exact copy"] and shown["documents"].tolist() == ["1,009", "2,332"]


def test_grid_line_and_second_pass_note_read_as_words():
    from calib.search.from_sample import objective_text
    from calib.search.grid import Grid
    line = str(Grid())
    assert "[" not in line and "'" not in line and "verify exact" in line, line
    assert objective_text("pair_recall", 0.776) == "pair recall 77.6%"


def test_clusters_slice_table_puts_the_rate_and_its_test_first():
    at = start()
    at.switch_page("pages/4_Clusters.py").run()
    table = next(t for t in at.dataframe if "p_adjusted" in t.value)
    assert list(table.value.columns[:5]) == ["metric", "value", "rate", "flagged", "p_adjusted"]
    assert not [v for v in table.value["value"] if "_" in str(v)]  # categories in words
    headers = shown_headers(table)
    assert not [h for h in headers if "_" in h], headers


def test_recall_axis_spans_the_rows_near_the_budget_and_every_higher_one():
    # far-off rows at 5% recall squashed the front into one strip: they fall below the axis, counted
    df = pd.DataFrame({"pair_recall": [0.05, 0.06, 0.70, 0.75, 0.80, 0.95],
                       "false_removal_rate": [0.30, 0.25, 0.004, 0.008, 0.012, 0.20]})
    (lo, hi), below = charts.focus_domain(df, "pair_recall", 0.01)
    assert 0.06 < lo < 0.70 and hi >= 0.95 and below == 2
    few = df.iloc[[0, 5]]  # fewer than three rows near the budget: every row in view
    (lo, hi), below = charts.focus_domain(few, "pair_recall", 0.01)
    assert lo <= 0.05 and hi >= 0.95 and below == 0
