"""Sweep rows against an independent reference built from datasketch itself
and plain Python sets, on a slice of the shipped sample; and the engine on the
real Clough corpus."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xxhash
from datasketch import MinHash, MinHashLSH

from calib.search.config import Config
from calib.sketches.represent import Representation, shingle_strings
from calib.reading.clough import CLOUGH_DIR, load_clough
from calib.reading.sample import from_frames
from calib.reading.samples import load_sample
from calib.search.config import config_from_row
from calib.search.grid import Grid
from calib.search.recommend import recommend
from calib.search.sweep import evaluate, slice_breakdown, sweep
from calib.search.workspace import Workspace
from _util import needs_clough

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def small_sample():
    full = load_sample(ROOT / "data" / "sample")
    docs = full.docs
    grouped = docs[docs["group"].notna()].head(120)
    singles = docs[docs["group"].isna()].iloc[::20].head(80)
    part = pd.concat([grouped, singles]).sort_index().reset_index(drop=True)
    return from_frames(part[["id", "text", "group", "domain", "language"]], name="small")


def _reference(sample, rep, b, r, threshold):
    """Candidates from datasketch.MinHashLSH, Jaccard from Python sets,
    clusters from a plain union-find."""
    sets = [set(shingle_strings(t, rep)) for t in sample.texts]
    mh = []
    for s in sets:
        m = MinHash(num_perm=rep.num_perm, seed=rep.seed, hashfunc=xxhash.xxh32_intdigest)
        m.update_batch([x.encode() for x in sorted(s)])
        mh.append(m)
    lsh = MinHashLSH(num_perm=rep.num_perm, params=(b, r))
    for d, m in enumerate(mh):
        if sets[d]:
            lsh.insert(d, m)
    cands = {(min(d, e), max(d, e)) for d in range(sample.n) if sets[d] for e in lsh.query(mh[d]) if e != d}
    group = sample.docs["group"].tolist()
    same = lambda a, c: group[a] is not None and not pd.isna(group[a]) and group[a] == group[c]
    pos = {(a, c) for a in range(sample.n) for c in range(a + 1, sample.n) if same(a, c)}
    jac = lambda a, c: len(sets[a] & sets[c]) / len(sets[a] | sets[c]) if sets[a] | sets[c] else 0.0
    verified = {p for p in cands if jac(*p) >= threshold}
    parent = list(range(sample.n))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x
    for a, c in sorted(verified):
        ra, rc = find(a), find(c)
        parent[max(ra, rc)] = min(ra, rc)
    rep_of = [find(x) for x in range(sample.n)]  # the smallest row of each component
    removed = [x for x in range(sample.n) if rep_of[x] != x]
    false = sum(not same(x, rep_of[x]) for x in removed)
    kept_per_group = {}
    for x in range(sample.n):
        if rep_of[x] == x and not pd.isna(group[x]):
            kept_per_group[group[x]] = kept_per_group.get(group[x], 0) + 1
    missed = sum(k - 1 for k in kept_per_group.values())
    return {"candidates": len(cands), "candidate_recall": len(cands & pos) / len(pos),
            "pair_recall": len(verified & pos) / len(pos),
            "pair_precision": len(verified & pos) / len(verified) if verified else float("nan"),
            "removed": len(removed), "false_removals": false, "missed_removals": missed}


@pytest.mark.parametrize("shingle,k", [("word", 3), ("char", 5)])
def test_sweep_matches_datasketch_and_python_sets(small_sample, shingle, k):
    rep = Representation(shingle=shingle, k=k, num_perm=64, scheme="datasketch", hashfunc="xxhash")
    grid = Grid(representations=(rep,), num_perms=(64,), splits=((16, 4), (8, 8), (4, 16), (3, 5)),
                thresholds=(0.5, 0.8))
    res = sweep(small_sample, grid)
    assert len(res) == 8 and (res["status"] == "ok").all()
    for _, row in res.iterrows():
        ref = _reference(small_sample, rep, int(row["b"]), int(row["r"]), float(row["threshold"]))
        for key, want in ref.items():
            got = row[key]
            if isinstance(want, float) and np.isnan(want):
                assert np.isnan(got), key
            else:
                assert got == pytest.approx(want), (key, row["b"], row["r"], row["threshold"])


def test_sweep_reuses_prefix_signature_prefixes(small_sample):
    ws = Workspace(small_sample)
    rep = Representation(shingle="word", k=3)
    sweep(ws, Grid(representations=(rep,), num_perms=(64, 128), splits=((8, 8),), thresholds=(0.8,)))
    assert len(ws._sigs) == 1 and next(iter(ws._sigs.values())).shape[1] == 128
    ds = rep.with_(scheme="datasketch")
    sweep(ws, Grid(representations=(ds,), num_perms=(64, 128), splits=((8, 8),), thresholds=(0.8,)))
    assert len(ws._sigs) == 3  # datasketch: one matrix per hash count
    assert len(ws._sets) == 1  # one shingling for all four


def test_too_loose_split_is_reported_not_materialized(small_sample):
    rep = Representation(shingle="char", k=2)
    res = sweep(small_sample, Grid(representations=(rep,), num_perms=(32,), splits=((32, 1), (4, 8)),
                                   thresholds=(0.8,), verify=("estimated",), max_pairs=1000))
    loose = res[res["b"] == 32].iloc[0]
    assert loose["status"] == "too_many_candidates" and np.isnan(loose["candidates"])
    assert loose["candidates_upper_bound"] > 1000
    assert not np.isnan(loose["candidate_recall"])  # measured on the labeled pairs directly
    assert res[res["b"] == 4].iloc[0]["status"] == "ok"


def test_reference_join_over_budget_is_a_status_not_a_crash(small_sample):
    """More pairs above the lowest exact threshold than max_pairs: those rows
    get status too_many_pairs and no pair metric; higher thresholds that fit
    the budget are measured exactly as without a budget."""
    rep = Representation(shingle="word", k=3, num_perm=32)
    grid = dict(representations=(rep,), num_perms=(32,), splits=((8, 4),), thresholds=(0.05, 0.8))
    ws = Workspace(small_sample)
    n_low = len(ws.reference_pairs(rep, 0.05)[0])
    n_high = len(ws.reference_pairs(rep, 0.8)[0])
    assert n_low > n_high > 0
    free = sweep(small_sample, Grid(**grid, max_pairs=None)).set_index("threshold")
    budget = max(n_high, int(free["candidates"].max()))  # the budget also caps candidates
    assert budget < n_low
    tight = sweep(small_sample, Grid(**grid, max_pairs=budget)).set_index("threshold")
    low = tight.loc[0.05]
    assert low["status"] == "too_many_pairs" and free.loc[0.05, "status"] == "ok"
    assert np.isnan(low["pair_recall"]) and np.isnan(low["similar_pairs"]) and np.isnan(low["removed"])
    assert low["candidate_recall"] == free.loc[0.05, "candidate_recall"]  # not a pair-budget matter
    pd.testing.assert_series_equal(tight.loc[0.8, free.columns], free.loc[0.8], check_dtype=False)
    # the budget holds for evaluate() too, and nothing exceeding it is cached as a result
    ws = Workspace(small_sample)
    ev = evaluate(ws, Config(rep, 8, 4, "exact", 0.05), max_pairs=budget)
    assert ev.row["status"] == "too_many_pairs" and ev.verified is None and ev.clustering is None
    with pytest.raises(Exception, match="too many pairs above J >= 0.05"):
        ws.reference_pairs(rep, 0.05, budget)
    assert len(ws.reference_pairs(rep, 0.05, None)[0]) == n_low


def test_recommend_respects_budget_and_tie_breaks_on_candidates():
    rows = pd.DataFrame({
        "status": ["ok", "ok", "ok", "too_many_candidates"],
        "pair_recall": [0.9, 0.8, 0.8, 1.0],
        "false_removal_rate": [0.05, 0.0, 0.005, np.nan],
        "false_removal_rate_high": [0.1, 0.02, 0.03, np.nan],
        "candidates": [100.0, 500.0, 200.0, np.nan],
        "config_fingerprint": ["a", "b", "c", "d"],
    })
    assert recommend(rows, max_false_removal_rate=0.01)["config_fingerprint"] == "c"
    assert recommend(rows, max_false_removal_rate=0.1)["config_fingerprint"] == "a"
    # the two-sided 95% interval's upper end is the one-sided 97.5% bound
    assert recommend(rows, max_false_removal_rate=0.025, confidence=0.975)["config_fingerprint"] == "b"
    assert recommend(rows.iloc[[0]], max_false_removal_rate=0.01) is None


def test_sweep_is_deterministic(small_sample):
    grid = Grid(representations=(Representation(shingle="word", k=2),), num_perms=(64,), splits=((16, 4),),
                thresholds=(0.6, 0.9))
    a = sweep(small_sample, grid)
    b = sweep(small_sample, grid)
    pd.testing.assert_frame_equal(a, b)


def test_grid_validation():
    with pytest.raises(ValueError, match="verify"):
        Grid(verify=("maybe",))
    with pytest.raises(ValueError, match="thresholds"):
        Grid(thresholds=(0.0,))
    with pytest.raises(ValueError, match="b\\*r"):
        Config(Representation(num_perm=64), b=16, r=8)


def test_evaluate_and_slices_agree_with_the_row(small_sample):
    ws = Workspace(small_sample)
    cfg = Config(Representation(shingle="word", k=3, num_perm=128), 16, 8, "exact", 0.7)
    ev = evaluate(ws, cfg)
    dup = ev.labeled[ev.labeled["label"] == 1]
    assert ev.row["candidate_recall"] == pytest.approx(dup["candidate"].mean())
    assert ev.row["pair_recall"] == pytest.approx(dup["verified"].mean())
    assert ev.outcomes["removed"].sum() == ev.row["removed"]
    sb = slice_breakdown(ev, small_sample)
    dom = sb[(sb["metric"] == "removal_rate") & (sb["column"] == "domain")]
    assert dom["n"].sum() == small_sample.n and dom["k"].sum() == ev.row["removed"]


@needs_clough
def test_engine_on_the_clough_corpus():
    s = load_clough(CLOUGH_DIR)
    res = sweep(s, Grid(representations=(Representation(shingle="word", k=3), Representation(shingle="char", k=5)),
                        num_perms=(128,), splits=((64, 2), (16, 8)), thresholds=(0.2, 0.5)))
    assert len(res) == 8
    # Answers of a task share vocabulary with each other but carry no label
    # between them: such candidates must be counted as unlabeled, not as errors.
    assert (res["verified_unlabeled"] > 0).any()
    assert (res["pair_recall"] <= res["candidate_recall"] + 1e-12).all()
    ev = evaluate(s, Config(Representation(shingle="char", k=5), 64, 2, "exact", 0.2))
    lab = ev.labeled
    cut = lab[lab["category"] == "cut"]
    non = lab[lab["category"] == "non"]
    # Copy-paste answers are far more similar to their source than independent ones.
    assert cut["exact"].median() > 3 * non["exact"].median()
    assert (non["verified"].sum() / len(non)) < (cut["verified"].sum() / len(cut))


def test_recommend_refuses_unlabeled_evidence():
    rows = pd.DataFrame({
        "status": ["ok", "ok"], "n_positive": [5, 5], "pair_recall": [0.9, 0.5],
        "false_removal_rate": [np.nan, np.nan], "false_removal_rate_high": [np.nan, np.nan],
        "removed": [12, 0], "candidates": [30.0, 2.0], "config_fingerprint": ["a", "b"],
    })
    # "a" removes 12 documents none of which is labeled: its rate is unknown, not 0; "b" removes
    # nothing, so its rate is not measured either (0/0): neither is recommended.
    assert recommend(rows, max_false_removal_rate=0.01) is None
    measured = pd.concat([rows, pd.DataFrame({
        "status": ["ok"], "n_positive": [5], "pair_recall": [0.4], "false_removal_rate": [0.0],
        "false_removal_rate_high": [0.05], "removed": [3], "candidates": [4.0], "config_fingerprint": ["c"]})], ignore_index=True)
    assert recommend(measured, max_false_removal_rate=0.01)["config_fingerprint"] == "c"
    assert recommend(measured.assign(n_positive=0), max_false_removal_rate=0.01) is None


def test_giant_component_guard_applies_the_star_rule(small_sample):
    # A loose threshold chains many documents; a guard of 3 re-clusters every
    # larger component with the star rule and flags its members.
    ws = Workspace(small_sample)
    rep = Representation(shingle="word", k=1, num_perm=64)
    loose = evaluate(ws, Config(rep, 64, 1, "exact", 0.15))
    sizes = np.bincount(loose.clustering.component)
    assert sizes.max() > 3
    guarded = evaluate(ws, Config(rep, 64, 1, "exact", 0.15, max_component=3))
    big = sizes[guarded.clustering.component] > 3
    assert (guarded.clustering.flagged_giant == big).all()
    assert guarded.row["giant_components"] == int((sizes > 3).sum())
    # star: every removed member of a giant component is verified with its own representative
    assert not (guarded.clustering.chained & big).any()
    assert guarded.row["chained_removals"] <= loose.row["chained_removals"]


def test_evaluate_reproduces_its_sweep_row(small_sample):
    ws = Workspace(small_sample)
    grid = Grid(representations=(Representation(shingle="word", k=3),), num_perms=(64,), splits=((16, 4),),
                thresholds=(0.6, 0.8), verify=("exact", "estimated", "none"))
    res = sweep(ws, grid)
    for _, row in res.iterrows():
        ev = evaluate(ws, config_from_row(row))
        for key in ("candidates", "candidate_recall", "pair_recall", "pair_precision", "removed",
                    "false_removals", "missed_removals", "similar_recall", "config_fingerprint"):
            a, b = ev.row[key], row[key]
            assert (a == b) or (isinstance(a, float) and np.isnan(a) and np.isnan(b)), (key, row["verify"], a, b)


def _with_copies(sample, seed: int, copies: int):
    """The sample plus many exact copies (some after normalization only) of a few documents."""
    rng = np.random.default_rng(seed)
    docs = sample.docs[["id", "text", "group", "domain", "language"]].copy()
    src = rng.choice(len(docs), 6, replace=False)
    extra = []
    for k in range(copies):
        row = docs.iloc[int(src[k % len(src)])].copy()
        row["id"] = f"copy{k}"
        if k % 3 == 1:
            row["text"] = "  " + row["text"].upper() + " "  # same shingles after lower+ws normalization
        extra.append(row)
    out = pd.concat([docs, pd.DataFrame(extra)]).sample(frac=1.0, random_state=seed).reset_index(drop=True)
    return from_frames(out, name=f"copies{seed}")


@pytest.mark.parametrize("seed", [1, 2])
def test_collapsed_copies_give_the_uncollapsed_results(small_sample, seed):
    """Copies collapse before banding and the reference join; every row of the
    sweep equals the uncollapsed run's (which bands and joins every document)."""
    sample = _with_copies(small_sample, seed, 60)
    reps = (Representation(shingle="word", k=3, num_perm=32), Representation(shingle="char", k=4, num_perm=32))
    grid = Grid(representations=reps, num_perms=(32,), splits=((8, 4), (32, 1), (4, 8)), thresholds=(0.3, 0.8),
                verify=("exact", "estimated", "none"), policies=("connected", "star"), max_pairs=None)
    ws = Workspace(sample)
    assert ws.copies(reps[0]).n_copies >= 60
    got = sweep(ws, grid)
    want = sweep(Workspace(sample, collapse=False), grid)
    pd.testing.assert_frame_equal(got, want)
    assert (got["status"] == "ok").all() and got["verified"].min() > 0


