"""Truth oracle and metrics on hand-computed cases."""

import numpy as np
import pandas as pd
import pytest

from calib.clusters.clustering import cluster_pairs
from calib.estimates.metrics import (binomial, candidate_metrics, collision_rates, document_outcomes, pair_metrics,
    removal_metrics)
from calib.reading.sample import from_frames
from calib.estimates.stats import wilson
from calib.clusters.truth import truth_from_sample


def _sample(groups=None, pairs=None):
    docs = pd.DataFrame({"id": list("abcde"), "text": ["x"] * 5})
    if groups is not None:
        docs["group"] = groups
    return from_frames(docs, pairs)


def test_group_labels_make_every_pair_labeled():
    t = truth_from_sample(_sample(groups=["g1", "g1", "g1", None, "g2"]))
    assert t.complete
    lab = t.label([0, 0, 1, 0, 3, 2], [1, 2, 2, 3, 4, 0])
    assert lab.tolist() == [1, 1, 1, 0, 0, 1]
    assert list(zip(t.pos_i.tolist(), t.pos_j.tolist())) == [(0, 1), (0, 2), (1, 2)]


def test_pair_labels_leave_other_pairs_unlabeled():
    pairs = pd.DataFrame({"id_a": ["a", "d"], "id_b": ["b", "c"], "label": ["duplicate", "not_duplicate"]})
    t = truth_from_sample(_sample(pairs=pairs))
    assert not t.complete
    assert t.label([0, 1, 2, 0], [1, 0, 3, 4]).tolist() == [1, 1, 0, -1]
    assert t.n_positive == 1


def test_explicit_not_duplicate_overrides_nothing_silently():
    # A group sample whose pair file agrees: explicit labels and groups coincide.
    pairs = pd.DataFrame({"id_a": ["a"], "id_b": ["d"], "label": ["not_duplicate"]})
    t = truth_from_sample(_sample(groups=["g1", "g1", None, None, None], pairs=pairs))
    assert t.label([0, 0], [1, 3]).tolist() == [1, 0]


def test_document_outcomes_hand_computed():
    # truth: {a, b, c} duplicates, d and e singletons
    t = truth_from_sample(_sample(groups=["g", "g", "g", None, None]))
    # verified pairs a~b and b~d: connected cluster {a, b, d}, representative a
    cl = cluster_pairs(5, np.array([0, 1]), np.array([1, 3]), np.array([0.9, 0.8]))
    out = document_outcomes(t, cl, t.clusters())
    assert out["removed"].tolist() == [False, True, False, True, False]
    assert out["true_removal"].tolist() == [False, True, False, False, False]
    assert out["false_removal"].tolist() == [False, False, False, True, False]
    assert out["chained"].tolist() == [False, False, False, True, False]  # d~a only through b
    assert out["missed"].tolist() == [False, False, True, False, False]  # c kept beside a
    m = removal_metrics(out, t.clusters())
    assert (m["removed"], m["true_removals"], m["false_removals"], m["unlabeled_removals"]) == (2, 1, 1, 0)
    assert (m["expected_removals"], m["missed_removals"]) == (2, 1)
    assert m["false_removal_rate"] == 0.5 and m["missed_removal_rate"] == 0.5
    lo, hi = wilson(1, 2)
    assert m["false_removal_rate_low"] == pytest.approx(float(lo))
    assert m["false_removal_rate_high"] == pytest.approx(float(hi))


def test_unlabeled_removal_is_not_counted_right_or_wrong():
    pairs = pd.DataFrame({"id_a": ["a"], "id_b": ["b"], "label": ["duplicate"]})
    t = truth_from_sample(_sample(pairs=pairs))
    cl = cluster_pairs(5, np.array([0, 0]), np.array([1, 4]), np.array([0.9, 0.9]))
    m = removal_metrics(document_outcomes(t, cl, t.clusters()), t.clusters())
    assert (m["true_removals"], m["false_removals"], m["unlabeled_removals"]) == (1, 0, 1)
    assert m["false_removal_rate"] == 0.0


def test_pair_and_candidate_metrics():
    m = pair_metrics(np.array([True, True, False, False]), np.array([1, 1, 0, -1, -1], dtype=np.int8))
    assert m["pair_recall"] == 0.5 and m["pair_precision"] == pytest.approx(2 / 3)
    assert (m["verified"], m["verified_unlabeled"]) == (5, 2)
    c = candidate_metrics(np.array([True, False, True, True]), 10, 10)
    assert c["candidate_recall"] == 0.75 and c["reduction"] == pytest.approx(1 - 10 / 45)


def test_binomial_with_no_trials_is_nan_not_zero():
    b = binomial("x", 0, 0)
    assert all(np.isnan(v) for v in b.values())


