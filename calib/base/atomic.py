"""Atomic writes: one file, or a whole output folder as a set.

* One file: a temp file in the same folder, fsync, ``os.replace``. An
  interrupted writer (Ctrl-C, SIGKILL, power loss after fsync) never leaves a
  half-written file at the final path; at worst a hidden
  ``.<name>.pid<N>-*.tmp``, removed by :func:`cleanup_temp_files` (which every
  write calls) once process N is gone.
* A folder (:func:`atomic_folder`: an export, an apply proposal): every file
  is written into a hidden sibling folder ``.<name>.calib-tmp-pid<N>-*``,
  fsynced, and the sibling is swapped with the target in one
  ``renameat2(RENAME_EXCHANGE)`` (Linux; elsewhere two renames, undone by the
  next writer if a kill falls between them). A reader therefore sees the old
  set or the new one, never config.json of one run beside manifest.csv of
  another. A target folder holding files the new set does not write is
  refused rather than replaced: nothing the user put there is deleted.
* Ownership (:func:`claim_output`): a writer holds an exclusive ``flock`` on
  a hidden ``.<name>.calib-lock`` beside its output from before the work
  until the output is in place, so two processes never write one output at
  once: the second is refused in one line (:class:`OutputBusy`) instead of
  replacing the first's work or losing its rows.
"""

from __future__ import annotations

import csv
import ctypes
import errno
import fcntl
import io
import os
import re
import shutil
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pandas as pd


