"""The driver's environment, packed once for the executors of a Spark cluster.

One job: an archive that Spark unpacks in every executor's working folder
(``spark.archives=ARCHIVE#env``) so that the executors' Python, a plain
interpreter of the driver's minor version on each node (CPython wheels are
built for one: cp311 needs a 3.11), runs calib and its compiled dependencies
from ``./env/lib`` (``spark.executorEnv.PYTHONPATH``; the cluster's own pyspark
still comes first, from Spark). Layout::

    lib/           calib (with its bytecode and compiled numba kernels' caches) and the installed
                   distributions calib's runtime requirements pull in, with their shared libraries
    lib/sitecustomize.py   restores the .py files' modification times (below), then runs the node's own
    times.tsv      each .py file's modification time (ns) and path
    calib-env.json what it holds (Python version, distributions and versions, calib's source digest)

Spark's unpacking does not keep the files' times, and both caches that make a
worker start fast are keyed by their source file's time: bytecode (.pyc) and
numba's kernel caches (their index holds the source's (mtime, size), else the
kernels compile again, 30-60 s per Python worker here). So the first Python
worker of each executor puts the recorded times back (``sitecustomize``, run
by Python at start for the PYTHONPATH folder), once (a marker file).

The nodes' interpreter is ``CALIB_NODE_PYTHON`` (a command or path as the nodes
see it), else ``python3.X`` for the driver's 3.X. The archive holds no
executable: Spark's own unpacking (standalone, Kubernetes) drops the
executable bit, so a ``bin/python`` script in it could not be run.

Shipped: the closure of calib's declared requirements (extras left out) over
the installed distributions' metadata, less :data:`NOT_SHIPPED` (pyspark and
py4j come from the cluster's Spark, which must match its JVM; the app's
Streamlit and Altair are never imported by a task). Test folders are left out;
bytecode is kept (with the files' times, so it stays valid).

The archive is built once per content and cached under ``CALIB_CACHE_DIR``
(default ``~/.cache/calib``) as ``spark-env-<digest>.tar`` (not compressed:
written in seconds and unpacked by each executor in seconds; gzip, even level 1,
took 20 s to write and 8 s to unpack here, for a third of the bytes). The
digest covers the Python version and platform, each shipped distribution's
name, version and RECORD, and calib's source and kernel-cache file names, so
any change of code or library builds a new one and an unchanged environment is
never packed twice. Written atomically (temp file, then rename) with its size and
sha256 beside it, and reused only when the folder, the owner, the permissions and
the bytes say no one else wrote it (:mod:`calib.production.engines.spark.cache`):
every executor runs what it holds. When one is packed, archives beyond the
:data:`KEEP` most recently used that have not been used for an hour are removed.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import re
import sys
import tarfile
from importlib import metadata
from pathlib import Path

from calib.base.cache import cache_dir
from calib.production.engines.spark import cache

NOT_SHIPPED = frozenset({"pyspark", "py4j", "streamlit", "altair", "pip", "setuptools", "wheel"})
ENV_NAME = "env"  # the folder name each executor unpacks the archive under (ARCHIVE#env)
LIB = f"./{ENV_NAME}/lib"
KEEP = 3
PACKAGE = Path(__file__).resolve().parents[3]  # calib/ (production/engines/spark/ is three below it)
_SKIP_DIRS = {"tests"}  # (numpy.testing is imported at run time: not a test folder)
def _name(req: str) -> str:
    return re.match(r"[A-Za-z0-9._-]+", req).group(0)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def distributions(root: str = "calib") -> list[metadata.Distribution]:
    """The installed distributions ``root``'s runtime requirements pull in (extras left out), less
    :data:`NOT_SHIPPED` and ``root`` itself, sorted by name."""
    seen: dict[str, metadata.Distribution] = {}
    todo = [r for r in (metadata.distribution(root).requires or []) if "extra" not in r]
    while todo:
        name = _norm(_name(todo.pop()))
        if name in seen or name in NOT_SHIPPED:
            continue
        try:
            d = metadata.distribution(name)
        except metadata.PackageNotFoundError:  # a marker left it out here (tzdata on Windows): not needed
            continue
        seen[name] = d
        todo += [r for r in (d.requires or []) if "extra" not in r]
    return [seen[k] for k in sorted(seen)]


def _dist_files(d: metadata.Distribution) -> list[tuple[Path, str]]:
    """(file, path in lib/) of a distribution's installed files inside its site-packages folder."""
    base = Path(d.locate_file("")).resolve()
    out = []
    for f in d.files or []:
        rel = Path(str(f))
        if rel.parts[0] == ".." or _SKIP_DIRS.intersection(rel.parts[:-1]):
            continue
        p = (base / rel)
        if p.is_file():
            out.append((p, rel.as_posix()))
    return out


def _calib_files() -> list[tuple[Path, str]]:
    """calib's package files, its bytecode and kernel caches (numba's __pycache__/*.nbi, *.nbc) included."""
    pkg = PACKAGE
    return sorted((p, p.relative_to(pkg.parent).as_posix()) for p in pkg.rglob("*") if p.is_file())


