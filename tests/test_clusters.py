import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from calib.clusters.chaining import chaining_diagnostics
from calib.clusters.clustering import cluster_pairs, largest_components
from calib.estimates.policies import policy_summary


def arr(*xs):
    return np.array(xs, dtype=np.int64)


def jaccard_fn(sets):
    """sim_fn over hand-made sets, counting its calls."""
    def fn(a, b):
        fn.calls += 1
        return np.array([len(sets[x] & sets[y]) / len(sets[x] | sets[y]) for x, y in zip(a, b)])
    fn.calls = 0
    return fn


# ------------------------------------------------------------- hand graphs

def test_chain_connected_removes_chained_star_keeps_it():
    # A=0 ~ B=1 ~ C=2, A and C not verified
    i, j = arr(0, 1), arr(1, 2)
    c = cluster_pairs(3, i, j, policy="connected")
    assert c.component.tolist() == [0, 0, 0]
    assert c.representative.tolist() == [0, 0, 0]
    assert c.removed.tolist() == [False, True, True]
    assert c.chained.tolist() == [False, False, True]
    s = cluster_pairs(3, i, j, policy="star")
    assert s.removed.tolist() == [False, True, False]
    assert s.representative.tolist() == [0, 0, 2]
    assert s.cluster.tolist() == [0, 0, 1]
    assert s.component.tolist() == [0, 0, 0]
    assert not s.chained.any()
    assert (c.n_removed, s.n_removed, s.n_kept) == (2, 1, 2)


def test_two_components_and_singletons():
    # {0,3,5} via 0-3-5, {1,4}; 2 and 6 alone
    c = cluster_pairs(7, arr(0, 3, 1), arr(3, 5, 4))
    assert c.component.tolist() == [0, 1, 2, 0, 1, 0, 3]
    assert np.array_equal(c.cluster, c.component)
    assert c.representative.tolist() == [0, 1, 2, 0, 1, 0, 6]
    assert c.removed.tolist() == [False, False, False, True, True, True, False]
    assert c.chained.tolist() == [False, False, False, False, False, True, False]
    assert c.component_sizes().tolist() == [3, 2, 1, 1]
    assert c.members(0).tolist() == [0, 3, 5]


def test_no_pairs_everything_kept():
    c = cluster_pairs(4, arr(), arr())
    assert c.component.tolist() == [0, 1, 2, 3]
    assert c.n_removed == 0 and c.representative.tolist() == [0, 1, 2, 3]
    assert cluster_pairs(0, arr(), arr()).n == 0


def test_duplicate_pairs_are_merged():
    c = cluster_pairs(3, arr(0, 0), arr(1, 1), np.array([0.2, 0.9]), representative="medoid")
    assert c.removed.tolist() == [False, True, False]


def star_graph():
    # centre 3, leaves 0,1,2,4..9
    leaves = np.array([0, 1, 2, 4, 5, 6, 7, 8, 9])
    return np.minimum(leaves, 3), np.maximum(leaves, 3)


def test_isolated_large_star():
    i, j = star_graph()
    c = cluster_pairs(10, i, j, policy="connected")
    assert c.representative.tolist() == [0] * 10
    assert c.n_removed == 9
    # every leaf but the centre is only connected to 0 through 3
    assert np.flatnonzero(c.chained).tolist() == [1, 2, 4, 5, 6, 7, 8, 9]
    s = cluster_pairs(10, i, j, policy="star")  # rep 0 removes only the centre
    assert np.flatnonzero(s.removed).tolist() == [3]
    assert s.n_clusters == 9
    m = cluster_pairs(10, i, j, policy="star", representative="medoid")  # the centre wins
    assert m.representative.tolist() == [3] * 10
    assert m.n_removed == 9 and not m.chained.any()


