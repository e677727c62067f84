"""A result row's figures as people read them: one function per kind of figure.

A rate, its 95% interval, a count and what the interval covers are written by
these functions only, from the result row the engine computed (a sweep row, an
evaluation's row, config.json's evidence metrics), so a configuration reads the
same on every page of the app, in the CLI and in the export.

* Percent digits: a false-removal rate is read against a budget of about 1%
  (0.82% vs 1.00%), so it keeps two decimals; every other rate one.
* A value that cannot be measured (NaN, None, an infinite bound: e.g. a
  false-removal rate with no labeled removal) is said in words, never as
  ``nan`` or ``inf``.
* What an interval covers is generated from the row's own ``<rate>_interval``
  column (:func:`interval_words`), never typed beside it.
"""

from __future__ import annotations

import math

# two decimals: the rates read against a budget of about 1%
FINE = frozenset({"false_removal_rate", "false_removal_rate_low", "false_removal_rate_high",
                  "false_removal_rate_95", "false_removal_rate_min", "false_removal_rate_max",
                  "frr_low", "frr_high", "frr_95", "expected_false_removal_rate", "false_removal_rate_seed_high"})

NOT_MEASURED = "not measured"
# Why a rate has no value: the trials it is counted over are none.
NO_TRIALS = {
    "false_removal_rate": "no labeled removal",
    "pair_recall": "no labeled duplicate pair",
    "candidate_recall": "no labeled duplicate pair",
    "pair_precision": "no labeled pair verified",
    "missed_removal_rate": "no labeled duplicate cluster",
}

# What each interval method covers (the values of a row's <rate>_interval column, calib.estimates.metrics,
# calib.estimates.ratio, calib.search.seeds). docs/guides/rates-and-intervals.md lists these words; a test
# keeps the page and this map the same.
METHODS = {
    "wilson": "binomial sampling of independent labeled trials",
    "wilson-clusters": "sampling of the clusters that hold the trials (Wilson over clusters, where every "
                       "resample of the clusters gives the same rate)",
    "cluster-bootstrap": "sampling of whole true-duplicate clusters (cluster bootstrap)",
    "stratified": "the stratified draw's sampling, weighted by inclusion probability",
}
HASH_SUFFIX = "+hash"
HASH_WORDS = "and the hash seed (the value another seed gives)"
SEEDS_PREFIX = "envelope of per-seed "
SEEDS_WORDS = "the envelope of the per-seed intervals, each covering"


def measured(value) -> bool:
    """A finite number (not None, NaN, pandas' NA or an infinity)."""
    try:
        return value is not None and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def percent_digits(name: str = "") -> int:
    return 2 if name in FINE else 1


def pct(value, name: str = "") -> str:
    """A rate in [0, 1] with the digits of column ``name``: '84.0%', '0.82%'; 'not measured' when it is not
    a finite number."""
    return f"{float(value):.{percent_digits(name)}%}" if measured(value) else NOT_MEASURED


def probability(x, whole: str = "100%") -> str:
    """A probability or share in [0, 1] as people read it, one decimal everywhere so figures side by side
    compare ('8.4%' beside '10.5%'): exactly 1 is ``whole`` ('100%'), exactly 0 is '0%'; a value that one
    decimal would round to 100.0% or 0.0% is '> 99.9%' or '< 0.1%', never the bound itself;
    'not measured' when it is not a number."""
    if not measured(x):
        return NOT_MEASURED
    x = float(x)
    if x >= 1:
        return whole
    if x <= 0:
        return "0%"
    if x < 0.0005:
        return "< 0.1%"
    return "> 99.9%" if x >= 0.9995 else f"{100 * x:.1f}%"


def span(low, high, name: str = "") -> str:
    """An interval as '48.2–58.6%' (digits of column ``name``); '' when either end is not measured."""
    if not (measured(low) and measured(high)):
        return ""
    d = percent_digits(name)
    return f"{100 * float(low):.{d}f}–{100 * float(high):.{d}f}%"


def _get(row, key):
    try:
        return row.get(key)
    except AttributeError:
        return row[key] if key in row else None


def interval_words(method) -> str:
    """What an interval of method ``method`` (a row's ``<rate>_interval``) covers, in words:
    'cluster-bootstrap+hash' -> 'sampling of whole true-duplicate clusters (cluster bootstrap) and the hash
    seed (the value another seed gives)'. '' for an empty or unknown method."""
    text = str(method or "").strip()
    if not text or text == "nan":
        return ""
    if text.startswith(SEEDS_PREFIX):
        inner = interval_words(text[len(SEEDS_PREFIX):])
        return f"{SEEDS_WORDS} {inner}" if inner else ""
    hashed = text.endswith(HASH_SUFFIX)
    base = METHODS.get(text[: -len(HASH_SUFFIX)] if hashed else text, "")
    return f"{base} {HASH_WORDS}" if base and hashed else base


