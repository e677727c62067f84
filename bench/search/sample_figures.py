"""The shipped sample's figures that the README, data/README.md and the tests record:
its size and labels; the recommendation of the default search (``calib sweep``) and of
the old fixed grid ``Grid()`` (the README's Python example): pair recall, false-removal
rate, removals (unlabeled, chained), connected vs star; the app's default configuration;
and the Review queue's pairs without a sample label under each. Rerun after a change
of the sample or of the search, and update the figures it prints where they are recorded.

    python -m bench.search.sample_figures [--sample data/sample]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from appui.reviews import action_pairs  # noqa: E402
from calib.search.config import Config, config_from_row  # noqa: E402
from calib.review.queue import review_queue  # noqa: E402
from calib.reading.sample import summary  # noqa: E402
from calib.reading.samples import load_sample  # noqa: E402
from calib.search.from_sample import search  # noqa: E402
from calib.search.grid import Grid  # noqa: E402
from calib.search.recommend import recommend  # noqa: E402
from calib.search.sweep import evaluate, sweep  # noqa: E402
from calib.search.workspace import Workspace  # noqa: E402


def removal_figures(ws: Workspace, config: Config) -> dict:
    """One configuration's removal counts and its Review queue (pairs without a sample label)."""
    ev = evaluate(ws, config)
    row = ev.row
    sets = ws.sets(config.rep)
    from calib.verification.measures import get_measure
    exact = lambda i, j: get_measure(config.measure).exact(sets, i, j)  # noqa: E731
    pairs = action_pairs(ev, ws.sample, exact)
    pairs["label"] = ws.truth.label(pairs["i"].to_numpy(), pairs["j"].to_numpy())
    queue = review_queue(pairs, config.threshold)
    keys = ("pair_recall", "false_removal_rate", "removed", "true_removals", "false_removals",
            "unlabeled_removals", "chained_removals", "missed_removals", "verified", "verified_unlabeled",
            "candidates", "false_candidate_rate")
    out = {k: row[k] for k in keys}
    out["review_queue"] = len(queue)
    out["review_queue_unlabeled"] = int((queue["label"] == -1).sum())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sample", default=str(ROOT / "data" / "sample"))
    a = ap.parse_args()
    sample = load_sample(a.sample)
    info = summary(sample)
    print(f"documents {info['documents']:,}, labeled pairs {info['pairs']:,} {info['pairs_by_label']}, "
          f"groups {info.get('groups')}")
    ws = Workspace(sample)
    found = search(ws)
    print(f"default search: {found.added_text()}")
    fixed = recommend(sweep(ws, Grid()), max_false_removal_rate=0.01)
    for name, row in (("default search (calib sweep)", found.best), ("old fixed grid Grid()", fixed)):
        best = config_from_row(row)
        print(f"recommended by the {name}, 1% budget: {best}")
        for policy in ("connected", "star"):
            print(f"  {policy}: {removal_figures(ws, dataclasses.replace(best, policy=policy))}")
    default = Config()
    print(f"app default: {default}")
    print(f"  {removal_figures(ws, default)}")
    from calib.production import targets
    got = targets.evidence(ws, default, evaluation=evaluate(ws, default))
    print("  as each production target runs it (removed, false, unlabeled): " + ", ".join(
        f"{name} {e['removed']}/{e['false_removals']}/{e['unlabeled_removals']}" for name, e in got.items()))


if __name__ == "__main__":
    main()
