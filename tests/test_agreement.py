"""Agreement (Cohen, Fleiss, intervals), the label rule and adjudication queue, overlap routing."""

import numpy as np
import pandas as pd
import pytest

from calib.review.adjudication import (adjudication_queue, check_adjudicator, pair_verdicts, resolved_decisions,
    review_labels)
from calib.review.agreement import agreement_table, cohen_kappa, fleiss_kappa
from calib.review.overlap import in_overlap, offered_to

# Wikipedia, "Cohen's kappa", worked example: 50 proposals, A and B both yes 20, A yes B no 5,
# A no B yes 10, both no 15: p_o = 0.7, p_e = 0.5, kappa = 0.4.
WIKI_COHEN = ["yes"] * 20 + ["yes"] * 5 + ["no"] * 10 + ["no"] * 15, \
             ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15

# Wikipedia, "Fleiss' kappa", worked example: 10 subjects, 14 raters, 5 categories; kappa = 0.210.
WIKI_FLEISS = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
               [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]


def test_cohen_kappa_wikipedia_example():
    assert cohen_kappa(*WIKI_COHEN) == pytest.approx(0.4, abs=1e-12)


def test_cohen_kappa_by_hand_unbalanced():
    # 2x2 table [[a, b], [c, d]] = [[8, 2], [4, 6]]: p_o = 14/20, p_e = (10*12 + 10*8)/400 = 0.5 -> 0.4;
    # [[45, 15], [25, 15]]: p_o = .6, p_e = .6*.7 + .4*.3 = .54 -> kappa = .06/.46
    x = ["d"] * 45 + ["d"] * 15 + ["n"] * 25 + ["n"] * 15
    y = ["d"] * 45 + ["n"] * 15 + ["d"] * 25 + ["n"] * 15
    assert cohen_kappa(x, y) == pytest.approx(0.06 / 0.46, abs=1e-12)
    assert cohen_kappa(["a", "a"], ["a", "a"]) != cohen_kappa(["a", "a"], ["a", "a"])  # undefined: NaN


def test_fleiss_kappa_wikipedia_example():
    assert fleiss_kappa(WIKI_FLEISS) == pytest.approx(0.210, abs=5e-4)


def test_fleiss_equals_cohen_family_on_perfect_and_varying_raters():
    assert fleiss_kappa([[3, 0], [0, 3], [3, 0]]) == pytest.approx(1.0)
    # varying rater counts: items [2,0], [1,1], [0,3]: P_i = 1, 0, 1 -> Pbar = 2/3;
    # p = (3/7, 4/7) -> Pe = 25/49; kappa = (2/3 - 25/49) / (24/49) = 23/72
    assert fleiss_kappa([[2, 0], [1, 1], [0, 3]]) == pytest.approx(23 / 72, abs=1e-12)
    with pytest.raises(ValueError, match="at least two ratings"):
        fleiss_kappa([[1, 0], [1, 1]])


def _decisions(rows):
    return pd.DataFrame(rows, columns=["id_a", "id_b", "decision", "reviewer", "kind"]).assign(
        id=lambda d: np.arange(1, len(d) + 1))


def test_agreement_table_cohen_matches_hand_table_and_counts_unsure():
    x, y = WIKI_COHEN
    m = {"yes": "duplicate", "no": "not_duplicate"}
    rows = [(f"a{k:02d}", f"b{k:02d}", m[x[k]], "ana", "review") for k in range(50)]
    rows += [(f"a{k:02d}", f"b{k:02d}", m[y[k]], "bo", "review") for k in range(50)]
    rows += [("a99", "b99", "unsure", "bo", "review"), ("a99", "b99", "duplicate", "ana", "review")]
    cats = pd.DataFrame({"id_a": ["b00", "a01"], "id_b": ["a00", "b01"], "category": ["near", "near"]})
    t = agreement_table(_decisions(rows), cats, replicates=300)
    overall = t[t["scope"] == "overall"].iloc[0]
    assert overall["method"] == "cohen" and overall["kappa"] == pytest.approx(0.4)
    assert overall["pairs"] == 50 and overall["agreed"] == 35 and overall["unsure"] == 1
    assert overall["low"] < 0.4 < overall["high"]
    by_cat = t[t["scope"] == "category"].set_index("group")
    assert by_cat.loc["near", "pairs"] == 2 and by_cat.loc["unlabeled", "pairs"] == 48
    ana = t[(t["scope"] == "reviewer") & (t["group"] == "ana")].iloc[0]
    assert ana["kappa"] == pytest.approx(0.4)  # two reviewers: each against the other is the same table


