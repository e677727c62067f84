"""Clusters of verified pairs and the removal policy.

The verified pairs (i < j, rows 0..n-1) form an undirected graph G. Its
connected components are the candidate duplicate clusters; a *policy* then
decides which documents are removed and which document each one is
removed in favour of (its *representative*):

* ``connected``: one representative per component, every other member is
  removed. Transitive: A~B and B~C removes C even when A and C differ
  (*chaining*).
* ``star`` (strict): within a component take the representative r of the
  remaining members, remove N(r) (its verified neighbours still remaining),
  drop r and N(r) from the remaining set, repeat. Every removed document is
  then a verified pair with its own representative.

A removed document is *chained* when (doc, representative) is not itself a
verified pair: only the transitive closure justifies its removal.

Representative rules (ties -> smallest row): ``first`` (smallest row),
``longest`` (max ``lengths``), ``priority`` (max ``priority``), ``medoid``
(max sum of verified-edge similarity to the other (remaining) members; edge
weight 1 when no similarity is given), ``random`` (max of a fixed uniform draw
per row, seed 0: an arbitrary member, as NeMo Curator keeps).

Union-find rules, the member that production tools keep (connected policy only;
the verified pairs are unioned in ascending (i, j) order, see :func:`union_roots`):
``union_size`` (datatrove: union by size, the larger set's root wins, ties the
root of the pair's first member, so a lone pair keeps the lower row) and
``union_rank`` (text-dedup 0.4.0: ``union(j, i)``, union by rank, ties attach
the second root under the first, so a lone pair keeps the higher row).

Giant guard: components with more than ``max_component`` members are
clustered with the star policy whatever the policy, and flagged.

How far chaining stretched each cluster is :mod:`calib.clusters.chaining`; the
two policies' removals and false-removal rates side by side are
:mod:`calib.estimates.policies`.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.sparse import csgraph

from calib.base.named import Named
from calib.candidates.pairs import pair_codes, unordered_codes



class Policy(Named):
    """How a component of verified pairs becomes removals (module docstring)."""

    CONNECTED = "connected"
    STAR = "star"


class Representative(Named):
    """Which member a cluster keeps (module docstring)."""

    FIRST = "first"
    LONGEST = "longest"
    PRIORITY = "priority"
    MEDOID = "medoid"
    RANDOM = "random"
    UNION_SIZE = "union_size"  # datatrove
    UNION_RANK = "union_rank"  # text-dedup 0.4.0

    @property
    def is_union(self) -> bool:
        """A union-find rule: the root production tools keep (connected policy only)."""
        return self in (Representative.UNION_SIZE, Representative.UNION_RANK)


Policy.what = "policy"
Representative.what = "representative"
POLICIES = Policy.names()
REPRESENTATIVE_RULES = Representative.names()

SimFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True, eq=False)
class Clustering:
    """Result of :func:`cluster_pairs`; every array has one entry per row 0..n-1.

    component:       connected component id in G, numbered 0.. by smallest member.
    cluster:         cluster id after the policy, numbered 0.. by smallest member
                     (equals ``component`` under the connected policy).
    representative:  row kept for this row's cluster (a kept row points to itself).
    removed:         row is proposed for removal (representative != row).
    chained:         removed, and (row, representative) is not a verified pair.
    flagged_giant:   row's component has more than ``max_component`` members.
    """

    component: np.ndarray
    cluster: np.ndarray
    representative: np.ndarray
    removed: np.ndarray
    chained: np.ndarray
    flagged_giant: np.ndarray
    policy: str
    representative_rule: str
    max_component: int | None = None

    @property
    def n(self) -> int:
        return len(self.component)

    @property
    def kept(self) -> np.ndarray:
        """bool[n]: the row survives deduplication."""
        return ~self.removed

    @property
    def n_removed(self) -> int:
        return int(self.removed.sum())

    @property
    def n_kept(self) -> int:
        return self.n - self.n_removed

    @property
    def n_chained(self) -> int:
        return int(self.chained.sum())

    @property
    def n_components(self) -> int:
        return int(self.component.max(initial=-1) + 1)

    @property
    def n_clusters(self) -> int:
        return int(self.cluster.max(initial=-1) + 1)

    def component_sizes(self) -> np.ndarray:
        """int64[n_components]: members per component."""
        return np.bincount(self.component, minlength=self.n_components).astype(np.int64)

    def cluster_sizes(self) -> np.ndarray:
        """int64[n_clusters]: members per cluster."""
        return np.bincount(self.cluster, minlength=self.n_clusters).astype(np.int64)

    def members(self, cluster: int) -> np.ndarray:
        """Rows of one cluster, ascending."""
        return np.flatnonzero(self.cluster == cluster)

    def to_frame(self) -> pd.DataFrame:
        """One row per document with every per-row array as a column."""
        return pd.DataFrame({
            "component": self.component, "cluster": self.cluster,
            "representative": self.representative, "removed": self.removed,
            "chained": self.chained, "flagged_giant": self.flagged_giant,
        })


# ---------------------------------------------------------------- validation

def verified_edges(n: int, i, j, sim) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated, de-duplicated edges (i < j) in pair order, with weights (max sim per pair; 1 if sim is None)."""
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    i = np.asarray(i)
    j = np.asarray(j)
    if i.ndim != 1 or j.ndim != 1 or len(i) != len(j):
        raise ValueError(f"i and j must be 1-d arrays of equal length, got shapes {i.shape} and {j.shape}")
    if len(i) and (not np.issubdtype(i.dtype, np.integer) or not np.issubdtype(j.dtype, np.integer)):
        raise ValueError(f"i and j must be integer arrays, got {i.dtype} and {j.dtype}")
    i = i.astype(np.int64)
    j = j.astype(np.int64)
    if len(i):
        if i.min() < 0 or j.max() >= n:
            raise ValueError(f"i and j must be rows in 0..{n - 1}")
        if np.any(i >= j):
            k = int(np.flatnonzero(i >= j)[0])
            raise ValueError(f"pairs must have i < j: pair {k} is ({i[k]}, {j[k]})")
    if sim is None:
        w = np.ones(len(i))
    else:
        w = np.asarray(sim, dtype=np.float64)
        if w.shape != i.shape:
            raise ValueError(f"sim must have one value per pair: {w.shape} vs {i.shape}")
        if not np.all(np.isfinite(w)):
            raise ValueError("sim must be finite")
    if len(i) == 0:
        return i, j, w
    key = pair_codes(i, j, n)
    if np.all(key[1:] > key[:-1]):  # already sorted and distinct (a join's or a draw's pairs): nothing to merge
        return i, j, w
    order = np.lexsort((-w, key))  # by pair, highest sim first
    key, i, j, w = key[order], i[order], j[order], w[order]
    first = np.r_[True, key[1:] != key[:-1]]
    return i[first], j[first], w[first]


