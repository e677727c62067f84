"""Cost of reviewing as a team: the kappa table (bootstrap over pairs) and the contested-pairs
sensitivity of a sweep (its configurations scored again under two labelings) against the sweep.

    PYTHONPATH=. python -m bench.review.team_review [--out bench/results/team_review.md]

Agreement: simulated reviewers (population kappa 0.6, prevalence 0.3) on N double-reviewed pairs,
2 and 3 reviewers, 1,000 bootstrap resamples. Sensitivity: the shipped sample, the grid the search
chooses from it (first pass), 5% of its labeled pairs contested; the sweep is timed warm (its
shingles, signatures and candidates already computed once), as the sensitivity reuses them.
"""

from __future__ import annotations

from bench.record import RESULTS_DIR, write_result
import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]


def simulated(n: int, raters: int, kappa: float = 0.6, prevalence: float = 0.3, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    latent = rng.random(n) < prevalence
    copy = rng.random(n) < kappa
    lab = np.array(["not_duplicate", "duplicate"])
    rows = []
    for r in range(raters):
        votes = np.where(copy, latent, rng.random(n) < prevalence)
        rows.append(pd.DataFrame({"id_a": [f"a{k}" for k in range(n)], "id_b": [f"b{k}" for k in range(n)],
                                  "decision": lab[votes.astype(int)], "reviewer": f"r{r}", "kind": "review"}))
    d = pd.concat(rows, ignore_index=True)
    return d.assign(id=np.arange(1, len(d) + 1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(RESULTS_DIR / "team_review.md"))
    a = ap.parse_args()
    from calib.review.agreement import agreement_table
    lines = ["# Reviewing as a team: cost", "", "## Kappa table (overall + categories + per reviewer, 1,000 resamples)",
             "", "| double-reviewed pairs | reviewers | method | kappa [95% CI] | seconds |", "|---|---|---|---|---|"]
    for n in (200, 2000, 20000):
        for raters in (2, 3):
            d = simulated(n, raters)
            t = time.perf_counter()
            o = agreement_table(d).iloc[0]
            s = time.perf_counter() - t
            lines.append(f"| {n:,} | {raters} | {o['method']} | {o['kappa']:.3f} [{o['low']:.3f}, {o['high']:.3f}] "
                         f"| {s:.2f} |")
    from calib.reading.sample import SAMPLE_DIR
    from calib.reading.samples import load_sample
    from calib.search.grid import grid_from_sample
    from calib.search.sensitivity import contested_sensitivity
    from calib.search.sweep import sweep
    from calib.search.workspace import Workspace
    s = load_sample(SAMPLE_DIR)
    ws = Workspace(s)
    grid = grid_from_sample(ws)[0]
    sweep(ws, grid)  # warm: shingles, signatures, candidates
    t = time.perf_counter()
    results = sweep(ws, grid)
    t_sweep = time.perf_counter() - t
    rng = np.random.default_rng(0)
    pick = rng.choice(len(s.pairs), size=max(1, len(s.pairs) // 20), replace=False)
    p = s.pairs.iloc[pick]
    contested = pd.DataFrame({"id_a": s.ids[p["i"]], "id_b": s.ids[p["j"]]})
    t = time.perf_counter()
    table = contested_sensitivity(ws, results, contested, budget=0.01)
    t_sens = time.perf_counter() - t
    lines += ["", "## Contested-pairs sensitivity (shipped sample)", "",
              f"{len(results)} configurations, {len(contested)} contested pairs: warm sweep {t_sweep:.1f} s; "
              f"sensitivity (two labelings) {t_sens:.1f} s ({t_sens / max(t_sweep, 1e-9):.2f} x the sweep).", "",
              "| labels | recommended | pair recall | false-removal rate | same |", "|---|---|---|---|---|"]
    for _, r in table.iterrows():
        lines.append(f"| {r['labels']} | {r['config']} | {r['pair_recall']:.3f} | {r['false_removal_rate']:.4f} "
                     f"| {r['same_config']} |")
    write_result(a.out, "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
