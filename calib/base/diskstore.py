"""A folder of numpy files kept across runs: written atomically, read back only when trusted, bounded in size.

An entry is a dict of named arrays under a name (its file) and a key (the full text of what it was
computed from, stored inside it, so two keys whose names collide never read each other). Its file is

    MAGIC  sha256-of-the-rest (64 hex digits)  '\\n'  an .npz of the arrays and the key

read only under :mod:`calib.base.cache`'s trust rule (the folder and the file checks), then only when
the sha256 matches the bytes and the key matches the one asked for. A file that fails any check is
named once on stderr and left for the entry's next write to replace: what it held is recomputed,
never trusted.

The folders under one root hold at most :func:`cap_bytes` bytes: after a write that passes it the
files least recently used (read or written: a read touches the file's mtime) are removed until the
root holds 90% of the cap. ``CALIB_CACHE=off`` turns every store off (:func:`enabled`).
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from calib.base.cache import ADVICE, file_problem, folder_problem, make_folder, open_file, publish

MAGIC = b"calib-store 1 "
DEFAULT_CAP = 2 << 30  # bytes
_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SAID: set[str] = set()  # refusals already named on stderr by this process


def enabled(default: bool = True) -> bool:
    """``CALIB_CACHE``: 'off' (or 0, no, false) turns the stores off, 'on' on; unset: ``default``."""
    v = os.environ.get("CALIB_CACHE", "").strip().lower()
    if v in ("off", "0", "no", "false"):
        return False
    return True if v in ("on", "1", "yes", "true") else default


def cap_bytes() -> int:
    """``CALIB_CACHE_MAX`` (bytes, or with a suffix: 500M, 2G), else 2 GiB. A bad value is an error."""
    v = os.environ.get("CALIB_CACHE_MAX", "").strip().lower().removesuffix("ib").removesuffix("b")
    if not v:
        return DEFAULT_CAP
    try:
        n = float(v[:-1]) * _UNITS[v[-1]] if v[-1] in _UNITS else float(v)
    except ValueError:
        n = -1
    if not n >= 0:
        raise ValueError(f"CALIB_CACHE_MAX={os.environ['CALIB_CACHE_MAX']!r}: a size in bytes (500M, 2G) expected")
    return int(n)


def say_once(path: Path, why: str) -> None:
    if str(path) not in _SAID:
        _SAID.add(str(path))
        print(f"calib: not using the cached {path}: {why}; recomputing it ({ADVICE})", file=sys.stderr)


def pack(key: str, arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, __key__=np.array(key), **arrays)
    payload = buf.getvalue()
    return MAGIC + hashlib.sha256(payload).hexdigest().encode("ascii") + b"\n" + payload


def unpack(data: bytes, key: str) -> tuple[dict[str, np.ndarray] | None, str]:
    """(the arrays of a file's bytes, "") when they are whole and hold ``key``; else (None, why not)."""
    head = len(MAGIC) + 65
    if not data.startswith(MAGIC) or len(data) < head or data[head - 1:head] != b"\n":
        return None, "not a file calib wrote"
    if hashlib.sha256(data[head:]).hexdigest().encode("ascii") != data[len(MAGIC):head - 1]:
        return None, "its bytes differ from the sha256 they were written with (truncated or changed)"
    try:
        with np.load(io.BytesIO(data[head:]), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None, "not a file calib wrote"
    if str(arrays.pop("__key__", "")) != key:
        return None, "it holds another entry"
    return arrays, ""


class ArrayStore:
    """The entries of one folder (``root / name``), the size of everything under ``root`` bounded."""

    def __init__(self, root: Path, name: str):
        self.root, self.folder = root, root / name
        self._problem: str | None = None
        self._size: int | None = None  # bytes under root, counted at the first write

    def _folder_ok(self) -> bool:
        if self._problem is None:
            try:
                make_folder(self.root)
                self._problem = folder_problem(make_folder(self.folder)) or folder_problem(os.stat(self.root)) or ""
            except OSError as exc:
                self._problem = f"cannot be made ({exc.strerror or exc})"
            if self._problem:
                say_once(self.folder, f"the folder {self._problem}")
        return not self._problem

    def get(self, name: str, key: str) -> dict[str, np.ndarray] | None:
        """The entry ``name`` when it is there, trusted and holds ``key``; else None (a refusal said once)."""
        if not self._folder_ok():
            return None
        path = self.folder / name
        try:
            fd = open_file(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            say_once(path, f"it cannot be opened ({exc.strerror or exc}; a link?)")
            return None
        try:
            why = file_problem(fd, path)
            if not why and os.fstat(fd).st_size > cap_bytes():
                why = "it is larger than the cache may hold"
            if why:
                say_once(path, why)
                return None
            with os.fdopen(os.dup(fd), "rb") as fh:
                data = fh.read()
        finally:
            os.close(fd)
        arrays, why = unpack(data, key)
        if arrays is None:
            say_once(path, why)
            return None
        try:
            os.utime(path)  # least recently used goes first
        except OSError:
            pass
        return arrays

    def put(self, name: str, key: str, arrays: dict[str, np.ndarray]) -> None:
        """Write the entry ``name`` (a temp file, then a rename), then keep the root within the cap.
        A write that fails (a full or read-only disk) leaves the entry uncached."""
        if not self._folder_ok():
            return
        data = pack(key, arrays)
        path = self.folder / name
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.pid{os.getpid()}-", suffix=".tmp", dir=self.folder)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                publish(Path(tmp), path)
            finally:
                Path(tmp).unlink(missing_ok=True)
        except OSError:
            return
        if self._size is None:
            self._size = sum(size for _, size, _ in _files(self.root))
        else:
            self._size += len(data)
        if self._size > cap_bytes():
            self._size = evict(self.root, int(0.9 * cap_bytes()))


def _files(root: Path) -> list[tuple[float, int, Path]]:
    """(mtime, size, path) of every entry file in the folders of ``root``."""
    out = []
    for folder in (p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
        for p in folder.iterdir():
            if p.name.startswith("."):  # another process's temp file, renamed into place in a moment
                continue
            try:
                st = p.lstat()
            except OSError:
                continue
            out.append((st.st_mtime, st.st_size, p))
    return out


def evict(root: Path, keep: int) -> int:
    """Remove the least recently used files under ``root`` until they hold at most ``keep`` bytes; the bytes left."""
    files = sorted(_files(root), key=lambda f: f[0])
    size = sum(s for _, s, _ in files)
    for _, s, p in files:
        if size <= keep:
            break
        try:
            p.unlink()
            size -= s
        except OSError:
            pass
    return size
