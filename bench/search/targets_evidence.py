"""What each production target's own evidence costs: `calib export` on the shipped sample.

    python -m bench.search.targets_evidence

Times, for the default config, the evaluation of the config itself and then of every
target's variant (calib.production.targets.evidence: each distinct engine_config evaluated once on
the same Workspace), and prints each target's figures. Signatures of a new
representation (text-dedup's closest, NeMo's character 24-grams) are the cost.
"""

from __future__ import annotations

import time
from pathlib import Path

from calib.production import targets as T
from calib.search.config import Config
from calib.reading.samples import load_sample
from calib.search.sweep import evaluate
from calib.search.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]


def main() -> None:
    sample = load_sample(REPO / "data" / "sample")
    ws = Workspace(sample)
    cfg = Config()
    t0 = time.perf_counter()
    ev = evaluate(ws, cfg)
    t1 = time.perf_counter()
    got = T.evidence(ws, cfg, evaluation=ev)
    t2 = time.perf_counter()
    print(f"{sample.n} documents, config {cfg}")
    print(f"evaluate(config): {t1 - t0:.2f} s; evidence of {len(got)} targets: {t2 - t1:.2f} s\n")
    print("| target | verification | kept | removed | false removals | false-removal rate | pair recall |")
    print("|---|---|---|---:|---:|---:|---:|")
    found = T.targets(cfg)
    print(f"| (config) | {cfg.verify} | {cfg.policy}/{cfg.representative} | {ev.row['removed']} | "
          f"{ev.row['false_removals']} | {ev.row['false_removal_rate']:.1%} | {ev.row['pair_recall']:.1%} |")
    for name, e in got.items():
        c = found[name].engine_config
        print(f"| {name} | {c.verify} | {c.policy}/{c.representative} | {e['removed']} | {e['false_removals']} | "
              f"{e['false_removal_rate']:.1%} | {e['pair_recall']:.1%} |")


if __name__ == "__main__":
    main()
