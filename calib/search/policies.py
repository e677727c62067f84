"""Connected against star: one configuration evaluated under each clustering policy.

Each row is the engine's own result row of the configuration with that policy
(:func:`calib.search.sweep.evaluate`), so its removals, false-removal rate and
interval are the figures a sweep row, the Export page, config.json and the CLI
give that configuration. Beside them, from the evaluation's clustering: the
clusters (single documents included) and the removals whose similarity to
their representative is below the threshold (only chaining justifies them).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calib.clusters.chaining import call_sim_fn
from calib.clusters.clustering import SimFn

# the result-row columns each policy row carries, under the row's own names
ROW_COLUMNS = ("removed", "chained_removals", "false_removals", "unlabeled_removals", "labeled_removals",
               "false_removal_rate", "false_removal_rate_low", "false_removal_rate_high",
               "false_removal_rate_interval", "config_fingerprint")


def policy_table(evaluations, sim_fn: SimFn) -> pd.DataFrame:
    """One row per evaluation (the same configuration under each policy): policy, n_clusters,
    below_threshold and the :data:`ROW_COLUMNS` of its result row."""
    rows = []
    for ev in evaluations:
        c, cfg = ev.clustering, ev.config
        docs = np.flatnonzero(c.removed)
        sim = call_sim_fn(sim_fn, docs, c.representative[docs])
        below = 0 if cfg.threshold is None else int((np.asarray(sim) < cfg.threshold).sum())
        rows.append({"policy": str(cfg.policy), "n_clusters": int(c.n_clusters), "below_threshold": below,
                     **{k: ev.row.get(k) for k in ROW_COLUMNS}})
    out = pd.DataFrame(rows)
    for col in ("removed", "chained_removals", "false_removals", "unlabeled_removals", "labeled_removals"):
        out[col] = pd.array([None if v is None or v != v else int(v) for v in out[col]], dtype="Int64")
    return out
