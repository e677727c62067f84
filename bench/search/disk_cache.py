"""Wall and CPU seconds of the default search with the workspace's disk store (``calib.search.stored``) off,
cold (an empty cache folder: every step computed and written) and warm (the same folder again: every step
loaded), each run a fresh process (``bench.search.search_speed --one``), with the steps each run computed
and loaded, the bytes its ``workspace/`` folder holds and the results table's checksum (the same table all three ways).

    python -m bench.search.disk_cache [--sample data/sample] [--repeats 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path

from bench.record import fresh_run


def run(sample: str, mode: str, folder: Path) -> dict:
    env = {**os.environ, "CALIB_CACHE": "off" if mode == "off" else "on", "CALIB_CACHE_DIR": str(folder)}
    r = fresh_run("bench.search.search_speed", sample, env=env)
    r["mode"] = mode
    r["bytes"] = sum(p.stat().st_size for p in (folder / "workspace").rglob("*") if p.is_file())
    return r


def _steps(counts: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if v) or "none"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", default="data/sample")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--out", default="bench/results/disk_cache.md")
    a = ap.parse_args(argv)
    from bench.record import load_averages, machine, write_result
    runs = []
    for _ in range(a.repeats):
        with tempfile.TemporaryDirectory(prefix="calib-bench-cache-") as tmp:
            for mode in ("off", "cold", "warm"):
                r = run(a.sample, mode, Path(tmp) / ("off" if mode == "off" else "store"))
                runs.append(r)
                print(json.dumps(r), file=sys.stderr)
    lines = ["# The default search with the workspace kept on disk: off, cold, warm", "",
             f"`python -m bench.search.disk_cache {' '.join(shlex.quote(x) for x in (argv or sys.argv[1:]))}`: "
             f"each run a fresh process (numba kernels from their cache), {machine()}; load averages "
             f"{', '.join(f'{x:.2f}' for x in load_averages())} at the end. CPU = user + system seconds. "
             "Cold: an empty cache folder (every step computed, then written); warm: the same folder in the "
             "next process.", "",
             "| sample | mode | configurations | wall s | CPU s | load before / after | steps computed | "
             "steps loaded | cache MB | results checksum |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        c = r["cache"]
        lines.append(f"| {r['sample']} | {r['mode']} | {r['configs']} | {r['wall']:.1f} | {r['cpu']:.1f} | "
                     f"{r['load_before']:.2f} / {r['load_after']:.2f} | {_steps(c.get('computed', {}))} | "
                     f"{_steps(c.get('loaded', {}))} | {r['bytes'] / 1e6:.1f} | {r['checksum'][:12]} |")
    write_result(a.out, "\n".join(lines) + "\n")
    print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
