"""Memory on hostile samples: a large group, and the estimator against a measured peak.

    PYTHONPATH=. python -m bench.scale.hostile_memory [--out bench/results/hostile_memory.md]

Each command runs in a fresh interpreter behind bench/scale/memory.py's launcher (peak RSS = ``ru_maxrss`` of
``os.wait4`` on that child alone; :func:`bench.scale.memory_bounds.run_measured`):

* ``group``: 30,000 copies of ``{"text": "the", "group": "the"}`` among 60,000 documents (the rest
  12 random words each, singleton groups), ``calib sweep --shingles word3 --num-perm 128 --splits 16x8
  --thresholds 0.8`` (the issue's case at 60k instead of 200k documents: before the fix it died in
  ``np.triu_indices`` asking 3.35 GiB);
* ``banding``: ``calib apply`` of a config num_perm 8192, b 8192, r 1 on N short documents, against
  :func:`calib.base.budget.check_banding`'s estimate ``N x (4 x 8192 + 32 x 8192)`` bytes; the imports are
  the same command on 10 documents;
* ``refusal``: the same apply on 60,000 documents with ``CALIB_MAX_MEMORY=1G`` and ``--max-pairs 1000000``
  (so the bands, not the pair budget, are refused): time and peak of the one-line refusal.
"""

from __future__ import annotations

from bench.record import RESULTS_DIR, write_result
import argparse
import json
import os
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.scale.memory_bounds import run_measured  # noqa: E402
from calib.base.budget import BAND_BYTES  # noqa: E402


def write_group_corpus(path: Path, copies: int = 30_000, others: int = 30_000, seed: int = 0) -> None:
    rng = random.Random(seed)
    words = [f"w{k}" for k in range(5000)]
    with open(path, "w") as f:
        for i in range(copies):
            f.write(json.dumps({"id": f"g{i}", "text": "the", "group": "the"}) + "\n")
        for i in range(others):
            f.write(json.dumps({"id": f"d{i}", "text": " ".join(rng.choice(words) for _ in range(12)),
                                "group": f"u{i}"}) + "\n")


def write_short_corpus(path: Path, n: int) -> None:
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": i, "text": f"w{i} x y z"}) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(RESULTS_DIR / "hostile_memory.md"))
    ap.add_argument("--banding-docs", type=int, default=5000)
    a = ap.parse_args()
    from calib.search.config import Config
    from calib.production.document import write_config
    from calib.sketches.represent import Representation
    lines = ["# Memory of a large group, estimator against measured peaks", "",
             "Fresh interpreter per command; peak RSS = `ru_maxrss` of `os.wait4` on it alone "
             "(`bench/scale/hostile_memory.py`).", ""]
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        write_group_corpus(t / "group.jsonl")
        res = run_measured([sys.executable, "-m", "calib", "sweep", "--sample", str(t / "group.jsonl"), "--out",
                            str(t / "r.csv"), "--shingles", "word3", "--num-perm", "128", "--splits", "16x8",
                            "--thresholds", "0.8"])
        note = next((ln for ln in res["stderr"] if ln.startswith("note:")), "")
        lines += ["## One group of 30,000 documents (60,000 in all)", "",
                  f"`calib sweep`: exit {res['rc']}, peak {res['peak_mb']:,.0f} MB, {res['seconds']:.1f} s. {note}", ""]

        cfg = t / "big.json"
        write_config(cfg, Config(Representation(num_perm=8192), 8192, 1))
        rows = []
        for n in (10, a.banding_docs):
            write_short_corpus(t / f"c{n}.jsonl", n)
            r = run_measured([sys.executable, "-m", "calib", "apply", "--config", str(cfg), "--corpus",
                              str(t / f"c{n}.jsonl"), "--out", str(t / f"a{n}")])
            rows.append((n, r))
        (n0, base), (n, big) = rows
        est = n * (4 * 8192 + BAND_BYTES * 8192) / 2**20
        lines += ["## Signatures and bands: num_perm 8192, b 8192, r 1", "",
                  "| documents | peak RSS | peak - imports | estimate (check_banding) | time |", "|---:|---:|---:|---:|---:|",
                  f"| {n0} (imports) | {base['peak_mb']:,.0f} MB | - | - | {base['seconds']:.1f} s |",
                  f"| {n:,} | {big['peak_mb']:,.0f} MB | {big['peak_mb'] - base['peak_mb']:,.0f} MB | {est:,.0f} MB | "
                  f"{big['seconds']:.1f} s |", ""]

        write_short_corpus(t / "c60k.jsonl", 60_000)
        os.environ["CALIB_MAX_MEMORY"] = "1G"
        try:
            r = run_measured([sys.executable, "-m", "calib", "apply", "--config", str(cfg), "--corpus",
                              str(t / "c60k.jsonl"), "--out", str(t / "a60k"), "--max-pairs", "1000000"])
        finally:
            del os.environ["CALIB_MAX_MEMORY"]
        lines += ["## Refused before the work: the same config on 60,000 documents, CALIB_MAX_MEMORY=1G, --max-pairs 1000000", "",
                  f"exit {r['rc']} after {r['seconds']:.1f} s, peak {r['peak_mb']:,.0f} MB: "
                  f"`{r['stderr'][-1] if r['stderr'] else ''}`", ""]
    write_result(a.out, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
