"""Table views: which columns a page shows, in which order, under which header.

Engine frames keep their snake_case names (they are the CSV/Parquet contract);
the app shows human headers through ``st.column_config``, built here.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from appui import labels as words
from appui.text import md
from calib.estimates import figures
from calib.search.config import table_columns
from calib.verification.measures import get_measure

MARK = "mark"
MARK_WIDTH = 120  # px: the longest mark, "★ recommended", whole (it was cut to "★ curr")
# The columns a decision reads, first: what is found (recall), how much of it is right
# (precision), what it costs (false removals), and how much work LSH leaves (candidates).
DECISION = ["pair_recall", "pair_recall_95", "pair_precision", "pair_precision_95", "false_removal_rate",
            "false_removal_rate_95", "candidates"]
# pinned beside the configuration: they stay in view at 800 px while the other columns scroll
PINNED = ["pair_recall", "false_removal_rate"]
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

# Headers come from the one map of words for people (appui.labels), shared by every page.
LABELS = words.COLUMNS
PERCENT = {"pair_recall", "pair_precision", "false_removal_rate", "missed_removal_rate", "candidate_recall",
           "reduction", "expected_pair_recall", "pair_recall_macro", "expected_candidate_recall",
           "candidate_recall_macro", "pair_recall_min", "pair_recall_max", "false_removal_rate_min",
           "false_removal_rate_max", "candidate_recall_min", "candidate_recall_max"}


# Percent digits and texts come from calib.estimates.figures (the CLI and the export write them there too):
# false-removal rates keep two decimals, every other rate one, in tables, intervals and metrics.
FINE_PERCENT = figures.FINE
# Counts carry thousands separators (sprintf-js as Streamlit's NumberColumn applies it).
COUNT = "%,d"
# Counts held as floats (NaN where a configuration stopped): integer columns are found by dtype.
COUNTS = {"candidates", "removed", "false_removals", "unlabeled_removals", "chained_removals", "n_positive",
          "n_negative", "labeled_removals", "removals", "below_threshold", "n_clusters"}
percent_digits = figures.percent_digits
pct = figures.pct


def interval(low: pd.Series, high: pd.Series, name: str = "") -> pd.Series:
    """'48.2–58.6%' per row ('' where the rate is not measured), digits of column ``name``
    (:func:`calib.estimates.figures.span`)."""
    return pd.Series([figures.span(lo, hi, name) for lo, hi in zip(low, high)], index=low.index, dtype=object)


def percent_text(frame: pd.DataFrame, names) -> pd.DataFrame:
    """``frame`` with columns ``names`` (rates in [0, 1]) as text with their digits, 'not measured' where
    there is no value (for ``st.table``, which writes numbers as they are)."""
    return frame.assign(**{c: frame[c].map(lambda v, c=c: pct(v, c)) for c in names if c in frame})


def header(name: str, labels: dict | None = None) -> str:
    """A column's human header: ``labels``, then the shared map, else the name with spaces."""
    return (labels or {}).get(name) or words.word(name)


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
    (unless ``formats`` says otherwise, e.g. "%d" for an id), every column as wide as its longest
    formatted value and its header (:func:`fitted`; ``widths`` overrides)."""
    percent = [c for c in percent if c in frame]
    shown = frame.copy()
    shown[percent] = shown[percent].astype(float) * 100
    counts = {c: COUNT for c in frame.columns if c in COUNTS or (pd.api.types.is_integer_dtype(frame[c])
                                                                 and not pd.api.types.is_bool_dtype(frame[c]))}
    return shown, fitted(shown, columns(frame.columns, labels, percent=percent,
                                        formats={**counts, **(formats or {})}, widths=widths))


CONFIGURATION = "configuration"
# the parts of a configuration every row names, even when all rows share them: what decides (the issue of
# rows that read alike, "word3 [lower+nfkc+ws] 72.2%", with b, r and the threshold off-screen)
ALWAYS = ("shingles", "hashes", "split", "rule")


def _rule(verify, measure, threshold) -> str:
    """'J≥0.75', 'est. C≥0.5', 'no verification'."""
    if str(verify) == "none":
        return "no verification"
    symbol = get_measure(str(measure or "jaccard")).symbol
    return ("est. " if str(verify) == "estimated" else "") + f"{symbol}≥{float(threshold):g}"


def configuration_parts(results: pd.DataFrame) -> pd.DataFrame:
    """Each row's configuration as short texts, one column per part: shingles ('word3'), normalization
    ('[lower+nfkc+ws]'), weights and boilerplate ('idf strip>0.5'), hashes ('128h'), split ('25x5'), rule
    ('J≥0.75'), policy, minimum length, and any other setting column the table holds."""
    rep = results["representation"].astype(str)
    head = rep.str.extract(r"^(\S+) (\[[^\]]*\])\s*(.*)$")
    parts = pd.DataFrame({"shingles": head[0].fillna(rep), "normalization": head[1].fillna(""),
                          "weights": head[2].fillna(""),
                          "hashes": results["num_perm"].map(lambda v: f"{int(v)}h"),
                          "split": [f"{int(b)}x{int(r)}" for b, r in zip(results["b"], results["r"])],
                          "rule": [_rule(v, m, t) for v, m, t in zip(
                              results["verify"], results.get("measure", pd.Series("jaccard", index=results.index)),
                              results["threshold"])]}, index=results.index)
    if "policy" in results:
        parts["policy"] = results["policy"].astype(str)
    if "min_shingles" in results:
        parts["min_shingles"] = results["min_shingles"].map(lambda v: f"≥{int(v)} shingles" if v else "")
    for name in ("hashfunc", "scheme", "seed", "representative"):
        if name in results:
            parts[name] = results[name].map(lambda v, n=name: f"{n} {v}")
    return parts


def configuration_column(results: pd.DataFrame) -> tuple[pd.Series, str]:
    """A compact configuration per row ('word3 128h 25x5 J≥0.75'): the shingles, hashes, split and rule
    always, every other part only where the rows differ in it; and what every row shares, in words
    ('all rows: [lower+nfkc+ws], connected'), for a caption above the table."""
    parts = configuration_parts(results)
    varying = [c for c in parts if c in ALWAYS or parts[c].nunique() > 1]
    text = parts[varying].apply(lambda row: " ".join(v for v in row if v), axis=1) if len(parts) else \
        pd.Series([], dtype=object)
    shared = [parts[c].iloc[0] for c in parts if c not in varying and len(parts) and parts[c].iloc[0]]
    return text.astype(object), ", ".join(shared)


def sweep_view(results: pd.DataFrame, *, labeled: bool = True, recommended_fp: str | None = None,
               current_fp: str | None = None) -> tuple[pd.DataFrame, dict]:
    """The Sweep table: the mark and a compact configuration (what decides: shingles, hashes, b x r, rule),
    then the decision columns (rates and their intervals), all pinned so they stay in view while the
    other columns scroll; then each setting in its own column, then the details. Every column as wide
    as its longest value (:func:`fitted`). Returns (frame, column_config)."""
    frame = results.copy()
    fp = frame["config_fingerprint"]
    frame[MARK] = ""
    frame.loc[fp == current_fp, MARK] = "current"
    frame.loc[fp == recommended_fp, MARK] = "★ recommended"
    frame.loc[(fp == recommended_fp) & (fp == current_fp), MARK] = "★ current"
    if "seed_swing" in frame:  # its standing against the budget swings with the hash seed (calib.search.reseed)
        frame.loc[frame["seed_swing"].fillna(False).astype(bool), MARK] += " ± seed"
    if labeled:
        for name in ("pair_recall", "pair_precision", "false_removal_rate"):
            frame[f"{name}_95"] = interval(frame[f"{name}_low"], frame[f"{name}_high"], name)
    frame[CONFIGURATION] = configuration_column(frame)[0]
    # the mark, then the configuration (a row is named before it is read), then the decision columns
    pinned = [MARK, CONFIGURATION] + (PINNED if labeled else UNLABELED)
    cols = pinned + (DECISION + CONFIG + DETAIL if labeled else CONFIG + ["status", "config_fingerprint"])
    cols = list(dict.fromkeys(c for c in cols if c in frame)) + [c for c in SEEDS if c in frame]
    shown, config = view(frame[cols], percent=sorted(PERCENT), formats={"s50": "%.3f", "threshold": "%.2f"},
                         widths={MARK: MARK_WIDTH})
    for c in pinned:
        if c in config:
            config[c] = {**config[c], "pinned": True}
    return shown, config


# --- column widths from the values (a canvas grid cuts what does not fit, and then shows "10" for 1009) ---
CHAR_PX = 8.0    # a digit or letter of the grid's 14 px font is at most ~8 px wide
PAD_PX = 28      # the cell's padding and the sort arrow
MAX_PX = 420


def formatted(values: pd.Series, fmt: str | None) -> pd.Series:
    """``values`` as the grid writes them with printf format ``fmt`` ('%,d', '%.1f%%', '%.3f'; None: str);
    '' where missing."""
    v = pd.Series(values)
    if fmt is None:
        return v.map(lambda x: "" if x is None or (isinstance(x, float) and pd.isna(x)) else str(x))
    if fmt == COUNT:
        return v.map(lambda x: "" if pd.isna(x) else f"{int(x):,}")
    return v.map(lambda x: "" if pd.isna(x) else fmt % x)


def fit_width(values: pd.Series, header_text: str, fmt: str | None = None) -> int:
    """Pixels a grid column needs to show its longest formatted value and its header whole."""
    text = formatted(values, fmt)
    longest = max([len(header_text)] + [len(t) for t in text])
    return int(min(MAX_PX, round(CHAR_PX * longest + PAD_PX)))


def fitted(frame: pd.DataFrame, config: dict) -> dict:
    """``config`` (from :func:`view` or :func:`columns`) with every column's width set by :func:`fit_width`
    from ``frame``'s values, unless a width is set already."""
    out = {}
    for name, c in config.items():
        c = dict(c)
        if name in frame and not c.get("width"):
            fmt = (c.get("type_config") or {}).get("format")
            c["width"] = fit_width(frame[name], c.get("label") or name, fmt)
        out[name] = c
    return out


