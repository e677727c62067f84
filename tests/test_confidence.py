"""A budget with stated confidence: how likely a row's false-removal rate is to exceed the budget, and the
pick whose one-sided upper bound at a confidence holds it (calib.estimates.exceedance,
calib.search.recommend).

The maths is checked on hand-computed cases; the claim itself ("the corpus rate exceeds the budget with
probability at most 1 - confidence") by repeating the experiment: samples drawn from a known population
with known per-configuration rates, the rates and intervals computed by calib's own counted_rate, the
pick made by recommend(), and how often the pick's true rate exceeds the budget counted over the seeds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom, norm

from calib.estimates.bootstrap import ClusterBootstrap
from calib.estimates.exceedance import Z975, check_confidence, exceed_probability, upper_bound
from calib.estimates.metrics import counted_rate
from calib.search.recommend import closest, config_text, recommend, recommendation_line, rule_text

BUDGET = 0.01


# -- the maths ------------------------------------------------------------------------------------

def test_exceed_probability_hand_computed():
    # estimate 0.5%, upper half-width 1.96 x 0.4%: sd_up = 0.4%; P(rate > 1%) = 1 - Phi(1.25)
    p, hi = 0.005, 0.005 + Z975 * 0.004
    assert exceed_probability(p, 0.0, hi, 0.01) == pytest.approx(1 - norm.cdf(1.25), abs=1e-12)
    assert exceed_probability(p, 0.0, hi, 0.01) == pytest.approx(0.10565, abs=1e-5)
    # the row's own interval comes back: 2.5% above its upper end, 50% above the estimate
    assert exceed_probability(p, 0.001, hi, hi) == pytest.approx(0.025, abs=1e-12)
    assert exceed_probability(p, 0.001, hi, p) == pytest.approx(0.5, abs=1e-12)
    # below the estimate the lower half-width sets it: P(rate > lo) = 97.5%
    assert exceed_probability(0.02, 0.01, 0.04, 0.01) == pytest.approx(0.975, abs=1e-12)
    # a side of zero width is a step; a rate not measured is NaN
    assert exceed_probability(0.0, 0.0, 0.0, 0.01) == 0.0
    assert exceed_probability(0.02, 0.02, 0.03, 0.01) == 1.0
    assert np.isnan(exceed_probability(float("nan"), 0.0, 0.1, 0.01))
    assert np.isnan(exceed_probability(0.005, 0.0, None, 0.01))


def test_upper_bound_is_the_level_where_the_probability_is_one_minus_confidence():
    p, lo, hi = 0.004, 0.0, 0.011
    assert upper_bound(p, hi, 0.5) == pytest.approx(p)          # the point estimate
    assert upper_bound(p, hi, 0.975) == pytest.approx(hi)       # the two-sided 95% interval's end
    for c in (0.6, 0.8, 0.9, 0.95, 0.99):
        u = upper_bound(p, hi, c)
        assert exceed_probability(p, lo, hi, u) == pytest.approx(1 - c, abs=1e-9)
    assert upper_bound(p, hi, 0.9) < upper_bound(p, hi, 0.95) < upper_bound(p, hi, 0.99)


@pytest.mark.parametrize("bad", [0.4, 1.0, 1.5, float("nan"), -0.95])
def test_confidence_outside_half_to_one_is_refused(bad):
    with pytest.raises(ValueError, match="confidence"):
        check_confidence(bad)


def _rows():
    return pd.DataFrame({
        "status": ["ok"] * 4, "n_positive": [10] * 4,
        "pair_recall": [0.95, 0.90, 0.85, 0.80],
        "false_removal_rate": [0.009, 0.006, 0.004, 0.002],
        "false_removal_rate_low": [0.002, 0.001, 0.0, 0.0],
        "false_removal_rate_high": [0.020, 0.016, 0.0105, 0.008],
        "candidates": [10.0, 10.0, 10.0, 10.0],
        "config_fingerprint": ["a", "b", "c", "d"],
        "representation": ["word2 nopunct"] * 4, "num_perm": [256] * 4, "b": [64] * 4, "r": [4] * 4,
        "verify": ["exact"] * 4, "threshold": [0.57, 0.6, 0.65, 0.7], "policy": ["star"] * 4,
        "measure": ["jaccard"] * 4, "removed": [300, 290, 280, 270],
    })


def test_recommend_at_a_confidence_holds_the_budget_on_the_one_sided_bound():
    rows = _rows()
    assert recommend(rows, max_false_removal_rate=BUDGET)["config_fingerprint"] == "a"  # point estimate
    # one-sided 95% bounds: p + 1.645/1.96 (hi - p)
    bounds = {fp: upper_bound(p, h, 0.95) for fp, p, h in
              zip(rows["config_fingerprint"], rows["false_removal_rate"], rows["false_removal_rate_high"])}
    assert bounds["a"] > BUDGET and bounds["b"] > BUDGET and bounds["c"] < BUDGET  # c: 0.0094
    assert recommend(rows, max_false_removal_rate=BUDGET, confidence=0.95)["config_fingerprint"] == "c"
    assert recommend(rows, max_false_removal_rate=BUDGET, confidence=0.975)["config_fingerprint"] == "d"
    assert recommend(rows, max_false_removal_rate=BUDGET, confidence=0.5)["config_fingerprint"] == "a"
    assert recommend(rows, max_false_removal_rate=0.005, confidence=0.99) is None
    row, text = closest(rows, max_false_removal_rate=0.005, confidence=0.99)
    assert row["config_fingerprint"] == "d" and "99% one-sided upper bound" in text and "P(false-removal" in text


def test_recommendation_line_says_the_rule_the_policy_and_the_probability():
    row = _rows().iloc[2]
    line = recommendation_line(row, budget=BUDGET, confidence=0.95)
    p = exceed_probability(0.004, 0.0, 0.0105, BUDGET)
    assert line.startswith("recommended (max pair recall, false-removal rate's 95% one-sided upper bound <= 1.00%)")
    assert "word2 nopunct num_perm=256 b=64 r=4 exact t=0.65 star clusters" in line
    assert f"P(false-removal rate > 1.00%) = {100 * p:.1f}%" in line and line.endswith("(c)")
    point = recommendation_line(row, budget=BUDGET)
    assert "(max pair recall, false-removal rate <= 1.00%)" in point
    assert rule_text(0.02, 0.9) == "max pair recall, false-removal rate's 90% one-sided upper bound <= 2.00%"
    assert config_text(row.drop(labels=["policy"])).endswith("t=0.65")


# -- the claim, by repeating the experiment ----------------------------------------------------------

THRESHOLDS = np.linspace(0.9, 0.0, 13)  # configurations: looser cuts remove more units and more false ones


def _population(max_size: int, m: int = 60_000):
    """m removal units (true-duplicate clusters of 1..max_size documents), each with a similarity s and
    false with probability 4% (1 - s)^2; a configuration removes the units with s >= its threshold. Its
    true false-removal rate is the population's share of false documents among those it removes."""
    rng = np.random.default_rng(12345)
    s = rng.uniform(0, 1, m)
    size = rng.integers(1, max_size + 1, m).astype(float)
    false = rng.uniform(0, 1, m) < 0.04 * (1 - s) ** 2
    rates = np.array([(size[s >= t] * false[s >= t]).sum() / size[s >= t].sum() for t in THRESHOLDS])
    return s, size, false, rates