def test_collapse_changes_nothing_on_the_shipped_sample():
    sample = load_sample(ROOT / "data" / "sample")
    grid = Grid(representations=(Representation(shingle="word", k=5),), num_perms=(64,),
                splits=((16, 4), (8, 8)), thresholds=(0.5, 0.8))
    ws = Workspace(sample)
    got = sweep(ws, grid)
    pd.testing.assert_frame_equal(got, sweep(Workspace(sample, collapse=False), grid))
    # the shipped sample has exact copies (after normalization), collapsed here
    assert ws.copies(grid.representations[0].with_(num_perm=64)).n_copies > 0


def test_pair_budget_counts_copies_without_building_their_pairs(small_sample):
    """1,500 copies of one document are over 1.1M pairs (27 MB as i, j, J
    arrays): a budget below that is a status, reached without building them."""
    import tracemalloc

    from calib.verification.jaccard import TooManyPairs
    docs = small_sample.docs[["id", "text"]].copy()
    shortest = docs["text"].iloc[int(docs["text"].str.len().argmin())]  # the bound holds for short texts, whatever the order
    copies = pd.DataFrame({"id": [f"c{k}" for k in range(1500)], "text": shortest})
    sample = from_frames(pd.concat([docs, copies], ignore_index=True), name="copies1500")
    rep = Representation(shingle="word", k=3, num_perm=32)
    grid = Grid(representations=(rep,), num_perms=(32,), splits=((8, 4),), thresholds=(0.8,), max_pairs=20_000)
    ws = Workspace(sample)
    ws.sets(rep), ws.signatures(rep), ws.copies(rep)
    tracemalloc.start()
    try:
        row = sweep(ws, grid).iloc[0]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert row["status"] == "too_many_pairs" and np.isnan(row["pair_recall"])
    assert np.isnan(row["candidates"]) and row["candidates_upper_bound"] >= 1501 * 1500 // 2
    assert peak < 6 * 2**20, peak
    with pytest.raises(TooManyPairs) as info:
        ws.reference_pairs(rep, 0.8, 20_000)
    assert info.value.found >= 1501 * 1500 // 2 and "distinct pairs" in str(info.value)


def test_reference_pairs_at_one_are_the_copies_without_a_join(small_sample, monkeypatch):
    """J >= 1 between canonical rows (distinct sets) is empty: the workspace skips the join there
    and returns what the join returns, the copy pairs, even with copies planted."""
    import dataclasses

    import calib.search.workspace as W
    from calib.verification.measures import get_measure
    docs = small_sample.docs.copy()
    docs = pd.concat([docs, docs.iloc[:5].assign(id=lambda d: d["id"] + "_copy")], ignore_index=True)
    sample = from_frames(docs, None, name="copies")
    rep = Representation(shingle="char", k=4)
    joined = Workspace(sample).reference_pairs(rep, 1.0)
    fresh = Workspace(sample)
    def no_join(*a, **k):
        raise AssertionError("joined at floor 1")
    monkeypatch.setattr(W, "get_measure", lambda m: dataclasses.replace(get_measure(m), all_pairs=no_join))
    with pytest.raises(AssertionError, match="joined"):   # the patch bites where a join is due
        Workspace(sample).reference_pairs(rep, 0.9)
    got = fresh.reference_pairs(rep, 1.0)
    assert len(got[0]) >= 5
    for a, b in zip(got, joined):
        np.testing.assert_array_equal(a, b)
