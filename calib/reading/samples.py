"""Loading a labeled sample: :func:`load_sample`, which files make a sample.

A directory (``docs.*`` [+ ``pairs.*``]; ``documents.*`` + ``pairs.csv`` +
``design.json`` for a set drawn by ``calib draw``; the Clough corpus), a
documents file plus an optional pair-label file, or one JSONL file of inline
pairs. The files are read as tables (:mod:`calib.reading.tables`), their
values checked into documents and pair labels (:mod:`calib.reading.records`)
and assembled into a :class:`~calib.reading.sample.Sample`; a drawn set's
pairs are checked against its design (:mod:`calib.reading.design`).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from calib.base.atomic import csv_cell_value
from calib.reading.clough import load_clough
from calib.reading.corpus_design import load_design
from calib.reading.drawn_check import CANDIDATES, DrawnSetError, check_corpus_set, read_candidates
from calib.reading.files import MISSING_VALUES, SampleError, decode_text, missing_set
from calib.reading.records import (Docs, PairRow, as_category, as_id, as_label, as_text, collect_docs, docs_frame,
    pairs_from_table, resolve_pairs)
from calib.reading.sample import EXCLUSION_COLUMNS, Sample
from calib.reading.tables import DOC_EXTENSIONS, Table, read_bytes, read_table, require_columns


def _assemble(docs: Docs, docs_file: str, typed: bool, pair_rows: list[PairRow], name: str,
              missing: frozenset[str] = missing_set(), design=None) -> Sample:
    frame = docs_frame(docs, docs_file, typed, missing)
    pairs, pair_excl = resolve_pairs(pair_rows, docs, frame)
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


def _is_inline(table: Table) -> bool:
    return {"id_a", "id_b", "text_a", "text_b"} <= set(table.columns)


def load_sample(path, pairs=None, *, name: str | None = None, missing_values=MISSING_VALUES) -> Sample:
    """Load a labeled sample from a directory (docs.* [+ pairs.*], or the
    Clough corpus), a documents file plus optional pair-label file, or one
    JSONL file of inline pairs. Raises :class:`SampleError` on invalid input.

    ``missing_values``: spellings that mean "no value" in group, label and
    slice columns (case-insensitive; null and empty always do). Pass ``()``
    to keep ``NA``, ``nan``, ``NULL``, ``None``, ``N/A`` as ordinary values.
    Every file is opened inside the sample folder (the directory, or the
    file's own folder): a regular file with one hard link (:mod:`calib.reading.files`).
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
    table = read_table(docs_path, root)
    if _is_inline(table):
        if pairs is not None:
            raise SampleError("inline-pair file given together with a pair-label file", file=table.file)
        docs, rows = _inline_docs_and_pairs(table, missing)
        return _assemble(docs, table.file, True, rows, name, missing)
    docs = collect_docs(table)
    rows = pairs_from_table(read_table(Path(pairs), pairs_root), missing) if pairs is not None else []
    if design is not None and Path(pairs).suffix.lower() == ".csv":  # calib draw wrote it: ids as written, ' dropped
        rows = [replace(r, a=csv_cell_value(r.a), b=csv_cell_value(r.b)) for r in rows]
    if design is not None and not all(r.stratum in design.strata for r in rows):
        r = next(r for r in rows if r.stratum not in design.strata)
        raise SampleError(f"stratum {r.stratum!r} is not one of design.json's ({', '.join(design.strata)})",
                          file=r.file, line=r.line, field="stratum")
    if design is not None:
        _check_drawn_rows(design, rows, len(table.records), table.file)
    if getattr(design, "kind", "") == "corpus":
        _check_corpus_parts(path, design, table, rows)
    return _assemble(docs, table.file, table.typed, rows, name, missing, design)


def _check_drawn_rows(design, rows: list[PairRow], n_docs: int, docs_file: str) -> None:
    """A drawn set as its design says: as many documents as sampled, and every pair in the
    stratum its similarity falls in (a swapped stratum name would reweight it silently)."""
    if design.sample_docs != n_docs:
        raise SampleError(f"{n_docs:,} documents, but design.json says sample_docs {design.sample_docs:,}",
                          file=docs_file)
    # a corpus design's uniform route draws pairs of any J: only its band rows have a J to agree with;
    # bands by the verify estimate (strata_by "estimate") hold pairs of any exact J
    if getattr(design, "strata_by", "exact") == "estimate":
        return
    drawn = [r for r in rows if r.similarity is not None
             and not (getattr(design, "kind", "") == "corpus" and r.stratum == design.strata[-1])]
    if not drawn:
        return
    names = np.asarray(design.strata, dtype=object)[design.stratum_index([r.similarity for r in drawn])]
    for r, name in zip(drawn, names):
        if r.stratum != name:
            raise SampleError(f"stratum {r.stratum!r} contradicts the row's similarity {r.similarity:g} "
                              f"(stratum {name!r})", file=r.file, line=r.line, field="stratum")


def _check_corpus_parts(directory: Path, design, table: Table, rows: list[PairRow]) -> None:
    """A corpus draw's design.json, candidates.npy, pairs.csv and documents against each other
    (:func:`calib.reading.drawn_check.check_corpus_set`), before any estimate."""
    ids = [as_id(rec.get("id"), table.file, line, "id") for rec, line in zip(table.records, table.lines)]
    texts = [rec.get("text") for rec in table.records]
    pairs = {"id_a": [r.a for r in rows], "id_b": [r.b for r in rows], "stratum": [r.stratum for r in rows],
             "similarity": [np.nan if r.similarity is None else r.similarity for r in rows]}
    try:
        cand = read_candidates(directory / CANDIDATES) if os.path.lexists(directory / CANDIDATES) else None
        check_corpus_set(design, ids, texts, pairs, cand, lines=[r.line for r in rows])
    except DrawnSetError as exc:
        raise SampleError(exc.detail, file=Path(exc.file).name, line=exc.line, field=exc.field) from None


def _read_design(directory: Path):
    """The folder's design.json (a drawn set, :mod:`calib.reading.design`), or None."""
    if not os.path.lexists(directory / "design.json"):
        return None
    try:
        return load_design(decode_text(read_bytes(directory / "design.json", directory), "design.json"))
    except (ValueError, KeyError, TypeError) as exc:
        if isinstance(exc, SampleError):
            raise
        raise SampleError(f"not a calib draw design ({exc})", file="design.json") from None


def _inline_docs_and_pairs(table: Table, missing: frozenset[str] = missing_set()) -> tuple[Docs, list[PairRow]]:
    """Documents and pairs of an inline-pair JSONL file (docs deduplicated by id)."""
    require_columns(table, ("id_a", "text_a", "id_b", "text_b", "label"))
    docs = Docs([], {}, set(), [])
    texts: dict[str, str] = {}
    rows = []
    for rec, line in zip(table.records, table.lines):
        ids = []
        for side in ("a", "b"):
            did = as_id(rec.get(f"id_{side}"), table.file, line, f"id_{side}")
            text = as_text(rec.get(f"text_{side}"), table.file, line, f"text_{side}")
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
        rows.append(PairRow(ids[0], ids[1], as_label(rec.get("label"), table.file, line, missing=missing),
                            as_category(rec.get("category")), table.file, line))
    return docs, rows
