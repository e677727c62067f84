"""Reading input files safely: one opener, one line splitter, one JSON-record parser.

The sample loaders (:mod:`calib.reading.samples`) and ``calib apply``'s corpus reader
(:mod:`calib.apply`) both read through this module, so they agree on what a
file may be and on every byte of it:

* :func:`open_input` opens only regular files (a FIFO named ``docs.jsonl``
  is refused at once instead of blocking forever: the open is non-blocking,
  the type is checked on the open descriptor, so nothing can swap the file
  between check and read). With ``root`` given the file must resolve inside
  that folder (no ``..``, no absolute name, no link leaving it) and have one
  hard link (a hard link is a second name for a file that may live anywhere).
* :func:`iter_lines` splits on ``\\r\\n``, ``\\r`` and ``\\n`` (CSV's universal
  newlines; JSON strings cannot hold a raw CR or LF) and numbers lines from 1; a
  line longer than :data:`calib.base.inputs.LINE_MAX_BYTES` is refused unread.
* :func:`decode_line`: strict UTF-8, a BOM dropped on the first line only.
* :func:`parse_record`: one JSON object per line; duplicate keys, lone
  surrogates (``"\\ud800"`` escapes), integers past Python's digit limit and
  nesting past the recursion limit are errors naming the file and line.
* :data:`MISSING_VALUES` and :func:`is_missing`: the spellings of "no value"
  in group, label and slice columns.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import BinaryIO, Iterator

import pandas as pd

from calib.base.inputs import LINE_MAX_BYTES, InputError, open_regular

# What R (write.csv: NA), pandas (nan), SQL exports (NULL), Python (None) and
# spreadsheets (N/A) write for a missing value; "" (an empty CSV cell) too.
MISSING_VALUES = ("", "NA", "nan", "NULL", "None", "N/A")


class SampleError(ValueError):
    """A sample file is invalid. ``file`` is the file's name, ``line`` the
    1-based line (JSONL; CSV counting the header as line 1) or row (Parquet),
    ``field`` the column; any of them may be None."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.file, self.line, self.field, self.detail = file, line, field, message
        where = file or ""
        if line is not None:
            where += f"{' ' if where else ''}line {line}"
        if field is not None:
            where += f"{', ' if where else ''}field {field!r}"
        super().__init__(f"{where}: {message}" if where else message)


class LineTooLong(SampleError):
    """A line past :data:`calib.base.inputs.LINE_MAX_BYTES`, refused before it is read whole."""


# ---------------------------------------------------------------------------
# Opening
# ---------------------------------------------------------------------------

def confined_path(root, name) -> Path:
    """``root / name`` after checking that ``name`` is a plain relative path
    whose resolved target (symlinks followed) stays inside ``root``."""
    root = Path(root)
    rel = Path(str(name))
    label = str(name)
    if rel.is_absolute() or str(name).startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", str(name)):
        raise SampleError(f"absolute path {label!r}: files must be named relative to the sample folder",
                          file=label)
    if ".." in rel.parts or ".." in str(name).split("\\"):
        raise SampleError(f"path {label!r} leaves the sample folder ('..')", file=label)
    target = (root / rel).resolve()
    base = root.resolve()
    if target != base and not target.is_relative_to(base):
        raise SampleError(f"{label!r} resolves to {target}, outside the sample folder {base}", file=label)
    return root / rel


def open_input(path, *, root=None, single_link: bool | None = None, max_bytes: int | None = None) -> BinaryIO:
    """Open a regular file for binary reading (see the module docstring), through the one
    input check :func:`calib.base.inputs.open_regular` (non-blocking open, ``fstat`` of the
    descriptor, ``max_bytes`` when given).

    ``root``: the folder the file must stay inside (``path`` is then taken
    relative to it unless already under it). ``single_link`` (default: when
    ``root`` is given) refuses files with more than one hard link.
    """
    path = Path(path)
    if root is not None:
        # path is root / name: check name (lexically, then with links resolved)
        path = confined_path(root, os.path.relpath(path, root))
    if single_link is None:
        single_link = root is not None
    try:
        return open_regular(path, max_bytes=max_bytes, single_link=single_link, what="a sample or corpus file")
    except InputError as exc:
        raise SampleError(exc.detail, file=exc.file) from None


def read_input(path, *, root=None, single_link: bool | None = None) -> bytes:
    """The whole content of a file opened with :func:`open_input`."""
    with open_input(path, root=root, single_link=single_link) as fh:
        try:
            return fh.read()
        except OSError as exc:
            raise SampleError(f"cannot read ({exc.strerror or exc})", file=Path(path).name) from None


# ---------------------------------------------------------------------------
# Lines and decoding
# ---------------------------------------------------------------------------

BOM = b"\xef\xbb\xbf"


