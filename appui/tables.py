"""Table views: which columns a page shows, in which order, under which header.

Engine frames keep their snake_case names (they are the CSV/Parquet contract);
the app shows human headers through ``st.column_config``, built here.
"""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from appui import labels as words
from appui.text import md
from calib.estimates import figures
from calib.search.config import table_columns
from calib.verification.measures import get_measure

MARK = "mark"
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
# the parts of a configuration every row names, even when all rows share them: what decides (rows read alike,
# "word3 [lower+nfkc+ws] 72.2%", when b, r and the threshold were off-screen)
ALWAYS = ("shingles", "hashes", "split", "rule")
RECOMMENDED, CURRENT, SWINGS = "★", "●", "±seed"
# the pinned rates' headers: short, so that the configuration and both rates fit beside each other at 800 px
PINNED_LABELS = {"pair_recall": "recall", "false_removal_rate": "false rem."}


def _rule(verify, measure, threshold) -> str:
    """'J≥0.75', 'est. C≥0.5', 'no verification'."""
    if str(verify) == "none":
        return "no verification"
    symbol = get_measure(str(measure or "jaccard")).symbol
    return ("est. " if str(verify) == "estimated" else "") + f"{symbol}≥{float(threshold):g}"


def _normalization_change(norm: str, usual: str) -> str:
    """A normalization as its difference from the usual one: '+nopunct', '−lower', '' when the same."""
    have, base = set(norm.split("+")), set(usual.split("+"))
    return " ".join([f"+{t}" for t in norm.split("+") if t not in base] +
                    [f"−{t}" for t in usual.split("+") if t not in have])


