"""What `calib export` costs against evaluating its one configuration: wall time and peak RSS.

    PYTHONPATH=. python -m bench.speed.export_cost [--sample data/sample] [--before DIR] [--repeats 2]

Each case is a fresh interpreter (``os.wait4``'s ``ru_maxrss`` of that child alone): ``evaluate``
runs ``calib.search.sweep.evaluate`` of the default config on the sample; ``export`` runs it and then
``calib.production.export.write_export`` (every target's own evidence, the manifest, the files),
as `calib export` does. The seconds are the child's own clock around that work (imports and
the sample's loading excluded; both cases load the same). ``--before DIR``: the same two cases
on another checkout of calib (e.g. ``git worktree add /tmp/main main``), in the same run, so the
ratios compare on the same machine load. Cases run round robin, ``--repeats`` rounds, medians.
"""

from __future__ import annotations

from bench.record import RESULTS_DIR, load, write_result
import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = RESULTS_DIR / "export_cost.md"

CHILD = """
import sys, time, tempfile
from pathlib import Path
from calib.reading.samples import load_sample
from calib.search.config import Config
from calib.search.sweep import evaluate
from calib.search.workspace import Workspace
sample = load_sample(Path(sys.argv[1]))
ws = Workspace(sample)
cfg = Config()
t0, c0 = time.perf_counter(), time.process_time()
ev = evaluate(ws, cfg)
if sys.argv[2] == "export":
    from calib.production.export import write_export
    write_export(Path(tempfile.mkdtemp()) / "exp", cfg, evaluation=ev, sample=sample, workspace=ws)
print(time.perf_counter() - t0, time.process_time() - c0)
"""


def run(code: Path, sample: Path, what: str) -> tuple[float, float, float]:
    """(seconds, CPU seconds of all its threads, peak RSS MB) of one child."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(sample), what], cwd=code, env=env,
                            stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status:
        raise RuntimeError(f"{what} on {code} failed ({status})")
    wall, cpu = map(float, out.split()[-2:])
    return wall, cpu, usage.ru_maxrss / 1024


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=Path, default=ROOT / "data" / "sample")
    ap.add_argument("--before", type=Path, help="another calib checkout to measure in the same run")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    codes = {"this checkout": ROOT} | ({"before": args.before.resolve()} if args.before else {})
    for code in codes.values():  # numba's caches of each checkout, outside the timed runs
        run(code, args.sample, "export")
    got: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    load0 = load()
    for _ in range(args.repeats):
        for name, code in codes.items():
            for what in ("evaluate", "export"):
                got.setdefault((name, what), []).append(run(code, args.sample, what))
    load1 = load()
    med = {k: tuple(statistics.median(x[f] for x in v) for f in range(3)) for k, v in got.items()}
    lines = ["# `calib export` against evaluating its one configuration (bench/speed/export_cost.py)\n",
             f"Sample {args.sample.relative_to(ROOT) if args.sample.is_relative_to(ROOT) else args.sample}, "
             f"default config; each case a fresh interpreter; median of {args.repeats} round-robin rounds. "
             f"Machine: {os.cpu_count()} CPUs shared with other jobs, load average (1 min) {load0:.1f} before and "
             f"{load1:.1f} after: absolute seconds move with the load, the ratios (same run) less, and CPU "
             "seconds (``time.process_time``: every thread of the child) least. "
             f"{time.strftime('%Y-%m-%d', time.gmtime())}.\n",
             "| code | evaluate: s | CPU s | peak MB | export: s | CPU s | peak MB | time ratio | CPU ratio "
             "| memory ratio |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name in codes:
        (es, ec, em), (xs, xc, xm) = med[name, "evaluate"], med[name, "export"]
        lines.append(f"| {name} | {es:.2f} | {ec:.2f} | {em:.0f} | {xs:.2f} | {xc:.2f} | {xm:.0f} | {xs / es:.2f}x "
                     f"| {xc / ec:.2f}x | {xm / em:.2f}x |")
    text = "\n".join(lines) + "\n"
    write_result(args.out, text)
    print(text)


if __name__ == "__main__":
    main()