def write_bytes_atomic(path, data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temp file in the same folder + fsync + rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    cleanup_temp_files(path.parent, path.name)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.pid{os.getpid()}-", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; the result is as readable as any new file
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:  # a full disk names no file: say which one
            exc.filename = str(path)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it: put it straight back
    os.umask(mask)
    return mask


def write_text_atomic(path, text: str) -> Path:
    return write_bytes_atomic(path, text.encode("utf-8"))


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def csv_safe_cell(value):
    """A text cell as written to CSV: one a spreadsheet would run as a formula
    (starting with ``= + - @``, tab or CR, and not a plain number such as
    ``-0.5``) gets a leading ``'`` (OWASP, CSV injection); so does one that
    already starts with ``'``, so that :func:`csv_cell_value` undoes it exactly.
    Anything but a ``str`` is returned as it is."""
    if not isinstance(value, str) or not value:
        return value
    if value[0] == "'" or (value[0] in _FORMULA_START and not _PLAIN_NUMBER.fullmatch(value)):
        return "'" + value
    return value


def csv_cell_value(value):
    """The value of a text cell read back from a CSV calib wrote: one leading ``'`` dropped."""
    return value[1:] if isinstance(value, str) and value.startswith("'") else value


def _map_text(frame: pd.DataFrame, fn, columns=None) -> pd.DataFrame:
    """``frame`` with ``fn`` applied to every cell of its text ``columns`` (default: all text columns)."""
    cols = [c for c in (frame.columns if columns is None else columns)
            if c in frame.columns and (pd.api.types.is_object_dtype(frame[c]) or pd.api.types.is_string_dtype(frame[c]))]
    if not cols:
        return frame
    out = frame.copy()
    for c in cols:
        out[c] = frame[c].map(fn, na_action="ignore")
    return out


def csv_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell through :func:`csv_safe_cell` (numeric,
    boolean and date columns untouched)."""
    return _map_text(frame, csv_safe_cell)


def csv_values(frame: pd.DataFrame, columns=None) -> pd.DataFrame:
    """A table read back from a CSV calib wrote, its text ``columns`` (default: all
    text columns) through :func:`csv_cell_value`."""
    return _map_text(frame, csv_cell_value, columns)


def csv_quoting(frame: pd.DataFrame) -> int:
    """The ``csv`` quoting for ``frame`` written with ``\\n`` line ends: Python's
    csv quotes only around the line terminator's characters, so a text cell
    holding a bare ``\\r`` needs every text cell quoted to read back whole."""
    has_cr = any(frame[c].astype(str).str.contains("\r", regex=False).any()
                 for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c]))
    return csv.QUOTE_NONNUMERIC if has_cr else csv.QUOTE_MINIMAL


def frame_bytes(frame: pd.DataFrame, suffix: str) -> bytes:
    """The bytes of a table as CSV (UTF-8, ``\\n`` line ends, text cells
    through :func:`csv_safe_cell`), Parquet or JSONL."""
    suffix = suffix.lower().lstrip(".")
    if suffix == "csv":
        return csv_safe(frame).to_csv(index=False, lineterminator="\n", quoting=csv_quoting(frame)).encode("utf-8")
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


_PID_RE = re.compile(r"[.-]pid(\d+)-[^/]*$")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def _stale(p: Path) -> bool:
    """A temp file/folder whose writer (the pid in its name) is gone."""
    m = _PID_RE.search(p.name.removesuffix(".tmp"))
    return m is not None and not _alive(int(m.group(1)))


def cleanup_temp_files(directory, name: str | None = None) -> list[Path]:
    """Remove temp files (``.<name>.pid<N>-*.tmp``) and temp folders
    (``.<name>.calib-tmp-pid<N>-*``, ``.<name>.calib-old-pid<N>-*``) that
    interrupted writers left in ``directory`` (only for ``name`` when given);
    a writer still running keeps its own. A target folder lost between the
    two renames of the non-Linux swap is first put back from its ``old`` copy."""
    removed: list[Path] = []
    d = Path(directory)
    if not d.is_dir():
        return removed
    stem = re.escape(name) if name is not None else r".+"
    tmp_re = re.compile(rf"^\.{stem}\.(pid\d+-.*\.tmp|calib-(tmp|old)-pid\d+-.*)$")
    for p in sorted(d.iterdir()):
        if not tmp_re.match(p.name) or not _stale(p):
            continue
        target = d / p.name[1:p.name.index(".calib-old-")] if ".calib-old-" in p.name else None
        if target is not None and not os.path.lexists(target):
            os.rename(p, target)  # the old set was moved away and the new one never arrived
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
        removed.append(p)
    return removed


def _fsync_path(path: Path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2``); False where unsupported."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: filesystem or kernel without it
        return False
    raise OSError(err, f"cannot swap {a} and {b}: {os.strerror(err)}")


def check_replaceable(out_dir, names) -> None:
    """``out_dir`` may be replaced by a set of files called ``names``: it does
    not exist, or is a folder holding only files of that set (a previous run).
    Raises ``ValueError`` naming the first foreign entry otherwise."""
    out = Path(out_dir)
    if not os.path.lexists(out):
        return
    if out.is_symlink() or not out.is_dir():
        raise ValueError(f"{out}: exists and is not a folder")
    allowed = set(names)
    for p in sorted(out.iterdir()):
        if p.name not in allowed and not p.name.endswith(".tmp"):
            raise ValueError(f"{out}: holds {p.name!r}, which this output does not write; refusing to replace the "
                             "folder (choose an empty or new --out)")


class OutputBusy(OSError):
    """Another process (or thread) is writing the same output."""


_held: dict[Path, tuple[int, int]] = {}  # lock file -> (thread id, depth): a claim nests in its own thread
_held_guard = threading.Lock()


def lock_path(path) -> Path:
    """The lock file of an output (a file or a folder): ``.<name>.calib-lock`` beside it."""
    p = Path(os.path.abspath(path))
    return p.parent / f".{p.name}.calib-lock"


@contextmanager
def claim_output(path) -> Iterator[Path]:
    """Hold ``path`` (a file or folder about to be written) exclusively: an
    ``flock`` on its lock file, taken without waiting. Raises
    :class:`OutputBusy` naming the holder's pid when another process or
    thread holds it; any ``OSError`` creating the lock file (a read-only or
    pseudo file system, a full disk) comes before the work, which is the
    point of claiming early. Nested claims of one thread are free."""
    lock = lock_path(path)
    me = threading.get_ident()
    with _held_guard:
        owner = _held.get(lock)
        if owner is not None and owner[0] == me:
            _held[lock] = (me, owner[1] + 1)
            nested = True
        else:
            nested = False
    if nested:
        try:
            yield lock
        finally:
            with _held_guard:
                _held[lock] = (me, _held[lock][1] - 1)
        return
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = _locked_fd(lock, path)
    with _held_guard:
        _held[lock] = (me, 1)
    try:
        yield lock
    finally:
        with _held_guard:
            _held.pop(lock, None)
        # unlinked while still locked: a process that opened the old file sees a different inode and retries
        try:
            os.unlink(lock)
        except OSError:
            pass
        os.close(fd)


def _locked_fd(lock: Path, path) -> int:
    """An fd holding the flock of ``lock``, the file now at that path (a holder
    unlinks it on release, so a lock taken on an unlinked file is retried)."""
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666 & ~_umask())
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _read_pid(fd)
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            who = f"process {holder}" if holder and holder != os.getpid() else "another writer"
            raise OutputBusy(errno.EBUSY, f"{path}: {who} is writing it now; wait until it has finished "
                                          "(or choose another output)") from None
        try:
            same = os.fstat(fd).st_ino == os.stat(lock).st_ino
        except FileNotFoundError:
            same = False
        if same:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            return fd
        os.close(fd)


def _read_pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).decode().strip() or 0) or None
    except (OSError, ValueError):
        return None


@contextmanager
def atomic_folder(out_dir) -> Iterator[Path]:
    """Write a set of files into the yielded temp folder; on a clean exit the
    set replaces ``out_dir`` as a whole (see the module docstring), on an error
    the temp folder is removed and ``out_dir`` is untouched."""
    out = Path(out_dir)
    parent = out.parent
    parent.mkdir(parents=True, exist_ok=True)
    with claim_output(out):
        yield from _swapped_in(out, parent)


def _swapped_in(out: Path, parent: Path) -> Iterator[Path]:
    cleanup_temp_files(parent, out.name)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.calib-tmp-pid{os.getpid()}-", dir=parent))
    try:
        try:
            yield tmp
        except OSError as exc:  # name the file of the set, not its hidden temp copy
            if exc.filename and Path(exc.filename).is_relative_to(tmp):
                exc.filename = str(out / Path(exc.filename).relative_to(tmp))
            raise
        names = sorted(p.name for p in tmp.iterdir())
        check_replaceable(out, names)
        os.chmod(tmp, 0o755)  # mkdtemp makes it 0700
        for n in names:
            _fsync_path(tmp / n)
        _fsync_path(tmp, directory=True)
        if not os.path.lexists(out):
            os.rename(tmp, out)
        elif _exchange(tmp, out):
            shutil.rmtree(tmp)  # tmp now holds the previous set
        else:  # two renames; a kill between them is undone by cleanup_temp_files
            old = parent / f".{out.name}.calib-old-pid{os.getpid()}-{os.urandom(4).hex()}"
            os.rename(out, old)
            os.rename(tmp, out)
            shutil.rmtree(old)
        _fsync_path(parent, directory=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)

