"""Atomic file writes: a temp file in the same folder, fsync, ``os.replace``.

An interrupted writer (Ctrl-C, SIGKILL, power loss after fsync) never leaves a
half-written file at the final path; at worst a hidden ``.<name>.*.tmp`` that
:func:`cleanup_temp_files` removes.
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path

import pandas as pd


def write_bytes_atomic(path, data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temp file in the same folder + fsync + rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; the result is as readable as any new file
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it: put it straight back
    os.umask(mask)
    return mask


def write_text_atomic(path, text: str) -> Path:
    return write_bytes_atomic(path, text.encode("utf-8"))


def frame_bytes(frame: pd.DataFrame, suffix: str) -> bytes:
    """The bytes of a table as CSV (UTF-8, ``\\n`` line ends), Parquet or JSONL."""
    suffix = suffix.lower().lstrip(".")
    if suffix == "csv":
        return frame.to_csv(index=False, lineterminator="\n").encode("utf-8")
    if suffix == "parquet":
        buf = io.BytesIO()
        frame.to_parquet(buf, index=False)
        return buf.getvalue()
    if suffix == "jsonl":
        return frame.to_json(orient="records", lines=True, force_ascii=False).encode("utf-8")
    raise ValueError(f"unsupported table format {suffix!r} (use .csv, .parquet or .jsonl)")


def write_frame_atomic(frame: pd.DataFrame, path) -> Path:
    """A table written atomically as CSV, Parquet or JSONL, chosen by the suffix."""
    path = Path(path)
    try:
        data = frame_bytes(frame, path.suffix)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    return write_bytes_atomic(path, data)


def cleanup_temp_files(directory) -> list[Path]:
    """Remove temp files (``.<name>.*.tmp``) an interrupted writer left in ``directory``."""
    removed = []
    d = Path(directory)
    if d.is_dir():
        for p in sorted(d.glob(".*.tmp")):
            p.unlink(missing_ok=True)
            removed.append(p)
    return removed
