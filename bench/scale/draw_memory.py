"""Peak memory of ``calib draw`` against corpus size: only the document sample is held.

Writes corpora of N documents (bench.scale.memory.write_docs: 20-60 words each, 2%
planted near-duplicates) and runs ``python -m calib draw --docs D --pairs P`` on
each in a fresh interpreter; peak RSS is that child's own (``os.wait4``, through
bench.scale.memory's launcher). The corpus is streamed once, so the peak should not
grow with N. Writes bench/results/draw_memory.md.

    python -m bench.scale.draw_memory [--sizes 100000,1000000] [--docs 2000] [--pairs 500]
"""

from __future__ import annotations

from bench.record import RESULTS_DIR, write_result
import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.scale.memory import run_measured, word_list, write_docs  # noqa: E402


def run_draw(corpus: Path, out: Path, docs: int, pairs: int) -> dict:
    res = run_measured([sys.executable, "-m", "calib", "draw", "--corpus", str(corpus), "--out", str(out),
                        "--docs", str(docs), "--pairs", str(pairs), "--shingle", "word5"])
    design = json.loads((out / "design.json").read_text())
    return {"peak_mb": res["maxrss_kb"] / 1024, "seconds": res["seconds"], "corpus_docs": design["corpus_docs"],
            "pairs_above_floor": sum(design["population"][:-1])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--pairs", type=int, default=500)
    ap.add_argument("--out", default=str(RESULTS_DIR / "draw_memory.md"))
    a = ap.parse_args(argv)
    words = word_list()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(x) for x in a.sizes.split(",")):
            corpus = Path(tmp) / f"c{n}.jsonl"
            size = write_docs(corpus, n, words, seed=0, dup_rate=0.02)
            r = run_draw(corpus, Path(tmp) / f"d{n}", a.docs, a.pairs)
            rows.append({"documents": n, "corpus_mb": size / 2 ** 20, **r})
            print(rows[-1], flush=True)
            corpus.unlink()
    lines = ["# calib draw: peak memory against corpus size\n",
             f"`python -m bench.scale.draw_memory --sizes {a.sizes} --docs {a.docs} --pairs {a.pairs}` "
             f"({time.strftime('%Y-%m-%d')}, 2 cores shared with other sessions: times are loose).\n",
             "| documents | corpus MB | peak RSS MB | seconds | pairs >= floor in the sample |",
             "|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['documents']:,} | {r['corpus_mb']:.0f} | {r['peak_mb']:.0f} | {r['seconds']:.0f} | "
              f"{r['pairs_above_floor']:,} |" for r in rows]
    write_result(a.out, "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