def iter_lines(fh, file: str | None = None, max_bytes: int = LINE_MAX_BYTES) -> Iterator[tuple[int, int, bytes]]:
    """``(line number, byte offset, content)`` for every line of a binary
    stream; ``\\r\\n``, ``\\r`` and ``\\n`` end a line. Reads one ``\\n``-line at a
    time, at most ``max_bytes`` of it: a longer one (a gzip bomb's single line of
    gigabytes) is a :class:`SampleError` naming ``file`` and the line, raised before
    it is read whole, so memory stays bounded by ``max_bytes``."""
    no, pos = 0, 0
    while raw := fh.readline(max_bytes + 1):
        if len(raw) > max_bytes and not raw.endswith(b"\n"):
            raise LineTooLong(f"line longer than {max_bytes:,} bytes (the most one line, a document with its fields, "
                              "may hold); refused before reading it whole", file=file, line=no + 1)
        content = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1] if raw.endswith(b"\n") else raw
        start = pos
        for piece in content.split(b"\r"):
            no += 1
            yield no, start, piece
            start += len(piece) + 1
        pos += len(raw)


def line_of(data: bytes, offset: int) -> int:
    """1-based line of a byte offset, counting "\\r\\n", "\\r" and "\\n" as line ends."""
    head = data[:offset]
    return head.count(b"\n") + head.count(b"\r") - head.count(b"\r\n") + 1


def decode_line(raw: bytes, file: str, line: int, offset: int = 0) -> str:
    """Strict UTF-8; a BOM is dropped when ``offset`` is 0 (the file's start)."""
    if offset == 0 and raw.startswith(BOM):
        raw, offset = raw[3:], 3
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SampleError(f"not valid UTF-8: byte 0x{raw[e.start]:02x} at byte offset {offset + e.start} "
                          f"({e.reason})", file=file, line=line) from None


def decode_text(data: bytes, file: str) -> str:
    """A whole file as strict UTF-8 (a leading BOM dropped); errors name the line."""
    body, skip = (data[3:], 3) if data.startswith(BOM) else (data, 0)
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as e:
        at = skip + e.start
        raise SampleError(f"not valid UTF-8: byte 0x{data[at]:02x} at byte offset {at} ({e.reason})",
                          file=file, line=line_of(data, at)) from None


# ---------------------------------------------------------------------------
# JSON
# ---------------------------------------------------------------------------

_SURROGATE_RE = re.compile("[\ud800-\udfff]")


class _DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def json_message(exc: json.JSONDecodeError) -> str:
    """The decoder's message without its dangling "at" ("Invalid control character at"): callers add where."""
    return exc.msg.removesuffix(" at")


def loads_strict(text: str, file: str, line: int | None = None):
    """``json.loads`` whose every failure (bad syntax, a duplicate key, an
    integer of thousands of digits, nesting past the recursion limit) is a
    :class:`SampleError` naming the file and line."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except _DuplicateKey as e:
        raise SampleError(f"duplicate key {e.key!r} in one JSON object (which value is meant is ambiguous)",
                          file=file, line=line, field=e.key) from None
    except json.JSONDecodeError as e:
        at = line if line is not None else e.lineno
        raise SampleError(f"invalid JSON ({json_message(e)} at column {e.colno})", file=file, line=at) from None
    except RecursionError:
        raise SampleError("invalid JSON (nested too deeply)", file=file, line=line) from None
    except ValueError as e:  # e.g. an integer past sys.get_int_max_str_digits()
        raise SampleError(f"invalid JSON ({str(e).split(';')[0][:100]})", file=file, line=line) from None


def parse_record(text: str, file: str, line: int) -> dict:
    """One JSONL line as a dict of a JSON object; see :func:`loads_strict`."""
    rec = loads_strict(text, file, line)
    if not isinstance(rec, dict):
        raise SampleError(f"expected a JSON object, got {type(rec).__name__}", file=file, line=line)
    for key, value in rec.items():
        # "\ud800" escapes decode to lone surrogates, which no UTF-8 file or Arrow column can hold
        bad = _SURROGATE_RE.search(key) or (isinstance(value, str) and _SURROGATE_RE.search(value))
        if bad:
            raise SampleError(f"unpaired surrogate \\u{ord(bad.group()):04x} (not valid Unicode)",
                              file=file, line=line, field=key)
    return rec


def iter_records(fh, file: str) -> Iterator[tuple[int, dict]]:
    """``(line, record)`` for every non-blank line of a JSONL binary stream."""
    for no, offset, raw in iter_lines(fh, file):
        s = decode_line(raw, file, no, offset).strip()
        if s:
            yield no, parse_record(s, file, no)


# ---------------------------------------------------------------------------
# Missing values
# ---------------------------------------------------------------------------

def missing_set(missing=MISSING_VALUES) -> frozenset[str]:
    """The missing-value spellings compared case-insensitively ("" always included)."""
    return frozenset(m.strip().lower() for m in missing) | {""}


_DEFAULT_MISSING = missing_set()


def is_missing(v, missing: frozenset[str] = _DEFAULT_MISSING) -> bool:
    """None, NA, NaN, or a string that is one of ``missing`` (a
    :func:`missing_set`) once stripped and lowercased."""
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return True
    if isinstance(v, str):
        return v.strip().lower() in missing
    return False
