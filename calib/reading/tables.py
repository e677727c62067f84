"""Sample files as tables of records: JSONL, CSV and Parquet read into one shape.

Each reader gives a :class:`Table`: the file's records as dicts of Python
values with their line numbers (CSV: every value a string), its columns in
order. Every file is opened through :func:`calib.reading.files.read_input`
(a regular file with one link, inside the sample folder); a duplicate column,
a malformed CSV row or an unreadable Parquet file is a :class:`SampleError`
naming the file and line.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from calib.reading.files import SampleError, decode_text, iter_records, read_input

DOC_EXTENSIONS = (".jsonl", ".csv", ".parquet")


@dataclass
class Table:
    """Raw records of one file: dicts of Python values plus their line numbers."""

    file: str
    records: list[dict]
    lines: list[int]
    columns: list[str]
    typed: bool  # False for CSV (every value is a string)


# ---------------------------------------------------------------------------
# Reading files into records
# ---------------------------------------------------------------------------

def read_bytes(path: Path, root: Path | None = None) -> bytes:
    """The file's bytes: a regular file with one link, inside ``root`` (default: its own folder)."""
    return read_input(path, root=root if root is not None else path.parent)


def _read_jsonl(path: Path, root: Path | None = None) -> Table:
    data = read_bytes(path, root)
    decode_text(data, path.name)  # whole-file check names the first bad byte
    records, lines, columns = [], [], {}
    for no, rec in iter_records(io.BytesIO(data), path.name):
        records.append(rec)
        lines.append(no)
        columns.update(dict.fromkeys(rec))
    return Table(path.name, records, lines, list(columns), typed=True)


def _check_unique_columns(names: list[str], file: str, line: int | None) -> None:
    seen: dict[str, int] = {}
    for k, c in enumerate(names, start=1):
        if c in seen:
            raise SampleError(f"duplicate column {c!r} (columns {seen[c]} and {k}): which one is meant is ambiguous",
                              file=file, line=line, field=c)
        seen[c] = k


def _read_csv(path: Path, root: Path | None = None) -> Table:
    text = decode_text(read_bytes(path, root), path.name)
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
    return Table(path.name, records, lines, header, typed=False)


def _read_parquet(path: Path, root: Path | None = None) -> Table:
    import pyarrow as pa
    import pyarrow.parquet as pq
    data = read_bytes(path, root)
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
    return Table(path.name, records, list(range(1, len(df) + 1)), [str(c) for c in df.columns], typed=True)


def read_table(path: Path, root: Path | None = None) -> Table:
    ext = path.suffix.lower()
    readers = {".jsonl": _read_jsonl, ".csv": _read_csv, ".parquet": _read_parquet}
    if ext not in readers:
        raise SampleError(f"unknown extension {ext or '(none)'!r}; expected one of .jsonl, .csv, .parquet",
                          file=path.name)
    return readers[ext](path, root)


def require_columns(table: Table, columns: tuple[str, ...]) -> None:
    for c in columns:
        if c not in table.columns:
            raise SampleError(f"missing column {c!r} (columns: {', '.join(table.columns) or 'none'})",
                              file=table.file, line=1 if not table.typed else None, field=c)
