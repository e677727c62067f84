"""Ground truth from labels: which pairs of documents are duplicates.

Two sources, combined:

* explicit pair labels (``Sample.pairs``: i < j, is_duplicate);
* a ``group`` column: same group = duplicate, different groups = not a
  duplicate (every pair is then labeled).

An explicit pair label wins over the group rule (the loaders refuse samples
where the two contradict). Without groups, a pair nobody labeled is
*unlabeled* (-1): metrics report it as such and never count it as right or
wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from ._validate import pair_arrays
from .pairs import decode, pair_codes
from .samples import Sample

DUPLICATE, NOT_DUPLICATE, UNLABELED = np.int8(1), np.int8(0), np.int8(-1)


@dataclass(frozen=True, eq=False)
class Truth:
    """Label oracle over row pairs of one sample."""

    n: int
    codes: np.ndarray    # int64, sorted: i * n + j of explicitly labeled pairs
    labels: np.ndarray   # int8 aligned with codes (1 duplicate, 0 not)
    groups: np.ndarray | None  # int64 group code per row, or None
    pos_i: np.ndarray    # every duplicate pair (i < j), sorted
    pos_j: np.ndarray
    # sorted codes of labeled pairs whose category is ignored: unlabeled (-1) whatever their label or groups
    ignored: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    ignored_categories: tuple[str, ...] = ()

    @property
    def n_positive(self) -> int:
        return len(self.pos_i)

    @property
    def complete(self) -> bool:
        """True when every pair has a label (group column present)."""
        return self.groups is not None

    def label(self, i, j) -> np.ndarray:
        """int8 per pair: 1 duplicate, 0 not duplicate, -1 unlabeled."""
        i, j = pair_arrays(i, j, self.n)
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        out = np.full(len(lo), UNLABELED, dtype=np.int8)
        if self.groups is not None:
            out[:] = np.where(self.groups[lo] == self.groups[hi], DUPLICATE, NOT_DUPLICATE)
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
        g = sparse.coo_matrix((np.ones(self.n_positive, dtype=np.int8), (self.pos_i, self.pos_j)),
                              shape=(self.n, self.n))
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
    return float(pairs[top] / truth.n_positive), int((comp == top).sum()), int(pairs[top])


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
    if groups is not None:
        pos.append(_group_pair_codes(groups, n))
    allpos = np.unique(np.concatenate(pos)) if pos else np.empty(0, np.int64)
    if len(codes):  # an explicit not-duplicate overrides the group rule
        neg = codes[lab == 0]
        allpos = allpos[~np.isin(allpos, neg)]
    allpos = allpos[~np.isin(allpos, ignored)]
    pos_i, pos_j = decode(allpos, n)
    return Truth(n=n, codes=codes, labels=lab, groups=groups, pos_i=pos_i, pos_j=pos_j, ignored=ignored,
                 ignored_categories=tuple(ignore_categories))


def _group_pair_codes(groups: np.ndarray, n: int) -> np.ndarray:
    """Codes i*n+j of all pairs inside each group (groups of size >= 2)."""
    order = np.argsort(groups, kind="stable")
    g = groups[order]
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    sizes = np.diff(np.r_[starts, len(g)])
    out = []
    for s, m in zip(starts[sizes > 1], sizes[sizes > 1]):
        rows = np.sort(order[s:s + m])
        a, b = np.triu_indices(m, 1)
        out.append(pair_codes(rows[a], rows[b], n))
    return np.concatenate(out) if out else np.empty(0, np.int64)
