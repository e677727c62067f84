"""Labeled samples: the typed :class:`Sample` every engine step takes.

(Loaders and validation live here too; the shipped-sample builder is
:mod:`calib.sample_build`.)
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from calib.reading.files import (MISSING_VALUES, SampleError, decode_text, is_missing, iter_records, missing_set,
    read_input)

PAIR_COLUMNS = ("i", "j", "is_duplicate", "category")
EXCLUSION_COLUMNS = ("file", "line", "id", "reason")
REPO_ROOT = Path(__file__).resolve().parents[2]
CLOUGH_DIR = REPO_ROOT.parent / "shared" / "corpora" / "clough"
SAMPLE_DIR = REPO_ROOT / "data" / "sample"  # the shipped sample (built by calib.sample_build)
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
    design: object = None  # calib.design.Design of a drawn set (design.json): labels come from a stratified draw

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


# ---------------------------------------------------------------------------
# Formats (SampleError, the file opener and the JSON-record reader: calib.reading)
# ---------------------------------------------------------------------------

DOC_EXTENSIONS = (".jsonl", ".csv", ".parquet")
LABELS = {"duplicate": True, "not_duplicate": False, "true": True, "false": False,
          "1": True, "0": False}
HEAVY_CHOICES = ("not_duplicate", "duplicate", "exclude")


@dataclass
class _Table:
    """Raw records of one file: dicts of Python values plus their line numbers."""

    file: str
    records: list[dict]
    lines: list[int]
    columns: list[str]
    typed: bool  # False for CSV (every value is a string)


def _is_null(v) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


# ---------------------------------------------------------------------------
# Reading files into records
# ---------------------------------------------------------------------------

def _read_bytes(path: Path, root: Path | None = None) -> bytes:
    """The file's bytes: a regular file with one link, inside ``root`` (default: its own folder)."""
    return read_input(path, root=root if root is not None else path.parent)


def _read_jsonl(path: Path, root: Path | None = None) -> _Table:
    data = _read_bytes(path, root)
    decode_text(data, path.name)  # whole-file check names the first bad byte
    records, lines, columns = [], [], {}
    for no, rec in iter_records(io.BytesIO(data), path.name):
        records.append(rec)
        lines.append(no)
        columns.update(dict.fromkeys(rec))
    return _Table(path.name, records, lines, list(columns), typed=True)


def _check_unique_columns(names: list[str], file: str, line: int | None) -> None:
    seen: dict[str, int] = {}
    for k, c in enumerate(names, start=1):
        if c in seen:
            raise SampleError(f"duplicate column {c!r} (columns {seen[c]} and {k}): which one is meant is ambiguous",
                              file=file, line=line, field=c)
        seen[c] = k


def _read_csv(path: Path, root: Path | None = None) -> _Table:
    text = decode_text(_read_bytes(path, root), path.name)
    # strict: an unclosed quote (a truncated file) or text after a closing quote is an error
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise SampleError("empty file (no header)", file=path.name, line=1) from None
    except csv.Error as e:
        raise SampleError(f"malformed CSV header ({e})", file=path.name, line=1) from None
    header = [h.strip() for h in header]
    _check_unique_columns(header, path.name, 1)
    records, lines, start = [], [], reader.line_num + 1
    try:
        for row in reader:
            if row and any(c != "" for c in row):
                if len(row) != len(header):
                    raise SampleError(f"{len(row)} values, header has {len(header)}",
                                      file=path.name, line=start)
                records.append(dict(zip(header, row)))
                lines.append(start)
            start = reader.line_num + 1
    except csv.Error as e:
        raise SampleError(f"malformed CSV ({e})", file=path.name, line=start) from None
    return _Table(path.name, records, lines, header, typed=False)


def _read_parquet(path: Path, root: Path | None = None) -> _Table:
    import pyarrow as pa
    import pyarrow.parquet as pq
    data = _read_bytes(path, root)
    try:
        pf = pq.ParquetFile(pa.BufferReader(data))
    except Exception as e:  # pyarrow raises several types
        raise SampleError(f"unreadable Parquet file ({e})", file=path.name) from None
    _check_unique_columns([str(c) for c in pf.schema_arrow.names], path.name, None)
    try:  # one thread: no pool left running at exit
        df = pf.read(use_threads=False).to_pandas(use_threads=False)
    except Exception as e:
        raise SampleError(f"unreadable Parquet file ({e})", file=path.name) from None
    df = df.reset_index(drop=True)
    records = df.astype(object).to_dict("records")
    return _Table(path.name, records, list(range(1, len(df) + 1)), [str(c) for c in df.columns], typed=True)


