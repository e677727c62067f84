"""`calib apply` (local engine) against `calib apply --engine spark` on Spark local[2]: time and peak memory.

    PYTHONPATH=. python -m bench.spark.apply [--sizes 100000,1000000] [--out bench/results/spark_apply.md]

The corpus and config are bench/scale/memory.py's ``--mode apply`` ones: n documents of 20-60 words
(deterministic), ~2% planted near-duplicates, word 5-grams, num_perm=128, b=16, r=8, exact
verification at J >= 0.8, connected clusters, keep first. Each engine runs as ``python -m calib apply``
in a fresh interpreter (Spark: JVM start included, master local[2]). Peak memory is the largest sum of
RSS over the command's whole process tree (driver, JVM, Python workers), sampled every 0.2 s from
/proc; wall time from start to exit. Both outputs' manifests are compared row for row.
"""

from __future__ import annotations

from bench.record import RESULTS_DIR, load, machine, write_result
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.scale.memory import DUP_RATE, apply_config_obj, word_list, write_docs  # noqa: E402


def _tree_rss_kb(pid: int) -> int:
    """Sum of VmRSS over pid and its descendants."""
    kids: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{d}/status") as fh:
                kb = next((int(line.split()[1]) for line in fh if line.startswith("VmRSS:")), 0)
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(d))
        rss[int(d)] = kb
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo.extend(kids.get(p, []))
    return total


def _load() -> str:
    """1-minute load average (what `uptime` shows first)."""
    return f"{load():.1f}"


def run(cmd: list[str], env: dict) -> dict:
    load_before = _load()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _tree_rss_kb(proc.pid))
        time.sleep(0.2)
    err = proc.stderr.read()
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{err[-3000:]}")
    return {"seconds": time.perf_counter() - t0, "peak_mb": peak / 1024, "load": f"{load_before} / {_load()}"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--out", default=str(RESULTS_DIR / "spark_apply.md"))
    a = ap.parse_args()
    import pandas as pd

    from calib.production.document import write_config

    words = word_list()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CALIB_SPARK_MASTER": a.master}
    rows = []
    with tempfile.TemporaryDirectory(prefix="calib-spark-bench-") as tmp:
        tmp = Path(tmp)
        config = tmp / "config.json"
        write_config(config, apply_config_obj())
        for n in [int(x) for x in a.sizes.split(",")]:
            corpus = tmp / f"corpus-{n}.jsonl"
            size = write_docs(corpus, n, words, seed=0, dup_rate=DUP_RATE)
            res = {}
            for engine in ("local", "spark"):
                out = tmp / f"out-{n}-{engine}"
                cmd = [sys.executable, "-m", "calib", "apply", "--config", str(config), "--corpus", str(corpus),
                       "--out", str(out), "--engine", engine]
                print(f"n={n:,} {engine} ...", file=sys.stderr, flush=True)
                res[engine] = run(cmd, env)
                res[engine]["summary"] = json.loads((out / "summary.json").read_text())
                print(f"  {res[engine]['seconds']:.1f} s, {res[engine]['peak_mb']:.0f} MB", file=sys.stderr)
            local = pd.read_parquet(tmp / f"out-{n}-local" / "manifest.parquet")
            spark = pd.read_parquet(tmp / f"out-{n}-spark" / "manifest.parquet")
            same = local.astype(str).equals(spark.astype(str))
            s = res["local"]["summary"]
            rows.append(f"| {n:,} | {size / 2**20:.0f} | {s['candidate_pairs']:,} | {s['proposed_removals']:,} | "
                        f"{res['local']['seconds']:.1f} | {res['local']['peak_mb']:,.0f} | "
                        f"{res['spark']['seconds']:.1f} | {res['spark']['peak_mb']:,.0f} | {'yes' if same else 'NO'} | "
                        f"{res['local']['load']} | {res['spark']['load']} |")
            _report(a, rows)


def _report(a, rows: list[str]) -> None:
    report = "\n".join([
        "# `calib apply`: local engine vs Spark local[2]", "",
        f"Machine: {machine()}, shared with other jobs (figures from one run; the load columns are "
        "the 1-minute load average, as `uptime` shows it, before / after each command).",
        f"Config: word 5-grams, num_perm=128, b=16, r=8, exact J >= 0.8, connected, keep first; "
        f"~{DUP_RATE:.0%} planted near-duplicates (bench/scale/memory.py's corpus). Spark master {a.master}, JVM start "
        "included; peak = largest RSS sum over the process tree.", "",
        "| documents | corpus MB | candidate pairs | removals | local s | local peak MB | spark s | spark peak MB "
        "| same manifest | load local | load spark |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|:---:|:---:|:---:|", *rows, ""])
    write_result(a.out, report)
    print(report, flush=True)


if __name__ == "__main__":
    main()
