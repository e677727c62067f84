"""Do the weighted intervals of a fresh stratified draw hold the truth on the shipped sample?

The shipped sample (data/sample, 2,396 documents) is treated as an unlabeled
corpus with its groups as the oracle, as in bench/search/draw_labels.py. For each seed
``calib draw`` takes every document and --pairs pairs (no planner rounds), the
oracle labels them, and the configuration calib recommends on the labeled
sample is evaluated on the drawn set. Counted: how often the weighted 95%
interval of pair recall and of the false-removal rate holds the value on the
whole sample, and how often the plain (unweighted) recall lands inside the
weighted interval's range of the truth. Writes bench/results/draw_coverage.md.

    python -m bench.search.draw_coverage [--pairs 300,600] [--seeds 20]
"""

from __future__ import annotations

from bench.record import RESULTS_DIR, write_result
import argparse
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.search.draw_labels import CONFIG, SAMPLE, _label, oracle_and_truth  # noqa: E402
from calib.labeling.draw import draw, write_drawn  # noqa: E402
from calib.reading.samples import load_sample  # noqa: E402
from calib.search.sweep import evaluate  # noqa: E402
from calib.search.workspace import Workspace  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", default="300,600")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--out", default=str(RESULTS_DIR / "draw_coverage.md"))
    a = ap.parse_args(argv)
    oracle, truth = oracle_and_truth()
    rows = []
    for m in (int(x) for x in a.pairs.split(",")):
        for seed in range(a.seeds):
            with tempfile.TemporaryDirectory() as tmp:
                d = Path(tmp) / "drawn"
                write_drawn(d, draw(SAMPLE / "docs.jsonl", docs=oracle.n, pairs=m, seed=seed))
                _label(d, oracle)
                r = evaluate(Workspace(load_sample(d)), CONFIG).row
            row = {"pairs": m, "seed": seed}
            for k in ("pair_recall", "false_removal_rate"):
                row[k] = r[k]
                row[f"{k}_covered"] = bool(r[f"{k}_low"] <= truth[k] <= r[f"{k}_high"])
            row["recall_unweighted"] = r["pair_recall_unweighted"]
            rows.append(row)
            print(row, flush=True)
    t = pd.DataFrame(rows)
    summary = t.groupby("pairs").agg(seeds=("seed", "size"),
                                     recall_covered=("pair_recall_covered", "sum"),
                                     frr_covered=("false_removal_rate_covered", "sum"),
                                     recall_mean=("pair_recall", "mean"),
                                     recall_unweighted_mean=("recall_unweighted", "mean"),
                                     frr_mean=("false_removal_rate", "mean")).reset_index()
    lines = ["| pairs labeled | seeds | recall interval holds truth | FRR interval holds truth | mean weighted recall "
             "| mean unweighted recall | mean weighted FRR |", "|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {s.pairs} | {s.seeds} | {s.recall_covered} | {s.frr_covered} | {s.recall_mean:.3f} | "
              f"{s.recall_unweighted_mean:.3f} | {s.frr_mean:.4f} |" for s in summary.itertuples()]
    text = (f"# Coverage of the weighted intervals on the shipped sample\n\n`python -m bench.search.draw_coverage --pairs "
            f"{a.pairs} --seeds {a.seeds}` ({time.strftime('%Y-%m-%d')}). Configuration: {CONFIG}. Truth on the "
            f"whole sample: pair recall {truth['pair_recall']:.3f}, false-removal rate "
            f"{truth['false_removal_rate']:.4f}. One fresh draw per seed, labeled by the groups, no planner rounds.\n\n"
            + "\n".join(lines) + "\n")
    write_result(a.out, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