def _has_pair(codes: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``np.isin(query, codes)`` for ``codes`` sorted and distinct (:func:`verified_edges`' order), by binary search."""
    if not len(codes):
        return np.zeros(len(query), dtype=bool)
    at = np.minimum(np.searchsorted(codes, query), len(codes) - 1)
    return codes[at] == query


def _row_array(name: str, values, n: int) -> np.ndarray:
    if values is None:
        raise ValueError(f"{name} is required for this representative rule")
    a = np.asarray(values, dtype=np.float64)
    if a.shape != (n,):
        raise ValueError(f"{name} must have one value per document ({n}), got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite")
    return a


# ------------------------------------------------------------------- helpers

def _relabel_by_first(labels: np.ndarray) -> np.ndarray:
    """Renumber labels 0.. in order of each label's smallest row."""
    if len(labels) == 0:
        return labels.astype(np.int64)
    _, first, inv = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    return rank[inv.ravel()]



def _components(n: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    g = sparse.coo_matrix((np.ones(len(i), dtype=np.int8), (i, j)), shape=(n, n)).tocsr()
    _, labels = csgraph.connected_components(g, directed=False)
    return _relabel_by_first(labels.astype(np.int64))


def _weighted_degree(n: int, i, j, w) -> np.ndarray:
    return np.bincount(i, w, minlength=n) + np.bincount(j, w, minlength=n)


def _adjacency(n: int, i: np.ndarray, j: np.ndarray, w: np.ndarray):
    """Symmetric CSR arrays (indptr, indices, data) of the verified graph."""
    src, dst, ww = np.r_[i, j], np.r_[j, i], np.r_[w, w]
    order = np.argsort(src, kind="stable")
    indptr = np.r_[0, np.cumsum(np.bincount(src, minlength=n))].astype(np.int64)
    return indptr, dst[order], ww[order]


def _ranges(indptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Concatenated positions indptr[r]:indptr[r+1] for every r in rows."""
    starts, lens = indptr[rows], indptr[rows + 1] - indptr[rows]
    return np.arange(lens.sum()) - np.repeat(np.cumsum(lens) - lens, lens) + np.repeat(starts, lens)


def _star(n: int, i, j, w, score: np.ndarray, medoid: bool, active: np.ndarray) -> np.ndarray:
    """Star policy on the rows in ``active`` (whole components); representative per row.

    Greedy: take the best remaining row r (max score, ties -> smallest row),
    r represents itself and its remaining neighbours, all leave; repeat.
    Components do not interact, so one global pass equals the per-component
    procedure. For the medoid, a row's score is its similarity sum to the
    remaining rows, kept up to date incrementally (lazy max-heap).
    """
    indptr, indices, data = _adjacency(n, i, j, w)
    rep = np.arange(n, dtype=np.int64)
    rem = active.copy()

    def take(r):
        nb = indices[indptr[r]:indptr[r + 1]]
        nb = nb[rem[nb]]
        rep[nb] = r
        rem[nb] = False
        rem[r] = False
        return nb

    rows = np.flatnonzero(active)
    if not medoid:
        for r in rows[np.lexsort((rows, -score[rows]))].tolist():
            if rem[r]:
                take(r)
        return rep
    cur = score.copy()
    heap = list(zip((-cur[rows]).tolist(), rows.tolist()))
    heapq.heapify(heap)
    while heap:
        neg, r = heapq.heappop(heap)
        if not rem[r]:
            continue
        if -neg != cur[r]:  # stale: re-queue with the current score
            heapq.heappush(heap, (-float(cur[r]), r))
            continue
        gone = np.r_[r, take(r)]
        pos = _ranges(indptr, gone)
        np.subtract.at(cur, indices[pos], data[pos])
    return rep


def union_roots(n: int, a, b, by: str) -> np.ndarray:
    """Root of every row after ``union(a[k], b[k])`` for k in order (int64[n]).

    ``by="size"`` is datatrove's MinhashDedupCluster (src/datatrove/pipeline/
    dedup/minhash.py, 0.10.1): ra, rb = find(a), find(b); if size(ra) < size(rb)
    swap; rb joins ra. ``by="rank"`` is text-dedup 0.4.0's UnionFind
    (text_dedup/utils/union_find.py): equal ranks -> find(b) joins find(a) and
    find(a)'s rank grows; otherwise the lower rank joins the higher. The root
    depends on the order of the unions; path compression does not change it.
    A Python loop over pairs (not shingles): pairs are few next to documents.
    """
    if by not in ("size", "rank"):
        raise ValueError(f"by must be 'size' or 'rank', got {by!r}")
    parent = list(range(n))
    weight = [1 if by == "size" else 0] * n

    def find(x: int) -> int:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    for x, y in zip(np.asarray(a, np.int64).tolist(), np.asarray(b, np.int64).tolist()):
        rx, ry = find(x), find(y)
        if rx == ry:
            continue
        if by == "size":
            if weight[rx] < weight[ry]:
                rx, ry = ry, rx
            parent[ry] = rx
            weight[rx] += weight[ry]
        elif weight[rx] >= weight[ry]:
            parent[ry] = rx
            weight[rx] += weight[rx] == weight[ry]
        else:
            parent[rx] = ry
    return np.fromiter((find(x) for x in range(n)), dtype=np.int64, count=n)


# --------------------------------------------------------------- clustering

def cluster_pairs(n: int, i, j, sim=None, *, policy: Policy | str = Policy.CONNECTED,
                  representative: Representative | str = Representative.FIRST, lengths=None, priority=None,
                  max_component: int | None = None) -> Clustering:
    """Cluster rows 0..n-1 from verified pairs (i < j) under a removal policy.

    See the module docstring for the policies and representative rules.
    """
    policy = Policy.parse(policy)
    representative = Representative.parse(representative)
    if max_component is not None and (not isinstance(max_component, (int, np.integer)) or max_component < 1):
        raise ValueError(f"max_component must be a positive integer or None, got {max_component!r}")
    if representative.is_union and policy is not Policy.CONNECTED:
        raise ValueError(f"representative rule {representative!r} is a union-find rule: it needs the connected policy")
    i, j, w = verified_edges(n, i, j, sim)

    if representative is Representative.FIRST or representative.is_union:
        score = np.zeros(n)
    elif representative is Representative.RANDOM:
        score = np.random.default_rng(0).random(n)
    elif representative is Representative.LONGEST:
        score = _row_array("lengths", lengths, n)
    elif representative is Representative.PRIORITY:
        score = _row_array("priority", priority, n)
    else:
        score = _weighted_degree(n, i, j, w)  # all edges of a row lie in its component

    rows = np.arange(n, dtype=np.int64)
    component = _components(n, i, j)
    k = int(component.max(initial=-1) + 1)
    sizes = np.bincount(component, minlength=k)
    giant_comp = sizes > max_component if max_component is not None else np.zeros(k, dtype=bool)
    flagged = giant_comp[component]

    rep = rows.copy()
    # connected policy: best score per component, ties -> smallest row (vectorized)
    if policy is Policy.CONNECTED and n:
        order = np.lexsort((rows, -score, component))
        head = order[np.r_[True, component[order][1:] != component[order][:-1]]]
        rep_of_comp = np.empty(k, dtype=np.int64)
        rep_of_comp[component[head]] = head
        rep = rep_of_comp[component]
        if representative is Representative.UNION_SIZE:
            rep = union_roots(n, i, j, "size")
        elif representative is Representative.UNION_RANK:
            rep = union_roots(n, j, i, "rank")  # text-dedup calls union(x, min(bucket))

    star_comp = (sizes >= 2) & (giant_comp if policy is Policy.CONNECTED else True)
    if star_comp.any():
        star_rep = _star(n, i, j, w, score, representative is Representative.MEDOID, star_comp[component])
        rep = np.where(star_comp[component], star_rep, rep)

    removed = rep != rows
    chained = removed.copy()  # a removed row without a verified pair to its representative (looked up for those alone)
    chained[removed] = ~_has_pair(pair_codes(i, j, n), unordered_codes(rows[removed], rep[removed], n))
    cluster = _relabel_by_first(rep) if policy is Policy.STAR or giant_comp.any() else component
    return Clustering(component=component, cluster=cluster, representative=rep,
                      removed=removed, chained=chained, flagged_giant=flagged,
                      policy=policy, representative_rule=representative,
                      max_component=max_component)


def largest_components(clustering: Clustering, slices: pd.DataFrame | None = None,
                       top: int = 10) -> pd.DataFrame:
    """The ``top`` largest components (ties -> smaller id), with ``size``,
    ``first`` (smallest row), ``n_removed``, ``flagged_giant``, and, for each
    slice column ``col`` and value ``v`` present in these components, a
    column ``"col=v"`` = share of all documents with col == v that the
    component contains (missing values count as the value "<NA>")."""
    if top < 1:
        raise ValueError(f"top must be >= 1, got {top}")
    comp = clustering.component
    n = clustering.n
    k = clustering.n_components
    sizes = np.bincount(comp, minlength=k)
    ids = np.lexsort((np.arange(k), -sizes))[:top]
    first = np.full(k, n, dtype=np.int64)
    np.minimum.at(first, comp, np.arange(n))
    out = pd.DataFrame({
        "component": ids.astype(np.int64), "size": sizes[ids].astype(np.int64),
        "first": first[ids],
        "n_removed": np.bincount(comp, clustering.removed, minlength=k)[ids].astype(np.int64),
        "flagged_giant": np.bincount(comp, clustering.flagged_giant, minlength=k)[ids] > 0,
    })
    if slices is None:
        return out
    if len(slices) != n:
        raise ValueError(f"slices must have one row per document ({n}), got {len(slices)}")
    in_top = np.isin(comp, ids)
    for col in slices.columns:
        values = slices[col].astype(object).where(slices[col].notna(), "<NA>").astype(str).to_numpy()
        codes, uniq = pd.factorize(values)
        totals = np.bincount(codes, minlength=len(uniq))
        present = np.unique(codes[in_top])
        for v in present:
            counts = np.bincount(comp[codes == v], minlength=k)[ids]
            out[f"{col}={uniq[v]}"] = counts / totals[v]
    return out
