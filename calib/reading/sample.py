"""The labeled sample: the typed :class:`Sample` every engine step takes.

A Sample is documents (row number = the document's index everywhere in the
engine), explicit pair labels and the exclusions of loading; this module holds
the type, :func:`from_frames` (a Sample from in-memory frames) and the counts
shown for one (:func:`summary`). Reading one from files is
:func:`calib.reading.samples.load_sample`; the shipped sample's builder is
:mod:`calib.shipped.sample`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

PAIR_COLUMNS = ("i", "j", "is_duplicate", "category")
EXCLUSION_COLUMNS = ("file", "line", "id", "reason")
UNLABELED = "missing label"  # the exclusion reason of a pair whose label is empty (not labeled yet)
REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DIR = REPO_ROOT / "data" / "sample"  # the shipped sample (built by calib.shipped.sample)
# The group value of a document nobody has judged: its pairs are unlabeled (neither duplicate nor not),
# unlike a missing group, which says "no duplicate in the sample" (a singleton group).
NOT_JUDGED = "?"


@dataclass(frozen=True, eq=False)
class Sample:
    """A labeled sample of documents.

    docs:        RangeIndex 0..n-1 (the row number is the document's index
                 everywhere in the engine); columns ``id`` (str, unique),
                 ``text`` (str), optional ``group`` (str or NA: same group =
                 duplicates; NA = a singleton group; NOT_JUDGED ``?`` = not
                 judged, its pairs unlabeled), and slice columns
                 (``domain``, ``language``, ``source``... as str).
    pairs:       explicit pair labels: ``i`` < ``j`` (int64 row numbers),
                 ``is_duplicate`` (bool), ``category`` (str, "" when none).
                 May be empty.
    exclusions:  everything left out while loading, one row each, with
                 ``file``, ``line``, ``id``, ``reason``: nothing is dropped
                 silently.
    """

    docs: pd.DataFrame
    pairs: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        {"i": pd.Series(dtype="int64"), "j": pd.Series(dtype="int64"),
         "is_duplicate": pd.Series(dtype="bool"), "category": pd.Series(dtype="str")}))
    exclusions: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(EXCLUSION_COLUMNS)))
    name: str = "sample"
    slice_columns: tuple[str, ...] = ()
    design: object = None  # calib.reading.design.Design of a drawn set (design.json): labels from a stratified draw

    @property
    def n(self) -> int:
        return len(self.docs)

    @property
    def ids(self) -> np.ndarray:
        return self.docs["id"].to_numpy(dtype=object)

    @property
    def texts(self) -> list[str]:
        return self.docs["text"].tolist()

    @property
    def has_groups(self) -> bool:
        return "group" in self.docs.columns

    def not_judged(self) -> np.ndarray:
        """bool per document: its group is NOT_JUDGED (all False without a group column)."""
        if not self.has_groups:
            return np.zeros(self.n, dtype=bool)
        return (self.docs["group"] == NOT_JUDGED).fillna(False).to_numpy(bool)

    def named_groups(self) -> pd.Series:
        """The group column without missing and NOT_JUDGED values (what counts as a group)."""
        g = self.docs["group"].dropna()
        return g[g != NOT_JUDGED]

    def group_codes(self) -> np.ndarray:
        """int64 group code per document; NA groups get unique codes (singletons);
        NOT_JUDGED documents get -1 (no group: their pairs are unlabeled)."""
        unjudged = self.not_judged()
        codes, _ = pd.factorize(self.docs["group"].where(~unjudged), use_na_sentinel=True)
        codes = codes.astype(np.int64)
        missing = (codes < 0) & ~unjudged
        codes[missing] = codes.max(initial=-1) + 1 + np.arange(int(missing.sum()))
        codes[unjudged] = -1
        return codes

    @property
    def warnings(self) -> tuple[str, ...]:
        """Things about the sample worth a look before trusting its metrics:
        one group holding more than half of the documents (most often a
        missing-value spelling such as ``NA`` read as a group name, which
        turns the whole sample into "duplicates")."""
        out = []
        if self.has_groups and self.n:
            sizes = self.named_groups().value_counts()
            if len(sizes) and sizes.iloc[0] * 2 > self.n:
                out.append(f"group {sizes.index[0]!r} holds {int(sizes.iloc[0]):,} of {self.n:,} documents "
                           f"({sizes.iloc[0] / self.n:.0%}): every pair inside it counts as a duplicate "
                           f"({int(sizes.iloc[0]) * (int(sizes.iloc[0]) - 1) // 2:,} pairs); if it stands for a "
                           "missing value, load with it among the missing values")
        return tuple(out)

    def content_hash(self) -> str:
        """sha256 over ids, texts, groups and pair labels (order-sensitive)."""
        h = hashlib.sha256()
        for col in ("id", "text"):
            for v in self.docs[col]:
                b = str(v).encode("utf-8", "surrogatepass")
                h.update(len(b).to_bytes(8, "little"))
                h.update(b)
        if self.has_groups:
            h.update(self.group_codes().tobytes())
        p = self.pairs
        if len(p):
            h.update(p["i"].to_numpy(np.int64).tobytes())
            h.update(p["j"].to_numpy(np.int64).tobytes())
            h.update(p["is_duplicate"].to_numpy(bool).tobytes())
        return h.hexdigest()

    def unlabeled_pairs(self) -> int:
        """Pairs of the pair file whose label is still empty (a drawn set not labeled yet): read, kept
        out of the labels, not excluded for a fault."""
        e = self.exclusions
        return int((e["reason"] == UNLABELED).sum()) if len(e) else 0

    def __str__(self) -> str:
        npos = int(self.pairs["is_duplicate"].sum()) if len(self.pairs) else 0
        slices = ", ".join(self.slice_columns) or "none"
        waiting = self.unlabeled_pairs()
        return (f"Sample {self.name}: {self.n:,} documents, {len(self.pairs):,} labeled pairs "
                f"({npos:,} duplicate)" + (f", {waiting:,} pairs not labeled yet" if waiting else "")
                + f", groups: {'yes' if self.has_groups else 'no'}, "
                f"{len(self.exclusions) - waiting:,} exclusions, slice columns: {slices}")


def from_frames(docs: pd.DataFrame, pairs: pd.DataFrame | None = None, *, name: str = "sample",
                slice_columns: tuple[str, ...] | None = None) -> Sample:
    """Build a Sample from an in-memory docs frame (id, text[, group, slices])
    and optional pair frame with id_a, id_b, label (bool or
    duplicate/not_duplicate)[, category]. Minimal validation; the file
    loaders do the full job with file/line context."""
    docs = docs.reset_index(drop=True).copy()
    docs["id"] = docs["id"].astype(str)
    if docs["id"].duplicated().any():
        dup = docs["id"][docs["id"].duplicated()].iloc[0]
        raise ValueError(f"duplicate document id {dup!r}")
    if slice_columns is None:
        slice_columns = tuple(c for c in docs.columns if c not in ("id", "text", "group"))
    pos = pd.Series(np.arange(len(docs)), index=docs["id"])
    if pairs is None or len(pairs) == 0:
        return Sample(docs=docs, name=name, slice_columns=tuple(slice_columns))
    a = pairs["id_a"].astype(str)
    b = pairs["id_b"].astype(str)
    unknown = ~a.isin(pos.index) | ~b.isin(pos.index)
    if unknown.any():
        k = int(np.flatnonzero(unknown.to_numpy())[0])
        raise ValueError(f"pair label row {k}: unknown id {a.iloc[k] if not a.iloc[k] in pos.index else b.iloc[k]!r}")
    ia = pos[a].to_numpy(np.int64)
    ib = pos[b].to_numpy(np.int64)
    lab = pairs["label"]
    if lab.dtype != bool:
        lab = lab.map({"duplicate": True, "not_duplicate": False, True: True, False: False})
    out = pd.DataFrame({"i": np.minimum(ia, ib), "j": np.maximum(ia, ib),
                        "is_duplicate": lab.to_numpy(bool),
                        "category": pairs["category"].astype(str).to_numpy() if "category" in pairs else ""})
    return Sample(docs=docs, pairs=out, name=name, slice_columns=tuple(slice_columns))



def numeric_columns(sample: Sample) -> tuple[str, ...]:
    """Numeric document columns (e.g. a quality score): not slices, but usable
    to choose a cluster's representative."""
    return tuple(c for c in sample.docs.columns
                 if c not in ("id", "text", "group") and pd.api.types.is_numeric_dtype(sample.docs[c]))