def _read_table(path: Path, root: Path | None = None) -> _Table:
    ext = path.suffix.lower()
    readers = {".jsonl": _read_jsonl, ".csv": _read_csv, ".parquet": _read_parquet}
    if ext not in readers:
        raise SampleError(f"unknown extension {ext or '(none)'!r}; expected one of .jsonl, .csv, .parquet",
                          file=path.name)
    return readers[ext](path, root)


def _require(table: _Table, columns: tuple[str, ...]) -> None:
    for c in columns:
        if c not in table.columns:
            raise SampleError(f"missing column {c!r} (columns: {', '.join(table.columns) or 'none'})",
                              file=table.file, line=1 if not table.typed else None, field=c)


# ---------------------------------------------------------------------------
# Value checks
# ---------------------------------------------------------------------------

def _as_id(v, file: str, line: int, field: str) -> str:
    """Ids are strings; integers (and integral floats) become their decimal text."""
    if isinstance(v, bool) or _is_null(v):
        raise SampleError("empty id" if _is_null(v) else f"id must be text or an integer, got {v!r}",
                          file=file, line=line, field=field)
    if isinstance(v, (int, np.integer)):
        s = str(int(v))
    elif isinstance(v, float) and v.is_integer():
        s = str(int(v))
    elif isinstance(v, str):
        s = v
    else:
        raise SampleError(f"id must be text or an integer, got {type(v).__name__} {v!r}",
                          file=file, line=line, field=field)
    if not s.strip():
        raise SampleError("empty id", file=file, line=line, field=field)
    return s


def _as_text(v, file: str, line: int, field: str) -> str:
    if not isinstance(v, str):
        got = "null" if _is_null(v) else f"{type(v).__name__} {v!r}"[:80]
        raise SampleError(f"text must be a string, got {got}", file=file, line=line, field=field)
    return v