def test_agreement_table_fleiss_when_three_reviewers():
    # three reviewers on 4 pairs: counts (dup, not) = [3,0], [2,1], [0,3], [1,2]
    votes = {"p1": "ddd", "p2": "ddn", "p3": "nnn", "p4": "dnn"}
    rows = [(p, p + "z", {"d": "duplicate", "n": "not_duplicate"}[c], r, "review")
            for p, cs in votes.items() for r, c in zip(("ana", "bo", "cy"), cs)]
    t = agreement_table(_decisions(rows), replicates=200)
    overall = t[t["scope"] == "overall"].iloc[0]
    assert overall["method"] == "fleiss"
    assert overall["kappa"] == pytest.approx(fleiss_kappa([[3, 0], [2, 1], [0, 3], [1, 2]]))


@pytest.mark.slow
def test_bootstrap_interval_covers_known_kappa():
    """Simulated raters with a known kappa: with probability a both copy a latent label, else each
    draws independently with the same prevalence; population kappa = a. Coverage near 95%."""
    a, prev, n, runs = 0.6, 0.3, 150, 200
    covered = 0
    for seed in range(runs):
        rng = np.random.default_rng(seed)
        latent = rng.random(n) < prev
        copy = rng.random(n) < a
        r1 = np.where(copy, latent, rng.random(n) < prev)
        r2 = np.where(copy, latent, rng.random(n) < prev)
        lab = np.array(["not_duplicate", "duplicate"])
        rows = [(f"x{k}", f"y{k}", lab[int(r1[k])], "ana", "review") for k in range(n)]
        rows += [(f"x{k}", f"y{k}", lab[int(r2[k])], "bo", "review") for k in range(n)]
        o = agreement_table(_decisions(rows), replicates=400, seed=seed).iloc[0]
        covered += o["low"] <= a <= o["high"]
    assert 0.89 <= covered / runs <= 0.99, covered / runs


def test_label_rule_adjudicated_unanimous_contested():
    d = _decisions([
        ("p", "q", "duplicate", "ana", "review"),
        ("p", "q", "not_duplicate", "bo", "review"),       # contested
        ("r", "s", "duplicate", "ana", "review"),
        ("r", "s", "duplicate", "bo", "review"),           # unanimous
        ("t", "u", "not_duplicate", "ana", "review"),      # one reviewer: unanimous
        ("v", "w", "duplicate", "ana", "review"),
        ("v", "w", "not_duplicate", "ana", "review"),      # ana changed her mind: her latest counts
        ("x", "y", "duplicate", "ana", "review"),
        ("x", "y", "not_duplicate", "bo", "review"),
        ("x", "y", "not_duplicate", "cy", "adjudication"),  # adjudicated
        ("m", "n", "unsure", "ana", "review"),             # unsure only: no label
    ])
    labels, counts = review_labels(d)
    got = dict(zip(zip(labels["id_a"], labels["id_b"]), labels["label"]))
    assert got == {("r", "s"): "duplicate", ("t", "u"): "not_duplicate", ("v", "w"): "not_duplicate",
                   ("x", "y"): "not_duplicate"}
    assert (counts.used, counts.adjudicated, counts.unanimous, counts.contested, counts.undecided) == (4, 1, 3, 1, 1)
    assert counts.double_reviewed == 3 and counts.unsure == 1
    q = adjudication_queue(d)
    assert list(zip(q["id_a"], q["id_b"])) == [("p", "q")]
    assert q.iloc[0]["votes"] == "ana: duplicate; bo: not duplicate"
    r = resolved_decisions(d).set_index(["id_a", "id_b"])["decision"]
    assert r[("p", "q")] == "unsure" and r[("x", "y")] == "not_duplicate"
    with pytest.raises(ValueError, match="another person"):
        check_adjudicator(d, "q", "p", "bo")
    check_adjudicator(d, "p", "q", "cy")
    v = pair_verdicts(d).set_index(["id_a", "id_b"])
    assert v.loc[("x", "y"), "adjudicator"] == "cy"


