"""The review queue: which proposed removals a reviewer should look at first.

Pairs without a sample label first (a decision there is new information),
then chained removals (only the transitive closure justifies them), then by
distance to the threshold, then by ids; pairs already reviewed are left out.
:func:`unlabeled_removal_queue` writes an evaluation's removals without a
label as such a queue, a CSV to fill with decisions
(:func:`calib.review.labels.queue_labels` reads it back as labels).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calib.verification.measures import get_measure


def _sorted_pair(a: pd.Series, b: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    a = a.astype(str).to_numpy(dtype=object)
    b = b.astype(str).to_numpy(dtype=object)
    swap = a > b
    return np.where(swap, b, a), np.where(swap, a, b)


def review_queue(pairs: pd.DataFrame, threshold: float | None, *, reviewed: pd.DataFrame | None = None,
                 limit: int | None = None) -> pd.DataFrame:
    """Pairs to review, most informative first.

    ``pairs``: id_a, id_b, sim[, chained][, label]. Order: pairs without a
    sample label first (label -1: a decision there is new information; a
    labeled pair only checks the label), then chained pairs (only chaining
    justifies the removal), then by distance = |sim - threshold| ascending
    (closest to the decision boundary), then by ids. Pairs present in
    ``reviewed`` (e.g. ``DecisionStore.latest()``) are dropped, in either order.
    """
    missing = [c for c in ("id_a", "id_b", "sim") if c not in pairs.columns]
    if missing:
        raise ValueError(f"pairs is missing column(s) {missing}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    out = pairs.copy()
    out["id_a"], out["id_b"] = _sorted_pair(pairs["id_a"], pairs["id_b"])
    out["chained"] = pairs["chained"].fillna(False).astype(bool) if "chained" in pairs.columns else False
    # No threshold (rule none: every candidate is removed): the boundary is 0, weakest pairs first.
    out["distance"] = (pairs["sim"].astype(float) - float(threshold or 0.0)).abs()
    out["_unlabeled"] = (pairs["label"] == -1) if "label" in pairs.columns else True
    if reviewed is not None and len(reviewed):
        r = reviewed[reviewed["id_b"].notna()]
        done = pd.MultiIndex.from_arrays(_sorted_pair(r["id_a"], r["id_b"]))
        out = out[~pd.MultiIndex.from_arrays([out["id_a"], out["id_b"]]).isin(done)]
    out = out.sort_values(
        ["_unlabeled", "chained", "distance", "id_a", "id_b"], ascending=[False, False, True, True, True],
        kind="stable").drop(columns="_unlabeled").reset_index(drop=True)
    return out if limit is None else out.head(limit)



def unlabeled_removal_queue(evaluation, ws) -> pd.DataFrame:
    """The removals of ``evaluation`` whose pair with the kept representative has no label, as a
    review queue (:func:`review_queue` order): id_a, id_b, sim (the config's exact measure),
    chained, distance, and an empty ``decision`` column to fill with duplicate / not_duplicate /
    unsure (``calib sweep --reviews QUEUE.csv`` then uses the decisions as labels)."""
    cfg, out = evaluation.config, evaluation.outcomes
    rows = np.flatnonzero(out["unlabeled_removal"].to_numpy()) if out is not None else np.zeros(0, np.int64)
    rep = out["representative"].to_numpy(np.int64)[rows] if len(rows) else rows
    i, j = np.minimum(rows, rep), np.maximum(rows, rep)
    sim = get_measure(cfg.measure).exact(ws.sets(cfg.rep), i, j) if len(i) else np.zeros(0)
    ids = ws.sample.ids
    pairs = pd.DataFrame({"id_a": ids[i], "id_b": ids[j], "sim": sim,
                          "chained": out["chained"].to_numpy(bool)[rows] if len(rows) else np.zeros(0, bool),
                          "label": -1})
    q = review_queue(pairs, cfg.threshold).drop(columns="label")
    return q.assign(decision="", config_fingerprint=cfg.fingerprint())
