"""The Sweep page sweeps shingle weights (none, idf) and the Curves page draws a weighted
configuration's S-curve over weighted Jaccard (AppTest on the shipped sample)."""

from __future__ import annotations

import pytest

from calib.search.config import Config, config_from_row
from calib.sketches.represent import Representation
from test_app import errors, small_sweep, start  # noqa: F401  (helpers only: no test is imported)


@pytest.mark.slow
def test_sweep_page_sweeps_weighting_and_curves_show_weighted_jaccard():
    at = small_sweep(start(), "8x4", (0.5,), num_perms=(32,), more={"g_weightings": ["none", "idf"]}, timeout=300)
    assert not at.exception, at.exception
    assert not errors(at), errors(at)
    results = at.session_state["calib_results"]
    assert sorted(results["weighting"]) == ["idf", "none"]
    row = results[results["weighting"] == "idf"].iloc[0]
    cfg = config_from_row(row)
    assert (cfg.rep.scheme, cfg.measure) == ("dart", "weighted_jaccard")
    at.session_state["calib_config"] = Config(Representation(k=5, num_perm=32, scheme="icws", weighting="idf"),
                                              8, 4, threshold=0.5, measure="weighted_jaccard")
    at.switch_page("pages/3_Curves.py").run(timeout=300)
    assert not at.exception, at.exception
    assert any("J_w" in c.value for c in at.caption), [c.value for c in at.caption]
