"""Per-slice answers of a corpus draw: the corpus-level rates and totals of
:mod:`calib.estimates.corpus_weighted` restricted to one value of a slice field.

Each is a domain estimate (Sarndal, Swensson and Wretman 1992, 10.3): the
same Horvitz-Thompson totals over the same labeled pairs, with y and x set to
0 outside the domain, so

    R^_d = sum_k 1[k in d] y_k / pi_k  /  sum_k 1[k in d] x_k / pi_k

and its variance is :func:`~calib.estimates.corpus_weighted.corpus_ratio`'s
with e_k = 1[k in d] (y_k - R^_d x_k): the pairs outside the domain stay in
their strata as zeros (the number of the domain's pairs a stratum holds is
itself random), so nothing is conditioned on. The domains:

* pair rates (candidate recall, pair recall, pair precision): the pairs whose
  two documents both have the value (a pair across two values is in neither);
* removals (false-removal rate, documents removed and their share): the pairs
  whose *later* document (the one a keep-first rule removes, whose ``1/d``
  the pair carries) has the value, so ``documents_removed`` is the expected
  number of the value's documents removed and its share is over the value's
  documents in the corpus (design.json's ``slice_docs``, counted at draw
  time, known exactly).

A value with no labeled pair in a domain has no estimate (NaN): label more (or
draw more) of its pairs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calib.estimates.corpus_weighted import _yx, at_most, corpus_ratio, corpus_total
from calib.estimates.ratio import RATES
from calib.estimates.slices import MISSING

PAIR_RATES = ("candidate_recall", "pair_recall", "pair_precision")  # domain: both documents have the value
TOTALS = ("documents_removed", "documents_removed_share")             # domain: the removed (later) document
COLUMNS = ("column", "value", "documents", "labeled_pairs", "labeled_duplicates", "labeled_removals",
           *[f"{r}{s}" for r in (*RATES, *TOTALS) for s in ("", "_low", "_high")])


def slice_values(values) -> np.ndarray:
    """A slice column as text, ``(missing)`` for a missing value (as design.json counts it)."""
    v = pd.Series(values).astype(object)
    return v.where(v.notna(), MISSING).astype(str).to_numpy(object)


def slice_table(frame: pd.DataFrame, design, slices: pd.DataFrame) -> pd.DataFrame:
    """One row per (slice column, value) of ``slices`` (one row per document of the drawn set, in
    corpus order; ``frame`` from :func:`calib.estimates.design_weighted.design_pairs`, its ``i``,
    ``j`` rows of ``slices``): the rates with 95% intervals and documents removed (see the module
    docstring). Values design.json counts but no drawn document holds are listed too."""
    i, j = frame["i"].to_numpy(np.int64), frame["j"].to_numpy(np.int64)
    first, later = np.minimum(i, j), np.maximum(i, j)
    dup = frame["duplicate"].to_numpy(bool)
    removal = frame["removal"].to_numpy(float)
    counts_of = getattr(design, "slice_docs", {}) or {}
    out = []
    for col in slices.columns:
        vals = slice_values(slices[col])
        va, vb = vals[first], vals[later]
        counts = counts_of.get(col, {})
        for v in sorted(set(counts) | set(vals.tolist()), key=lambda x: (x == MISSING, x)):
            both, rem = (va == v) & (vb == v), vb == v
            docs = counts.get(v, np.nan)
            row = {"column": col, "value": v, "documents": docs, "labeled_pairs": int(both.sum()),
                   "labeled_duplicates": int((both & dup).sum()), "labeled_removals": int((rem & (removal > 0)).sum())}
            for name in RATES:
                y, x = _yx(frame, name)
                mask = both if name in PAIR_RATES else rem
                est = corpus_ratio(frame, design, np.asarray(y, float) * mask, np.asarray(x, float) * mask)
                row.update({name: est.estimate, f"{name}_low": est.low, f"{name}_high": est.high})
            total, lo, hi = corpus_total(frame, design, removal * rem)
            if np.isfinite(docs):  # documents of the slice: at most its count
                total, lo, hi = at_most(docs, total, lo, hi)
            with np.errstate(divide="ignore", invalid="ignore"):
                share = np.array([total, lo, hi]) / docs if docs else np.full(3, np.nan)
            row.update({"documents_removed": total, "documents_removed_low": lo, "documents_removed_high": hi,
                        "documents_removed_share": share[0], "documents_removed_share_low": share[1],
                        "documents_removed_share_high": share[2]})
            out.append(row)
    return pd.DataFrame(out, columns=list(COLUMNS))


def corpus_slice_table(ws, cfg, clustering) -> pd.DataFrame:
    """:func:`slice_table` of configuration ``cfg`` on a workspace over a corpus draw's labels
    (the sample's slice columns: those ``calib draw --slice-fields`` wrote)."""
    from calib.estimates.design_weighted import design_pairs
    s = ws.sample
    frame = design_pairs(ws, cfg, clustering)
    return slice_table(frame, s.design, s.docs[list(s.slice_columns)])
