"""Where calib keeps what it builds once and reuses across runs (never results), and when a file found
there may be trusted.

The cache folder may be shared (``CALIB_CACHE_DIR`` set to a folder of a team, or a sticky 1777 folder
as /tmp), so a file found there is read only when no one else could have written it:

* its folder belongs to this process's user or to root and, if other users may write in it, has the
  sticky bit (else any of them could rename the file away and put theirs in its place)
  (:func:`folder_problem`);
* the file is a regular file (not a link), owned by this process's user and writable by no one else
  (:func:`file_problem`);

and its bytes are checked against what was written (a sha256 each cache keeps: the Spark engine's
archive in a record beside it, the Unicode tables inside the file) before any of it is used. Each
cache writes with :func:`publish`: a temp file in the same folder, readable by all, writable by its
owner only, then a rename.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path

ADVICE = "set CALIB_CACHE_DIR to a folder of your own"


def cache_dir() -> Path:
    """``$CALIB_CACHE_DIR``, else ``~/.cache/calib`` (not created here)."""
    return Path(os.environ.get("CALIB_CACHE_DIR") or Path.home() / ".cache" / "calib")


def make_folder(folder: Path) -> os.stat_result:
    """Create ``folder`` (readable by its owner only) if missing; its stat. Raises OSError."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return os.stat(folder)


def folder_problem(st: os.stat_result) -> str | None:
    """Why a folder of stat ``st`` cannot hold trusted files ('belongs to another user (uid 1001)', 'is
    writable by other users and has no sticky bit'), or None."""
    if st.st_uid not in (os.getuid(), 0):
        return f"belongs to another user (uid {st.st_uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        return "is writable by other users and has no sticky bit"
    return None


def file_problem(fd: int, path: Path) -> str | None:
    """Why the open file ``fd`` cannot be trusted (not a regular file, another owner, writable by others)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        return f"{path.name} is not a regular file"
    if st.st_uid != os.getuid():
        return f"{path.name} belongs to another user (uid {st.st_uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{path.name} is writable by other users"
    return None


def open_file(path: Path) -> int:
    """``path`` opened for reading without following a link or blocking on a FIFO. Raises OSError."""
    return os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))


def sha256_of(fd: int, limit: int | None = None) -> tuple[str, int]:
    """(sha256, size) of what is left to read in ``fd`` (at most ``limit`` bytes plus one)."""
    h, size = hashlib.sha256(), 0
    while chunk := os.read(fd, 1 << 20):
        h.update(chunk)
        size += len(chunk)
        if limit is not None and size > limit:
            break
    return h.hexdigest(), size


def publish(tmp: Path, path: Path) -> None:
    """Make the written temp file ``tmp`` the cache file ``path``: readable by all (the Spark daemons of
    other users read the archive), writable by its owner only, on disk, then renamed into place."""
    os.chmod(tmp, 0o644)
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def write_cached(path: Path, data: bytes) -> None:
    """Write ``data`` as the cache file ``path`` (a temp file in the same folder, then :func:`publish`).
    Raises OSError (the temp file removed)."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.pid{os.getpid()}-", suffix=".tmp", dir=path.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        publish(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
