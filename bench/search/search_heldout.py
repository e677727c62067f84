"""The default search against a hand grid on held-out samples (``bench/corpora/held_out.py``).

For each sample: the default search (first pass, second pass with the exploration, seed check) and its
time; the first pass and one-step refinement alone (``--search-effort 0``); a hand grid of the kinds a
careful person tries (word 5/7 and char 5/7 shingles, with and without punctuation, 256 hashes,
thresholds 0.8-0.99, Jaccard and containment, splits steep at each threshold). Each pick is
re-measured on hash seeds 1-5: pair recall and whether the false-removal budget held.

    python -m bench.search.search_heldout /work/corpora/source --ignore rewritten --out bench/results/search_heldout.md
"""

from __future__ import annotations

from bench.record import load
import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

BUDGET = 0.01


def _seeds(ws, cfg, seeds=(1, 2, 3, 4, 5)) -> tuple[float, int, list[float]]:
    from calib.search.sweep import sweep_configs
    rows = sweep_configs(ws, [replace(cfg, rep=cfg.rep.with_(seed=s)) for s in seeds])
    held = int((rows["false_removal_rate"].fillna(0) <= BUDGET).sum())
    return float(rows["pair_recall"].mean()), held, [float(x) for x in rows["false_removal_rate"]]


def hand_grid(ws):
    from calib.search.config import Config
    from calib.search.grid import steep_splits
    from calib.sketches.represent import Representation
    configs = []
    for strip in (False, True):
        for shingle, k in (("word", 5), ("word", 7), ("char", 5), ("char", 7)):
            rep = Representation(shingle=shingle, k=k, strip_punct=strip, num_perm=256)
            for measure in ("jaccard", "containment"):
                for t in (0.8, 0.85, 0.9, 0.95, 0.97, 0.98, 0.99):
                    for b, r in steep_splits(t - 0.05, 256, (0.99,)):
                        configs.append(Config(rep, b, r, threshold=t, measure=measure,
                                              representative="longest" if measure == "containment" else "first"))
    return configs


def run(path: Path, ignore: tuple[str, ...]) -> dict:
    from calib.reading.samples import load_sample
    from calib.search.config import config_from_row
    from calib.search.from_sample import search
    from calib.search.recommend import recommend
    from calib.search.sweep import sweep_configs
    from calib.search.workspace import Workspace
    sample = load_sample(path)
    out = {"sample": path.name, "docs": sample.n, "load": load()}
    for effort in (0.0, 1.0):
        ws = Workspace(sample, ignore_categories=ignore)
        t0 = time.perf_counter()
        found = search(ws, effort=effort)
        out[f"seconds_{effort:g}"] = time.perf_counter() - t0
        best = found.best
        out[f"pick_{effort:g}"] = None if best is None else config_from_row(best)
        out[f"seeds_{effort:g}"] = None if best is None else _seeds(ws, config_from_row(best))
        out[f"text_{effort:g}"] = found.added_text()
    ws = Workspace(sample, ignore_categories=ignore)
    rows = sweep_configs(ws, hand_grid(ws))
    best = recommend(rows, max_false_removal_rate=BUDGET)
    out["pick_hand"] = None if best is None else config_from_row(best)
    out["seeds_hand"] = None if best is None else _seeds(ws, config_from_row(best))
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("samples", nargs="+", type=Path)
    ap.add_argument("--ignore", default="", help="categories left unjudged, e.g. rewritten")
    ap.add_argument("--out", type=Path, default=Path("bench/results/search_heldout.md"))
    a = ap.parse_args(argv)
    ignore = tuple(x for x in a.ignore.split(",") if x)
    lines = ["# The default search against a hand grid on held-out samples", "",
             f"`python -m bench.search.search_heldout {' '.join(str(s) for s in a.samples)}"
             f"{' --ignore ' + a.ignore if a.ignore else ''}`: samples built by `bench/corpora/held_out.py`, never "
             "used to tune the search or in tests. Pair recall and budget held over hash seeds 1-5 (budget 1%).", "",
             "| sample | docs | load | search | seconds | pick | pair recall (seeds 1-5) | budget held |",
             "|---|---|---|---|---|---|---|---|"]
    for path in a.samples:
        r = run(path, ignore)
        for name, key in (("first pass + one step (effort 0)", "0"), ("default (effort 1)", "1"), ("hand grid", "hand")):
            pick, seeds = r[f"pick_{key}"], r[f"seeds_{key}"]
            secs = f"{r[f'seconds_{key}']:.0f}" if key != "hand" else ""
            lines.append(f"| {r['sample']} | {r['docs']:,} | {r['load']:.1f} | {name} | {secs} | "
                         + (f"{pick} | {seeds[0]:.3f} | {seeds[1]} of 5 |" if pick else "none | | |"))
        for key in ("0", "1"):
            lines.append(f"\n{r['sample']}, effort {key}: {r[f'text_{key}']}")
        print("\n".join(lines[-8:]), flush=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = a.out.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(a.out)


if __name__ == "__main__":
    main()