def sweep_order(results: pd.DataFrame, budget: float, objective: str, recommended_fp: str | None = None,
                labeled: bool = True) -> pd.DataFrame:
    """The order the Sweep table opens in: the recommended row first, then the rows within the budget by
    ``objective`` (highest first, fewer candidates on ties), then the rows over it by false-removal rate
    (lowest first), stopped configurations last. Without labels: fewest candidates first."""
    if not labeled:
        return results.sort_values(["candidates", "removed"], kind="stable")
    frr = results["false_removal_rate"]
    key = pd.DataFrame({
        "rec": (results["config_fingerprint"] != recommended_fp).astype(int),
        "stopped": (results["status"] != "ok").astype(int),
        "over": (frr.fillna(float("inf")) > budget).astype(int),
        "obj": -results[objective].fillna(-1.0),
        "frr": frr.fillna(float("inf")),
        "cand": results["candidates"].fillna(float("inf"))}, index=results.index)
    over = key["over"] == 1
    key.loc[over, ["obj", "frr"]] = key.loc[over, ["frr", "obj"]].to_numpy()  # over budget: by false removals
    order = key.sort_values(["rec", "stopped", "over", "obj", "frr", "cand"], kind="stable").index
    return results.loc[order]


def small_table(frame: pd.DataFrame, index: str | None = None, labels: dict | None = None) -> pd.DataFrame:
    """A small frame for ``st.table`` (HTML: every row shown, every cell measurable in a browser): human
    headers, counts with thousands separators, category values in words, every text cell escaped as
    Markdown (:func:`appui.text.md`); ``index`` becomes the row labels."""
    out = frame.copy()
    for c in out.columns:
        if c in COUNTS or (pd.api.types.is_integer_dtype(out[c]) and not pd.api.types.is_bool_dtype(out[c])):
            out[c] = formatted(out[c], COUNT)
        elif not pd.api.types.is_numeric_dtype(out[c]) and not pd.api.types.is_bool_dtype(out[c]):
            out[c] = out[c].map(lambda v: words.category(v) if isinstance(v, str) else v)
    # st.table renders each cell as Markdown: a sample's values (slice names) must stay inert text
    out = out.map(lambda v: md(v) if isinstance(v, str) else v)
    out = out.rename(columns={c: header(c, labels) for c in out.columns})
    return out.set_index(header(index, labels)) if index is not None else out
