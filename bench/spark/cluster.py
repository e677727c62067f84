"""`calib apply` (local engine) against `calib apply --engine spark` on this machine's standalone cluster.

    .venv/bin/python -m bench.spark.cluster [--sizes shipped,200000] [--workers 2] [--memory 2g]
                                            [--out bench/results/spark_cluster.md]

The cluster is tests/_spark_cluster.py's: a master and ``--workers`` workers (1 core each) on 127.0.0.1
as separate processes, whose Python is an empty virtualenv (no calib, no numpy): the job ships the
driver's environment (calib.production.engines.spark.ship; packed before the timed runs, once per
content). ``shipped`` is data/corpus/docs.jsonl.gz with the default config; a number n is
bench/scale/memory.py's corpus of n documents with its config (word 5-grams, 128 hashes, b=16, r=8, exact
J >= 0.8). Each engine runs as ``calib apply`` in a fresh interpreter; wall time from start to exit
(driver JVM start, executors' fetch and unpacking of the environment included: a new Spark
application per run). The Spark run's partition counts are its own "job size" line, its Spark jobs and
stages (which do not depend on the machine's load) its last progress line. Both manifests are compared
row for row.
"""

from __future__ import annotations

from bench.record import RESULTS_DIR, load, machine, write_result
import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from _spark_cluster import StandaloneCluster  # noqa: E402
from bench.scale.memory import DUP_RATE, apply_config_obj, word_list, write_docs  # noqa: E402


def _load() -> str:
    return f"{load():.1f}"


def run(cmd: list[str], env: dict) -> dict:
    before = _load()
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - t0
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-3000:]}")
    size = re.search(r"job size: (.*)", p.stderr)
    spark = re.search(r"calib spark: (\d+) Spark jobs, (\d+) stages run", p.stderr)
    stages = re.findall(r"calib spark: ([a-z ]+) done in ([\d.]+) s", p.stderr)
    return {"seconds": seconds, "load": f"{before} / {_load()}", "size": size.group(1) if size else "",
            "jobs": f"{spark.group(1)} / {spark.group(2)}" if spark else "", "stderr": p.stderr,
            "stages": ", ".join(f"{name} {float(t):.1f}" for name, t in stages)}


def _same(a: Path, b: Path) -> bool:
    import pandas as pd
    x = pd.read_parquet(a / "manifest.parquet").astype(str).reset_index(drop=True)
    y = pd.read_parquet(b / "manifest.parquet").astype(str).reset_index(drop=True)
    return x.equals(y)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="shipped,200000")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory", default="2g")
    ap.add_argument("--out", default=str(RESULTS_DIR / "spark_cluster.md"))
    a = ap.parse_args()
    from calib.production.document import write_config
    from calib.production.engines.spark.ship import archive
    from calib.search.config import Config

    calib = str(Path(sys.executable).parent / "calib")
    t = time.perf_counter()
    packed = archive()
    pack_s = time.perf_counter() - t
    rows, times = [], []
    with tempfile.TemporaryDirectory(prefix="calib-spark-cluster-bench-") as tmp, \
            StandaloneCluster(workers=a.workers, cores=1, memory=a.memory) as cluster:
        tmp = Path(tmp)
        env = {**cluster.driver_env(), "CALIB_SPARK_DRIVER_MEMORY": "2g"}
        for size in a.sizes.split(","):
            config = tmp / f"config-{size}.json"
            if size == "shipped":
                corpus = ROOT / "data" / "corpus" / "docs.jsonl.gz"
                write_config(config, Config())
                label = "shipped corpus (3,005 documents, .jsonl.gz)"
            else:
                n = int(size)
                corpus = tmp / f"corpus-{n}.jsonl"
                write_docs(corpus, n, word_list(), seed=0, dup_rate=DUP_RATE)
                write_config(config, apply_config_obj())
                label = f"{n:,} documents (bench/scale/memory.py's)"
            res = {}
            for engine in ("local", "spark"):
                out = tmp / f"out-{size}-{engine}"
                print(f"{label}: {engine} ...", file=sys.stderr, flush=True)
                res[engine] = run([calib, "apply", "--engine", engine, "--config", str(config), "--corpus",
                                   str(corpus), "--out", str(out)], env)
                res[engine]["summary"] = json.loads((out / "summary.json").read_text())
                print(f"  {res[engine]['seconds']:.1f} s {res[engine]['size']}", file=sys.stderr, flush=True)
            same = _same(tmp / f"out-{size}-local", tmp / f"out-{size}-spark")
            s = res["local"]["summary"]
            ratio = res["spark"]["seconds"] / res["local"]["seconds"]
            rows.append(f"| {label} | {s['documents']:,} | {s['proposed_removals']:,} | {res['local']['seconds']:.1f} | "
                        f"{res['spark']['seconds']:.1f} | {ratio:.1f}x | {res['spark']['jobs']} | {res['spark']['size']} | "
                        f"{'yes' if same else 'NO'} | {res['local']['load']} | {res['spark']['load']} |")
            times.append(f"- {label}: {res['spark']['stages']}")
            _report(a, rows, times, packed, pack_s)


def _report(a, rows: list[str], times: list[str], packed: Path, pack_s: float) -> None:
    report = "\n".join([
        "# `calib apply`: local engine vs Spark on a standalone cluster of this machine", "",
        f"Machine: {machine()}, shared with other jobs; figures from one run (load columns: 1-minute "
        "load average before / after each command). Cluster: tests/_spark_cluster.py, a master and "
        f"{a.workers} workers of 1 core and {a.memory} each on 127.0.0.1, the workers' Python an empty virtualenv; "
        f"the driver's environment shipped as {packed.stat().st_size / 2**20:,.0f} MB "
        f"(`spark.archives`; already packed: {pack_s:.1f} s to find it). Wall time of each `calib apply`, JVM "
        "and executors' start and the environment's fetch and unpacking included.", "",
        "| corpus | documents | removals | local s | spark s | spark / local | Spark jobs / stages run | spark job size "
        "| same manifest | load local | load spark |",
        "|---|---:|---:|---:|---:|---:|---:|---|:---:|:---:|:---:|", *rows, "",
        "Seconds of each calib stage of the Spark run (its progress lines; the session's start and the executors' "
        "check come before the first):", "", *times, ""])
    write_result(a.out, report)
    print(report, flush=True)


if __name__ == "__main__":
    main()
