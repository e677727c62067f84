"""The app's containment pieces: the Sweep page's Measures selector and the Curves page's
containment S-curve (AppTest, on the shipped sample)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest  # noqa: F401  (the helpers below build AppTests)

from appui import tables
from calib.candidates.ensemble import Ensemble, containment_s_curve, lookup

from test_app import small_sweep, start


def test_sweep_page_sweeps_both_measures():
    at = start()
    at.switch_page("pages/2_Sweep.py").run()
    assert at.multiselect(key="g_measures").value == ["jaccard"]  # Grid()'s default
    at = small_sweep(at, splits="16x8", thresholds=(0.3, 0.8), measures=("jaccard", "containment"))
    res = at.session_state["calib_results"]
    assert sorted(res["measure"].unique()) == ["containment", "jaccard"]
    assert set(res.loc[res["measure"] == "containment", "representative"]) == {"longest"}
    assert len(res) == 4


def test_curves_page_draws_the_containment_curve_of_the_ensemble():
    at = start()
    at.switch_page("pages/3_Curves.py").run()
    at.slider(key="cont_t").set_value(0.7)
    at.radio(key="cont_mode").set_value("an LSH Ensemble").run()
    assert not at.exception, at.exception
    table = next(d.value for d in at.table if "b x r" in d.value.columns)
    cfg = at.session_state["calib_config"]
    ens = Ensemble(0.7, cfg.rep.num_perm)
    for label, row in table.iterrows():
        ratio = int(str(label).rstrip("x"))
        b, r = ens.table()[lookup(ens.table(), ratio, 1)]
        assert row["b x r"] == f"{b}x{r}"
        # the chance at the threshold and the ceiling (c = 1), each under its own name, as every page writes rates
        unescape = lambda v: str(v).replace("\\", "")  # noqa: E731 - st.table cells are escaped Markdown
        assert unescape(row["P(candidate) at c = threshold"]) == tables.pct(containment_s_curve(0.7, b, r, float(ratio)))
        assert unescape(row["highest P(candidate), at c = 1"]) == tables.pct(containment_s_curve(1.0, b, r, float(ratio)))


def test_pages_run_with_a_containment_configuration():
    from calib.search.config import Config
    at = start()
    at.session_state["calib_config"] = Config(measure="containment", representative="longest", threshold=0.5)
    for page in ("pages/3_Curves.py", "pages/4_Clusters.py", "pages/6_Export.py"):
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        assert not [e.value for e in at.error], page
    at.switch_page("pages/3_Curves.py").run()
    assert any("verifies containment" in i.value for i in at.info)


def test_clusters_and_export_name_the_configs_measure():
    from calib.search.config import Config
    at = start()
    at.session_state["calib_config"] = Config(measure="containment", representative="longest", threshold=0.5)
    at.switch_page("pages/4_Clusters.py").run()
    assert any("exact containment of the shingle sets" in c.value for c in at.caption)
    assert any("containment" in m.value and "(of the smaller)" in m.value for m in at.markdown)
    at.switch_page("pages/6_Export.py").run()
    assert not at.exception, at.exception
    # the manifest table renders (its column headers, C to kept etc., are not visible to AppTest)
    grids = [d for d in at.dataframe if "sim_to_representative_exact" in d.value.columns]
    assert grids, [list(d.value.columns) for d in at.dataframe]
    at.session_state["calib_config"] = Config()
    at.switch_page("pages/4_Clusters.py").run()
    assert any("exact Jaccard of the shingle sets" in c.value for c in at.caption)
