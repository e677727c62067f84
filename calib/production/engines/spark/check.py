"""Executors run the driver's calib: the same version, source and kernel libraries, or one line saying not.

One job: a task's signatures, band keys and similarities are the driver's only
when the executor runs the same code on the same libraries. :func:`fingerprint`
is what decides a kernel's output besides its arguments: calib's version and
source digest (:func:`calib.production.engines.spark.ship.source_digest`), the
Python minor version and the versions of numpy, numba, llvmlite and pyarrow.
With a representation it also holds a probe: the digest of the signatures of a
fixed text, computed by the kernels themselves, so a platform whose hashing
differs is caught even when every version matches.

:func:`check_executors` runs a short job on the executors before any work and
compares their fingerprints with the driver's; :func:`checked` wraps a task body
so that every task compares again (an executor added later, by dynamic
allocation, is checked too). A mismatch is an :class:`ApplyError` naming the
host and each field that differs, in one line.
"""

from __future__ import annotations

import functools
import hashlib
import socket
import sys
from importlib import metadata

from calib.reading.corpus import ApplyError

LIBRARIES = ("numpy", "numba", "llvmlite", "pyarrow")
PROBE = "calib probe: the quick brown fox jumps over the lazy dog, 0123456789 \u00e9\u00e8 \u4e2d\u6587"
SHIP_HINT = ("calib apply --engine spark ships the driver's environment unless CALIB_SPARK_SHIP=0; under "
             "spark-submit pass the options `python -m calib.production.engines.spark.ship` prints "
             "(docs/spark-cluster.md)")


@functools.lru_cache(maxsize=None)
def _base() -> tuple[tuple[str, str], ...]:
    from calib.production.engines.spark.ship import source_digest
    try:
        version = metadata.version("calib")
    except metadata.PackageNotFoundError:
        version = "unknown"
    out = [("python", "%d.%d" % sys.version_info[:2]), ("calib", version), ("calib source", source_digest()[:12])]
    for lib in LIBRARIES:
        try:
            out.append((lib, metadata.version(lib)))
        except metadata.PackageNotFoundError:
            out.append((lib, "absent"))
    return tuple(out)


@functools.lru_cache(maxsize=32)
def _probe(rep) -> str:
    from calib.sketches.minhash import signatures
    from calib.sketches.shingles import shingle_hashes
    sig = signatures(shingle_hashes([PROBE, PROBE[::-1]], rep, unique=True), rep.num_perm, rep.seed, rep.scheme)
    return hashlib.sha256(sig.tobytes()).hexdigest()[:12]


def fingerprint(rep=None) -> dict[str, str]:
    """This process's calib, libraries and (with ``rep``, an unweighted representation) kernel probe."""
    out = dict(_base())
    if rep is not None and getattr(rep, "weighting", "none") == "none":
        out["kernel probe"] = _probe(rep)
    return out


def mismatch(expected: dict[str, str], got: dict[str, str], host: str) -> str | None:
    """One line naming each field where ``got`` (an executor's) differs from ``expected`` (the driver's)."""
    diff = [f"{k} {got.get(k, 'absent')} (driver: {v})" for k, v in expected.items() if got.get(k) != v]
    if not diff:
        return None
    return f"the executor on {host} does not run the driver's calib: {', '.join(diff)}; {SHIP_HINT}"


def verify(expected: dict[str, str], rep=None) -> None:
    """On an executor: raise :class:`ApplyError` when this process differs from ``expected``."""
    why = mismatch(expected, fingerprint(rep if "kernel probe" in expected else None), socket.gethostname())
    if why:
        raise ApplyError(why)


def checked(fn, expected: dict[str, str], arity: int = 1):
    """``fn`` (a task body: an iterator of batches, or ``arity=2`` tables of a cogroup) preceded by :func:`verify`
    in the task's process. Spark reads the body's argument count, so it is spelt out."""
    if arity == 2:
        def body2(a, b):
            verify(expected)
            return fn(a, b)
        return body2

    def body(it):
        verify(expected)
        return fn(it)
    return body


def _executor_fingerprint(rep, paths):
    import os
    return socket.gethostname(), fingerprint(rep), tuple(p for p in paths if not os.path.isfile(p))


def check_executors(spark, rep=None, paths=()) -> dict[str, str]:
    """Run one task per core on the executors and compare their fingerprints with the driver's (one line,
    :class:`ApplyError`, when any differs); each also checks that it can read the driver's local ``paths``
    (the corpus files; the first 20). Returns the driver's fingerprint."""
    expected = fingerprint(rep)
    paths = tuple(str(p) for p in paths)[:20]
    sc = spark.sparkContext
    n = max(2, sc.defaultParallelism)
    try:
        found = sc.parallelize(range(n), n).map(lambda _: _executor_fingerprint(rep, paths)).collect()
    except Exception as exc:  # py4j's wrapper of the failed job: its cause (No module named 'calib', ...)
        from calib.production.engines.spark.io import root_cause
        raise ApplyError(f"the executors cannot run calib ({root_cause(exc)}); {SHIP_HINT}") from None
    for host, got, missing in sorted(set((h, tuple(sorted(f.items())), m) for h, f, m in found)):
        why = mismatch(expected, dict(got), host)
        if why:
            raise ApplyError(why)
        if missing:
            raise ApplyError(f"{missing[0]}: the executor on {host} cannot read this file of the driver's disk; put the "
                             "corpus where every node reads it (HDFS, object storage, a shared mount) and pass that "
                             "path or URI")
    return expected