def test_overlap_routing_is_deterministic_blind_and_capped():
    ids = [(f"d{k:04d}", f"e{k:04d}") for k in range(4000)]
    a, b = zip(*ids)
    share = in_overlap(a, b, 0.2, seed=1)
    assert 0.18 < share.mean() < 0.22
    assert (in_overlap(b, a, 0.2, seed=1) == share).all()  # order of the ids does not matter
    assert not (in_overlap(a, b, 0.2, seed=2) == share).all()
    pairs = pd.DataFrame({"id_a": a, "id_b": b})
    first = [(x, y, "duplicate", "ana", "review") for x, y in ids[:1000]]
    d = _decisions(first)
    for_bo = offered_to(pairs, d, "bo", share=0.2, seed=1)
    done_by_ana = for_bo["id_a"].isin([x for x, _ in ids[:1000]])
    assert (done_by_ana == for_bo["second_review"]).all()
    assert done_by_ana.sum() == share[:1000].sum()  # exactly the overlap share of ana's pairs
    assert len(offered_to(pairs, d, "ana", share=0.2, seed=1)) == 3000  # never her own again
    # once bo has decided them, a third reviewer is not offered those pairs
    second = [(x, y, "not_duplicate", "bo", "review") for x, y in for_bo.loc[done_by_ana, ["id_a", "id_b"]].to_numpy()]
    d2 = _decisions(first + second)
    for_cy = offered_to(pairs, d2, "cy", share=0.2, seed=1)
    assert for_cy["id_a"].isin([x for x, *_ in second]).sum() == 0
    assert len(offered_to(pairs, d, "bo", share=0.0, seed=1)) == 3000


@pytest.mark.slow
def test_contested_sensitivity_matches_fresh_sweeps():
    """Each way of the contested pairs gives the recommendation a sweep from scratch on that
    labeling gives (the relabeled workspace shares only text-derived caches)."""
    from calib.sketches.represent import Representation
    from calib.review.labels import with_review_labels
    from calib.reading.sample import SAMPLE_DIR
    from calib.reading.samples import load_sample
    from calib.search.sensitivity import contested_sensitivity
    from calib.search.grid import Grid
    from calib.search.recommend import with_recommendation
    from calib.search.sweep import sweep
    from calib.search.workspace import Workspace
    s = load_sample(SAMPLE_DIR)
    p = s.pairs[s.pairs["category"].isin(["near_threshold", "partial"])]
    contested = pd.DataFrame({"id_a": s.ids[p["i"]], "id_b": s.ids[p["j"]]})
    g = Grid(representations=(Representation(shingle="word", k=3),), num_perms=(64,), thresholds=(0.3, 0.5, 0.7, 0.9))
    ws = Workspace(s)
    tab = contested_sensitivity(ws, sweep(ws, g), contested, budget=0.02).set_index("labels")
    for way in ("duplicate", "not_duplicate"):
        s2, used, _ = with_review_labels(s, contested.assign(label=way, category="contested"))
        assert used == len(contested)
        ref = with_recommendation(sweep(Workspace(s2), g), max_false_removal_rate=0.02)
        want = ref[ref["recommended"]].iloc[0]
        got = tab.loc[f"contested -> {way.replace('_', ' ')}"]
        assert got["config_fingerprint"] == want["config_fingerprint"]
        assert got["pair_recall"] == pytest.approx(want["pair_recall"])
        assert got["false_removal_rate"] == pytest.approx(want["false_removal_rate"])
    base = tab.loc["as labeled"]
    assert tab.loc["contested -> duplicate", "pair_recall_change"] == pytest.approx(
        tab.loc["contested -> duplicate", "pair_recall"] - base["pair_recall"])
