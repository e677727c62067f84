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
import zlib
from contextlib import closing
from pathlib import Path
from typing import Iterator

from calib.reading.files import LineTooLong, SampleError, iter_records, open_input
from calib.reading.records import MAX_ID, as_id as sample_id


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
    except LineTooLong as exc:  # said at once: finding a corrupt byte would decompress the whole bomb
        raise _apply_error(path, exc) from None
    except SampleError as exc:  # in a .gz file, maybe corrupt deflate data decoded to bytes that are not JSON
        raise _corrupt_gzip(path) or _apply_error(path, exc) from None
    except (OSError, EOFError) as exc:  # gzip: truncated, not gzip, or a failed CRC
        raise _corrupt_gzip(path) or ApplyError(f"{path}: cannot read ({exc})") from None
    except zlib.error as exc:  # gzip: bytes changed inside the deflate stream
        raise _corrupt_gzip(path) or ApplyError(f"{path}: corrupt gzip data ({exc})") from None


def _corrupt_gzip(path: Path) -> ApplyError | None:
    """The one message for a .gz file whose deflate stream (or its CRC) fails, with the compressed
    byte it fails at: changed bytes often decode to other bytes before zlib notices, so a line that
    is not JSON (or not UTF-8, or not a record) in a .gz file is first checked for this. None when the
    stream reads whole (the error is the line's) or the file is not gzipped."""
    if not path.name.lower().endswith(".gz"):
        return None
    try:
        with open_input(path, single_link=False) as fh:
            if fh.read(2) != b"\x1f\x8b":  # not gzip at all: gzip's own "Not a gzipped file" says it
                return None
    except (SampleError, OSError):
        return None
    at, reason = corrupt_offset(path, why=True)
    if at is None:
        return None
    return ApplyError(f"{path}: corrupt gzip data at compressed byte {at:,} ({reason})")


_OUT = 1 << 20  # bytes a corrupt-offset scan decompresses at a time (a bomb expands 1,000-fold)


def _feed_bounded(d, data: bytes):
    """``data`` through a gzip decompressor, a new one per member, at most ``_OUT`` output bytes at a
    time (each dropped); returns the decompressor to go on with."""
    while data:
        out = d.decompress(data, _OUT)  # after a member's end, the bytes go to unused_data
        while (len(out) == _OUT or d.unconsumed_tail) and not d.eof:  # more output is waiting
            out = d.decompress(d.unconsumed_tail, _OUT)
        if not (d.eof and d.unused_data):
            break
        data = d.unused_data  # the next member
        d = zlib.decompressobj(31)
    return d


def corrupt_offset(path, chunk: int = 8192, why: bool = False):
    """The offset of the first byte of a .gz file its deflate stream fails at (None if it reads whole);
    with ``why``, ``(offset, zlib's reason)``. Decompressed bytes are dropped as they come: memory stays
    bounded whatever the file expands to. A stream that ends inside a member (truncated) fails at its end."""
    try:
        fh = open_input(Path(path), single_link=False)
    except SampleError:
        return (None, "") if why else None
    at, reason = None, ""
    with fh:
        d, pos = zlib.decompressobj(31), 0
        while data := fh.read(chunk):
            saved = d.copy()
            try:
                d = _feed_bounded(d, data)
            except zlib.error as exc:
                d, reason = saved, str(exc)
                for k in range(len(data)):  # again byte by byte, from the state before this chunk
                    try:
                        d = _feed_bounded(d, data[k:k + 1])
                    except zlib.error:
                        at = pos + k
                        break
                else:
                    at = pos + len(data)
                break
            pos += len(data)
        else:
            if pos and not d.eof:
                at, reason = pos, "truncated: the stream ends inside a member"
    return (at, reason) if why else at


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


def record_places(path, positions) -> list[str]:
    """Where the documents at ``positions`` (0-based, in file order) are, as the reader's messages
    name them: ``line N`` of a JSONL file (1-based, blank lines counted), ``row N`` of a Parquet file."""
    path = Path(path)
    if _kind(path) == "parquet":
        return [f"row {p}" for p in positions]
    want = {int(p) for p in positions}
    found: dict = {}
    with closing(_records(path)) as records:
        for k, (lineno, _) in enumerate(records):
            if k in want:
                found[k] = lineno
                if len(found) == len(want):
                    break
    return [f"line {found[int(p)]}" if int(p) in found else f"document {int(p) + 1}" for p in positions]


