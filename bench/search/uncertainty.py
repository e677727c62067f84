"""Interval coverage against other hash seeds, and what the intervals cost.

    PYTHONPATH=. python -m bench.search.uncertainty            # ~3-6 min on 2 shared cores

Coverage: on generated corpora with large groups (tests/_families.py: three big
near-identical families from data/base plus small groups and singletons), a
sweep per hash seed; for each seed s, configuration and other seed s', does
the interval seed s reported hold the value seed s' measured? Reported for
this project's intervals (the ``<rate>_interval`` method) and for the Wilson
interval the same counts would give. Cost: a default-grid sweep of
data/sample, and the share of it spent in bootstrap intervals. Writes
bench/results/uncertainty.md.
"""

from __future__ import annotations

from bench.record import RESULTS_DIR, write_result
import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from _families import family_sample  # noqa: E402

from calib.estimates import bootstrap  # noqa: E402
from calib.sketches.represent import Representation  # noqa: E402
from calib.reading.samples import load_sample  # noqa: E402
from calib.estimates.stats import wilson  # noqa: E402
from calib.search.grid import Grid  # noqa: E402
from calib.search.sweep import sweep  # noqa: E402
from calib.search.workspace import Workspace  # noqa: E402

RATES = (("candidate_recall", "n_positive"), ("pair_recall", "n_positive"), ("false_candidate_rate", "negative_pairs"),
         ("missed_removal_rate", "expected_removals"))
SPLITS = ((16, 8), (32, 4), (8, 16), (20, 6), (9, 13))


def coverage(frames, metric, lows, highs):
    hits = []
    for a, fa in enumerate(frames):
        for b, fb in enumerate(frames):
            if a != b:
                v = fb.loc[fa.index, metric].to_numpy()
                hits.append((lows[a] <= v) & (v <= highs[a]))
    return float(np.mean(hits))


def corpus_rows(corpus_seed: int, seeds: range) -> list[dict]:
    ws = Workspace(family_sample(corpus_seed))
    sizes = np.bincount(ws.true_clusters)
    top = (sizes * (sizes - 1) // 2).max() / ws.truth.n_positive
    frames = []
    for seed in seeds:
        reps = tuple(Representation(shingle=kind, k=k, seed=seed) for kind, k in (("word", 5), ("word", 3)))
        grid = Grid(representations=reps, num_perms=(128,), splits=SPLITS, thresholds=(0.7, 0.8))
        frames.append(sweep(ws, grid).set_index(["representation", "b", "r", "threshold"]))
        print(f"corpus {corpus_seed}: seed {seed} done", file=sys.stderr)
    rows = []
    for metric, n_col in RATES:
        ours = coverage(frames, metric, [f[f"{metric}_low"].to_numpy() for f in frames],
                        [f[f"{metric}_high"].to_numpy() for f in frames])
        w = [wilson(np.round(f[metric] * f[n_col]), f[n_col]) for f in frames]
        old = coverage(frames, metric, [x[0] for x in w], [x[1] for x in w])
        spread = pd.concat([f[metric] for f in frames], axis=1)
        rows.append({"corpus": corpus_seed, "documents": ws.sample.n, "duplicate pairs": ws.truth.n_positive,
                     "largest group's share": f"{top:.0%}", "rate": metric,
                     "method": frames[0][f"{metric}_interval"].iloc[0], "ours": f"{ours:.1%}", "Wilson": f"{old:.1%}",
                     "mean width ours": f"{(frames[0][f'{metric}_high'] - frames[0][f'{metric}_low']).mean():.3f}",
                     "mean seed range": f"{(spread.max(axis=1) - spread.min(axis=1)).mean():.3f}"})
    return rows


def cost() -> str:
    ws = Workspace(load_sample(ROOT / "data" / "sample"))
    grid = Grid()
    sweep(ws, grid)  # warm: shingles, signatures, reference pairs, numba
    spent = [0.0]
    orig = bootstrap.ClusterBootstrap.interval

    def timed(self, counts):
        t = time.perf_counter()
        try:
            return orig(self, counts)
        finally:
            spent[0] += time.perf_counter() - t
    bootstrap.ClusterBootstrap.interval = timed
    try:
        t = time.perf_counter()
        sweep(ws, grid)
        total = time.perf_counter() - t
    finally:
        bootstrap.ClusterBootstrap.interval = orig
    return (f"Default grid on data/sample ({grid.size()} configurations, warm caches): {total:.2f} s, of which "
            f"{spent[0]:.2f} s in bootstrap intervals ({ws.boot.n_units} units x {ws.boot.replicates} replicates).")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=10, help="hash seeds per corpus (default 10)")
    p.add_argument("--corpora", type=int, default=2, help="generated corpora (default 2)")
    p.add_argument("--out", default=str(RESULTS_DIR / "uncertainty.md"))
    a = p.parse_args(argv)
    rows = [r for c in range(a.corpora) for r in corpus_rows(c, range(1, a.seeds + 1))]
    table = pd.DataFrame(rows)
    text = ("# Interval coverage against other hash seeds\n\n"
            f"{a.seeds} hash seeds x 20 configurations (word5, word3; 128 hashes; splits "
            f"{', '.join(f'{b}x{r}' for b, r in SPLITS)}; thresholds 0.7, 0.8) per generated corpus. A cell: share "
            "of (seed s, other seed s', configuration) where seed s's 95% interval holds the value seed s' "
            "measured, no tolerance.\n\n" + table.to_markdown(index=False) + "\n\n" + cost() + "\n")
    write_result(a.out, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
