"""What every benchmark shares: where results go, one way to time, the machine's load and a line about it.

A figure on a shared machine means little without the load it was taken under, so each timing here
comes with the 1-minute load average read beside it; :func:`best_of` keeps the fastest of ``repeats``
runs (``time.perf_counter``), the one least slowed by other work. Results are written whole or not at
all (:func:`calib.base.atomic.write_text_atomic`): an interrupted run leaves the previous file.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]  # the repository: bench/ is one below it
RESULTS_DIR = ROOT / "bench" / "results"  # every figure the docs quote is read from a file here


def load() -> float:
    """The machine's 1-minute load average now (0-1 is an idle machine, the core count a full one)."""
    return os.getloadavg()[0]


def load_averages() -> tuple[float, float, float]:
    """The 1-, 5- and 15-minute load averages now."""
    return os.getloadavg()


def machine() -> str:
    """One line naming the processor, its cores and the Python that ran the figures."""
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}")


def fresh_run(module: str, sample: str, *options: str, calib_root: str | None = None, env: dict | None = None):
    """``python -m module --one sample *options`` in a fresh process (``--calib-root``: import calib from
    that checkout): the JSON of the last line it prints (a bench script's ``--one`` result)."""
    cmd = [sys.executable, "-m", module, "--one", sample, *options] + (["--calib-root", calib_root] if calib_root else [])
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT, check=True, env=env)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def checkout_arguments(ap, before: str) -> None:
    """The options of a bench script timed in fresh processes (:func:`fresh_run`), on this checkout and
    another: ``--one``, ``--sample``, ``--calib-root``, ``--before`` (``before``: what that one's help says)."""
    ap.add_argument("--one", help="one run on this sample folder, printed as JSON")
    ap.add_argument("--sample", action="append", help="sample folders (repeatable; default data/sample)")
    ap.add_argument("--calib-root", help="import calib from this checkout instead of this one")
    ap.add_argument("--before", help=before)


def alternately(run: Callable[..., dict], samples, before: str | None, repeats: int = 1) -> list[dict]:
    """``run(sample, calib_root=...)`` for each sample, ``repeats`` times, the ``before`` checkout (if any) and this
    one alternately so that both see the same machine state: each result with its ``tree`` ('before' /
    'after'), printed to stderr as it comes."""
    trees = ([("before", before)] if before else []) + [("after", None)]
    runs = []
    for sample in samples:
        for _ in range(repeats):
            for name, root in trees:
                runs.append({**run(sample, calib_root=root), "tree": name})
                print(json.dumps(runs[-1]), file=sys.stderr)
    return runs


def best_of(run: Callable[[], object], repeats: int = 3) -> tuple[float, float]:
    """(fastest wall seconds of ``repeats`` calls of ``run``, the load average before that call)."""
    best = None
    for _ in range(repeats):
        busy = load()
        t0 = time.perf_counter()
        run()
        seconds = time.perf_counter() - t0
        if best is None or seconds < best[0]:
            best = (seconds, busy)
    return best


def write_result(path, text: str) -> Path:
    """Write a result file atomically (creating bench/results/ if needed) and return its path."""
    from calib.base.atomic import write_text_atomic

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text_atomic(path, text)