def test_representative_rules_connected():
    i, j = arr(0, 1), arr(1, 2)
    assert cluster_pairs(3, i, j, representative="first").representative[0] == 0
    lengths = np.array([5, 9, 9])
    assert cluster_pairs(3, i, j, representative="longest", lengths=lengths).representative.tolist() == [1, 1, 1]
    prio = np.array([0.1, 0.2, 0.9])
    assert cluster_pairs(3, i, j, representative="priority", priority=prio).representative.tolist() == [2, 2, 2]
    # path 0-1-2-3: weighted degrees .9, 1.4, 1.45, .95 -> 2; unweighted 1,2,2,1 -> tie -> 1
    i4, j4, s4 = arr(0, 1, 2), arr(1, 2, 3), np.array([0.9, 0.5, 0.95])
    assert cluster_pairs(4, i4, j4, s4, representative="medoid").representative.tolist() == [2] * 4
    assert cluster_pairs(4, i4, j4, representative="medoid").representative.tolist() == [1] * 4


def test_representative_rules_star():
    # path 0-1-2-3-4
    i, j = arr(0, 1, 2, 3), arr(1, 2, 3, 4)
    c = cluster_pairs(5, i, j, policy="star", representative="longest", lengths=np.arange(1, 6))
    assert c.representative.tolist() == [0, 2, 2, 4, 4]  # 4 takes 3; then 2 takes 1; 0 alone
    assert c.cluster.tolist() == [0, 1, 1, 2, 2]
    c = cluster_pairs(5, i, j, policy="star", representative="medoid")
    assert c.representative.tolist() == [1, 1, 1, 3, 3]
    c = cluster_pairs(5, i, j, policy="star", representative="first")
    assert c.representative.tolist() == [0, 0, 2, 2, 4]


def test_giant_component_guard():
    i, j = star_graph()  # component of 10
    i = np.r_[i, 10, 11]
    j = np.r_[j, 11, 12]  # chain of 3
    c = cluster_pairs(13, i, j, policy="connected", max_component=5)
    assert np.flatnonzero(c.flagged_giant).tolist() == list(range(10))
    # giant: star rule (rep 0 removes only the centre); small chain: connected, chaining allowed
    assert np.flatnonzero(c.removed).tolist() == [3, 11, 12]
    assert np.flatnonzero(c.chained).tolist() == [12]
    assert c.cluster[3] == c.cluster[0] and c.cluster[1] != c.cluster[0]
    assert c.cluster[10] == c.cluster[12]
    assert not cluster_pairs(13, i, j, max_component=10).flagged_giant.any()


@pytest.mark.parametrize("kwargs, field", [
    (dict(i=arr(1), j=arr(1)), "i < j"),
    (dict(i=arr(0), j=arr(5)), "rows"),
    (dict(policy="transitive"), "policy"),
    (dict(representative="longest"), "lengths"),
    (dict(representative="priority", priority=np.ones(2)), "priority"),
    (dict(representative="bogus"), "representative"),
    (dict(max_component=0), "max_component"),
    (dict(sim=np.array([0.5, 0.5])), "sim"),
])
def test_validation(kwargs, field):
    args = dict(n=3, i=arr(0), j=arr(1))
    args.update(kwargs)
    n, i, j = args.pop("n"), args.pop("i"), args.pop("j")
    with pytest.raises(ValueError, match=field):
        cluster_pairs(n, i, j, **args)


# ------------------------------------------------------------- diagnostics

def test_diameter_of_path_of_five():
    i, j = arr(0, 1, 2, 3), arr(1, 2, 3, 4)
    sets = {k: {k, k + 1} for k in range(5)}
    d = chaining_diagnostics(cluster_pairs(5, i, j), i, j, None, jaccard_fn(sets))
    assert len(d) == 1 and d.loc[0, "diameter"] == 4 and d.loc[0, "size"] == 5


