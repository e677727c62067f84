"""Checked records: a table's values turned into documents and pair labels.

Ids become text (integers as their decimal digits), texts must be strings,
labels are duplicate / not_duplicate (or true/false/1/0; a missing label
excludes its pair), group and slice values are scalars; documents with an
empty text and pairs naming them are excluded and listed, never dropped
silently. :func:`resolve_pairs` checks pair rows against the documents
(unknown ids, a document paired with itself, contradictory or repeated
labels, a label contradicting the group column). Every error is a
:class:`SampleError` naming file, line and field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from calib.reading.files import SampleError, is_missing, missing_set
from calib.reading.sample import NOT_JUDGED, UNLABELED
from calib.reading.tables import Table, require_columns

MAX_ID = 2_000  # characters of a document id a review store keeps (a long URL fits); a draw refuses longer ones

LABELS = {"duplicate": True, "not_duplicate": False, "true": True, "false": False,
          "1": True, "0": False}


# ---------------------------------------------------------------------------
# Value checks
# ---------------------------------------------------------------------------

def _is_null(v) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def as_id(v, file: str, line: int, field: str) -> str:
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


def as_text(v, file: str, line: int, field: str) -> str:
    if not isinstance(v, str):
        got = "null" if _is_null(v) else f"{type(v).__name__} {v!r}"[:80]
        raise SampleError(f"text must be a string, got {got}", file=file, line=line, field=field)
    return v


def as_label(v, file: str, line: int, field: str = "label",
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


def as_category(v) -> str:
    return "" if _is_null(v) else str(v)


# ---------------------------------------------------------------------------
# Documents
# ---------------------------------------------------------------------------

@dataclass
class Docs:
    """Documents being assembled: kept rows, their source lines, exclusions."""

    rows: list[dict]
    lines: dict[str, tuple[str, int]]          # id -> (file, line) for kept and excluded docs
    excluded: set[str]
    exclusions: list[dict]


def collect_docs(table: Table) -> Docs:
    if not table.records:
        raise SampleError("empty sample: the file has no documents", file=table.file)
    require_columns(table, ("id", "text"))
    out = Docs([], {}, set(), [])
    for rec, line in zip(table.records, table.lines):
        did = as_id(rec.get("id"), table.file, line, "id")
        text = as_text(rec.get("text"), table.file, line, "text")
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


def docs_frame(docs: Docs, table_file: str, typed: bool, missing: frozenset[str] = missing_set()) -> pd.DataFrame:
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
                                  as_id(v, table_file, ln, "group") for v, ln in zip(vals, lines)], dtype="str")
        else:
            frame[c] = _slice_values(vals, table_file, lines, c, typed, missing)
    return pd.DataFrame(frame)


# ---------------------------------------------------------------------------
# Pairs
# ---------------------------------------------------------------------------

@dataclass
class PairRow:
    a: str
    b: str
    label: bool | None  # None: missing label (excluded, reported)
    category: str
    file: str
    line: int
    stratum: str | None = None  # a drawn set's pairs.csv (calib.labeling.draw): its stratum and inclusion probability
    pi: float | None = None
    similarity: float | None = None  # and the exact J that put the pair in its stratum


def pairs_from_table(table: Table, missing: frozenset[str] = missing_set()) -> list[PairRow]:
    if not table.records and table.typed:  # an empty JSONL/Parquet file: no pairs
        return []
    require_columns(table, ("id_a", "id_b", "label"))
    out = []
    for rec, line in zip(table.records, table.lines):
        a = as_id(rec.get("id_a"), table.file, line, "id_a")
        b = as_id(rec.get("id_b"), table.file, line, "id_b")
        out.append(PairRow(a, b, as_label(rec.get("label"), table.file, line, missing=missing),
                           as_category(rec.get("category")), table.file, line, *_drawn_fields(rec, table.file, line)))
    return out


def _drawn_fields(rec: dict, file: str, line: int) -> tuple[str | None, float | None, float | None]:
    """(stratum, inclusion_probability, similarity) of a drawn set's pair row, Nones elsewhere."""
    if "inclusion_probability" not in rec:  # a stratum column alone is an ordinary extra column
        return None, None, None
    stratum = as_category(rec.get("stratum"))
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


def resolve_pairs(rows: list[PairRow], docs: Docs, frame: pd.DataFrame) -> tuple[pd.DataFrame, list[dict]]:
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
            excl.append({"file": r.file, "line": r.line, "id": f"{r.a}|{r.b}", "reason": UNLABELED})
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


def _check_group(r: PairRow, ga, gb) -> None:
    if any(isinstance(g, str) and g == NOT_JUDGED for g in (ga, gb)):  # nothing to contradict: the pair
        return                                                            # label is the only judgement
    same = not _is_null(ga) and not _is_null(gb) and ga == gb
    if same != r.label:
        why = (f"both documents are in group {ga!r}" if same else
               f"groups differ ({'none' if _is_null(ga) else repr(ga)} vs {'none' if _is_null(gb) else repr(gb)})")
        raise SampleError(f"label {_label_name(r.label)} contradicts the group column: {why}",
                          file=r.file, line=r.line, field="label")