def configuration_parts(results: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Each row's configuration as short texts, one column per part: shingles ('word3'), normalization (as its
    change from the rows' most common one: '+nopunct'), weights and boilerplate ('idf strip>0.5'), hashes
    ('128h'), split ('25x5'), rule ('J≥0.75'), policy, minimum length, and any other setting column the table
    holds; and that most common normalization."""
    rep = results["representation"].astype(str)
    head = rep.str.extract(r"^(\S+) \[([^\]]*)\]\s*(.*)$")
    norms = head[1].fillna("")
    usual = norms.mode().iloc[0] if len(norms) else ""
    parts = pd.DataFrame({"shingles": head[0].fillna(rep),
                          "normalization": norms.map(lambda n: _normalization_change(n, usual)),
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
    return parts, usual


def configuration_column(results: pd.DataFrame) -> tuple[pd.Series, str]:
    """A compact configuration per row ('word3 +nopunct 128h 25x5 J≥0.75'): the shingles, hashes, split and
    rule always, every other part only where the rows differ in it; and, for a caption above the table,
    what every row shares ('[lower+nfkc+ws], connected', or the usual normalization the rows change)."""
    parts, usual = configuration_parts(results)
    varying = [c for c in parts if c in ALWAYS or parts[c].nunique() > 1]
    text = parts[varying].apply(lambda row: " ".join(v for v in row if v), axis=1) if len(parts) else \
        pd.Series([], dtype=object)
    shared = [parts[c].iloc[0] for c in parts if c not in varying and len(parts) and parts[c].iloc[0]]
    norm = (f"normalization {usual} unless a row says +x (adds x) or −x (drops x)" if "normalization" in varying
            else f"normalization {usual}" if usual else "")
    return text.astype(object), "; ".join([norm] * bool(norm) + [f"every row: {', '.join(shared)}"] * bool(shared))


def marked(results: pd.DataFrame, recommended_fp: str | None, current_fp: str | None) -> tuple[pd.Series, pd.Series]:
    """(the mark in words, the configuration's text around it): '★ recommended' / '★ {}', 'current' / '● {}',
    '★ current' / '★● {}', and ' ± seed' / '{} ±seed' where the row's standing swings with the seed."""
    fp = results["config_fingerprint"]
    words = pd.Series("", index=results.index, dtype=object)
    around = pd.Series("{}", index=results.index, dtype=object)
    words[fp == current_fp], around[fp == current_fp] = "current", CURRENT + " {}"
    words[fp == recommended_fp], around[fp == recommended_fp] = "★ recommended", RECOMMENDED + " {}"
    both = (fp == recommended_fp) & (fp == current_fp)
    words[both], around[both] = "★ current", RECOMMENDED + CURRENT + " {}"
    if "seed_swing" in results:  # its standing against the budget swings with the hash seed (calib.search.reseed)
        swing = results["seed_swing"].fillna(False).astype(bool)
        words[swing] += " ± seed"
        around[swing] += " " + SWINGS
    return words, around


def sweep_view(results: pd.DataFrame, *, labeled: bool = True, recommended_fp: str | None = None,
               current_fp: str | None = None) -> tuple[pd.DataFrame, dict]:
    """The Sweep table: a compact configuration (what decides: shingles, hashes, b x r, rule, after a mark:
    ★ recommended, ● current) and the two rates, pinned so they stay in view at 800 px while the other
    columns scroll; then the intervals and the other decision columns, each setting in its own column, the
    details, and the mark in words. Every column as wide as its longest value (:func:`fitted`). Returns
    (frame, column_config)."""
    frame = results.copy()
    frame[MARK], around = marked(frame, recommended_fp, current_fp)
    if labeled:
        for name in ("pair_recall", "pair_precision", "false_removal_rate"):
            frame[f"{name}_95"] = interval(frame[f"{name}_low"], frame[f"{name}_high"], name)
    frame[CONFIGURATION] = [a.format(t) for a, t in zip(around, configuration_column(frame)[0])]
    pinned = [CONFIGURATION] + (PINNED if labeled else UNLABELED)
    cols = pinned + (DECISION + CONFIG + DETAIL if labeled else CONFIG + ["status", "config_fingerprint"]) + [MARK]
    cols = list(dict.fromkeys(c for c in cols if c in frame)) + [c for c in SEEDS if c in frame]
    shown, config = view(frame[cols], PINNED_LABELS if labeled else None, percent=sorted(PERCENT),
                         formats={"s50": "%.3f", "threshold": "%.2f"})
    for c in pinned:  # a short header's full name in its help
        if c in config:
            config[c] = {**config[c], "pinned": True, **({"help": header(c)} if c in PINNED_LABELS else {})}
    return shown, config


# --- column widths from the values (a canvas grid cuts what does not fit, and then shows "10" for 1009) ---
# Pixel widths of each character in the grid's font (Source Sans, 14 px, the larger of the regular and the
# semi-bold header weight), measured in Chromium with canvas measureText; tests/test_e2e_widths.py measures
# them again in the browser and fails when a character is wider than said here.
CHAR_WIDTHS = dict((c, px) for chars, px in (
    (' ', 2.8),
    ('|', 3.6),
    ('ij', 3.7),
    ('l', 3.8),
    ("',.:;", 3.9),
    ('I', 4.0),
    ('!f', 4.5),
    ('()-[]{}', 4.6),
    ('/\\', 4.9),
    ('t', 5.1),
    ('r', 5.3),
    ('s', 6.1),
    ('*', 6.2),
    ('?z', 6.3),
    ('c', 6.5),
    ('"x–', 6.8),
    ('J_vy', 7.0),
    ('LYe', 7.1),
    ('0123456789#$+<=>F^~±−≥≤×', 7.2),
    ('ag', 7.3),
    ('k', 7.4),
    ('EVXZ', 7.6),
    ('ST`o', 7.7),
    ('u', 7.8),
    ('Abdhnpq', 7.9),
    ('C', 8.1),
    ('P', 8.2),
    ('R', 8.3),
    ('BK●', 8.4),
    ('DG', 8.8),
    ('&', 9.0),
    ('NU', 9.2),
    ('H', 9.3),
    ('OQ', 9.5),
    ('Mw', 10.5),
    ('W', 11.2),
    ('%', 11.8),
    ('m', 11.9),
    ('@', 12.3),
    ('★', 12.6),
    ('…', 13.5),
) for c in chars)
WIDE_PX = 14.0   # a character not in the table: as wide as the widest one
PAD_PX = 32      # the cell's padding and the header's sort arrow
MIN_PX = 60
MAX_PX = 420


def text_px(text: str) -> float:
    """Pixels ``text`` takes in the grid's font (:data:`CHAR_WIDTHS`)."""
    return sum(CHAR_WIDTHS.get(c, WIDE_PX) for c in str(text))


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
    longest = max([text_px(header_text)] + [text_px(t) for t in text])
    return int(min(MAX_PX, max(MIN_PX, math.ceil(longest + PAD_PX))))


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