def summary(sample: Sample) -> dict:
    """Counts for display: documents, exclusions by reason, pairs by label and
    category, groups, slice columns and their value counts."""
    p = sample.pairs
    labels = np.where(p["is_duplicate"].to_numpy(bool), "duplicate", "not_duplicate")
    by_cat = pd.crosstab(p["category"].to_numpy(dtype=object), labels) if len(p) else pd.DataFrame()
    out = {
        "name": sample.name,
        "documents": sample.n,
        "excluded": int(len(sample.exclusions)),
        "excluded_by_reason": _counts(sample.exclusions["reason"].map(_reason_kind)) if len(sample.exclusions) else {},
        "pairs": int(len(p)),
        "pairs_by_label": {k: int((labels == k).sum()) for k in ("duplicate", "not_duplicate")},
        "pairs_by_category": {str(c): {str(k): int(v) for k, v in row.items() if v}
                              for c, row in by_cat.iterrows()},
        "slice_columns": {c: _counts(sample.docs[c].fillna("(missing)")) for c in sample.slice_columns},
        "numeric_columns": list(numeric_columns(sample)),
        "warnings": list(sample.warnings),
    }
    if sample.has_groups:
        sizes = sample.named_groups().value_counts()
        out["groups"] = {"groups": int(len(sizes)), "in_groups_of_2_or_more": int(sizes[sizes >= 2].sum()),
                         "largest": int(sizes.max()) if len(sizes) else 0,
                         "without_group": int(sample.docs["group"].isna().sum()),
                         "not_judged": int(sample.not_judged().sum()),
                         **_pairs_within_groups(sample, sizes)}
    return out


def _pairs_within_groups(sample: Sample, sizes: pd.Series) -> dict:
    """Duplicate pairs the groups imply (two documents of one group: sum of m(m-1)/2), and how many of them
    the pair file does not list (the evaluation's pair category '(group)')."""
    total = int((sizes * (sizes - 1) // 2).sum())
    group = sample.docs["group"].where(~sample.not_judged()).to_numpy(object)
    p = sample.pairs
    i, j = p["i"].to_numpy(np.int64), p["j"].to_numpy(np.int64)
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    same = pd.notna(group[lo]) & (group[lo] == group[hi]) & (lo != hi)
    listed = len(set(zip(lo[same].tolist(), hi[same].tolist())))
    return {"pairs_within_groups": total, "pairs_within_groups_not_listed": total - listed}


def _reason_kind(reason: str) -> str:
    return re.sub(r" ?[('].*$", "", reason)


def _counts(s: pd.Series) -> dict:
    vc = s.astype(object).value_counts(sort=False)
    return {str(k): int(v) for k, v in sorted(vc.items(), key=lambda kv: (-kv[1], str(kv[0])))}
