"""Table views: which columns a page shows, in which order, under which header.

Engine frames keep their snake_case names (they are the CSV/Parquet contract);
the app shows human headers through ``st.column_config``, built here.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from calib.search.config import table_columns

MARK = "mark"
MARK_WIDTH = 120  # px: the longest mark, "★ recommended", whole (it was cut to "★ curr")
# The columns a decision reads, first: what is found (recall), how much of it is right
# (precision), what it costs (false removals), and how much work LSH leaves (candidates).
DECISION = ["pair_recall", "pair_recall_95", "pair_precision", "pair_precision_95", "false_removal_rate",
            "false_removal_rate_95", "candidates"]
# The configuration's columns come from the Config fields (calib.search.config.table_columns).
CONFIG = table_columns()
DETAIL = ["removed", "false_removals", "unlabeled_removals", "chained_removals", "missed_removal_rate",
          "pair_recall_interval", "expected_pair_recall", "pair_recall_macro",
          "candidate_recall", "expected_candidate_recall", "candidate_recall_macro", "reduction", "status",
          "config_fingerprint"]
# Results across seeds (calib.search.seeds.across_seeds) add each rate's range over the seeds.
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
# Columns of the other pages' tables (Curves per-bin rates, Review decisions, Label progress): one
# map, so a column reads the same wherever it appears.
LABELS.update({
    "bin_low": "J from", "bin_high": "J to", "pairs": "pairs", "mean_similarity": "mean J", "rate": "measured rate",
    "rate_low": "95% low", "rate_high": "95% high", "rate_interval": "CI method", "expected": "expected (mean P(J))",
    "theory": "theory at mean J", "id_a": "document A", "id_b": "document B",
    "decision": "decision", "reviewer": "reviewer", "note": "note", "created_at": "recorded at (UTC)",
    "sample_label": "sample label", "contradicts": "contradicts sample label", "sim": "exact J",
    "chained": "chained only", "distance": "|J - threshold|", "stratum": "stratum", "drawn": "drawn",
    "pairs_in_sample": "pairs in the document sample", "duplicate": "duplicate", "not_duplicate": "not duplicate",
    "skipped": "skipped (unsure)", "left": "left", "labeled": "labeled",
})
PERCENT = {"pair_recall", "pair_precision", "false_removal_rate", "missed_removal_rate", "candidate_recall",
           "reduction", "expected_pair_recall", "pair_recall_macro", "expected_candidate_recall",
           "candidate_recall_macro", "pair_recall_min", "pair_recall_max", "false_removal_rate_min",
           "false_removal_rate_max", "candidate_recall_min", "candidate_recall_max"}


# Percent digits: false-removal rates are read against a budget of about 1% (0.82% vs 1.00%),
# so they keep two decimals; every other rate one. The same digits in tables, intervals
# and metrics (pct), on every page.
FINE_PERCENT = {"false_removal_rate", "false_removal_rate_95", "false_removal_rate_min", "false_removal_rate_max",
                "frr_low", "frr_high", "frr_95"}
# Counts carry thousands separators (sprintf-js as Streamlit's NumberColumn applies it).
COUNT = "%,d"
# Counts held as floats (NaN where a configuration stopped): integer columns are found by dtype.
COUNTS = {"candidates", "removed", "false_removals", "unlabeled_removals", "chained_removals", "n_positive",
          "n_negative", "labeled_removals", "removals"}


def percent_digits(name: str) -> int:
    return 2 if name in FINE_PERCENT else 1


def pct(value: float, name: str = "") -> str:
    """A rate in [0, 1] as text with the digits of column ``name``: '84.0%', '0.82%'."""
    return f"{value:.{percent_digits(name)}%}"


def interval(low: pd.Series, high: pd.Series, name: str = "") -> pd.Series:
    """'48.2–58.6%' per row ('' where the rate is undefined), digits of column ``name``."""
    fmt = f"{{:.{percent_digits(name)}f}}".format
    text = (low * 100).map(fmt) + "–" + (high * 100).map(fmt) + "%"
    return text.where(low.notna() & high.notna(), "")


def header(name: str, labels: dict | None = None) -> str:
    """A column's human header: ``labels``, then the shared map, else the name with spaces."""
    return {**LABELS, **(labels or {})}.get(name, name.replace("_", " "))


def columns(names, labels: dict | None = None, *, percent=(), formats: dict | None = None,
            widths: dict | None = None) -> dict:
    """``st.column_config`` for ``names``: the header from ``labels`` (else the shared
    map, else the name with spaces), ``percent`` columns as percentages with their
    column's digits (the frame must hold them x 100: use :func:`view`), ``formats``
    {name: number format, e.g. "%.3f" or COUNT}, ``widths`` {name: "small"/"medium"/px}."""
    formats = {**{c: f"%.{percent_digits(c)}f%%" for c in percent}, **(formats or {})}
    widths = widths or {}
    return {c: (st.column_config.NumberColumn(header(c, labels), format=formats[c], width=widths.get(c))
                if c in formats else st.column_config.Column(header(c, labels), width=widths.get(c)))
            for c in names}


def view(frame: pd.DataFrame, labels: dict | None = None, *, percent=(), formats: dict | None = None,
         widths: dict | None = None) -> tuple[pd.DataFrame, dict]:
    """(frame to show, column_config): human headers, ``percent`` columns x 100 with a
    fixed number of digits (Streamlit's own "percent" format drops trailing digits, so
    31.1% stood beside 31.75%), integer columns as counts with thousands separators
    (unless ``formats`` says otherwise, e.g. "%d" for an id)."""
    percent = [c for c in percent if c in frame]
    shown = frame.copy()
    shown[percent] = shown[percent].astype(float) * 100
    counts = {c: COUNT for c in frame.columns if c in COUNTS or (pd.api.types.is_integer_dtype(frame[c])
                                                                 and not pd.api.types.is_bool_dtype(frame[c]))}
    return shown, columns(frame.columns, labels, percent=percent, formats={**counts, **(formats or {})},
                          widths=widths)


def sweep_view(results: pd.DataFrame, *, labeled: bool = True, recommended_fp: str | None = None,
               current_fp: str | None = None) -> tuple[pd.DataFrame, dict]:
    """The Sweep table: decision columns first (readable at 1400 px), then the
    configuration, then the details; a mark column names the recommended and the
    current row. Returns (frame, column_config)."""
    frame = results.copy()
    fp = frame["config_fingerprint"]
    frame[MARK] = ""
    frame.loc[fp == current_fp, MARK] = "current"
    frame.loc[fp == recommended_fp, MARK] = "★ recommended"
    frame.loc[(fp == recommended_fp) & (fp == current_fp), MARK] = "★ current"
    if "seed_swing" in frame:  # its standing against the budget swings with the hash seed (calib.search.reseed)
        frame.loc[frame["seed_swing"].fillna(False).astype(bool), MARK] += " ± seed"
    for name in ("pair_recall", "pair_precision", "false_removal_rate"):
        frame[f"{name}_95"] = interval(frame[f"{name}_low"], frame[f"{name}_high"], name)
    cols = [MARK] + (DECISION + CONFIG + DETAIL if labeled else UNLABELED + CONFIG + ["status", "config_fingerprint"])
    cols = [c for c in cols if c in frame] + [c for c in SEEDS if c in frame]
    return view(frame[cols], percent=sorted(PERCENT), formats={"s50": "%.3f", "threshold": "%.2f"},
                widths={MARK: MARK_WIDTH})
