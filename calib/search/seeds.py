"""Hash randomness measured: sweep results aggregated across hash seeds.

A sweep with several seeds has one row per (configuration, seed). For each
configuration (every setting but the seed) :func:`across_seeds` gives one
row with, for every rate ``m``:

* ``m``: the mean over seeds (what the configuration does on average);
* ``m_min``, ``m_max``: the range the seeds showed (hash luck, measured);
* ``m_low``, ``m_high``: the envelope of the per-seed intervals (lowest
  low, highest high), ``m_interval`` naming the per-seed method;

and the mean of every count (candidates, removed, ...). The seed-free
``expected_*`` rates are the same for every seed and kept as they are.
``seeds`` counts the seeds and ``seed_list`` names them; ``seed`` and the
fingerprints are those of the lowest seed, so a row still describes a
runnable :class:`~calib.search.config.Config`. :func:`calib.search.recommend.recommend` works
on the result unchanged: the recommendation is then made on the across-seed
means (and, with a ``confidence``, on the one-sided bound the envelope's upper end implies).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

RATES = ("candidate_recall", "pair_recall", "pair_precision", "false_removal_rate", "missed_removal_rate",
         "false_candidate_rate", "candidate_recall_macro", "pair_recall_macro", "reduction", "similar_recall")
PER_SEED = ("seed", "rep_fingerprint", "config_fingerprint")


def config_key(results: pd.DataFrame) -> list[str]:
    """The columns naming a configuration apart from its seed."""
    from calib.search.config import Config, config_columns
    return [c for c in config_columns(Config()) if c in results.columns and c not in PER_SEED]


def across_seeds(results: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration: mean, min and max across seeds of every rate
    and the envelope of the per-seed intervals (tidy, in first-seen order)."""
    if results.empty:
        return results.assign(seeds=pd.Series(dtype=np.int64), seed_list=pd.Series(dtype=str))
    key = config_key(results)
    frame = results.sort_values("seed", kind="stable")
    # NaN thresholds (no verification) are a value of the key, not missing data.
    g = frame.groupby(key, sort=False, dropna=False)
    first = g.head(1).set_index(key)
    out = first.copy()
    rates = [m for m in RATES if m in frame]
    numeric = [c for c in frame.columns if c not in key and c not in PER_SEED and pd.api.types.is_numeric_dtype(frame[c])
               and not c.endswith(("_low", "_high"))]
    out[numeric] = g[numeric].mean()
    for m in rates:
        out[f"{m}_min"] = g[m].min()
        out[f"{m}_max"] = g[m].max()
        if f"{m}_low" in frame:
            out[f"{m}_low"] = g[f"{m}_low"].min()
            out[f"{m}_high"] = g[f"{m}_high"].max()
        if f"{m}_interval" in frame:
            out[f"{m}_interval"] = "envelope of per-seed " + g[f"{m}_interval"].first().astype(str)
    out["status"] = np.where(g["status"].agg(lambda s: (s == "ok").all()), "ok", "too_many_candidates")
    out["seeds"] = g["seed"].nunique()
    out["seed_list"] = g["seed"].agg(lambda s: ",".join(str(int(x)) for x in sorted(set(s))))
    return out.reset_index()[list(results.columns) + [c for c in out.columns if c not in results.columns]]