def test_wilson_matches_scipy():
    from scipy.stats import binomtest
    for k, n in [(0, 10), (3, 10), (10, 10), (57, 200)]:
        ci = binomtest(k, n).proportion_ci(method="wilson")
        lo, hi = wilson(k, n)
        assert float(lo) == pytest.approx(ci.low, abs=1e-12)
        assert float(hi) == pytest.approx(ci.high, abs=1e-12)


def test_collision_rates_bins():
    sim = np.array([0.05, 0.07, 0.55, 0.52, 0.58, 0.99, 1.0])
    hit = np.array([False, False, True, False, True, True, True])
    f = collision_rates(sim, hit, b=1, r=1, bins=10)
    assert f["pairs"].tolist() == [2, 3, 2]
    assert f["candidates"].tolist() == [0, 2, 2]
    assert f["rate"].tolist() == pytest.approx([0.0, 2 / 3, 1.0])
    # b = r = 1: the S-curve is the identity at the bin's mean similarity
    assert f["theory"].tolist() == pytest.approx([0.06, (0.55 + 0.52 + 0.58) / 3, 0.995])


def test_clopper_pearson_matches_scipy():
    from scipy.stats import binomtest

    from calib.estimates.stats import clopper_pearson
    for k, n in [(0, 10), (3, 10), (10, 10), (57, 200)]:
        ci = binomtest(k, n).proportion_ci(method="exact")
        lo, hi = clopper_pearson(k, n)
        assert float(lo) == pytest.approx(ci.low, abs=1e-12)
        assert float(hi) == pytest.approx(ci.high, abs=1e-12)
    assert np.isnan(clopper_pearson(0, 0)[0])


def test_not_judged_documents_leave_their_pairs_unlabeled():
    """group '?' (NOT_JUDGED): every pair with such a document is unlabeled unless a pair label says
    otherwise; two '?' documents are not a group; the judged part keeps its labels."""
    pairs = pd.DataFrame({"id_a": ["d"], "id_b": ["a"], "label": ["duplicate"]})
    s = _sample(groups=["g", "g", None, "?", "?"], pairs=pairs)
    t = truth_from_sample(s)
    assert not t.complete and s.group_codes()[3:].tolist() == [-1, -1]
    # a~b group, a~c cross-group, c~d and d~e not judged, a~d explicit duplicate
    assert t.label([0, 0, 2, 3, 0, 1], [1, 2, 3, 4, 3, 4]).tolist() == [1, 0, -1, -1, 1, -1]
    assert list(zip(t.pos_i.tolist(), t.pos_j.tolist())) == [(0, 1), (0, 3)]
    assert t.clusters().tolist()[:4] == [0, 0, 1, 0] and t.clusters()[4] not in (0, 1)


def test_removal_of_a_not_judged_document_is_unlabeled_not_false():
    """A near-copy nobody judged (e) removed beside a judged singleton (d): an unlabeled removal, not a
    false one, and no missed removal where the copy is kept; the judged rates stay as they were."""
    t = truth_from_sample(_sample(groups=["g", "g", None, None, "?"]))
    judged = truth_from_sample(_sample(groups=["g", "g", None, None, None]))
    for i, j, removed in (([0, 3], [1, 4], 2), ([0], [1], 1)):
        cl = cluster_pairs(5, np.array(i), np.array(j), np.array([0.9] * len(i)))
        m = removal_metrics(document_outcomes(t, cl, t.clusters()), t.clusters())
        assert (m["removed"], m["true_removals"], m["false_removals"]) == (removed, 1, 0)
        assert (m["unlabeled_removals"], m["missed_removals"], m["expected_removals"]) == (removed - 1, 0, 1)
        assert m["false_removal_rate"] == 0.0
    cl = cluster_pairs(5, np.array([0, 3]), np.array([1, 4]), np.array([0.9, 0.9]))
    m_judged = removal_metrics(document_outcomes(judged, cl, judged.clusters()), judged.clusters())
    assert (m_judged["false_removals"], m_judged["unlabeled_removals"]) == (1, 0)  # '?' is what keeps it unlabeled


def test_false_candidate_pairs_leave_not_judged_documents_out():
    from calib.search.workspace import Workspace
    ws = Workspace(_sample(groups=["g", "g", None, "?", "?"]))
    ni, nj = ws.negative_pairs()
    assert list(zip(ni.tolist(), nj.tolist())) == [(0, 2), (1, 2)]


def test_label_names_spell_the_oracle_labels():
    from calib.clusters.truth import label_names
    s = _sample(groups=["g", "g", None, "?", None])
    assert label_names(s, ["b", "a", "c", "e"], ["a", "c", "d", "c"]).tolist() == \
        ["duplicate", "not_duplicate", "", "not_duplicate"]
    with pytest.raises(ValueError, match="'zz'"):
        label_names(s, ["a"], ["zz"])
