"""Is containment worth sweeping on this sample? Decided from the labeled duplicates, before any sweep.

Jaccard J = |A & B| / |A | B| is low for a short document copied inside a long one, however exact the
copy; containment C = |A & B| / |A| (A the smaller set) is 1 there. So containment can find what no
Jaccard threshold finds only where the labeled duplicates sit inside longer documents: the share of
duplicate pairs with C >= 0.9 whose shingle counts differ by more than 20% (smaller / larger < 0.8),
in the representation where that share is highest. At 10% or more the default search sweeps
containment beside Jaccard (as its own part of the grid: the Jaccard part is unchanged). Weighted
Jaccard is not added by default: it changes what a shingle counts for (idf weights from the
sample), a choice the grid line leaves to the user; ``--weighting idf`` adds it (scheme ``dart``,
about 3x a classic signature: ``bench/results/weighted_throughput.md``).
"""

from __future__ import annotations

import numpy as np


INSIDE_C = 0.9        # the shorter document's shingles at least this much inside the longer one
LENGTH_RATIO = 0.8    # and their shingle counts differ by more than 20%
WORTH_SHARE = 0.10    # of the labeled duplicate pairs: containment is swept


def inside_share(ws, rep) -> float:
    """Share of the labeled duplicate pairs sitting inside a longer document under ``rep`` (0 without any)."""
    t = ws.truth
    if not len(t.pos_i):
        return 0.0
    sets = ws.sets(rep.with_(weighting="none")) if rep.weighting != "none" else ws.sets(rep)
    sizes = sets.sizes()
    a, b = sizes[t.pos_i], sizes[t.pos_j]
    ratio = np.minimum(a, b) / np.maximum(np.maximum(a, b), 1)
    c = ws.positive_similarity(rep, "containment")
    return float(np.mean((c >= INSIDE_C) & (ratio < LENGTH_RATIO)))


def containment_worth(ws, reps) -> tuple[bool, str]:
    """(sweep containment?, why, in words for the grid line)."""
    shares = {r.shingle_label(): inside_share(ws, r) for r in reps}
    label, share = max(shares.items(), key=lambda kv: kv[1]) if shares else ("", 0.0)
    what = (f"{share:.0%} of the labeled duplicates sit inside a longer document ({label}: C >= {INSIDE_C:g}, "
            f"lengths differ by > {1 - LENGTH_RATIO:.0%})")
    if share >= WORTH_SHARE:
        return True, f"containment swept beside Jaccard: {what}, >= {WORTH_SHARE:.0%}"
    return False, (f"containment not swept: {what}, < {WORTH_SHARE:.0%} (--measures jaccard,containment sweeps it); "
                   "weighted Jaccard not swept (idf weights are a choice of yours: --weighting idf adds it)")


__all__ = ["containment_worth", "inside_share"]