def test_chain_diagnostics_by_hand():
    # J(0,1) = 3/5, J(1,2) = 3/5, J(0,2) = 2/6; star 3-4-5 (centre 3)
    sets = {0: set("abcd"), 1: set("abce"), 2: set("abef"),
            3: set("abcd"), 4: set("abcx"), 5: set("abdy"), 6: set("abcdz"), 7: set("q")}
    # star centred on 3 with leaves 4,5,6: J(3,4)=J(3,5)=3/5, J(3,6)=4/5,
    # J(4,5)=2/6, J(4,6)=J(5,6)=3/6 -> weakest pair (4,5) not involving the rep
    i, j = arr(0, 1, 3, 3, 3), arr(1, 2, 4, 5, 6)
    sim = np.array([0.6, 0.6, 0.6, 0.6, 0.8])
    fn = jaccard_fn(sets)
    c = cluster_pairs(8, i, j, sim)
    d = chaining_diagnostics(c, i, j, sim, fn, threshold=0.5).set_index("cluster")
    assert fn.calls == 1 + 2  # one batched member/rep call, one pairwise call per cluster
    chain, star = d.loc[c.cluster[0]], d.loc[c.cluster[3]]
    assert chain["size"] == 3 and chain["representative"] == 0 and chain["diameter"] == 2
    assert chain["min_sim_to_rep"] == pytest.approx(1 / 3)
    assert (chain["weakest_a"], chain["weakest_b"]) == (0, 2)
    assert chain["weakest_sim"] == pytest.approx(1 / 3)
    assert chain["n_chained"] == 1 and chain["n_unverified"] == 1
    assert chain["min_edge_sim"] == pytest.approx(0.6)
    assert star["size"] == 4 and star["diameter"] == 2
    assert star["min_sim_to_rep"] == pytest.approx(0.6)
    assert (star["weakest_a"], star["weakest_b"]) == (4, 5)
    assert star["weakest_sim"] == pytest.approx(1 / 3)
    assert star["n_chained"] == 0
    assert chain["risk"] > star["risk"]
    assert d.index[0] == c.cluster[0]  # riskiest first
    assert c.cluster[7] not in d.index  # singletons are not reported


def test_diagnostics_pairwise_limit_and_empty():
    sets = {0: {1}, 1: {1, 2}, 2: {2}}
    i, j = arr(0, 1), arr(1, 2)
    d = chaining_diagnostics(cluster_pairs(3, i, j), i, j, None, jaccard_fn(sets), max_pairwise=2)
    assert d.loc[0, "weakest_a"] == -1 and np.isnan(d.loc[0, "weakest_sim"])
    assert d.loc[0, "n_chained"] == 1  # no threshold: unverified members
    e = chaining_diagnostics(cluster_pairs(3, arr(), arr()), arr(), arr(), None, jaccard_fn(sets))
    assert len(e) == 0 and "risk" in e.columns


def test_policy_summary_with_truth():
    sets = {0: set("abcd"), 1: set("abce"), 2: set("abef"), 3: set("x"), 4: set("x")}
    i, j = arr(0, 1, 3), arr(1, 2, 4)
    truth = {(1, 0): 1, (2, 0): 0, (4, 3): -1}
    tf = lambda a, b: np.array([truth[(x, y)] for x, y in zip(a, b)], dtype=np.int8)
    s = policy_summary(5, i, j, None, jaccard_fn(sets), 0.5, tf).set_index("policy")
    assert s.loc["connected", "removals"] == 3 and s.loc["star", "removals"] == 2
    assert s.loc["connected", "unverified"] == 1 and s.loc["star", "unverified"] == 0
    assert s.loc["connected", "below_threshold"] == 1 and s.loc["star", "below_threshold"] == 0
    assert s.loc["connected", "false_removals"] == 1 and s.loc["star", "false_removals"] == 0
    assert s.loc["connected", "unlabeled_removals"] == 1 and s.loc["connected", "labeled_removals"] == 2
    # the rate and its interval are the engine's own row's (calib.search.policies), never computed here
    assert "false_removal_rate" not in s.columns
    no_truth = policy_summary(5, i, j, None, jaccard_fn(sets), 0.5)
    assert no_truth["false_removals"].isna().all()


def test_largest_components_slice_shares():
    c = cluster_pairs(6, arr(0, 1, 4), arr(1, 2, 5))  # {0,1,2}, {3}, {4,5}
    slices = pd.DataFrame({"domain": ["a", "a", "b", "a", "b", None]})
    out = largest_components(c, slices, top=2)
    assert out["component"].tolist() == [0, 2] and out["size"].tolist() == [3, 2]
    assert out["n_removed"].tolist() == [2, 1]
    assert out["domain=a"].tolist() == pytest.approx([2 / 3, 0])
    assert out["domain=b"].tolist() == pytest.approx([0.5, 0.5])
    assert out["domain=<NA>"].tolist() == pytest.approx([0, 1])
    with pytest.raises(ValueError, match="slices"):
        largest_components(c, slices.iloc[:3])


