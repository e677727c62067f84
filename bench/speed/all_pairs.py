"""Exact all-pairs above a threshold on 20,000 real documents (3-8 KB).

    python -m bench.speed.all_pairs [--docs 20000] [--shingles word5,char5] [--thresholds 0.5,0.8]

Prints time and peak RSS per (shingles, threshold); shingling is untimed.
"""

from __future__ import annotations

from bench.record import RESULTS_DIR, write_result
import argparse
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.corpora.real_text import documents_with_near_duplicates  # noqa: E402

from calib.verification.jaccard import all_pairs_above  # noqa: E402
from calib.sketches.represent import Representation  # noqa: E402
from calib.sketches.shingles import shingle_hashes  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--shingles", default="word5,char5")
    ap.add_argument("--thresholds", default="0.5,0.8")
    a = ap.parse_args()
    docs, _ = documents_with_near_duplicates(a.docs)
    all_pairs_above(shingle_hashes(docs[:50], Representation()), 0.5)  # compile
    rows = ["| shingles | threshold | pairs found | time s | peak RSS MB |", "|---|---:|---:|---:|---:|"]
    for sh in a.shingles.split(","):
        rep = Representation(shingle=sh.rstrip("0123456789"), k=int(sh.lstrip("wordchar")))
        sets = shingle_hashes(docs, rep)
        for t in (float(x) for x in a.thresholds.split(",")):
            t0 = time.perf_counter()
            i, _, _ = all_pairs_above(sets, t)
            dt = time.perf_counter() - t0
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
            rows.append(f"| {sh} | {t} | {len(i):,} | {dt:.1f} | {rss:,} |")
            print(rows[-1], flush=True)
    text = f"# Exact all-pairs on {len(docs):,} documents\n\n" + "\n".join(rows) + "\n"
    write_result(RESULTS_DIR / "all_pairs.md", text)


if __name__ == "__main__":
    main()
