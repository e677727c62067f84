"""Time and peak memory of ``calib draw --design corpus`` on a large corpus of few-KB documents.

Writes a corpus of N documents (bench.corpora.rare.write_blocks: random-word
documents of --words words, about 1 duplicate pair in a million, look-alike
groups) and runs ``python -m calib draw --design corpus --pairs 500`` on it in
a fresh interpreter, under ``nice``; peak RSS is that child's own (``os.wait4``,
bench.scale.memory's launcher). Writes bench/results/corpus_draw.md with the load
average before and after.

    python -m bench.scale.corpus_draw [--docs 1000000] [--words 300,600]
"""

from __future__ import annotations

from bench.record import RESULTS_DIR, load_averages, write_result
import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.corpora.rare import write_blocks  # noqa: E402
from bench.scale.memory import run_measured  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--words", default="300,600", help="words per document, min,max (300-600: about 2-4 KB)")
    ap.add_argument("--pairs", type=int, default=500)
    ap.add_argument("--loose", default="120x5")
    ap.add_argument("--schemes", default="oph", help="loose-pass schemes to run, one draw each")
    ap.add_argument("--corpus", default=None, help="an existing corpus written by an earlier run (kept; "
                    "written there first when missing): a 1M-document corpus takes minutes to write")
    ap.add_argument("--tmp", default=None, help="folder for the corpus (default: the system's temp folder)")
    ap.add_argument("--nice", type=int, default=10, help="niceness of the draw (default 10; 0: a fair share)")
    ap.add_argument("--out", default=str(RESULTS_DIR / "corpus_draw.md"))
    a = ap.parse_args(argv)
    lo, hi = (int(x) for x in a.words.split(","))
    with tempfile.TemporaryDirectory(dir=a.tmp) as tmp:
        corpus = Path(a.corpus) if a.corpus else Path(tmp) / "corpus.jsonl"
        t0 = time.time()
        reused = corpus.is_file()
        if not reused:
            part = corpus.with_name(corpus.name + ".part")
            write_blocks(part, a.docs, words=(lo, hi))
            part.replace(corpus)
        size = corpus.stat().st_size
        gen = time.time() - t0
        rows = []
        for scheme in a.schemes.split(","):
            load_before = load_averages()
            res = run_measured(["/usr/bin/nice", "-n", str(a.nice), sys.executable, "-m", "calib", "draw", "--design", "corpus",
                                "--corpus", str(corpus), "--out", str(Path(tmp) / "drawn"), "--pairs", str(a.pairs),
                                "--loose", a.loose, "--loose-scheme", scheme, "--overwrite"])
            load_after = load_averages()
            design = json.loads((Path(tmp) / "drawn" / "design.json").read_text())
            rows.append({"scheme": scheme, "documents": a.docs, "corpus_mb": size / 2 ** 20,
                         "mean_kb": size / a.docs / 1024, "seconds": res["seconds"], "cpu": res["cpu"], "peak_mb": res["maxrss_kb"] / 1024,
                         "candidates": design["candidates"], "kept": sum(design["population"][:-1]),
                         "drawn": sum(design["drawn"]), "load": f"{load_before[0]:.1f} / {load_after[0]:.1f}"})
            print(rows[-1], flush=True)
    lines = ["# calib draw --design corpus: time and peak memory\n",
             f"`python -m bench.scale.corpus_draw --docs {a.docs} --words {a.words} --loose {a.loose} --schemes "
             f"{a.schemes}` ({time.strftime('%Y-%m-%d %H:%M')} UTC, 2 cores shared with other sessions: load average "
             f"(1 min) before / after each draw in the table; the draw runs under nice -n {a.nice}; corpus "
             f"{'reused' if reused else f'generated in {gen:.0f} s'}, not counted).\n",
             "| loose scheme | documents | corpus MB | mean KB | wall s | CPU s | CPU s per 1M docs | peak RSS MB | "
             "loose candidates | in bands (Jv >= floor) | drawn | load before / after |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    lines += [f"| {r['scheme']} | {r['documents']:,} | {r['corpus_mb']:.0f} | {r['mean_kb']:.1f} | {r['seconds']:.0f} | "
              f"{r['cpu']:.0f} | {r['cpu'] * 1e6 / r['documents']:,.0f} | {r['peak_mb']:.0f} | {r['candidates']:,} | {r['kept']:,} | {r['drawn']:,} | {r['load']} |"
              for r in rows]
    write_result(a.out, "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