# ------------------------------------------------------------- property test

def union_find_labels(n, pairs):
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    roots = [find(x) for x in range(n)]
    first = {}
    return np.array([first.setdefault(r, len(first)) for r in roots])


def star_reference(n, pairs, sim, rule, values, comp_rows):
    """The star policy as defined, one component at a time, scores recomputed each round."""
    w = {}
    for (a, b), x in zip(pairs, sim):
        w[(a, b)] = max(w.get((a, b), -1.0), x)
    nbrs = {r: {} for r in range(n)}
    for (a, b), x in w.items():
        nbrs[a][b] = x
        nbrs[b][a] = x
    rep = list(range(n))
    for comp in comp_rows:
        remaining = set(comp)
        while remaining:
            def key(r):
                if rule == "medoid":
                    return (sum(x for y, x in nbrs[r].items() if y in remaining), -r)
                return ((0 if rule == "first" else values[r]), -r)
            r = max(remaining, key=key)
            taken = {y for y in nbrs[r] if y in remaining} | {r}
            for y in taken:
                rep[y] = r
            remaining -= taken
    return np.array(rep)


@st.composite
def graphs(draw):
    n = draw(st.integers(1, 14))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
                          .filter(lambda p: p[0] != p[1]), max_size=25))
    pairs = [(min(p), max(p)) for p in pairs]
    rule = draw(st.sampled_from(["first", "longest", "priority", "medoid"]))
    values = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype=float)
    # dyadic similarities: incremental medoid sums are exact
    sim = np.array(draw(st.lists(st.sampled_from([0.25, 0.5, 0.75, 1.0]), min_size=len(pairs), max_size=len(pairs))))
    giant = draw(st.none() | st.integers(1, 6))
    return n, pairs, rule, values, sim, giant


@settings(max_examples=150, deadline=None)
@given(graphs())
def test_against_union_find(g):
    n, pairs, rule, values, sim, giant = g
    i = np.array([p[0] for p in pairs], dtype=np.int64)
    j = np.array([p[1] for p in pairs], dtype=np.int64)
    edges = set(pairs)
    ref = union_find_labels(n, pairs)
    kw = dict(representative=rule, lengths=values, priority=values)
    conn = cluster_pairs(n, i, j, sim, policy="connected", **kw)
    star = cluster_pairs(n, i, j, sim, policy="star", **kw)
    guarded = cluster_pairs(n, i, j, sim, policy="connected", max_component=giant, **kw)
    for c in (conn, star, guarded):
        assert np.array_equal(c.component, ref)
        rep = c.representative
        assert np.array_equal(rep[rep], rep)  # representatives are kept
        assert np.array_equal(c.removed, rep != np.arange(n))
        assert np.array_equal(c.component[rep], c.component)  # rep inside the component
        assert np.array_equal(c.cluster[rep], c.cluster)
        assert all(c.chained[d] == ((min(d, rep[d]), max(d, rep[d])) not in edges)
                   for d in np.flatnonzero(c.removed))
    # the same edges given already merged and in pair order (a join's output) cluster alike
    best = {}
    for p, w in zip(pairs, sim):
        best[p] = max(w, best.get(p, w))
    order = sorted(best)
    so = cluster_pairs(n, np.array([p[0] for p in order], dtype=np.int64),
                       np.array([p[1] for p in order], dtype=np.int64), np.array([best[p] for p in order]),
                       policy="connected", max_component=giant, **kw)
    for field in ("component", "cluster", "representative", "removed", "chained", "flagged_giant"):
        assert np.array_equal(getattr(so, field), getattr(guarded, field)), field
    # connected keeps exactly one per component
    assert np.array_equal(np.bincount(conn.component, conn.kept), np.ones(ref.max() + 1))
    assert np.array_equal(conn.cluster, conn.component)
    # star: every removed doc is a verified pair with its representative
    for d in np.flatnonzero(star.removed):
        assert (min(d, star.representative[d]), max(d, star.representative[d])) in edges
    assert not star.chained.any()
    comps = [np.flatnonzero(ref == c).tolist() for c in range(ref.max() + 1)]
    assert np.array_equal(star.representative, star_reference(n, pairs, sim, rule, values, comps))
    if giant is not None:
        big = np.bincount(ref)[ref] > giant
        assert np.array_equal(guarded.flagged_giant, big)
        assert not guarded.chained[big].any()
        assert np.array_equal(guarded.representative[big], star.representative[big])
        assert np.array_equal(guarded.representative[~big], conn.representative[~big])


