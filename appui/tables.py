"""Table views: which columns a page shows, in which order, under which header.

Engine frames keep their snake_case names (they are the CSV/Parquet contract);
the app shows human headers through ``st.column_config``, built here.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from calib.config import table_columns

MARK = "mark"
# The columns a decision reads, first: what is found (recall), how much of it is right
# (precision), what it costs (false removals), and how much work LSH leaves (candidates).
DECISION = ["pair_recall", "pair_recall_95", "pair_precision", "pair_precision_95", "false_removal_rate",
            "false_removal_rate_95", "candidates"]
# The configuration's columns come from the Config fields (calib.config.table_columns).
CONFIG = table_columns()
DETAIL = ["removed", "false_removals", "unlabeled_removals", "chained_removals", "missed_removal_rate",
          "pair_recall_interval", "expected_pair_recall", "pair_recall_macro",
          "candidate_recall", "expected_candidate_recall", "candidate_recall_macro", "reduction", "status",
          "config_fingerprint"]
# Results across seeds (calib.sweep.across_seeds) add each rate's range over the seeds.
SEEDS = ["seeds", "pair_recall_min", "pair_recall_max", "false_removal_rate_min", "false_removal_rate_max",
         "candidate_recall_min", "candidate_recall_max"]
# Without labels only the work and the removals can be shown (first, as the decision columns).
UNLABELED = ["candidates", "removed", "reduction"]

LABELS = {
    MARK: "", "pair_recall": "pair recall", "pair_recall_95": "recall 95% CI", "pair_precision": "precision",
    "pair_precision_95": "precision 95% CI", "false_removal_rate": "false-removal rate",
    "false_removal_rate_95": "false-removal 95% CI", "candidates": "candidates", "representation": "representation",
    "num_perm": "num_perm", "b": "b (bands)", "r": "r (rows)", "verify": "verify", "threshold": "threshold",
    "policy": "policy", "removed": "removed", "false_removals": "false removals",
    "unlabeled_removals": "unlabeled removals", "chained_removals": "chained removals",
    "missed_removal_rate": "missed-removal rate", "candidate_recall": "candidate recall", "reduction": "reduction",
    "s50": "s50 (50% point)", "status": "status", "config_fingerprint": "fingerprint",
    "pair_recall_interval": "recall CI method", "expected_pair_recall": "expected pair recall (no seed)",
    "pair_recall_macro": "pair recall per group", "expected_candidate_recall": "expected candidate recall",
    "candidate_recall_macro": "candidate recall per group", "seeds": "seeds",
    "pair_recall_min": "pair recall, lowest seed", "pair_recall_max": "pair recall, highest seed",
    "false_removal_rate_min": "false-removal, lowest seed", "false_removal_rate_max": "false-removal, highest seed",
    "candidate_recall_min": "candidate recall, lowest seed", "candidate_recall_max": "candidate recall, highest seed",
}
PERCENT = {"pair_recall", "pair_precision", "false_removal_rate", "missed_removal_rate", "candidate_recall",
           "reduction", "expected_pair_recall", "pair_recall_macro", "expected_candidate_recall",
           "candidate_recall_macro", "pair_recall_min", "pair_recall_max", "false_removal_rate_min",
           "false_removal_rate_max", "candidate_recall_min", "candidate_recall_max"}


def interval(low: pd.Series, high: pd.Series) -> pd.Series:
    """'48.2-58.6%' per row ('' where the rate is undefined)."""
    text = (low * 100).map("{:.1f}".format) + "–" + (high * 100).map("{:.1f}".format) + "%"
    return text.where(low.notna() & high.notna(), "")


def columns(names, labels: dict, *, percent=(), formats: dict | None = None) -> dict:
    """``st.column_config`` for ``names``: the header from ``labels`` (else the name
    with spaces), ``percent`` columns as percentages, ``formats`` {name: number format,
    e.g. "%.3f" or "localized"}."""
    formats = {**dict.fromkeys(percent, "percent"), **(formats or {})}
    return {c: (st.column_config.NumberColumn(labels.get(c, c.replace("_", " ")), format=formats[c]) if c in formats
                else st.column_config.Column(labels.get(c, c.replace("_", " "))))
            for c in names}


def sweep_view(results: pd.DataFrame, *, labeled: bool = True, recommended_fp: str | None = None,
               current_fp: str | None = None) -> tuple[pd.DataFrame, dict]:
    """The Sweep table: decision columns first (readable at 1400 px), then the
    configuration, then the details; a mark column names the recommended and the
    current row. Returns (frame, column_config)."""
    view = results.copy()
    fp = view["config_fingerprint"]
    view[MARK] = ""
    view.loc[fp == current_fp, MARK] = "current"
    view.loc[fp == recommended_fp, MARK] = "★ recommended"
    view.loc[(fp == recommended_fp) & (fp == current_fp), MARK] = "★ current"
    for name in ("pair_recall", "pair_precision", "false_removal_rate"):
        view[f"{name}_95"] = interval(view[f"{name}_low"], view[f"{name}_high"])
    cols = [MARK] + (DECISION + CONFIG + DETAIL if labeled else UNLABELED + CONFIG + ["status", "config_fingerprint"])
    cols = [c for c in cols if c in view] + [c for c in SEEDS if c in view]
    return view[cols], columns(cols, LABELS, percent=PERCENT,
                               formats={"s50": "%.3f", "threshold": "%.2f", "candidates": "localized"})