def rate_text(row, name: str, *, covers: bool = False) -> str:
    """Rate ``name`` of a result row with its 95% interval: '0.35% (95% interval 0.00–1.12%)'; with ``covers``
    the interval's method in words after it. A rate that cannot be measured: 'not measured (no labeled
    removal)'."""
    value = _get(row, name)
    if not measured(value):
        why = NO_TRIALS.get(name)
        return f"{NOT_MEASURED} ({why})" if why else NOT_MEASURED
    out = pct(value, name)
    interval = span(_get(row, f"{name}_low"), _get(row, f"{name}_high"), name)
    if interval:
        words = interval_words(_get(row, f"{name}_interval")) if covers else ""
        out += f" (95% interval {interval}" + (f": {words})" if words else ")")
    return out


def count(n, noun: str, plural: str | None = None) -> str:
    """'1 label', '1,234 labels' (``plural`` for nouns not made with -s); 'no <plural>' is never written
    as 'nan <plural>': a count that is not a number is 'not measured'."""
    if not measured(n):
        return f"{plural or noun + 's'} {NOT_MEASURED}"
    n = int(n)
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def number(n) -> str:
    """A count with thousands separators ('1,234'), 'not measured' when it is not a number."""
    return f"{int(n):,}" if measured(n) else NOT_MEASURED


def chain_text(growth) -> str:
    """A pick's removals by chaining alone (:class:`calib.clusters.growth.ChainGrowth`) in one line:
    'chaining: 3 of 40 removals by chaining alone (7.5%; 2.1% on half the sample)'; a share with no
    removal under it (no half of a tiny sample removes anything) is said in words."""
    if not measured(growth.removed) or not growth.removed:
        return "chaining: nothing removed"
    half = (f"{pct(growth.half)} on half the sample" if measured(growth.half) else
            f"{NOT_MEASURED} on half the sample: no half of it removes anything")
    out = (f"chaining: {number(growth.chained)} of {number(growth.removed)} removals by chaining alone "
           f"({pct(growth.whole)}; {half})")
    return out + (f"; {growth.advice}" if growth.advice else "")


RATE_NAMES = {"false_removal_rate": "false-removal rate", "pair_recall": "pair recall",
              "pair_precision": "pair precision", "missed_removal_rate": "missed-removal rate",
              "candidate_recall": "candidate recall"}


def covers(methods, name: str) -> str:
    """What the 95% intervals of rate ``name`` cover, from their methods (a row's ``<name>_interval``, or
    a column of them): "The false-removal rate's 95% interval (cluster-bootstrap+hash) covers sampling of
    whole true-duplicate clusters (cluster bootstrap) and the hash seed (the value another seed gives)."
    '' when no method is known."""
    if isinstance(methods, str) or methods is None:
        methods = [methods]
    found = [m for m in dict.fromkeys(str(m) for m in methods if m is not None) if interval_words(m)]
    what = RATE_NAMES.get(name, name.replace("_", " "))
    if not found:
        return ""
    if len(found) == 1:
        return f"The {what}'s 95% interval ({found[0]}) covers {interval_words(found[0])}."
    return f"The {what}'s 95% intervals cover: " + "; ".join(f"{m}: {interval_words(m)}" for m in found) + "."


def summary(row) -> str:
    """A configuration's headline figures from its result row, as the CLI, the Sweep and the Export pages
    write them: 'pair recall 77.6% (95% interval 73.6–82.1%), false-removal rate 0.35% (95% interval
    0.00–1.12%), 309 documents removed'."""
    return (f"pair recall {rate_text(row, 'pair_recall')}, false-removal rate "
            f"{rate_text(row, 'false_removal_rate')}, {count(_get(row, 'removed'), 'document')} removed")


def covers_row(row, names) -> str:
    """What the 95% intervals of a row's rates ``names`` cover, one sentence per method: "The pair recall's
    and the false-removal rate's 95% intervals (cluster-bootstrap+hash) cover ..."."""
    by: dict[str, list[str]] = {}
    for name in names:
        method = str(_get(row, f"{name}_interval") or "")
        if interval_words(method):
            by.setdefault(method, []).append(RATE_NAMES.get(name, name.replace("_", " ")))
    return " ".join(
        f"The {whats[0]}'s 95% interval ({m}) covers {interval_words(m)}." if len(whats) == 1 else
        f"The {' and the '.join(w + chr(39) + 's' for w in whats)} 95% intervals ({m}) cover {interval_words(m)}."
        for m, whats in by.items())