def _as_label(v, file: str, line: int, field: str = "label",
              missing: frozenset[str] = missing_set()) -> bool | None:
    """True/False, or None for a missing label (the pair is then excluded and reported)."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, str) and v.strip().lower() in LABELS:
        return LABELS[v.strip().lower()]
    if is_missing(v, missing):
        return None
    key = str(int(v)) if isinstance(v, (int, np.integer)) else (v.strip().lower() if isinstance(v, str) else None)
    if key not in LABELS:
        raise SampleError(f"label {v!r} not in duplicate, not_duplicate (or true/false/1/0)",
                          file=file, line=line, field=field)
    return LABELS[key]


def _as_category(v) -> str:
    return "" if _is_null(v) else str(v)


# ---------------------------------------------------------------------------
# Documents
# ---------------------------------------------------------------------------

@dataclass
class _Docs:
    """Documents being assembled: kept rows, their source lines, exclusions."""

    rows: list[dict]
    lines: dict[str, tuple[str, int]]          # id -> (file, line) for kept and excluded docs
    excluded: set[str]
    exclusions: list[dict]


def _collect_docs(table: _Table) -> _Docs:
    if not table.records:
        raise SampleError("empty sample: the file has no documents", file=table.file)
    _require(table, ("id", "text"))
    out = _Docs([], {}, set(), [])
    for rec, line in zip(table.records, table.lines):
        did = _as_id(rec.get("id"), table.file, line, "id")
        text = _as_text(rec.get("text"), table.file, line, "text")
        if did in out.lines:
            f, first = out.lines[did]
            raise SampleError(f"duplicate id {did!r} (first seen on line {first})",
                              file=table.file, line=line, field="id")
        out.lines[did] = (table.file, line)
        if not text.strip():
            out.excluded.add(did)
            out.exclusions.append({"file": table.file, "line": line, "id": did,
                                   "reason": "empty text" if not text else "whitespace-only text"})
            continue
        row = {k: v for k, v in rec.items() if k not in ("id", "text")}
        row["id"], row["text"], row["_line"] = did, text, line
        out.rows.append(row)
    return out


def _check_scalar(v, file: str, line: int, col: str) -> None:
    """Group and slice values are scalars: a list (a Parquet list column, a
    JSON array) or an object has no single value to group or slice by."""
    if isinstance(v, (list, tuple, dict, np.ndarray)):
        what = "an object" if isinstance(v, dict) else f"a list of {len(v)} item{'s' if len(v) != 1 else ''}"
        raise SampleError(f"value must be text or a number, got {what}", file=file, line=line, field=col)


def _slice_values(values: list, file: str, lines: list[int], col: str, typed: bool,
                  missing: frozenset[str] = missing_set()) -> pd.Series:
    """A slice column: numeric when every present value is a number (for CSV:
    parses as one), else str with NA for missing values (:func:`is_missing`)."""
    for v, line in zip(values, lines):
        _check_scalar(v, file, line, col)
    values = [None if is_missing(v, missing) else v for v in values]
    present = [v for v in values if v is not None]
    if present and typed and all(isinstance(v, (int, float, np.integer, np.floating))
                                 and not isinstance(v, bool) for v in present):
        return pd.to_numeric(pd.Series(values, dtype=object))
    if present and not typed:
        num = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce")
        if num.notna().sum() == len(present):
            return num
    return pd.Series([pd.NA if v is None else str(v) for v in values], dtype="str")


def _docs_frame(docs: _Docs, table_file: str, typed: bool, missing: frozenset[str] = missing_set()) -> pd.DataFrame:
    if not docs.rows:
        raise SampleError(f"empty sample: no documents left ({len(docs.exclusions)} excluded)", file=table_file)
    cols = list(dict.fromkeys(k for r in docs.rows for k in r if k not in ("id", "text", "_line")))
    lines = [r["_line"] for r in docs.rows]
    frame = {"id": pd.Series([r["id"] for r in docs.rows], dtype="str"),
             "text": pd.Series([r["text"] for r in docs.rows], dtype="str")}
    for c in cols:
        vals = [r.get(c) for r in docs.rows]
        if c == "group":
            for v, ln in zip(vals, lines):
                _check_scalar(v, table_file, ln, c)
            frame[c] = pd.Series([pd.NA if is_missing(v, missing) else
                                  _as_id(v, table_file, ln, "group") for v, ln in zip(vals, lines)], dtype="str")
        else:
            frame[c] = _slice_values(vals, table_file, lines, c, typed, missing)
    return pd.DataFrame(frame)


# ---------------------------------------------------------------------------
# Pairs
# ---------------------------------------------------------------------------

@dataclass
class _PairRow:
    a: str
    b: str
    label: bool | None  # None: missing label (excluded, reported)
    category: str
    file: str
    line: int
    stratum: str | None = None  # a drawn set's pairs.csv (calib.draw): its stratum and inclusion probability
    pi: float | None = None
    similarity: float | None = None  # and the exact J that put the pair in its stratum


def _pairs_from_table(table: _Table, missing: frozenset[str] = missing_set()) -> list[_PairRow]:
    if not table.records and table.typed:  # an empty JSONL/Parquet file: no pairs
        return []
    _require(table, ("id_a", "id_b", "label"))
    out = []
    for rec, line in zip(table.records, table.lines):
        a = _as_id(rec.get("id_a"), table.file, line, "id_a")
        b = _as_id(rec.get("id_b"), table.file, line, "id_b")
        out.append(_PairRow(a, b, _as_label(rec.get("label"), table.file, line, missing=missing),
                            _as_category(rec.get("category")), table.file, line, *_drawn_fields(rec, table.file, line)))
    return out


def _drawn_fields(rec: dict, file: str, line: int) -> tuple[str | None, float | None, float | None]:
    """(stratum, inclusion_probability, similarity) of a drawn set's pair row, Nones elsewhere."""
    if "inclusion_probability" not in rec:  # a stratum column alone is an ordinary extra column
        return None, None, None
    stratum = _as_category(rec.get("stratum"))
    try:
        pi = float(rec.get("inclusion_probability"))
    except (TypeError, ValueError):
        pi = float("nan")
    if not stratum or not 0.0 < pi <= 1.0:
        bad = "stratum" if not stratum else "inclusion_probability"
        raise SampleError(f"{bad} must be {'a stratum name' if not stratum else 'a probability in (0, 1]'}, got "
                          f"{rec.get(bad)!r}", file=file, line=line, field=bad)
    if "similarity" not in rec:
        return stratum, pi, None
    try:
        sim = float(rec.get("similarity"))
    except (TypeError, ValueError):
        sim = float("nan")
    if not 0.0 <= sim <= 1.0:
        raise SampleError(f"similarity must be a number in [0, 1], got {rec.get('similarity')!r}",
                          file=file, line=line, field="similarity")
    return stratum, pi, sim


