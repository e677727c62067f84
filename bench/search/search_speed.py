"""Wall and CPU seconds of the default search (``calib.search.from_sample.search``, effort 1: first pass,
second pass with the exploration, seed check), each run in a fresh process, cold as ``calib sweep`` is
(shingles, signatures and joins computed; numba kernels loaded from their cache).

CPU seconds are the process's user + system time, its children's included (``getrusage``): on a
machine shared with other jobs they move far less than wall seconds do, so both are given, with the
1-minute load average before and after each run. Each run also records a checksum of its results
table (every configuration and metric, floats rounded as ``tests/test_refactor_checksums.py`` rounds
them) so that a faster search is seen to find the same rows.

    python -m bench.search.search_speed --sample data/sample --sample /path/to/source [--repeats 2]
    python -m bench.search.search_speed --one data/sample [--calib-root /other/checkout] [--profile out.prof]

``--calib-root`` imports calib from another checkout (the same bench script timing an older tree):
the "before" column of a speed-up.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shlex
import sys
import time
from functools import partial
from pathlib import Path

from bench.record import checkout_arguments, fresh_run

FLOAT_DIGITS = 9


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def table_checksum(frame) -> str:
    """sha256 of the results table as CSV, floats written to FLOAT_DIGITS significant digits (as
    tests/test_refactor_checksums.py hashes a sweep table), rows in the order the search wrote them."""
    return hashlib.sha256(frame.to_csv(index=False, float_format=f"%.{FLOAT_DIGITS}g").encode()).hexdigest()


def one(sample_dir: str, profile: str | None, table: str | None) -> dict:
    from calib.reading.samples import load_sample
    from calib.search.from_sample import search
    from calib.search.workspace import Workspace
    import calib
    busy = os.getloadavg()[0]
    sample = load_sample(Path(sample_dir))
    c0, t0 = _cpu(), time.perf_counter()
    prof = None
    if profile:
        import cProfile
        prof = cProfile.Profile(time.process_time)  # CPU seconds, every thread's: what the machine's load does not move
        prof.enable()
    ws = Workspace(sample)
    found = search(ws)
    if prof is not None:
        prof.disable()
        prof.dump_stats(profile)
    seconds, cpu = time.perf_counter() - t0, _cpu() - c0
    rows, best = found.results, found.best
    if table:
        rows.to_pickle(table)
    return {"sample": sample_dir, "calib": str(Path(calib.__file__).parents[1]), "docs": int(sample.n),
            "configs": int(len(rows)), "wall": seconds, "cpu": cpu, "load_before": busy,
            "load_after": os.getloadavg()[0], "checksum": table_checksum(rows),
            "best": None if best is None else f"{best['representation']} {best['num_perm']} {best['b']}x{best['r']} "
                                             f"t={best['threshold']:g} recall={best['pair_recall']:.4f}",
            "cache": ws.cache_info()}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    checkout_arguments(ap, "a second checkout timed alternately with this one (the 'before' rows)")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--profile", help="with --one: write a cProfile dump here")
    ap.add_argument("--table", help="with --one: pickle the results table here")
    ap.add_argument("--include", action="append", default=[], metavar="TREE=FILE",
                    help="a --one run's JSON line measured earlier (a long sample), as tree TREE (repeatable)")
    ap.add_argument("--threads", type=int, help="NUMBA_NUM_THREADS of the runs (default: numba's, every core)")
    ap.add_argument("--out", default="bench/results/search_speed.md")
    a = ap.parse_args(argv)
    if a.calib_root:
        sys.path.insert(0, a.calib_root)
    if a.one:
        print(json.dumps(one(a.one, a.profile, a.table)))
        return
    from bench.record import alternately, load_averages, machine, write_result
    samples = a.sample if a.sample is not None else ([] if a.include else ["data/sample"])
    if a.threads:
        os.environ["NUMBA_NUM_THREADS"] = str(a.threads)
    runs = alternately(partial(fresh_run, "bench.search.search_speed"), samples, a.before, a.repeats)
    for spec in a.include:
        tree, path = spec.split("=", 1)
        runs.append({**json.loads(Path(path).read_text().strip().splitlines()[-1]), "tree": tree})
    lines = ["# The default search's wall and CPU seconds", "",
             f"`python -m bench.search.search_speed {' '.join(shlex.quote(x) for x in (argv or sys.argv[1:]))}`: each run a fresh process "
             f"(numba kernels from their cache), {machine()}; load averages {', '.join(f'{x:.2f}' for x in load_averages())} at the end. "
             "CPU = user + system seconds of the process and its children"
             + (f"; NUMBA_NUM_THREADS={a.threads}" if a.threads else "") + ".", "",
             "| sample | docs | tree | configurations | wall s | CPU s | load before / after | recommended | "
             "results checksum |", "|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        lines.append(f"| {r['sample']} | {r['docs']} | {r['tree']} | {r['configs']} | {r['wall']:.1f} | "
                     f"{r['cpu']:.1f} | {r['load_before']:.2f} / {r['load_after']:.2f} | {r['best']} | "
                     f"{r['checksum'][:12]} |")
    write_result(a.out, "\n".join(lines) + "\n")
    print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