def source_digest() -> str:
    """sha256 over calib's .py and .json files (path and bytes): the code every kernel and task runs."""
    pkg = PACKAGE
    h = hashlib.sha256()
    for p in sorted(pkg.rglob("*")):
        if p.suffix in (".py", ".json") and p.is_file() and "__pycache__" not in p.parts:
            h.update(p.relative_to(pkg).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def describe() -> dict:
    """What an archive of this environment holds: calib-env.json's content (its key is :func:`digest`)."""
    try:
        version = metadata.version("calib")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return {"python": "%d.%d" % sys.version_info[:2], "platform": f"{sys.platform}-{platform.machine()}",
            "calib": version, "source": source_digest(),
            "kernel_caches": sorted(rel for p, rel in _calib_files() if p.suffix in (".nbi", ".nbc")),
            "distributions": {d.metadata["Name"]: d.version for d in distributions()}}


def digest(desc: dict | None = None) -> str:
    desc = desc or describe()
    h = hashlib.sha256(json.dumps(desc, sort_keys=True).encode())
    for d in distributions():
        h.update((d.read_text("RECORD") or "").encode())
    return h.hexdigest()[:16]


_SITECUSTOMIZE = r'''"""calib's shipped environment: restore the .py files' times once per executor (see calib.production.engines.spark.ship)."""
import os as _os
import sys as _sys


def _restore():
    env = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
    done = _os.path.join(env, ".times-restored")
    if _os.path.exists(done):
        return
    with open(_os.path.join(env, "times.tsv"), encoding="utf-8") as fh:
        for line in fh:
            ns, rel = line.rstrip("\n").split("\t", 1)
            try:
                _os.utime(_os.path.join(env, rel), ns=(int(ns), int(ns)))
            except OSError:
                pass
    open(done, "w").close()


try:
    _restore()
finally:  # then the node's own sitecustomize, if it has one
    _here = _os.path.dirname(_os.path.abspath(__file__))
    _path = [p for p in _sys.path if _os.path.abspath(p or ".") != _here]
    _me = _sys.modules.pop(__name__)
    _saved, _sys.path[:] = _sys.path[:], _path
    try:
        import sitecustomize  # noqa: F401
    except ImportError:
        pass
    finally:
        _sys.path[:] = _saved
        _sys.modules.setdefault(__name__, _me)  # the import machinery looks this name up when we return
'''


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, 0
    tar.addfile(info, io.BytesIO(data))


def _fill(tmp: Path, desc: dict) -> None:
    """Write the archive's content into the (temporary) file ``tmp``."""
    with tarfile.open(tmp, "w") as tar:
        _add_bytes(tar, "calib-env.json", json.dumps(desc, indent=1, sort_keys=True).encode())
        _add_bytes(tar, "lib/sitecustomize.py", _SITECUSTOMIZE.encode())
        # calib's version for importlib.metadata (an editable install's own metadata points at the driver's tree)
        _add_bytes(tar, f"lib/calib-{desc['calib']}.dist-info/METADATA",
                   f"Metadata-Version: 2.1\nName: calib\nVersion: {desc['calib']}\n".encode())
        files = [f for d in distributions() for f in _dist_files(d)] + _calib_files()
        times = "".join(f"{src.stat().st_mtime_ns}\tlib/{rel}\n" for src, rel in files if rel.endswith(".py"))
        _add_bytes(tar, "times.tsv", times.encode())
        for src, rel in files:
            tar.add(src, f"lib/{rel}", recursive=False)


def pack(path: Path, desc: dict) -> Path:
    """Write the archive to ``path`` (atomically, its size and sha256 recorded beside it) and return it."""
    return cache.write(path, lambda tmp: _fill(tmp, desc))


def archive(log=None) -> Path:
    """This environment's archive: the cached one when its digest matches and it is trusted
    (:func:`calib.production.engines.spark.cache.cached`), else packed now (once)."""
    desc = describe()
    folder = cache_dir()
    path = folder / f"spark-env-{digest(desc)}.tar"
    cache.cached(path, lambda tmp: _fill(tmp, desc), log)
    _remove_old(folder)
    return path


def _remove_old(folder: Path) -> None:
    """Archives (this user's) beyond the :data:`KEEP` most recently used, once idle for an hour: ~600 MB each."""
    import time
    mine = [p for p in folder.glob("spark-env-*.tar") if p.lstat().st_uid == os.getuid()]
    used = sorted(mine, key=lambda p: p.stat().st_mtime, reverse=True)
    for old in used[KEEP:]:
        if time.time() - old.stat().st_mtime > 3600:
            old.unlink(missing_ok=True)
            cache.record_path(old).unlink(missing_ok=True)


def node_python() -> str:
    """The executors' Python as the nodes name it: CALIB_NODE_PYTHON, else python3.X (the driver's 3.X)."""
    return os.environ.get("CALIB_NODE_PYTHON") or "python%d.%d" % sys.version_info[:2]


def conf(path: Path) -> dict[str, str]:
    """The Spark settings that ship ``path`` and run its Python on the executors."""
    return {"spark.archives": f"{path.resolve().as_uri()}#{ENV_NAME}", "spark.pyspark.python": node_python(),
            "spark.executorEnv.PYTHONPATH": LIB}


def main() -> int:
    """``python -m calib.production.engines.spark.ship``: the archive and the spark-submit options that ship it."""
    try:
        p = archive(log=lambda m: print(m, file=sys.stderr))
    except cache.ArchiveError as exc:
        print(f"calib spark: {exc}", file=sys.stderr)
        return 2
    print(" ".join(f"--conf {k}={v}" for k, v in conf(p).items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