def _experiment(max_size: int, n: int, seeds: int):
    """Over ``seeds`` samples of n units: (how often the confident pick's true rate exceeds the budget,
    the same for the point-estimate pick, how often a row whose true rate exceeds the budget was stated
    to exceed it with probability <= 5%, how many such rows, how often a row whose true rate is within
    half the budget of it lay above the row's 95% interval, how many such rows)."""
    s, size, false, rates = _population(max_size)
    conf = point = stated_low = over = above_high = near = 0
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        idx = rng.choice(len(s), n, replace=False)
        ss, sz, fl = s[idx], size[idx], false[idx]
        boot = ClusterBootstrap(np.arange(n), replicates=200, seed=seed)
        rows = []
        for k, t in enumerate(THRESHOLDS):
            m = ss >= t
            counts = boot.unit_counts(np.where(m, sz * fl, 0.0), np.where(m, sz, 0.0))
            rows.append({"status": "ok", "n_positive": 1, "pair_recall": 1 - t, "candidates": 1.0,
                         "config_fingerprint": str(k), **counted_rate("false_removal_rate", counts, boot)})
        rows = pd.DataFrame(rows)
        for k, r in rows.iterrows():
            if abs(rates[k] - BUDGET) < BUDGET / 2:
                near += 1
                above_high += rates[k] > r["false_removal_rate_high"]
            if rates[k] > BUDGET:
                over += 1
                stated_low += exceed_probability(r["false_removal_rate"], r["false_removal_rate_low"],
                                                 r["false_removal_rate_high"], BUDGET) <= 0.05
        c = recommend(rows, max_false_removal_rate=BUDGET, confidence=0.95, any_seed=False)
        p = recommend(rows, max_false_removal_rate=BUDGET, any_seed=False)
        conf += c is not None and rates[int(c["config_fingerprint"])] > BUDGET
        point += p is not None and rates[int(p["config_fingerprint"])] > BUDGET
    return conf, point, stated_low, over, above_high, near


def _tolerance(trials: int, p: float = 0.05) -> int:
    """The most exceedances a rule that exceeds with probability ``p`` shows in ``trials`` tries but
    once in a thousand (the binomial's 99.9th percentile)."""
    return int(binom.ppf(0.999, trials, p))


def test_confident_pick_exceeds_the_budget_at_most_one_minus_confidence_of_the_time_independent_trials():
    # every removal its own unit: the Wilson interval (independent trials)
    seeds = 100
    conf, point, stated_low, over, _, _ = _experiment(max_size=1, n=600, seeds=seeds)
    assert conf <= _tolerance(seeds), (conf, seeds)
    assert point >= 0.25 * seeds, point  # the point-estimate pick sits on the budget: the test can fail
    assert stated_low <= _tolerance(over), (stated_low, over)


@pytest.mark.slow
def test_confident_pick_exceeds_the_budget_at_most_one_minus_confidence_of_the_time_clustered():
    # removals in clusters of 1-3 documents, thousands of them: the cluster bootstrap
    seeds = 80
    conf, point, stated_low, over, _, _ = _experiment(max_size=3, n=3000, seeds=seeds)
    assert conf <= _tolerance(seeds), (conf, seeds)
    assert point >= 0.25 * seeds, point
    assert stated_low <= _tolerance(over), (stated_low, over)


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="the cluster bootstrap's percentile interval is too short when the false "
                                       "removals sit in a handful of clusters: its upper end lies below the true "
                                       "rate 6-10% of the time, not 2.5%, so the probability read from it is "
                                       "too low there")
def test_the_interval_holds_with_false_removals_in_few_clusters():
    # 600 units: about 5 false clusters in a configuration near the budget
    _, _, _, _, above_high, near = _experiment(max_size=3, n=600, seeds=100)
    assert above_high <= _tolerance(near, 0.025), (above_high, near)
