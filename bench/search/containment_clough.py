"""Containment vs Jaccard on the real Clough & Stevenson corpus (answers that quote their source).

    python -m bench.search.containment_clough [--out bench/results/containment_clough.md]

Short answers (200-300 words) derived from a longer Wikipedia source: a copied
answer's Jaccard with its source is bounded by its size ratio, its
containment is not. One sweep per handling of the ``heavy`` category
(``exclude``: the documented choice, heavy revisions are neither duplicates
nor non-duplicates; ``not_duplicate``: the loader's default), over word 1-3
and char 5/8 shingles, 128 hashes, splits 128x1, 64x2, 32x4, exact and
estimated verification, both measures, thresholds 0.05-0.8. The recommended
configuration of each measure is the one with the highest pair recall at
zero false removals (``recommend(max_false_removal_rate=0.0)``), fewest
candidates breaking ties. Also reported: the best pair recall any threshold
can reach on the labels (cut+light pairs whose containment exceeds that of
every labeled non-duplicate pair), per representation.
"""

from __future__ import annotations

from bench.record import write_result
import argparse
import time
from pathlib import Path

from calib.verification.containment import pairs_containment
from calib.sketches.represent import Representation
from calib.reading.clough import load_clough
from calib.search.grid import Grid
from calib.search.recommend import recommend
from calib.search.sweep import sweep
from calib.search.workspace import Workspace

REPS = (Representation(shingle="word", k=1), Representation(shingle="word", k=2),
        Representation(shingle="word", k=3), Representation(shingle="char", k=5),
        Representation(shingle="char", k=8))
GRID = dict(representations=REPS, num_perms=(128,), splits=((128, 1), (64, 2), (32, 4)),
            verify=("exact", "estimated"), measures=("jaccard", "containment"),
            thresholds=(0.05, 0.08, 0.1, 0.12, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8))
COLS = ["representation", "b", "r", "verify", "measure", "threshold", "candidate_recall", "pair_recall",
        "pair_recall_low", "pair_recall_high", "removed", "false_removals", "false_removal_rate", "unlabeled_removals",
        "chained_removals",
        "config_fingerprint"]


def ceiling(ws: Workspace, rep: Representation) -> tuple[float, list[str]]:
    """Best pair recall a containment threshold can reach at zero verified non-duplicate pairs,
    and the duplicate pairs it cannot reach."""
    p = ws.sample.pairs
    c = pairs_containment(ws.sets(rep), p["i"].to_numpy(), p["j"].to_numpy())
    pos = p["is_duplicate"].to_numpy(bool)
    top_neg = c[~pos].max()
    ids = ws.sample.ids
    missed = [f"{ids[i]} ({cat}, C={v:.3f})" for i, cat, v, ok in
              zip(p["i"].to_numpy()[pos], p["category"].to_numpy()[pos], c[pos], c[pos] > top_neg) if not ok]
    return float((c[pos] > top_neg).mean()), missed


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="bench/results/containment_clough.md")
    a = ap.parse_args(argv)
    lines = ["# Containment vs Jaccard on Clough & Stevenson", "",
             "`python -m bench.search.containment_clough` (grid in its docstring). Pair recall is over the cut+light",
             "pairs (answer, its task's source); a false removal is a document removed in favour of a",
             "representative it is labeled *not* a duplicate of (the `non` answers).", ""]
    for heavy in ("exclude", "not_duplicate"):
        sample = load_clough(heavy=heavy)
        ws = Workspace(sample)
        t0 = time.perf_counter()
        res = sweep(ws, Grid(**GRID))
        secs = time.perf_counter() - t0
        lines += [f"## heavy = {heavy}", "",
                  f"{len(res)} configurations in {secs:.0f} s; {int(sample.pairs['is_duplicate'].sum())} duplicate "
                  f"pairs, {int((~sample.pairs['is_duplicate']).sum())} non-duplicate pairs.", "",
                  "Recommended at zero false removals, per measure:", "",
                  "| " + " | ".join(COLS) + " |", "|" + "---|" * len(COLS)]
        for m in ("jaccard", "containment"):
            best = recommend(res[res["measure"] == m], max_false_removal_rate=0.0)
            if best is None:
                lines.append(f"| (none for {m}) |")
                continue
            lines.append("| " + " | ".join(f"{best[c]:.3f}" if isinstance(best[c], float) else str(best[c])
                                           for c in COLS) + " |")
        lines += ["", "Ceiling on the labels (containment, any threshold, zero verified non-duplicates):", ""]
        for rep in REPS:
            top, missed = ceiling(ws, rep)
            lines.append(f"- {rep.shingle_label()}: {top:.3f}; unreachable: {', '.join(missed) or 'none'}")
        lines.append("")
    text = "\n".join(lines) + "\n"
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    write_result(a.out, text)
    print(text)


if __name__ == "__main__":
    main()
