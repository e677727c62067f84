"""Reading a corpus for apply: JSONL or Parquet, batch by batch, with the loaders' rules.

One job: turn a corpus file into batches of ``(ids, texts, extra fields)`` in
file order, or one clear error naming file, line (or row) and field. JSONL is
read line by line through the sample loader's decoder
(:func:`calib.reading.files.iter_records`: strict UTF-8, duplicate keys, lone
surrogates, huge integers, deep nesting); Parquet with
``ParquetFile.iter_batches``. Ids follow the sample loader's rule (text, or an
integer: 1 and 1.0 are "1") so that a corpus and its labeled sample name
documents alike. The local engine (:mod:`calib.production.engines.local`), the
Spark engine's per-partition code and the labeling draw share these rules.
"""

from __future__ import annotations

import gzip
from contextlib import closing
from pathlib import Path
from typing import Iterator

from calib.reading.files import SampleError, iter_records, open_input
from calib.reading.records import as_id as sample_id


class ApplyError(ValueError):
    """Bad corpus or configuration for apply: one readable line."""



def _kind(path: Path) -> str:
    name = path.name.lower()
    if name.endswith((".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz", ".json")):
        return "jsonl"
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    raise ApplyError(f"{path}: unknown corpus format (use .jsonl, .jsonl.gz or .parquet)")


def _open_binary(path: Path):
    """The corpus through the loaders' opener (regular files only: a FIFO is
    refused, not waited on), gunzipped when it ends in .gz."""
    try:
        fh = open_input(path, single_link=False)
    except SampleError as exc:
        raise ApplyError(f"{path}: {exc.detail}") from None
    return gzip.GzipFile(fileobj=fh, mode="rb") if path.name.lower().endswith(".gz") else fh


def _records(path: Path) -> Iterator[tuple[int, dict]]:
    """``(line, record)`` of a JSONL corpus, decoded and checked exactly as
    the sample loader does (:func:`calib.reading.files.iter_records`: BOM, strict
    UTF-8, duplicate keys, lone surrogates, huge integers, deep nesting)."""
    try:
        with _open_binary(path) as fh:
            yield from iter_records(fh, path.name)
    except SampleError as exc:
        raise _apply_error(path, exc) from None
    except (OSError, EOFError) as exc:  # gzip: truncated or not gzip
        raise ApplyError(f"{path}: cannot read ({exc})") from None


def _apply_error(path, exc: SampleError) -> ApplyError:
    where = f"{path}:{exc.line}" if exc.line is not None else f"{path}"
    return ApplyError(f"{where}: field {exc.field!r}: {exc.detail}" if exc.field else f"{where}: {exc.detail}")


def _as_id(v, where: str, field: str) -> str:
    """The loaders' id rule (calib.reading.samples), so a corpus and its labeled
    sample name documents alike: text, or an integer (1 and 1.0 are "1")."""
    try:
        return sample_id(v, None, None, None)
    except SampleError as exc:
        raise ApplyError(f"{where}: field {field!r}: {exc.detail}") from None


def _as_text(v, where: str, field: str) -> str:
    if not isinstance(v, str):
        raise ApplyError(f"{where}: field {field!r} must be a string, got {type(v).__name__}")
    return v


def corpus_digest(path) -> str:
    """sha256 of the corpus file's bytes (as stored: a .gz file's compressed bytes)."""
    import hashlib
    path = Path(path)
    h = hashlib.sha256()
    try:
        with open_input(path, single_link=False) as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
    except SampleError as exc:
        raise ApplyError(f"{path}: {exc.detail}") from None
    except OSError as exc:
        raise ApplyError(f"{path}: cannot read ({exc})") from None
    return h.hexdigest()


def count_documents(path) -> int:
    """Number of documents (non-blank JSONL lines, or Parquet rows); JSONL
    lines are parsed and checked (see :func:`_records`)."""
    path = Path(path)
    if not path.exists():
        raise ApplyError(f"{path}: no such file")
    if _kind(path) == "parquet":
        import pyarrow.parquet as pq
        fh = _open_binary(path)
        try:
            return pq.ParquetFile(fh).metadata.num_rows
        except Exception as exc:  # pyarrow raises several types
            raise ApplyError(f"{path}: not a readable Parquet file ({exc})")
    # every record is parsed and checked here, in the cheap first pass, so a
    # bad line stops the run before any signature is computed
    return sum(1 for _ in _records(path))