def _resolve_pairs(rows: list[_PairRow], docs: _Docs, frame: pd.DataFrame) -> tuple[pd.DataFrame, list[dict]]:
    """Check pair rows against the documents; return the pairs frame and exclusions."""
    pos = {d: k for k, d in enumerate(frame["id"])}
    groups = frame["group"].tolist() if "group" in frame.columns else None
    seen: dict[tuple[int, int], tuple[bool, int]] = {}
    kept, excl = [], []
    for r in rows:
        for fld, did in (("id_a", r.a), ("id_b", r.b)):
            if did not in docs.lines:
                raise SampleError(f"unknown id {did!r} (no such document)", file=r.file, line=r.line, field=fld)
        if r.a == r.b:
            raise SampleError(f"pair of document {r.a!r} with itself", file=r.file, line=r.line, field="id_b")
        if r.label is None:
            excl.append({"file": r.file, "line": r.line, "id": f"{r.a}|{r.b}", "reason": "missing label"})
            continue
        gone = [d for d in (r.a, r.b) if d in docs.excluded]
        if gone:
            excl.append({"file": r.file, "line": r.line, "id": f"{r.a}|{r.b}",
                         "reason": f"pair names excluded document {gone[0]!r}"})
            continue
        i, j = sorted((pos[r.a], pos[r.b]))
        if (i, j) in seen:
            label, first = seen[(i, j)]
            if label != r.label:
                raise SampleError(f"contradictory labels for pair ({r.a!r}, {r.b!r}): "
                                  f"{_label_name(r.label)} here, {_label_name(label)} on line {first}",
                                  file=r.file, line=r.line, field="label")
            excl.append({"file": r.file, "line": r.line, "id": f"{r.a}|{r.b}",
                         "reason": f"repeated pair (same label as line {first})"})
            continue
        if groups is not None:
            _check_group(r, groups[pos[r.a]], groups[pos[r.b]])
        seen[(i, j)] = (r.label, r.line)
        kept.append((i, j, r.label, r.category, r.stratum, r.pi))
    pairs = pd.DataFrame({"i": pd.Series([k[0] for k in kept], dtype="int64"),
                          "j": pd.Series([k[1] for k in kept], dtype="int64"),
                          "is_duplicate": pd.Series([k[2] for k in kept], dtype="bool"),
                          "category": pd.Series([k[3] for k in kept], dtype="str")})
    if rows and rows[0].stratum is not None:  # a drawn set: the design's columns ride along
        pairs["stratum"] = pd.Series([k[4] for k in kept], dtype="str")
        pairs["inclusion_probability"] = pd.Series([k[5] for k in kept], dtype="float64")
    return pairs, excl


def _label_name(v: bool) -> str:
    return "duplicate" if v else "not_duplicate"


def _check_group(r: _PairRow, ga, gb) -> None:
    if any(isinstance(g, str) and g == NOT_JUDGED for g in (ga, gb)):  # nothing to contradict: the pair
        return                                                            # label is the only judgement
    same = not _is_null(ga) and not _is_null(gb) and ga == gb
    if same != r.label:
        why = (f"both documents are in group {ga!r}" if same else
               f"groups differ ({'none' if _is_null(ga) else repr(ga)} vs {'none' if _is_null(gb) else repr(gb)})")
        raise SampleError(f"label {_label_name(r.label)} contradicts the group column: {why}",
                          file=r.file, line=r.line, field="label")


