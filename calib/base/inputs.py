"""Input paths checked before they are read: a regular file (or a folder where one is
expected), within a size bound.

Every reader of a user-named file goes through here (the sample and corpus
readers via :func:`calib.reading.files.open_input`, the review queue, a sweep's
results table, an exported config and the stoplist and document-frequency
files beside it, a SQLite review store; both apply engines, the CLI and the
app), so a FIFO, a device (``/dev/zero``), a socket or a symlink loop is one line
naming the file, never a blocked ``open()`` or an unbounded read:

* :func:`open_regular` opens with ``O_NONBLOCK`` (a FIFO with no writer
  cannot block) and checks the open descriptor with ``fstat``, so nothing can
  swap the file between check and read; then the size against ``max_bytes``.
* :func:`read_regular` reads it whole, at most ``max_bytes`` (+1 to see a file
  that grew past the bound while read).
* :func:`check_path` is the same check by ``stat`` alone, for a path a library
  opens itself (SQLite, a folder of files): it follows links, so a link to
  ``/dev/zero`` is a character device.

A bound is the most a reader holds in memory at once: the most a file of that
kind can sensibly be (a review queue filled by people), or a share of the memory
this process may use (:func:`calib.base.budget.memory_limit`) for files whose
size grows with a corpus (a document-frequency table).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path
from typing import BinaryIO

MiB = 2**20
QUEUE_MAX_BYTES = 64 * MiB      # a filled review queue (people fill it: ~500,000 rows)
RESULTS_MAX_BYTES = 256 * MiB   # a sweep's results table (a row per configuration)
CONFIG_MAX_BYTES = 16 * MiB     # an exported config.json
STOPLIST_MAX_BYTES = 256 * MiB  # stoplist.json beside an exported config
LINE_MAX_BYTES = 64 * MiB       # one line of a JSONL file (a document and its fields): longer is refused unread


class InputError(ValueError):
    """An input path that cannot be read as asked; ``file`` is the name shown, ``detail`` the reason."""

    def __init__(self, detail: str, file: str):
        self.file, self.detail = file, detail
        super().__init__(f"{file}: {detail}")


KINDS = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device",
         stat.S_IFBLK: "a block device", stat.S_IFDIR: "a directory", stat.S_IFLNK: "a symbolic link"}


def memory_share_bound(share: float = 0.25) -> int:
    """A bound for a file read whole whose size grows with a corpus: ``share`` of the memory this process may use."""
    from calib.base.budget import memory_limit
    return int(memory_limit() * share)


def _size(n: int) -> str:
    return f"{n / MiB:,.0f} MiB" if n >= MiB else f"{n:,} bytes"


def _os_reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "a symbolic link loop (a link that points back to itself)"
    if isinstance(exc, FileNotFoundError):
        return "file not found"
    if isinstance(exc, PermissionError):
        return "permission denied"
    return f"cannot open ({exc.strerror or exc})"


def _check_stat(st: os.stat_result, name: str, *, folder: bool, max_bytes: int | None, what: str) -> None:
    kind = stat.S_IFMT(st.st_mode)
    if folder and kind == stat.S_IFDIR:
        return
    if kind != stat.S_IFREG:
        expected = "a regular file or a folder" if folder else "a regular file"
        raise InputError(f"is {KINDS.get(kind, 'not a regular file')}; {what} must be {expected}", name)
    if max_bytes is not None and st.st_size > max_bytes:
        raise InputError(f"is {_size(st.st_size)}, more than the {_size(max_bytes)} {what} may be; "
                         "nothing was read", name)


def check_path(path, *, folder: bool = False, max_bytes: int | None = None, what: str = "an input",
               name: str | None = None) -> os.stat_result:
    """``stat`` (links followed) of an input that must be a regular file (or, with ``folder``,
    a folder) of at most ``max_bytes``; an :class:`InputError` naming ``name`` (default: the path)."""
    name = str(path) if name is None else name
    try:
        st = os.stat(path)
    except (OSError, RuntimeError) as exc:  # RuntimeError: pathlib's "Symlink loop" on some versions
        raise InputError(_os_reason(exc) if isinstance(exc, OSError) else _os_reason(OSError(errno.ELOOP, "")),
                         name) from None
    _check_stat(st, name, folder=folder, max_bytes=max_bytes, what=what)
    return st


def open_regular(path, *, max_bytes: int | None = None, single_link: bool = False, what: str = "an input",
                 name: str | None = None) -> BinaryIO:
    """A regular file opened for binary reading, never blocking (see the module docstring)."""
    name = Path(path).name if name is None else name
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", name) from None
    except OSError as exc:
        raise InputError(_os_reason(exc), name) from None
    try:
        st = os.fstat(fd)
        _check_stat(st, name, folder=False, max_bytes=max_bytes, what=what)
        if single_link and st.st_nlink > 1:
            raise InputError(f"has {st.st_nlink} hard links; a sample file must have one (a hard link can name a "
                             "file outside the sample folder): copy it instead", name)
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path, *, max_bytes: int, what: str = "an input", name: str | None = None) -> bytes:
    """The whole content of a regular file of at most ``max_bytes`` (:func:`open_regular`)."""
    name = Path(path).name if name is None else name
    with open_regular(path, max_bytes=max_bytes, what=what, name=name) as fh:
        try:
            data = fh.read(max_bytes + 1)
        except OSError as exc:
            raise InputError(f"cannot read ({exc.strerror or exc})", name) from None
    if len(data) > max_bytes:
        raise InputError(f"grew past the {_size(max_bytes)} {what} may be while it was read", name)
    return data


def read_regular_text(path, *, max_bytes: int, what: str = "an input", name: str | None = None) -> str:
    """:func:`read_regular` decoded as strict UTF-8 (a ``UnicodeDecodeError`` as an :class:`InputError`)."""
    name = Path(path).name if name is None else name
    data = read_regular(path, max_bytes=max_bytes, what=what, name=name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at byte offset {exc.start})", name) from None