def iter_corpus(path, *, batch_size: int = 10_000, id_field: str = "id", text_field: str = "text",
                extra_fields: tuple[str, ...] = ()) -> Iterator[tuple[list[str], list[str], dict]]:
    """Batches ``(ids, texts, extras)`` of at most ``batch_size`` documents, in file order."""
    path = Path(path)
    if not path.exists():
        raise ApplyError(f"{path}: no such file")
    if batch_size < 1:
        raise ApplyError(f"batch size must be >= 1, got {batch_size}")
    if _kind(path) == "parquet":
        yield from _iter_parquet(path, batch_size, id_field, text_field, extra_fields)
    else:
        yield from _iter_jsonl(path, batch_size, id_field, text_field, extra_fields)


def parse_jsonl_record(rec: dict, where: str, id_field: str, text_field: str,
                       extra_fields: tuple[str, ...] = ()) -> tuple[str, str, list]:
    """One record already parsed by :mod:`calib.reading.files` -> (id, text, extra
    values as str or None); errors name ``where`` (shared with the Spark engine)."""
    for f in (id_field, text_field):
        if f not in rec:
            raise ApplyError(f"{where}: missing field {f!r} (fields: {', '.join(sorted(rec)) or 'none'})")
    return (_as_id(rec[id_field], where, id_field), _as_text(rec[text_field], where, text_field),
            [None if rec.get(f) is None else str(rec.get(f)) for f in extra_fields])


def _iter_jsonl(path, batch_size, id_field, text_field, extra_fields):
    ids, texts, extras = [], [], {f: [] for f in extra_fields}
    for lineno, rec in _records(path):
        doc_id, text, values = parse_jsonl_record(rec, f"{path}:{lineno}", id_field, text_field, extra_fields)
        ids.append(doc_id)
        texts.append(text)
        for f, v in zip(extra_fields, values):
            extras[f].append(v)
        if len(ids) >= batch_size:
            yield ids, texts, extras
            ids, texts, extras = [], [], {f: [] for f in extra_fields}
    if ids:
        yield ids, texts, extras


def _iter_parquet(path, batch_size, id_field, text_field, extra_fields):
    import pyarrow.parquet as pq
    fh = _open_binary(path)
    try:
        pf = pq.ParquetFile(fh)
    except Exception as exc:
        raise ApplyError(f"{path}: not a readable Parquet file ({exc})")
    names = pf.schema_arrow.names
    for f in (id_field, text_field, *extra_fields):
        if names.count(f) > 1:  # pyarrow would hand over the last one without a word
            raise ApplyError(f"{path}: duplicate column {f!r} (columns {', '.join(str(k + 1) for k, c in enumerate(names) if c == f)}): "
                             "which one is meant is ambiguous")
    for f in (id_field, text_field):
        if f not in names:
            raise ApplyError(f"{path}: missing column {f!r} (columns: {', '.join(names)})")
    cols = [id_field, text_field] + [f for f in extra_fields if f in names]
    row = 0
    for batch in pf.iter_batches(batch_size=batch_size, columns=cols):
        d = batch.to_pydict()
        ids = [_as_id(v, f"{path}: row {row + k}", id_field) for k, v in enumerate(d[id_field])]
        texts = [_as_text(v, f"{path}: row {row + k}", text_field) for k, v in enumerate(d[text_field])]
        extras = {f: [None if v is None else str(v) for v in d[f]] if f in d else [None] * len(ids)
                  for f in extra_fields}
        row += len(ids)
        yield ids, texts, extras


def check_fields(path, fields: tuple[str, ...], *, id_field: str = "id", text_field: str = "text",
                 option: str = "--keep-fields") -> None:
    """Refuse, before any work, fields to keep that the corpus does not have (Parquet: its
    columns; JSONL: its first record) or that are the id or text field."""
    path = Path(path)
    twice = sorted({f for f in fields if fields.count(f) > 1})
    if twice:
        raise ApplyError(f"--keep-fields: {twice[0]!r} is named twice (each field once)")
    for f in fields:
        if f in (id_field, text_field):
            raise ApplyError(f"--keep-fields: {f!r} is the {'id' if f == id_field else 'text'} field; the manifest "
                             "has doc_id already and never copies texts")
    if not fields:
        return
    if not path.is_file():
        raise ApplyError(f"{path}: no such file")
    if _kind(path) == "parquet":
        import pyarrow.parquet as pq
        try:
            names = pq.ParquetFile(path).schema_arrow.names
        except Exception as exc:  # pyarrow raises several types
            raise ApplyError(f"{path}: not a readable Parquet file ({exc})")
        where = f"{path}"
    else:
        names, where = [], f"{path}"
        with closing(_records(path)) as records:
            for lineno, rec in records:  # the first record: valid, and its fields are the corpus's
                parse_jsonl_record(rec, f"{path}:{lineno}", id_field, text_field)
                names, where = list(rec), f"{path}:{lineno}"
                break
    missing = [f for f in fields if f not in names]
    if missing:
        raise ApplyError(f"{where}: {option}: no field {missing[0]!r} (fields: {', '.join(map(str, names))})")