# ---------------------------------------------------------------------------
# Public loaders
# ---------------------------------------------------------------------------

def _assemble(docs: _Docs, docs_file: str, typed: bool, pair_rows: list[_PairRow], name: str,
              missing: frozenset[str] = missing_set(), design=None) -> Sample:
    frame = _docs_frame(docs, docs_file, typed, missing)
    pairs, pair_excl = _resolve_pairs(pair_rows, docs, frame)
    exclusions = pd.DataFrame(docs.exclusions + pair_excl, columns=list(EXCLUSION_COLUMNS))
    slices = tuple(c for c in frame.columns
                   if c not in ("id", "text", "group") and not pd.api.types.is_numeric_dtype(frame[c]))
    return Sample(docs=frame, pairs=pairs, exclusions=exclusions, name=name, slice_columns=slices, design=design)


def _find_one(directory: Path, stem: str, required: bool) -> Path | None:
    found = [directory / f"{stem}{ext}" for ext in DOC_EXTENSIONS if os.path.lexists(directory / f"{stem}{ext}")]
    if len(found) > 1:
        raise SampleError(f"several {stem} files ({', '.join(p.name for p in found)}); keep one",
                          file=directory.name)
    if not found and required:
        raise SampleError(f"no {stem}.jsonl, {stem}.csv or {stem}.parquet in directory", file=directory.name)
    return found[0] if found else None


def _is_inline(table: _Table) -> bool:
    return {"id_a", "id_b", "text_a", "text_b"} <= set(table.columns)


def load_sample(path, pairs=None, *, name: str | None = None, missing_values=MISSING_VALUES) -> Sample:
    """Load a labeled sample from a directory (docs.* [+ pairs.*], or the
    Clough corpus), a documents file plus optional pair-label file, or one
    JSONL file of inline pairs. Raises :class:`SampleError` on invalid input.

    ``missing_values``: spellings that mean "no value" in group, label and
    slice columns (case-insensitive; null and empty always do). Pass ``()``
    to keep ``NA``, ``nan``, ``NULL``, ``None``, ``N/A`` as ordinary values.
    Every file is opened inside the sample folder (the directory, or the
    file's own folder): a regular file with one hard link (:mod:`calib.reading`).
    """
    path = Path(path)
    missing = missing_set(missing_values)
    if path.is_dir():
        if os.path.lexists(path / "file_information.csv"):
            if pairs is not None:
                raise SampleError("the Clough corpus brings its own pairs; no pair file expected", file=path.name)
            return load_clough(path, name=name)
        # documents.*: a folder written by calib draw (with its design.json)
        docs_path = _find_one(path, "docs", required=False) or _find_one(path, "documents", required=False)
        if docs_path is None:
            raise SampleError("no docs.jsonl, docs.csv or docs.parquet (or documents.*) in directory", file=path.name)
        design = _read_design(path)
        pairs_root = None if pairs is not None else path  # a pair file named explicitly: its own folder
        pairs = pairs if pairs is not None else _find_one(path, "pairs", required=False)
        name = name or path.name
        root = path
    else:
        docs_path = path
        name = name or path.stem
        root = pairs_root = design = None
    table = _read_table(docs_path, root)
    if _is_inline(table):
        if pairs is not None:
            raise SampleError("inline-pair file given together with a pair-label file", file=table.file)
        docs, rows = _inline_docs_and_pairs(table, missing)
        return _assemble(docs, table.file, True, rows, name, missing)
    docs = _collect_docs(table)
    rows = _pairs_from_table(_read_table(Path(pairs), pairs_root), missing) if pairs is not None else []
    if design is not None and Path(pairs).suffix.lower() == ".csv":  # calib draw wrote it: ids as written, ' dropped
        from calib.base.atomic import csv_cell_value
        rows = [replace(r, a=csv_cell_value(r.a), b=csv_cell_value(r.b)) for r in rows]
    if design is not None and not all(r.stratum in design.strata for r in rows):
        r = next(r for r in rows if r.stratum not in design.strata)
        raise SampleError(f"stratum {r.stratum!r} is not one of design.json's ({', '.join(design.strata)})",
                          file=r.file, line=r.line, field="stratum")
    if design is not None:
        _check_drawn_rows(design, rows, len(table.records), table.file)
    return _assemble(docs, table.file, table.typed, rows, name, missing, design)


