"""`calib draw --design corpus` on the local engine against `--engine spark` (local[N]) on this machine.

    .venv/bin/python -m bench.spark.draw [--sizes shipped,20000] [--master local[2]] [--pairs 500]
                                         [--out bench/results/spark_draw.md]

``shipped`` is data/corpus/docs.jsonl.gz; a number n is bench/corpora/rare.py's corpus of n documents
(duplicate pairs about one in a million). Each engine runs as ``calib draw`` in a fresh interpreter
(the Spark run's JVM start included); wall time from start to exit. The two drawn sets are compared
file by file (they must be equal byte for byte); the Spark run's partition counts are its "job size"
line. The machine's load (``uptime``) is recorded with each row.
"""

from __future__ import annotations

from bench.record import RESULTS_DIR, write_result
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
FILES = ("pairs.csv", "design.json", "documents.jsonl", "candidates.npy")


def _run(corpus: Path, out: Path, pairs: int, engine: str, master: str) -> tuple[float, str]:
    env = {**os.environ, "CALIB_SPARK_MASTER": master}
    t = time.perf_counter()
    run = subprocess.run([str(Path(sys.executable).parent / "calib"), "draw", "--design", "corpus", "--engine", engine,
                          "--corpus", str(corpus), "--out", str(out), "--pairs", str(pairs), "--seed", "0"],
                         capture_output=True, text=True, env=env)
    if run.returncode:
        raise SystemExit(run.stderr[-2000:])
    return time.perf_counter() - t, run.stderr


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="shipped,20000")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--pairs", type=int, default=500)
    ap.add_argument("--out", default=str(RESULTS_DIR / "spark_draw.md"))
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for size in a.sizes.split(","):
            if size == "shipped":
                corpus = ROOT / "data" / "corpus" / "docs.jsonl.gz"
            else:
                from bench.corpora.rare import build
                corpus = build(int(size), seed=1).write(tmp / f"rare-{size}.jsonl")
            t_local, _ = _run(corpus, tmp / f"{size}-local", a.pairs, "local", a.master)
            t_spark, err = _run(corpus, tmp / f"{size}-spark", a.pairs, "spark", a.master)
            same = all((tmp / f"{size}-local" / f).read_bytes() == (tmp / f"{size}-spark" / f).read_bytes()
                       for f in FILES)
            job = re.search(r"job size: (.*)", err)
            load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.split("load average:")[-1].strip()
            rows.append(f"| {size} | {t_local:.1f} | {t_spark:.1f} | {t_spark / t_local:.1f}x | "
                        f"{'yes' if same else 'NO'} | {job.group(1) if job else '?'} | {load} |")
            print(rows[-1], flush=True)
    text = (f"# calib draw --design corpus: local engine against --engine spark ({a.master})\n\n"
            f"`.venv/bin/python -m bench.spark.draw --sizes {a.sizes} --master '{a.master}' --pairs {a.pairs}` "
            "(wall seconds, each run a fresh `calib draw`; the Spark run's JVM start included; 2-core machine "
            "shared with other jobs, load averages in the last column).\n\n"
            "| corpus | local s | spark s | ratio | same files | spark job size | load (1, 5, 15 min) |\n"
            "|---|---:|---:|---:|---|---|---|\n" + "\n".join(rows) + "\n")
    write_result(a.out, text)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
