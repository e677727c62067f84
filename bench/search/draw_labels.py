"""How many labels a stratified draw needs on the shipped sample to reach +/- a target width.

The shipped sample (data/sample, 2,360 documents) is treated as an unlabeled
corpus; its groups are the oracle (same group = duplicate, every other pair
not). ``calib draw`` takes every document (--docs = all of them) and --pairs pairs; the
labels come from the oracle; then, round after round, ``calib draw --more``'s
planner (calib.labeling.weighted.next_labels, greedy Neyman allocation) proposes the
next labels for the configuration calib recommends on the labeled sample
(char5, 128 hashes, b=16 r=8, exact J >= 0.8), until the weighted 95% intervals
of its pair recall and false-removal rate are both within +/- the width.
Writes bench/results/draw_labels.md.

    python -m bench.search.draw_labels [--pairs 300] [--step 100] [--width 0.05] [--seed 0]
"""

from __future__ import annotations

from bench.record import RESULTS_DIR, write_result
import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from calib.search.config import Config  # noqa: E402
from calib.labeling.draw import draw, more, read_drawn, write_drawn  # noqa: E402
from calib.sketches.represent import Representation  # noqa: E402
from calib.reading.sample import Sample  # noqa: E402
from calib.reading.samples import load_sample  # noqa: E402
from calib.search.sweep import evaluate  # noqa: E402
from calib.search.workspace import Workspace  # noqa: E402
from calib.clusters.truth import label_names  # noqa: E402
from calib.estimates.design_weighted import design_pairs  # noqa: E402
from calib.labeling.weighted import next_labels  # noqa: E402

SAMPLE = ROOT / "data" / "sample"
CONFIG = Config(rep=Representation(shingle="char", k=5), b=16, r=8, threshold=0.8)


def oracle_and_truth() -> tuple[Sample, dict]:
    """The shipped sample as the oracle (its groups label every pair but those with a
    not-judged document), and CONFIG's rates on the whole sample."""
    sample = load_sample(SAMPLE)
    return sample, evaluate(sample, CONFIG).row


def _label(directory: Path, oracle: Sample) -> None:
    p = pd.read_csv(directory / "pairs.csv", dtype=str, keep_default_na=False)
    p["label"] = label_names(oracle, p["id_a"], p["id_b"])
    p.to_csv(directory / "pairs.csv", index=False)


def _markdown(t: pd.DataFrame) -> str:
    rows = ["| " + " | ".join(t.columns) + " |", "|" + "---|" * len(t.columns)]
    rows += ["| " + " | ".join(str(v) for v in r) + " |" for r in t.itertuples(index=False)]
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=300)
    ap.add_argument("--step", type=int, default=100)
    ap.add_argument("--width", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-labels", type=int, default=3000)
    ap.add_argument("--min-rounds", type=int, default=1, help="keep labeling for at least this many rounds")
    ap.add_argument("--out", default=str(RESULTS_DIR / "draw_labels.md"))
    a = ap.parse_args(argv)
    oracle, truth = oracle_and_truth()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "drawn"
        write_drawn(d, draw(SAMPLE / "docs.jsonl", docs=oracle.n, pairs=a.pairs, seed=a.seed))
        while True:
            _label(d, oracle)
            ws = Workspace(load_sample(d))
            ev = evaluate(ws, CONFIG)
            r = ev.row
            plan = next_labels(design_pairs(ws, CONFIG, ev.clustering), ws.sample.design, width=a.width, k=a.step)
            hw = {m: (r[f"{m}_high"] - r[f"{m}_low"]) / 2 for m in ("pair_recall", "false_removal_rate")}
            rows.append({"labels": len(ws.sample.pairs),
                         "pair_recall": f"{r['pair_recall']:.3f} [{r['pair_recall_low']:.3f}, {r['pair_recall_high']:.3f}]",
                         "false_removal_rate": f"{r['false_removal_rate']:.4f} [{r['false_removal_rate_low']:.4f}, "
                                               f"{r['false_removal_rate_high']:.4f}]",
                         "recall_unweighted": f"{r['pair_recall_unweighted']:.3f}",
                         "projected_more_recall": plan["rates"]["pair_recall"]["labels_needed"],
                         "projected_more_frr": plan["rates"]["false_removal_rate"]["labels_needed"]})
            print(rows[-1], flush=True)
            if (all(v <= a.width for v in hw.values()) and len(rows) >= a.min_rounds) \
                    or len(ws.sample.pairs) >= a.max_labels:
                break
            drawn = read_drawn(d)
            waiting = (drawn.pairs["label"] == "").groupby(drawn.pairs["stratum"]).sum()
            new = np.maximum(plan["allocation"].to_numpy() - waiting.reindex(plan["allocation"].index).fillna(0)
                             .to_numpy(int), 0)
            write_drawn(d, more(drawn, new))
    table = pd.DataFrame(rows)
    text = (f"# Labels to reach +/-{a.width} on the shipped sample\n\n`python -m bench.search.draw_labels --pairs {a.pairs} "
            f"--step {a.step} --width {a.width} --seed {a.seed}` ({time.strftime('%Y-%m-%d')}).\n\n"
            f"Configuration: {CONFIG}. Truth on the whole sample (every pair labeled by its groups): pair recall "
            f"{truth['pair_recall']:.3f}, false-removal rate {truth['false_removal_rate']:.4f}.\n\n"
            "Each row: the labels so far (the first draw, then the planner's proposals), the weighted estimates "
            "with their 95% intervals, the plain proportion for recall, and the planner's projection of the "
            "labels still needed for each interval.\n\n" + _markdown(table) + "\n")
    write_result(a.out, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
