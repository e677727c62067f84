"""Per-slice rates, Fisher tests and Holm adjustment."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import fisher_exact

from calib.estimates.slices import holm, slice_rates, slice_report
from calib.estimates.stats import wilson


def test_zero_of_fifty_vs_half_is_flagged():
    values = ["a"] * 50 + ["b"] * 50
    success = [False] * 50 + [True] * 25 + [False] * 25
    r = slice_rates(values, success).set_index("value")
    assert r.loc["a", ["n", "k"]].tolist() == [50, 0] and r.loc["b", ["n", "k"]].tolist() == [50, 25]
    assert r.loc["b", "rate"] == 0.5
    p = fisher_exact([[0, 50], [25, 25]]).pvalue
    assert r.loc["a", "p_value"] == pytest.approx(p, rel=1e-12)
    assert r.loc["a", "p_adjusted"] == pytest.approx(min(1.0, 2 * p))
    assert r["flagged"].all()
    lo, hi = wilson([0, 25], [50, 50])
    assert np.allclose(r[["ci_low"]].to_numpy().ravel(), lo) and np.allclose(r["ci_high"].to_numpy(), hi)


def test_equal_rates_not_flagged():
    values = ["x"] * 40 + ["y"] * 40 + ["z"] * 40
    success = ([True] * 30 + [False] * 10) * 3
    r = slice_rates(values, success)
    assert (r["rate"] == 0.75).all() and not r["flagged"].any()
    assert np.allclose(r["p_value"], 1.0)


def test_fisher_against_scipy_and_holm():
    rng = np.random.default_rng(3)
    values = rng.choice(["p", "q", "r", "s"], size=300)
    success = rng.random(300) < np.where(values == "s", 0.3, 0.7)
    r = slice_rates(values, success)
    for row in r.itertuples():
        inside = values == row.value
        k, n = int(success[inside].sum()), int(inside.sum())
        K, N = int(success.sum()), 300
        expect = fisher_exact([[k, n - k], [K - k, N - n - (K - k)]]).pvalue
        assert (row.n, row.k) == (n, k) and row.p_value == pytest.approx(expect, rel=1e-12)
    # Holm by hand
    p = r["p_value"].to_numpy()
    order = np.argsort(p)
    adj = np.minimum(1, np.maximum.accumulate((4 - np.arange(4)) * p[order]))
    assert np.allclose(r["p_adjusted"].to_numpy()[order], adj)
    assert r.set_index("value").loc["s", "flagged"]


def test_mask_and_missing_values():
    values = pd.Series(["a", None, "a", "b", None, "b"])
    success = [1, 1, 0, 0, 1, 1]
    r = slice_rates(values, success, mask=[True, True, True, True, True, False])
    assert r["value"].tolist() == ["(missing)", "a", "b"]
    assert r["n"].tolist() == [2, 2, 1] and r["k"].tolist() == [2, 1, 0]


def test_single_slice_has_no_test():
    r = slice_rates(["a"] * 5, [True, False, True, True, True])
    assert np.isnan(r["p_value"].iloc[0]) and not r["flagged"].iloc[0]


def test_holm_edge_cases():
    assert np.allclose(holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])
    out = holm([np.nan, 0.2])
    assert np.isnan(out[0]) and out[1] == pytest.approx(0.2)


def test_slice_report_stacks_columns():
    f = pd.DataFrame({"domain": ["a", "a", "b", "b"], "lang": ["en", "de", "en", "de"],
                      "found": [True, True, False, False], "is_dup": [True, True, True, False]})
    rep = slice_report(f, ["domain", "lang"], "found", mask_col="is_dup")
    assert rep["column"].tolist() == ["domain", "domain", "lang", "lang"]
    assert rep["n"].tolist() == [2, 1, 1, 2]
    assert list(rep.columns[:3]) == ["column", "value", "n"]
    assert slice_report(f, [], "found").empty