def _check_drawn_rows(design, rows: list[_PairRow], n_docs: int, docs_file: str) -> None:
    """A drawn set as its design says: as many documents as sampled, and every pair in the
    stratum its similarity falls in (a swapped stratum name would reweight it silently)."""
    if design.sample_docs != n_docs:
        raise SampleError(f"{n_docs:,} documents, but design.json says sample_docs {design.sample_docs:,}",
                          file=docs_file)
    drawn = [r for r in rows if r.similarity is not None]
    if not drawn:
        return
    names = np.asarray(design.strata, dtype=object)[design.stratum_index([r.similarity for r in drawn])]
    for r, name in zip(drawn, names):
        if r.stratum != name:
            raise SampleError(f"stratum {r.stratum!r} contradicts the row's similarity {r.similarity:g} "
                              f"(stratum {name!r})", file=r.file, line=r.line, field="stratum")


def _read_design(directory: Path):
    """The folder's design.json (a drawn set, :mod:`calib.design`), or None."""
    if not os.path.lexists(directory / "design.json"):
        return None
    from calib.reading.design import Design
    try:
        return Design.from_json(decode_text(_read_bytes(directory / "design.json", directory), "design.json"))
    except (ValueError, KeyError, TypeError) as exc:
        if isinstance(exc, SampleError):
            raise
        raise SampleError(f"not a calib draw design ({exc})", file="design.json") from None


def _inline_docs_and_pairs(table: _Table, missing: frozenset[str] = missing_set()) -> tuple[_Docs, list[_PairRow]]:
    """Documents and pairs of an inline-pair JSONL file (docs deduplicated by id)."""
    _require(table, ("id_a", "text_a", "id_b", "text_b", "label"))
    docs = _Docs([], {}, set(), [])
    texts: dict[str, str] = {}
    rows = []
    for rec, line in zip(table.records, table.lines):
        ids = []
        for side in ("a", "b"):
            did = _as_id(rec.get(f"id_{side}"), table.file, line, f"id_{side}")
            text = _as_text(rec.get(f"text_{side}"), table.file, line, f"text_{side}")
            ids.append(did)
            if did in texts:
                if texts[did] != text:
                    raise SampleError(f"id {did!r} has a different text than on line {docs.lines[did][1]}",
                                      file=table.file, line=line, field=f"text_{side}")
                continue
            texts[did] = text
            docs.lines[did] = (table.file, line)
            if not text.strip():
                docs.excluded.add(did)
                docs.exclusions.append({"file": table.file, "line": line, "id": did,
                                        "reason": "empty text" if not text else "whitespace-only text"})
            else:
                docs.rows.append({"id": did, "text": text, "_line": line})
        rows.append(_PairRow(ids[0], ids[1], _as_label(rec.get("label"), table.file, line, missing=missing),
                             _as_category(rec.get("category")), table.file, line))
    return docs, rows


