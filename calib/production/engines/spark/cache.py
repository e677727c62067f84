"""A file the Spark engine caches and ships to every executor (the environment archive), trusted only
when no one else could have written it and its bytes are the ones written.

Whatever the archive holds runs on every executor (its ``lib/sitecustomize.py`` runs at each Python
worker's start), so a cached one is reused only when all of these hold:

* its folder (``CALIB_CACHE_DIR``) belongs to this process's user or to root, and, if other users may
  write in it, has the sticky bit (else any of them could rename the archive away and put theirs in
  its place); a missing folder is created readable by its owner only;
* the archive and its record ``<archive>.sha256`` are regular files (not links), owned by this
  process's user and writable by no one else;
* the archive's size and sha256 equal the record's (a copy cut short, or other bytes, differ).

Anything else is written again (:func:`write`: a temp file in the same folder, its sha256, then a
rename; the record after it, the same way), so a partial archive, one with other bytes, or one
another user placed first is never shipped; one that cannot be replaced (another user's file in a
sticky folder) is refused in one line naming the folder. Every failure to write (a full disk, a
read-only folder) is one line naming the folder too.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable

from calib.base.atomic import cleanup_temp_files
from calib.base.cache import ADVICE, file_problem, folder_problem, make_folder, open_file, publish, sha256_of
from calib.reading.corpus import ApplyError


class ArchiveError(ApplyError):
    """The environment archive cannot be trusted or written: one line naming its folder."""


def record_path(path: Path) -> Path:
    """Where the archive's size and sha256 are recorded."""
    return path.with_name(path.name + ".sha256")


def check_folder(folder: Path) -> None:
    """Create ``folder`` (owner only) if missing; refuse one that another user could swap files in
    (:func:`calib.base.cache.folder_problem`, the rule every cache of calib follows)."""
    try:
        st = make_folder(folder)
    except OSError as exc:
        raise ArchiveError(f"cannot use {folder} for the Spark environment archive: {exc.strerror or exc}; "
                              f"{ADVICE}") from None
    problem = folder_problem(st)
    if problem:
        raise ArchiveError(f"{folder} {problem}, so another user could replace the Spark environment archive "
                           f"that every executor runs; {ADVICE}")


def distrust(path: Path) -> str | None:
    """None when the archive at ``path`` may be shipped as it is, else why not ("missing" when absent)."""
    if not os.path.lexists(path):
        return "missing"
    try:
        fd = open_file(record_path(path))
    except OSError:
        return f"{record_path(path).name} is missing or a link (an archive whose writing did not finish?)"
    try:
        why = file_problem(fd, record_path(path))
        recorded = os.read(fd, 256).decode("ascii", "replace").split()
    finally:
        os.close(fd)
    if why:
        return why
    try:
        fd = open_file(path)
    except OSError as exc:
        return f"{path.name} cannot be opened ({exc.strerror or exc}; a link?)"
    try:
        why = file_problem(fd, path)
        if why:
            return why
        if len(recorded) != 2 or not recorded[1].isdigit():
            return f"{record_path(path).name} is not a size and a sha256"
        if os.fstat(fd).st_size != int(recorded[1]):
            return f"{path.name} holds {os.fstat(fd).st_size:,} bytes, not the {int(recorded[1]):,} written (cut short?)"
        if sha256_of(fd)[0] != recorded[0]:
            return f"{path.name} does not hold the bytes written (its sha256 differs from {record_path(path).name})"
    finally:
        os.close(fd)
    return None


def write(path: Path, fill: Callable[[Path], None]) -> Path:
    """Write the archive at ``path`` with ``fill(temp_path)``, then its record, each atomically (a temp
    file in the same folder, then a rename); any failure is one line naming the folder."""
    folder = path.parent
    temps: list[Path] = []
    try:
        cleanup_temp_files(folder, path.name)  # a killed packer's 600 MB (another user's stays: not ours to remove)
    except OSError:
        pass
    try:
        for target in (path, record_path(path)):
            fd, name = tempfile.mkstemp(prefix=f".{target.name}.pid{os.getpid()}-", suffix=".tmp", dir=folder)
            os.close(fd)
            temps.append(Path(name))
        fill(temps[0])
        fd = os.open(temps[0], os.O_RDONLY)
        try:
            sha, size = sha256_of(fd)
        finally:
            os.close(fd)
        temps[1].write_text(f"{sha} {size}\n", encoding="ascii")
        record_path(path).unlink(missing_ok=True)  # the old record goes first: never a new archive under it
        publish(temps[0], path)
        publish(temps[1], record_path(path))
    except OSError as exc:
        owner = os.lstat(path).st_uid if os.path.lexists(path) else os.getuid()
        why = (f"{path.name} there belongs to another user (uid {owner}) and cannot be replaced"
               if owner != os.getuid() else exc.strerror or str(exc))
        raise ArchiveError(f"cannot write the Spark environment archive in {folder}: {why}; {ADVICE}") from None
    finally:
        for t in temps:
            t.unlink(missing_ok=True)
    return path


def cached(path: Path, fill: Callable[[Path], None], log=None) -> Path:
    """The archive at ``path``: reused when :func:`distrust` finds nothing wrong, else written again."""
    check_folder(path.parent)
    why = distrust(path)
    if why is None:
        os.utime(path)  # in use: kept by the clean-up of old archives
        return path
    if log is not None:
        log(f"packing this environment for the executors (once per content): {path}" if why == "missing" else
            f"{path}: {why}; packing it again")
    return write(path, fill)


__all__ = ["ArchiveError", "check_folder", "distrust", "write", "cached", "record_path"]
