"""Seconds per stage of `calib apply --engine spark` (apply_spark's ``log``), on bench/scale/memory.py's corpus.

    PYTHONPATH=. python -m bench.spark.stages [--size 100000] [--master local[2]]

The corpus and config are bench/spark/apply.py's (n documents of 20-60 words, ~2% planted
near-duplicates, word 5-grams, num_perm=128, b=16, r=8, exact J >= 0.8). The session starts
first (its time is printed apart); the stages are those of calib.production.engines.spark.apply.apply_spark.
"""

from __future__ import annotations

from bench.record import load
import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.scale.memory import DUP_RATE, apply_config_obj, word_list, write_docs  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--master", default="local[2]")
    a = ap.parse_args()
    from calib.production.engines.spark import apply as SA

    with tempfile.TemporaryDirectory(prefix="calib-spark-stages-") as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        write_docs(corpus, a.size, word_list(), seed=0, dup_rate=DUP_RATE)
        print(f"load average before: {load():.1f}", flush=True)
        t = time.perf_counter()
        spark = SA.session(a.master)
        print(f"{'session start':24s} {time.perf_counter() - t:7.1f} s", flush=True)
        t = time.perf_counter()
        s = SA.apply_spark(apply_config_obj(), str(corpus), str(Path(tmp) / "out"), spark=spark,
                           log=lambda stage, sec: print(f"{stage:24s} {sec:7.1f} s", flush=True))
        print(f"{'apply total':24s} {time.perf_counter() - t:7.1f} s  ({s['documents']:,} documents, "
              f"{s['candidate_pairs']:,} candidate pairs)", flush=True)
        print(f"load average after: {load():.1f}", flush=True)
        spark.stop()


if __name__ == "__main__":
    main()