def _decode_legacy(data: bytes) -> str:
    """UTF-8, else Windows-1252 (some Clough files are cp1252); CRLF -> LF."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("cp1252", errors="replace")
    return text.replace("\r\n", "\n")


def load_clough(path=None, *, heavy: str = "not_duplicate", name: str | None = None) -> Sample:
    """The Clough & Stevenson short-answer corpus as a Sample: 100 documents
    (id = file stem, ``domain`` = task, ``category``), each answer paired with
    its task's source: cut/light duplicate, non not_duplicate, heavy per
    ``heavy`` ("not_duplicate", "duplicate" or "exclude")."""
    if heavy not in HEAVY_CHOICES:
        raise ValueError(f"heavy must be one of {HEAVY_CHOICES}, got {heavy!r}")
    path = Path(path) if path is not None else CLOUGH_DIR
    info = _read_csv(path / "file_information.csv", path)
    _require(info, ("File", "Task", "Category"))
    rows, lines, docs, heavy_excl = [], {}, [], []
    for rec, line in zip(info.records, info.lines):
        try:  # the file list is data: every name must stay inside the corpus folder
            text = _decode_legacy(read_input(path / rec["File"], root=path))
        except SampleError as exc:
            raise SampleError(f"{rec['File']!r}: {exc.detail}", file=info.file, line=line, field="File") from None
        did = Path(rec["File"]).stem
        docs.append({"id": did, "text": text, "domain": f"task{rec['Task']}", "category": rec["Category"]})
        lines[did] = line
    frame = pd.DataFrame(docs).astype("str")
    src = {d["domain"]: d["id"] for d in docs if d["category"] == "orig"}
    for d in docs:
        if d["category"] != "orig" and d["domain"] not in src:
            raise SampleError(f"task {d['domain'][4:]!r} has no 'orig' row (the source its answers are compared "
                              "with)", file=info.file, line=lines[d["id"]], field="Category")
    labels = {"cut": True, "light": True, "non": False, "heavy": heavy == "duplicate"}
    for d in docs:
        if d["category"] == "orig":
            continue
        if d["category"] not in labels:
            raise SampleError(f"unknown category {d['category']!r}", file=info.file, line=lines[d["id"]],
                              field="Category")
        if d["category"] == "heavy" and heavy == "exclude":
            heavy_excl.append({"file": info.file, "line": lines[d["id"]], "id": f"{d['id']}|{src[d['domain']]}",
                               "reason": "heavy revision pair excluded (heavy='exclude')"})
            continue
        rows.append(_PairRow(d["id"], src[d["domain"]], labels[d["category"]], d["category"], info.file,
                             lines[d["id"]]))
    holder = _Docs(frame.to_dict("records"), {d: (info.file, ln) for d, ln in lines.items()}, set(), [])
    pairs, excl = _resolve_pairs(rows, holder, frame)
    exclusions = pd.DataFrame(heavy_excl + excl, columns=list(EXCLUSION_COLUMNS))
    return Sample(docs=frame, pairs=pairs, exclusions=exclusions, name=name or "clough",
                  slice_columns=("domain", "category"))


# ---------------------------------------------------------------------------
# Writing and summaries
# ---------------------------------------------------------------------------

def pair_frame(sample: Sample) -> pd.DataFrame:
    """The sample's pairs by id: id_a, id_b, label (duplicate/not_duplicate), category."""
    ids = sample.docs["id"].to_numpy(dtype=object)
    p = sample.pairs
    return pd.DataFrame({"id_a": pd.Series(ids[p["i"].to_numpy()], dtype="str"),
                         "id_b": pd.Series(ids[p["j"].to_numpy()], dtype="str"),
                         "label": pd.Series(np.where(p["is_duplicate"].to_numpy(bool), "duplicate",
                                                     "not_duplicate"), dtype="str"),
                         "category": pd.Series(p["category"].to_numpy(dtype=object), dtype="str")})


def write_sample(sample: Sample, directory, *, fmt: str = "jsonl") -> tuple[Path, Path]:
    """Write docs.<fmt> and pairs.<fmt> (fmt: jsonl, csv or parquet) into directory."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, frame in (("docs", sample.docs), ("pairs", pair_frame(sample))):
        out = directory / f"{stem}.{fmt}"
        _write_frame(frame, out, fmt)
        written.append(out)
    return written[0], written[1]


def _write_frame(frame: pd.DataFrame, out: Path, fmt: str) -> None:
    if fmt == "jsonl":
        text = frame.to_json(orient="records", lines=True, force_ascii=False)
        out.write_bytes(text.encode("utf-8") if text.endswith("\n") or not text else (text + "\n").encode("utf-8"))
    elif fmt == "csv":
        from calib.base.atomic import csv_quoting
        frame.to_csv(out, index=False, lineterminator="\n", encoding="utf-8", quoting=csv_quoting(frame))
    elif fmt == "parquet":
        frame.to_parquet(out, index=False)
    else:
        raise ValueError(f"fmt must be jsonl, csv or parquet, got {fmt!r}")


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
                         "not_judged": int(sample.not_judged().sum())}
    return out


def _reason_kind(reason: str) -> str:
    return re.sub(r" ?[('].*$", "", reason)


def _counts(s: pd.Series) -> dict:
    vc = s.astype(object).value_counts(sort=False)
    return {str(k): int(v) for k, v in sorted(vc.items(), key=lambda kv: (-kv[1], str(kv[0])))}
