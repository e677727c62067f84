"""Connected against star on the same verified pairs: what each policy removes, side by side.

For each policy (:func:`policy_summary`): the documents it removes, those no
verified pair with their representative justifies (chained), those below the
threshold to it, and, given the truth, over the (removed document,
representative) pairs: false removals (label 0) and unlabeled removals (-1).
The false-removal rate and its interval are the engine's, from each policy's
own result row (:func:`calib.search.policies.policy_table`): one computation
per figure.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from calib.clusters.chaining import call_sim_fn
from calib.clusters.clustering import Policy, SimFn, cluster_pairs


def policy_summary(n: int, i, j, sim, sim_fn: SimFn, threshold: float | None,
                   truth_fn: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None, *,
                   representative: str = "first", lengths=None, priority=None,
                   max_component: int | None = None) -> pd.DataFrame:
    """One row per policy (connected, star) on the same verified pairs.

    removals:          documents proposed for removal.
    unverified:        removals whose (doc, rep) is not a verified pair.
    below_threshold:   removals with sim_fn(doc, rep) < threshold: only
                       chaining justifies them.
    With ``truth_fn(a, b) -> int8`` (1 duplicate, 0 not, -1 unlabeled), over
    the (removed doc, its rep) pairs: false_removals (label 0),
    unlabeled_removals (-1), labeled_removals. These are <NA> without truth_fn.
    """
    rows = []
    for policy in Policy:
        c = cluster_pairs(n, i, j, sim, policy=policy, representative=representative,
                          lengths=lengths, priority=priority, max_component=max_component)
        docs = np.flatnonzero(c.removed)
        reps = c.representative[docs]
        s = call_sim_fn(sim_fn, docs, reps)
        row = {"policy": policy.value, "n_clusters": c.n_clusters, "removals": len(docs),
               "unverified": int(c.chained.sum()), "below_threshold": 0 if threshold is None else int((s < threshold).sum()),
               "false_removals": pd.NA, "unlabeled_removals": pd.NA, "labeled_removals": pd.NA}
        if truth_fn is not None:
            t = np.asarray(truth_fn(docs, reps))
            if t.shape != docs.shape or not np.isin(t, (-1, 0, 1)).all():
                raise ValueError("truth_fn must return one of -1, 0, 1 per pair")
            false, unl = int((t == 0).sum()), int((t == -1).sum())
            row.update(false_removals=false, unlabeled_removals=unl, labeled_removals=len(docs) - unl)
        rows.append(row)
    out = pd.DataFrame(rows)
    for col in ("false_removals", "unlabeled_removals", "labeled_removals"):
        out[col] = out[col].astype("Int64")
    return out
