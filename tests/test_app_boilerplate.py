"""The Sweep page sweeps boilerplate stripping and the minimum length through AppTest."""

from __future__ import annotations

import pytest

from test_app import small_sweep, start


@pytest.mark.slow
def test_sweep_page_sweeps_strip_lines_and_min_shingles():
    at = start()
    at.switch_page("pages/2_Sweep.py").run()
    assert at.text_input(key="g_strip_lines").value == "0" and at.text_input(key="g_min_shingles").value == "0"
    at.text_input(key="g_strip_lines").set_value("0, 0.01")
    at.text_input(key="g_min_shingles").set_value("0, 20")
    at.selectbox(key="g_short_docs").set_value("exact")
    at = small_sweep(at, splits="16x8", thresholds=(0.5,))
    res = at.session_state["calib_results"]
    assert sorted(set(zip(res["strip_lines"], res["min_shingles"]))) == [(0.0, 0), (0.0, 20), (0.01, 0), (0.01, 20)]
    assert set(res.loc[res["min_shingles"] == 20, "short_docs"]) == {"exact"}
    # stripping the sample's site headers and footers removes its boilerplate false removals at J >= 0.5
    by = res.groupby("strip_lines")["false_removal_rate"].max()
    assert by[0.01] < by[0.0]
    shown = at.dataframe[0].value
    assert "strip_lines" in shown.columns and "min_shingles" in shown.columns


def test_export_page_offers_the_stoplist_of_a_stripping_config():
    from calib.search.config import Config
    from calib.sketches.represent import Representation
    at = start()
    at.session_state["calib_config"] = Config(Representation(shingle="char", k=5, strip_lines=0.01))
    at.switch_page("pages/6_Export.py").run()
    assert not at.exception, at.exception
    assert not [e.value for e in at.error]
    labels = [b.proto.label for b in at.get("download_button")]
    assert any(x.startswith("Download stoplist.json (4 lines") for x in labels), labels
    assert '"stoplist"' in at.code[0].value and "stoplist.json" in at.code[0].value