@settings(max_examples=60, deadline=None)
@given(graphs(), st.booleans())
def test_diagnostics_against_brute_force(g, dense):
    import calib.clusters.chaining as cm
    n, pairs, rule, values, sim, giant = g
    i = np.array([p[0] for p in pairs], dtype=np.int64)
    j = np.array([p[1] for p in pairs], dtype=np.int64)
    c = cluster_pairs(n, i, j, sim, policy="connected")
    sim_fn = lambda a, b: np.sin(a * 7.0 + b * 3.0) + 1  # arbitrary, deterministic
    old = cm._DENSE_DIAMETER
    cm._DENSE_DIAMETER = 48 if dense else 0  # batched dense BFS vs scipy shortest_path
    try:
        d = chaining_diagnostics(c, i, j, sim, sim_fn)
    finally:
        cm._DENSE_DIAMETER = old
    edges = set(pairs)
    for row in d.itertuples():
        mem = c.members(row.cluster).tolist()
        dist = {(a, b): (0 if a == b else 1 if (min(a, b), max(a, b)) in edges else np.inf)
                for a in mem for b in mem}
        for m in mem:  # Floyd-Warshall
            for a in mem:
                for b in mem:
                    dist[a, b] = min(dist[a, b], dist[a, m] + dist[m, b])
        assert row.diameter == max(dist.values())
        all_pairs = [(a, b) for x, a in enumerate(mem) for b in mem[x + 1:]]
        best = min(all_pairs, key=lambda p: (sim_fn(np.array([p[0]]), np.array([p[1]]))[0], p))
        assert (row.weakest_a, row.weakest_b) == best
        others = [m for m in mem if m != row.representative]
        assert row.min_sim_to_rep == pytest.approx(min(sim_fn(np.array(others), np.full(len(others), row.representative))))


# ------------------------------------------------------------- the shipped sample

@pytest.mark.slow
def test_shipped_sample_shows_chaining(sample):
    """Under the recommended configuration (char 5-grams, 16x8, exact J >= 0.8) the shipped
    sample's edit families chain: removals without a verified pair with the representative,
    fewer removals under star, and the riskiest cluster (the one the Clusters page opens on)
    is a family with chained members, each truly its duplicate (same group)."""
    from calib.search.config import Config
    from calib.verification.jaccard import pairs_jaccard
    from calib.sketches.represent import Representation
    from calib.search.sweep import evaluate
    from calib.search.workspace import Workspace
    ws = Workspace(sample)
    config = Config(Representation(shingle="char", k=5), b=16, r=8, verify="exact", threshold=0.8)
    ev = evaluate(ws, config)
    sets = ws.sets(config.rep)
    sim = lambda a, b: pairs_jaccard(sets, np.asarray(a, np.int64), np.asarray(b, np.int64))  # noqa: E731
    v = ev.verified
    assert ev.clustering.n_chained > 0
    by = policy_summary(sample.n, v.i, v.j, v.exact, sim, 0.8, ws.truth.label).set_index("policy")
    assert by.loc["star", "removals"] < by.loc["connected", "removals"]
    assert by.loc["connected", "below_threshold"] == ev.clustering.n_chained
    top = chaining_diagnostics(ev.clustering, v.i, v.j, v.exact, sim, threshold=0.8).iloc[0]
    assert top["n_chained"] >= 2 and top["size"] >= 4
    members = ev.clustering.members(int(top["cluster"]))
    assert sample.docs["group"].iloc[members].nunique() == 1 and sample.docs["group"].iloc[members].notna().all()
