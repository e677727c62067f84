"""Per-slice breakdown of a success rate (recall, precision...) with a
significance test: is this slice different from the rest?

For each slice value: n items, k successes, the rate with a Wilson interval,
and a two-sided Fisher exact test of the 2x2 table (this slice vs all other
slices, success vs failure). p-values are Holm-adjusted over the slices of
one column; a slice is ``flagged`` when its adjusted p-value is below alpha.
Missing slice values form their own slice, shown as "(missing)".
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import fisher_exact

from calib.estimates.stats import rate, wilson

MISSING = "(missing)"
RATE_COLUMNS = ("value", "n", "k", "rate", "ci_low", "ci_high", "p_value", "p_adjusted", "flagged")


def holm(p) -> np.ndarray:
    """Holm step-down adjusted p-values (monotone, capped at 1); NaN stays NaN."""
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = len(ok)
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    adj = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out[order] = np.minimum(adj, 1.0)
    return out


def _fisher_vs_rest(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Two-sided Fisher exact p-value of each slice against all the others."""
    K, N = int(k.sum()), int(n.sum())
    out = np.full(len(k), np.nan)
    for s, (ks, ns) in enumerate(zip(k.tolist(), n.tolist())):
        if ns == 0 or ns == N:
            continue
        table = [[ks, ns - ks], [K - ks, (N - ns) - (K - ks)]]
        out[s] = fisher_exact(table, alternative="two-sided").pvalue
    return out


def slice_rates(values, success, *, mask=None, alpha: float = 0.05) -> pd.DataFrame:
    """One row per distinct slice value among the items where ``mask`` is
    True: n, k, rate, Wilson ci_low/ci_high, Fisher p_value (slice vs rest),
    Holm p_adjusted and flagged (p_adjusted < alpha). Sorted by value."""
    values = pd.Series(values).reset_index(drop=True)
    success = np.asarray(success, dtype=bool)
    if len(success) != len(values):
        raise ValueError(f"values and success differ in length ({len(values)} vs {len(success)})")
    keep = np.ones(len(values), bool) if mask is None else np.asarray(mask, dtype=bool)
    if len(keep) != len(values):
        raise ValueError(f"mask and values differ in length ({len(keep)} vs {len(values)})")
    labels = values.astype(object).where(values.notna(), MISSING).astype(str)[keep]
    frame = pd.DataFrame({"value": labels.to_numpy(), "ok": success[keep]})
    g = frame.groupby("value", sort=True)["ok"].agg(["size", "sum"])
    n = g["size"].to_numpy(np.int64)
    k = g["sum"].to_numpy(np.int64)
    lo, hi = wilson(k, n, alpha)
    p = _fisher_vs_rest(k, n)
    padj = holm(p)
    return pd.DataFrame({"value": g.index.astype(str), "n": n, "k": k, "rate": rate(k, n),
                         "ci_low": lo, "ci_high": hi, "p_value": p, "p_adjusted": padj,
                         "flagged": np.nan_to_num(padj, nan=1.0) < alpha})


def slice_report(frame: pd.DataFrame, slice_columns, success_col: str, mask_col: str | None = None,
                 *, alpha: float = 0.05) -> pd.DataFrame:
    """:func:`slice_rates` for several slice columns of ``frame``, stacked into
    one tidy frame with a leading ``column`` field (Holm per column)."""
    parts = []
    for col in slice_columns:
        r = slice_rates(frame[col], frame[success_col],
                        mask=None if mask_col is None else frame[mask_col], alpha=alpha)
        r.insert(0, "column", col)
        parts.append(r)
    if not parts:
        return pd.DataFrame(columns=["column", *RATE_COLUMNS])
    return pd.concat(parts, ignore_index=True)
