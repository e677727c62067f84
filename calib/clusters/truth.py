"""Ground truth from labels: which pairs of documents are duplicates.

Two sources, combined:

* explicit pair labels (``Sample.pairs``: i < j, is_duplicate);
* a ``group`` column: same group = duplicate, different groups = not a
  duplicate (every pair is then labeled), except for documents whose group
  is ``?`` (``samples.NOT_JUDGED``, code -1): nobody judged them, so their
  pairs are unlabeled unless a pair label says otherwise.

An explicit pair label wins over the group rule (the loaders refuse samples
where the two contradict). Without groups, a pair nobody labeled is
*unlabeled* (-1): metrics report it as such and never count it as right or
wrong.

A group of m documents holds m(m-1)/2 duplicate pairs (450M for m = 30,000):
the group pairs are counted first, and above ``MAX_GROUP_PAIRS`` a seeded
uniform sample of that many is kept (plus every explicitly labeled pair), so
rates over duplicate pairs become estimates on a uniform sample of them
(``Truth.sampled``, ``Truth.total_positive``) instead of an out-of-memory error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.sparse import csgraph

from calib.base.validate import pair_arrays
from calib.candidates.pairs import decode, pair_codes
from calib.reading.sample import Sample

DUPLICATE, NOT_DUPLICATE, UNLABELED = np.int8(1), np.int8(0), np.int8(-1)
MAX_GROUP_PAIRS = 5_000_000  # group pairs kept (a sample above it): ~0.5 GB of per-pair arrays in a sweep


@dataclass(frozen=True, eq=False)
class Truth:
    """Label oracle over row pairs of one sample."""

    n: int
    codes: np.ndarray    # int64, sorted: i * n + j of explicitly labeled pairs
    labels: np.ndarray   # int8 aligned with codes (1 duplicate, 0 not)
    groups: np.ndarray | None  # int64 group code per row (-1: not judged), or None
    pos_i: np.ndarray    # every duplicate pair (i < j), sorted; a uniform sample of them when `sampled`
    pos_j: np.ndarray
    total_positive: int = -1  # duplicate pairs in the sample (-1: len(pos_i))
    # sorted codes of labeled pairs whose category is ignored: unlabeled (-1) whatever their label or groups
    ignored: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    ignored_categories: tuple[str, ...] = ()

    @property
    def n_positive(self) -> int:
        """Duplicate pairs measured (those in pos_i / pos_j)."""
        return len(self.pos_i)

    @property
    def sampled(self) -> bool:
        """True when pos_i / pos_j are a uniform sample of the duplicate pairs (groups too large to list)."""
        return self.total_positive > len(self.pos_i)

    @property
    def complete(self) -> bool:
        """True when every pair has a label (group column present, every document judged)."""
        return self.groups is not None and not (self.groups < 0).any()

    def label(self, i, j) -> np.ndarray:
        """int8 per pair: 1 duplicate, 0 not duplicate, -1 unlabeled."""
        i, j = pair_arrays(i, j, self.n)
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        out = np.full(len(lo), UNLABELED, dtype=np.int8)
        if self.groups is not None:
            gl, gh = self.groups[lo], self.groups[hi]
            out[:] = np.where(gl == gh, DUPLICATE, NOT_DUPLICATE)
            out[(gl < 0) | (gh < 0)] = UNLABELED  # a document nobody judged
        if len(self.codes):
            code = pair_codes(lo, hi, self.n)
            pos = np.searchsorted(self.codes, code)
            pos_c = np.minimum(pos, len(self.codes) - 1)
            hit = self.codes[pos_c] == code
            out[hit] = self.labels[pos_c[hit]]
        if len(self.ignored):
            out[np.isin(pair_codes(lo, hi, self.n), self.ignored)] = UNLABELED
        out[lo == hi] = UNLABELED
        return out

    def clusters(self) -> np.ndarray:
        """True duplicate clusters: components of the duplicate-pair graph (int64[n])."""
        i, j = self.pos_i, self.pos_j
        if self.sampled:  # sampled pairs need not connect a group: join each member to its group's first
            si, sj = _group_star(self.groups)
            i, j = np.r_[i, si], np.r_[j, sj]
        g = sparse.coo_matrix((np.ones(len(i), dtype=np.int8), (i, j)), shape=(self.n, self.n))
        return csgraph.connected_components(g, directed=False)[1].astype(np.int64)


def largest_cluster_share(truth: Truth) -> tuple[float, int, int]:
    """(share of the duplicate pairs inside the largest true cluster by pairs,
    that cluster's documents, its pairs); (0.0, 0, 0) without duplicates. A
    cluster of m near-identical documents holds m(m-1)/2 pairs, so one large
    group can dominate every pair-weighted rate."""
    if not truth.n_positive:
        return 0.0, 0, 0
    comp = truth.clusters()
    pairs = np.bincount(comp[truth.pos_i], minlength=comp.max() + 1)
    top = int(pairs.argmax())
    share = float(pairs[top] / truth.n_positive)
    if truth.sampled:  # the sample's share estimates the whole's; a whole group's pairs are known
        size = int((comp == top).sum())
        return share, size, int(round(share * truth.total_positive))
    return share, int((comp == top).sum()), int(pairs[top])


def ignored_pair_codes(sample: Sample, categories: Iterable[str]) -> np.ndarray:
    """Sorted codes of the sample's labeled pairs whose category is one of
    ``categories``; a category no pair carries is a ValueError naming the ones there are."""
    categories = tuple(categories)
    p = sample.pairs
    cats = p["category"].astype(str).to_numpy(dtype=object)
    known = set(cats)
    unknown = [c for c in categories if c not in known]
    if unknown:
        raise ValueError(f"ignore categories: no labeled pair of sample {sample.name!r} has category "
                         f"{', '.join(map(repr, unknown))} (its categories: {', '.join(sorted(map(repr, known))) or 'none'})")
    m = np.isin(cats, list(categories)) if categories else np.zeros(len(p), bool)
    return np.unique(pair_codes(p["i"].to_numpy(np.int64)[m], p["j"].to_numpy(np.int64)[m], sample.n))


def truth_from_sample(sample: Sample, ignore_categories: Iterable[str] = ()) -> Truth:
    """The sample's labels; pairs of ``ignore_categories`` count neither as
    duplicates nor as non-duplicates (unlabeled), whatever their label."""
    n = sample.n
    p = sample.pairs
    ignored = ignored_pair_codes(sample, ignore_categories)
    i = p["i"].to_numpy(np.int64)
    j = p["j"].to_numpy(np.int64)
    lab = p["is_duplicate"].to_numpy(bool).astype(np.int8)
    codes = pair_codes(i, j, n)
    order = np.argsort(codes, kind="stable")
    codes, lab = codes[order], lab[order]
    keep = np.ones(len(codes), dtype=bool)
    keep[1:] = codes[1:] != codes[:-1]
    codes, lab = codes[keep], lab[keep]
    groups = sample.group_codes() if sample.has_groups else None
    pos = [codes[lab == 1]]
    total = -1
    if groups is not None:
        group_codes, group_total = _group_pair_codes(groups, n)
        pos.append(group_codes)
        if group_total > len(group_codes):  # sampled: every duplicate pair = the group pairs + explicit ones outside
            xi, xj = decode(codes[lab == 1], n)
            total = group_total + int(np.sum((groups[xi] != groups[xj]) | (groups[xi] < 0)))
    allpos = np.unique(np.concatenate(pos)) if pos else np.empty(0, np.int64)
    if len(codes):  # an explicit not-duplicate overrides the group rule
        neg = codes[lab == 0]
        allpos = allpos[~np.isin(allpos, neg)]
    if total > 0 and len(ignored):  # a sampled total counts the ignored duplicate pairs too: take them out
        total -= int(np.sum(lab[np.searchsorted(codes, ignored)] == 1))  # ignored pairs are labeled: in `codes`
    allpos = allpos[~np.isin(allpos, ignored)]
    pos_i, pos_j = decode(allpos, n)
    return Truth(n=n, codes=codes, labels=lab, groups=groups, pos_i=pos_i, pos_j=pos_j, total_positive=total,
                 ignored=ignored, ignored_categories=tuple(ignore_categories))


def _groups_sorted(groups: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows sorted by group, start of each group in it, its size); rows not judged (-1) left out."""
    order = np.argsort(groups, kind="stable")
    order = order[groups[order] >= 0]
    g = groups[order]
    if not len(g):
        return order, np.empty(0, np.int64), np.empty(0, np.int64)
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    return order, starts, np.diff(np.r_[starts, len(g)])


def _group_star(groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One edge from each document to the first of its group: the groups as connected graphs, in O(n)."""
    order, starts, sizes = _groups_sorted(groups)
    first = np.repeat(order[starts], sizes)
    keep = first != order
    return first[keep], order[keep]


def _group_pair_codes(groups: np.ndarray, n: int, max_pairs: int | None = None) -> tuple[np.ndarray, int]:
    """(codes i*n+j of the pairs inside each group, their number), counted before any
    is built: all of them when at most ``max_pairs``, else a seeded uniform sample
    of about ``max_pairs`` (default MAX_GROUP_PAIRS; distinct: a few repeats drawn are dropped)."""
    max_pairs = MAX_GROUP_PAIRS if max_pairs is None else max_pairs
    order, starts, sizes = _groups_sorted(groups)
    starts, sizes = starts[sizes > 1], sizes[sizes > 1]
    per_group = sizes * (sizes - 1) // 2
    total = int(per_group.sum())
    if total <= max_pairs:
        out = []
        for s, m in zip(starts, sizes):
            rows = np.sort(order[s:s + m])
            a, b = np.triu_indices(m, 1)
            out.append(pair_codes(rows[a], rows[b], n))
        return (np.concatenate(out) if out else np.empty(0, np.int64)), total
    rng = np.random.default_rng(0)
    g = rng.choice(len(sizes), size=max_pairs, p=per_group / total)  # a group in proportion to its pairs
    a = rng.integers(0, sizes[g])
    b = rng.integers(0, sizes[g] - 1)
    b = b + (b >= a)  # a second, different member
    x, y = order[starts[g] + a], order[starts[g] + b]
    return np.unique(pair_codes(np.minimum(x, y), np.maximum(x, y), n)), total


def label_names(sample: Sample, id_a, id_b) -> np.ndarray:
    """The sample's label of each pair of document ids as a pairs file spells it:
    "duplicate", "not_duplicate", or "" (unlabeled: a document nobody judged, or no
    label covers the pair). Used to label a drawn set with a labeled sample as the oracle."""
    rows = pd.Series(np.arange(sample.n), index=sample.docs["id"].astype(str))
    a = rows.reindex(pd.Index(id_a, dtype=str))
    b = rows.reindex(pd.Index(id_b, dtype=str))
    unknown = a.isna().to_numpy() | b.isna().to_numpy()
    if unknown.any():
        k = int(np.flatnonzero(unknown)[0])
        raise ValueError(f"pair {list(id_a)[k]!r}, {list(id_b)[k]!r}: document not in sample {sample.name!r}")
    lab = truth_from_sample(sample).label(a.to_numpy(np.int64), b.to_numpy(np.int64))
    return np.array(["not_duplicate", "duplicate", ""], dtype=object)[lab]  # label -1 picks ""
