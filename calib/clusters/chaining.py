"""Chaining diagnostics: how far the transitive closure stretched each cluster.

Per cluster of two or more members (:func:`chaining_diagnostics`): the
diameter of its verified subgraph (the longest unweighted shortest path), the
weakest verified edge inside it, every member's similarity to the kept
representative and the least similar pair of members (``sim_fn``, the exact
measure), how many removals no verified pair with the representative
justifies, and a risk score (chained members plus the weakest link scaled by
log2 of the size) that orders the clusters worth a look first.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.sparse import csgraph

from calib.clusters.clustering import Clustering, SimFn, verified_edges

DIAGNOSTIC_COLUMNS = ("cluster", "size", "representative", "diameter", "min_edge_sim",
                      "min_sim_to_rep", "weakest_a", "weakest_b", "weakest_sim",
                      "n_unverified", "n_chained", "risk")


def _groups(labels: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(order, starts): rows of group g are order[starts[g]:starts[g+1]], ascending."""
    order = np.argsort(labels, kind="stable")
    starts = np.r_[0, np.cumsum(np.bincount(labels, minlength=k))].astype(np.int64)
    return order, starts


def call_sim_fn(sim_fn: SimFn, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``sim_fn(a, b)`` as float64, checked to give one similarity per pair."""
    out = np.asarray(sim_fn(a, b), dtype=np.float64)
    if out.shape != a.shape:
        raise ValueError(f"sim_fn returned shape {out.shape} for {a.shape} pairs")
    return out


_DENSE_DIAMETER = 48  # clusters up to this size: batched dense BFS
_BLOCK = 1 << 21      # cells per dense block / pairs per sim_fn call


def _dense_diameters(k: int, s: int, t: np.ndarray, li: np.ndarray, lj: np.ndarray) -> np.ndarray:
    """Diameters of k graphs of s nodes at once (edge e joins li[e]-lj[e] in graph t[e]):
    the number of BFS expansion steps of the reach relation that still add a pair."""
    adj = np.zeros((k, s, s), dtype=np.float32)
    adj[t, li, lj] = 1
    adj[t, lj, li] = 1
    adj[:, np.arange(s), np.arange(s)] = 1
    reach = adj > 0
    diam = (reach.sum(axis=(1, 2)) > s).astype(np.float64)  # 1 if any edge
    while True:
        nxt = (reach.astype(np.float32) @ adj) > 0
        changed = (nxt != reach).any(axis=(1, 2))
        if not changed.any():
            return diam
        diam += changed
        reach = nxt


def _diameter(s: int, li: np.ndarray, lj: np.ndarray, chunk: int = 256) -> float:
    """Longest finite unweighted shortest path among s nodes (BFS from chunks of sources)."""
    g = sparse.csr_matrix((np.ones(len(li)), (li, lj)), shape=(s, s))
    best = np.nan
    for lo in range(0, s, chunk):
        d = csgraph.shortest_path(g, directed=False, unweighted=True, indices=np.arange(lo, min(s, lo + chunk)))
        finite = d[np.isfinite(d)]
        if len(finite):
            best = np.fmax(best, finite.max())
    return float(best)


def chaining_diagnostics(clustering: Clustering, i, j, sim, sim_fn: SimFn, *,
                         threshold: float | None = None, max_pairwise: int = 200,
                         max_diameter: int = 5000) -> pd.DataFrame:
    """One row per cluster of >= 2 members, riskiest first.

    diameter:        max over member pairs of the unweighted shortest-path
                     length in the cluster's verified subgraph (NaN above
                     ``max_diameter`` members).
    min_edge_sim:    weakest verified similarity inside the cluster (``sim``; NaN if None).
    min_sim_to_rep:  min over members m != rep of sim_fn(m, rep).
    weakest_a/b/sim: argmin of sim_fn over ALL member pairs (clusters of at
                     most ``max_pairwise`` members; -1/-1/NaN beyond).
    n_unverified:    removed members not a verified pair with the rep.
    n_chained:       members with sim_fn(m, rep) < threshold; equals
                     n_unverified when no threshold is given.
    risk:            n_chained + (1 - min_sim_to_rep) * log2(size): every
                     chained member counts one, plus the weakest link scaled
                     by how many documents hang on the cluster.

    sim_fn is called once for all (member, rep) pairs, then once per block of
    equal-size clusters (at most ~2M pairs a call) for the all-pairs minimum.
    """
    n = clustering.n
    i, j, w = verified_edges(n, i, j, sim)
    cl = clustering.cluster
    k = clustering.n_clusters
    sizes = np.bincount(cl, minlength=k)
    multi = np.flatnonzero(sizes >= 2)
    if len(multi) == 0:
        return pd.DataFrame({c: pd.Series(dtype="float64" if c in ("diameter", "min_edge_sim", "min_sim_to_rep",
                                                                    "weakest_sim", "risk") else "int64")
                             for c in DIAGNOSTIC_COLUMNS})
    rep = clustering.representative

    # one batched sim_fn call: every non-representative member of a multi-member cluster vs its rep
    others = np.flatnonzero((sizes[cl] >= 2) & (rep != np.arange(n)))
    s_rep = call_sim_fn(sim_fn, others, rep[others])
    min_to_rep = np.full(k, np.inf)
    np.minimum.at(min_to_rep, cl[others], s_rep)
    below = np.zeros(k, dtype=np.int64)
    if threshold is not None:
        below = np.bincount(cl[others], s_rep < threshold, minlength=k).astype(np.int64)
    unverified = np.bincount(cl, clustering.chained, minlength=k).astype(np.int64)

    inside = cl[i] == cl[j]
    ei, ej, ew = i[inside], j[inside], w[inside]
    min_edge = np.full(k, np.inf)
    np.minimum.at(min_edge, cl[ei], ew)
    node_order, node_starts = _groups(cl, k)
    edge_order, edge_starts = _groups(cl[ei], k)

    diam = np.full(len(multi), np.nan)
    wa = np.full(len(multi), -1, dtype=np.int64)
    wb = np.full(len(multi), -1, dtype=np.int64)
    ws = np.full(len(multi), np.nan)
    msize = sizes[multi]
    pos = np.empty(n, dtype=np.int64)  # row's position inside its cluster
    pos[node_order] = np.arange(n) - node_starts[cl[node_order]]
    slot = np.full(k, -1, dtype=np.int64)
    ecl = cl[ei]
    for s in np.unique(msize).tolist():  # clusters of equal size are processed together
        ts = np.flatnonzero(msize == s)
        cs = multi[ts]
        if s <= max_diameter and s <= _DENSE_DIAMETER:
            step = max(1, _BLOCK // (s * s))
            for lo in range(0, len(cs), step):
                blk = cs[lo:lo + step]
                slot[blk] = np.arange(len(blk))
                e = np.flatnonzero(slot[ecl] >= 0)
                diam[ts[lo:lo + step]] = _dense_diameters(len(blk), s, slot[ecl[e]], pos[ei[e]], pos[ej[e]])
                slot[blk] = -1
        elif s <= max_diameter:
            for t, c in zip(ts.tolist(), cs.tolist()):
                e = edge_order[edge_starts[c]:edge_starts[c + 1]]
                diam[t] = _diameter(s, pos[ei[e]], pos[ej[e]])
        if s <= max_pairwise:
            a, b = np.triu_indices(s, k=1)
            step = max(1, _BLOCK // len(a))
            for lo in range(0, len(cs), step):
                mem = node_order[node_starts[cs[lo:lo + step], None] + np.arange(s)]  # ascending rows
                pa, pb = mem[:, a], mem[:, b]
                ps = call_sim_fn(sim_fn, pa.ravel(), pb.ravel()).reshape(pa.shape)
                m = np.argmin(ps, axis=1)
                r = np.arange(len(mem))
                out_rows = ts[lo:lo + step]
                wa[out_rows], wb[out_rows], ws[out_rows] = pa[r, m], pb[r, m], ps[r, m]

    min_rep = min_to_rep[multi]
    n_chained = below[multi] if threshold is not None else unverified[multi]
    weak = np.where(np.isfinite(min_rep), 1.0 - min_rep, 1.0)
    out = pd.DataFrame({
        "cluster": multi.astype(np.int64),
        "size": sizes[multi].astype(np.int64),
        "representative": rep[node_order[node_starts[multi]]],
        "diameter": diam,
        "min_edge_sim": np.where(np.isfinite(min_edge[multi]), min_edge[multi], np.nan) if sim is not None
        else np.full(len(multi), np.nan),
        "min_sim_to_rep": min_rep,
        "weakest_a": wa, "weakest_b": wb, "weakest_sim": ws,
        "n_unverified": unverified[multi],
        "n_chained": n_chained,
        "risk": n_chained + weak * np.log2(sizes[multi]),
    })
    return out.sort_values(["risk", "size", "cluster"], ascending=[False, False, True],
                           kind="stable").reset_index(drop=True)
