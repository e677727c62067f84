"""Coverage of the per-slice intervals of a corpus draw over many seeds (the figures in
docs/corpus-draw.md, "Per slice"; tests/test_corpus_slices.py checks 10 seeds).

The corpus and its truth are the test's (6,000 documents, three languages, a tenth of the
documents in another language than their family); each seed draws 500 pairs, labels them by
the truth and estimates per language through the sweep's path. Writes
bench/results/slice_coverage.md.

    python -m bench.search.slice_coverage [--seeds 40] [--first 100]
"""

from __future__ import annotations

from bench.record import RESULTS_DIR, load_averages, write_result
import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

FIGURES = ("pair_recall", "false_removal_rate", "documents_removed")


class _Dirs:
    def mktemp(self, name):
        return Path(tempfile.mkdtemp(prefix=name))


def main() -> None:
    import numpy as np

    from calib.estimates.corpus_slices import corpus_slice_table
    from calib.labeling.corpus_draw import draw_scan
    from calib.labeling.corpus_slices import with_slices
    from calib.labeling.draw import write_drawn
    from calib.reading.samples import load_sample
    from calib.search.sweep import evaluate
    from calib.search.workspace import Workspace
    from tests.test_corpus_slices import CONFIG, LANGS, _labeled, _sliced, truth
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--first", type=int, default=100)
    a = ap.parse_args()
    load0 = load_averages()
    corpus, _, sc, counts, lang = _sliced(_Dirs(), 6_000, 900)
    t = truth(corpus, lang)
    hits = {(v, f): 0 for v in LANGS for f in FIGURES}
    widths = {(v, f): [] for v in LANGS for f in FIGURES}
    out = Path(tempfile.mkdtemp())
    for seed in range(a.first, a.first + a.seeds):
        drawn = with_slices(draw_scan(sc, pairs=500, seed=seed, fetch=lambda idx: [corpus.texts[k] for k in idx]),
                            counts)
        write_drawn(out / "d", _labeled(drawn, corpus))
        ws = Workspace(load_sample(out / "d"))
        table = corpus_slice_table(ws, CONFIG, evaluate(ws, CONFIG).clustering)
        rows = table[table["column"] == "lang"].set_index("value")
        for v in LANGS:
            for f in FIGURES:
                lo, hi = rows.loc[v, f"{f}_low"], rows.loc[v, f"{f}_high"]
                hits[(v, f)] += bool(lo - 1e-9 <= t[v][f] <= hi + 1e-9)
                widths[(v, f)].append(hi - lo)
        print(f"seed {seed} done", file=sys.stderr)
    load1 = load_averages()
    lines = [f"# Per-slice interval coverage (bench/search/slice_coverage.py)\n",
             f"{a.seeds} seeds ({a.first}..{a.first + a.seeds - 1}), 500 labels each, 95% intervals. Load average "
             f"before {load0[0]:.1f}, after {load1[0]:.1f}.\n",
             "| language | documents | figure | truth | held the truth | median width |", "|---|---:|---|---:|---:|---:|"]
    for v in LANGS:
        for f in FIGURES:
            lines.append(f"| {v} | {int((lang == v).sum()):,} | {f} | {t[v][f]:.4g} | {hits[(v, f)]} of {a.seeds} | "
                         f"{np.median(widths[(v, f)]):.3g} |")
    for f in FIGURES:
        lines.append(f"\n{f}: {sum(hits[(v, f)] for v in LANGS)} of {len(LANGS) * a.seeds}")
    text = "\n".join(lines) + "\n"
    write_result(RESULTS_DIR / "slice_coverage.md", text)
    print(text)


if __name__ == "__main__":
    main()
