"""Time and memory of the default sweep: the old fixed grid (``Grid()``: word3,
word5, char5 x 128/256 hashes x all splits x thresholds 0.5-0.9) against the
default search (``calib.search.from_sample.search``: the grid chosen from the sample, then
the second pass around the front), on the shipped sample and on generated
short person records (``bench/corpora/person_records.py``).

Each run is a fresh process (cold: shingles, signatures and joins computed as
the first ``calib sweep`` does; numba kernels loaded from their cache), so its
peak RSS (``ru_maxrss``) is that sweep's alone.

    python -m bench.search.default_search [--records 20000] [--out bench/results/default_search.md]
    python -m bench.search.default_search --one new --corpus records --records 20000   # one run, JSON
"""

from __future__ import annotations

from bench.record import write_result
import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def one(kind: str, corpus: str, records: int) -> dict:
    from bench.corpora.person_records import person_records
    from calib.reading.samples import load_sample
    from calib.search.from_sample import search
    from calib.search.grid import Grid
    from calib.search.recommend import recommend
    from calib.search.sweep import sweep
    from calib.search.workspace import Workspace
    sample = load_sample(ROOT / "data" / "sample") if corpus == "sample" else person_records(int(records / 1.6))
    t0 = time.perf_counter()
    ws = Workspace(sample)
    if kind == "old":
        rows = sweep(ws, Grid())
        best, note = recommend(rows), str(Grid())
    else:
        found = search(ws)
        rows, best, note = found.results, found.best, f"{found.choice.text(found.grid)}; {found.added_text()}"
    seconds = time.perf_counter() - t0
    return {"kind": kind, "corpus": corpus, "docs": int(sample.n), "configs": int(len(rows)), "seconds": seconds,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "best": None if best is None else {k: (best[k].item() if hasattr(best[k], "item") else best[k]) for k in (
                "representation", "num_perm", "b", "r", "threshold", "pair_recall", "false_removal_rate")},
            "note": note}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=20_000, help="about this many short records")
    ap.add_argument("--out", default="bench/results/default_search.md")
    ap.add_argument("--one", choices=("old", "new"))
    ap.add_argument("--corpus", choices=("sample", "records"), default="sample")
    a = ap.parse_args(argv)
    if a.one:
        print(json.dumps(one(a.one, a.corpus, a.records)))
        return
    runs = []
    for corpus in ("sample", "records"):
        for kind in ("old", "new"):
            proc = subprocess.run([sys.executable, "-m", "bench.search.default_search", "--one", kind, "--corpus", corpus,
                                   "--records", str(a.records)], capture_output=True, text=True, cwd=ROOT, check=True)
            runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
            print(runs[-1], file=sys.stderr)
    lines = ["# The default sweep: old fixed grid vs the search from the sample", "",
             f"`python -m bench.search.default_search --records {a.records}` (one cold run each, fresh process; "
             "2-core machine shared with other jobs, so seconds are upper bounds).", "",
             "| corpus | docs | sweep | configurations | seconds | peak RSS MB | recommended | pair recall | "
             "false-removal rate |", "|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        b = r["best"]
        rec = (f"{b['representation']} {b['num_perm']} {b['b']}x{b['r']} t={b['threshold']:g}" if b else "none")
        lines.append(f"| {r['corpus']} | {r['docs']} | {r['kind']} | {r['configs']} | {r['seconds']:.0f} | "
                     f"{r['peak_mb']:.0f} | {rec} | {b['pair_recall']:.3f} | {b['false_removal_rate']:.4f} |"
                     if b else f"| {r['corpus']} | {r['docs']} | {r['kind']} | {r['configs']} | {r['seconds']:.0f} | "
                     f"{r['peak_mb']:.0f} | none | - | - |")
    lines += ["", "What each search chose:", ""] + [f"- {r['corpus']}, {r['kind']}: {r['note']}" for r in runs]
    write_result(a.out, "\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
