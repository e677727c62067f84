"""Labeled samples: the typed :class:`Sample` every engine step takes.

(Loaders, validation and the shipped-sample builder live here too.)
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

PAIR_COLUMNS = ("i", "j", "is_duplicate", "category")
EXCLUSION_COLUMNS = ("file", "line", "id", "reason")


@dataclass(frozen=True, eq=False)
class Sample:
    """A labeled sample of documents.

    docs:        RangeIndex 0..n-1 (the row number is the document's index
                 everywhere in the engine); columns ``id`` (str, unique),
                 ``text`` (str), optional ``group`` (str or NA: same group =
                 duplicates; NA = a singleton group), and slice columns
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

    def group_codes(self) -> np.ndarray:
        """int64 group code per document; NA groups get unique codes (singletons)."""
        g = self.docs["group"]
        codes, _ = pd.factorize(g, use_na_sentinel=True)
        codes = codes.astype(np.int64)
        missing = codes < 0
        codes[missing] = codes.max(initial=-1) + 1 + np.arange(int(missing.sum()))
        return codes

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

    def __str__(self) -> str:
        npos = int(self.pairs["is_duplicate"].sum()) if len(self.pairs) else 0
        return (f"Sample {self.name!r}: {self.n} documents, {len(self.pairs)} labeled pairs "
                f"({npos} duplicate), groups={'yes' if self.has_groups else 'no'}, "
                f"{len(self.exclusions)} exclusions, slices={list(self.slice_columns)}")


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