def duplicate_id(corpus, doc_id: str, first: int | None, second: int, **read) -> ApplyError:
    """The one message for an id two documents share (0-based places ``first``, ``second`` in file
    order; ``first`` None: found by reading the file again by ``read``'s fields), named by their
    lines (a local JSONL file) or rows; a file on object storage by its documents counted from 1."""
    if first is None:
        first = next((t for t, x in enumerate(x for ids, _, _ in iter_corpus(corpus, **read) for x in ids)
                      if x == doc_id), second)
    a, b = f"document {first + 1}", f"document {second + 1}"
    if "://" not in str(corpus) and Path(corpus).is_file():
        try:
            a, b = record_places(corpus, (first, second))
        except ApplyError:  # the file changed since: its documents' places are the best left
            pass
    both = f"{a.split()[0]}s {a.split()[1]} and {b.split()[1]}" if a.split()[0] == b.split()[0] else f"{a} and {b}"
    return ApplyError(f"{corpus}: duplicate document id {doc_id!r} ({both}); ids must be unique")


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
                extra_fields: tuple[str, ...] = (),
                drawing: bool = False) -> Iterator[tuple[list[str], list[str], dict]]:
    """Batches ``(ids, texts, extras)`` of at most ``batch_size`` documents, in file order.
    ``drawing``: the documents of a draw (:func:`check_drawn_values`)."""
    path = Path(path)
    if not path.exists():
        raise ApplyError(f"{path}: no such file")
    if batch_size < 1:
        raise ApplyError(f"batch size must be >= 1, got {batch_size}")
    if _kind(path) == "parquet":
        yield from _iter_parquet(path, batch_size, id_field, text_field, extra_fields, drawing)
    else:
        yield from _iter_jsonl(path, batch_size, id_field, text_field, extra_fields, drawing)


MISSING_TEXT = "(missing)"  # how the slice tables name "no value" (calib.estimates.slices.MISSING)


def unreviewable_id(doc_id: str) -> str | None:
    """Why a review store could not hold a decision on ``doc_id`` (None when it can): the stores'
    own bounds (:mod:`calib.review.schema`), checked when a document is drawn."""
    if "\x00" in doc_id:
        return "the id holds a NUL character (\\x00), which a review store does not hold"
    if len(doc_id) > MAX_ID:
        return f"the id is {len(doc_id):,} characters, more than a review store keeps ({MAX_ID:,})"
    return None


def check_drawn_values(where: str, id_field: str, doc_id: str, extra_fields, values) -> None:
    """A drawn document: an id a review store holds (no NUL, at most :data:`calib.reading.records.MAX_ID`
    characters: labeling it could never be recorded), and slice values that are one value each (not a
    list or object) other than the text ``(missing)``, which names the documents without a value."""
    why = unreviewable_id(doc_id)
    if why:
        raise ApplyError(f"{where}: field {id_field!r}: {why}: its pairs could never be labeled")
    for f, v in zip(extra_fields, values):
        if isinstance(v, (list, dict)):
            kind = "a list" if isinstance(v, list) else "an object"
            raise ApplyError(f"{where}: field {f!r}: {kind}, not one value: a slice field holds one text or number "
                             "per document")
        if v == MISSING_TEXT:
            raise ApplyError(f"{where}: field {f!r}: the text {MISSING_TEXT!r} names the documents without a value; "
                             "give this value another name (or leave the field out)")


def parse_jsonl_record(rec: dict, where: str, id_field: str, text_field: str,
                       extra_fields: tuple[str, ...] = (), drawing: bool = False) -> tuple[str, str, list]:
    """One record already parsed by :mod:`calib.reading.files` -> (id, text, extra
    values as str or None); errors name ``where`` (shared with the Spark engine)."""
    for f in (id_field, text_field):
        if f not in rec:
            raise ApplyError(f"{where}: missing field {f!r} (fields: {', '.join(sorted(rec)) or 'none'})")
    doc_id = _as_id(rec[id_field], where, id_field)
    if drawing:
        check_drawn_values(where, id_field, doc_id, extra_fields, [rec.get(f) for f in extra_fields])
    return (doc_id, _as_text(rec[text_field], where, text_field),
            [None if rec.get(f) is None else str(rec.get(f)) for f in extra_fields])


def _iter_jsonl(path, batch_size, id_field, text_field, extra_fields, drawing=False):
    ids, texts, extras = [], [], {f: [] for f in extra_fields}
    for lineno, rec in _records(path):
        try:
            doc_id, text, values = parse_jsonl_record(rec, f"{path}:{lineno}", id_field, text_field, extra_fields,
                                                      drawing)
        except ApplyError as exc:  # a record changed by corrupt deflate data is said as such
            raise _corrupt_gzip(path) or exc from None
        ids.append(doc_id)
        texts.append(text)
        for f, v in zip(extra_fields, values):
            extras[f].append(v)
        if len(ids) >= batch_size:
            yield ids, texts, extras
            ids, texts, extras = [], [], {f: [] for f in extra_fields}
    if ids:
        yield ids, texts, extras


def _iter_parquet(path, batch_size, id_field, text_field, extra_fields, drawing=False):
    try:
        yield from _parquet_batches(path, batch_size, id_field, text_field, extra_fields, drawing)
    except (OSError, ValueError) as exc:  # pyarrow: a corrupt page ("Corrupt snappy compressed data.")
        if isinstance(exc, ApplyError):
            raise
        raise ApplyError(f"{path}: not a readable Parquet file ({exc})") from None


def _parquet_batches(path, batch_size, id_field, text_field, extra_fields, drawing):
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
        if drawing:
            for k, doc_id in enumerate(ids):
                check_drawn_values(f"{path}: row {row + k}", id_field, doc_id, extra_fields,
                                   [d[f][k] if f in d else None for f in extra_fields])
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
