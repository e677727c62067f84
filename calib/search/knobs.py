"""Which knobs mattered: per axis of a configuration, the best row at each of its values.

For each axis (normalization, shingle kind and size, hash count, split, threshold, measure,
weighting, boilerplate stripping, clustering policy) and each value a measured row takes on it, the
best objective among the rows within the false-removal budget that take that value. An axis's
spread, the best value's objective minus the worst's, says how much the corpus cares about it: a
spread near 0 means any of the tried values does as well, a large one that the choice decides.
Values no row within the budget takes show the objective 0 (nothing fits there).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calib.search.recommend import ranked

THRESHOLD_BIN = 0.05


def _values(rows: pd.DataFrame) -> pd.DataFrame:
    """Each row's value on each axis, in words."""
    def col(name, default):
        return rows[name] if name in rows else pd.Series(default, index=rows.index)
    norm = np.where(col("lowercase", True).astype(bool), "lower", "case") + np.where(
        col("strip_punct", False).astype(bool), "+nopunct", "")
    t = pd.to_numeric(col("threshold", np.nan), errors="coerce")
    low = np.floor(t.to_numpy(float) / THRESHOLD_BIN + 1e-9) * THRESHOLD_BIN
    return pd.DataFrame({
        "normalization": norm,
        "shingle": col("shingle", "word").astype(str) + col("k", 5).astype(str),
        "num_perm": col("num_perm", 128).astype(str),
        "split": col("b", 0).astype(str) + "x" + col("r", 0).astype(str),
        "threshold": [("none" if np.isnan(x) else f"{x:.2f}-{min(1.0, x + THRESHOLD_BIN):.2f}") for x in low],
        "measure": col("measure", "jaccard").astype(str),
        "weighting": col("weighting", "none").fillna("none").astype(str),
        "strip_lines": col("strip_lines", 0.0).fillna(0.0).map(lambda v: "off" if not v else f"{v:g}"),
        "policy": col("policy", "connected").astype(str),
    }, index=rows.index)


def knobs(results: pd.DataFrame, *, budget: float = 0.01, objective: str = "pair_recall",
          confidence: float | None = None) -> pd.DataFrame:
    """One row per (axis, value): ``best`` (the objective of the best row within the budget taking
    that value, 0 when none fits), ``rows`` (measured rows taking it), ``config`` (the best row's
    fingerprint), ``spread`` (the axis's best minus worst value), axes ordered by spread. Only axes
    whose rows take two or more values are listed."""
    ok = results[results["status"] == "ok"] if "status" in results else results
    values = _values(ok)
    within = ranked(ok, max_false_removal_rate=budget, objective=objective, confidence=confidence)
    out = []
    for axis in values.columns:
        counts = values[axis].value_counts()
        if len(counts) < 2:
            continue
        best_rows = within.assign(_v=values.loc[within.index, axis]).drop_duplicates("_v")
        best = dict(zip(best_rows["_v"], zip(best_rows[objective], best_rows["config_fingerprint"])))
        for value, n in counts.items():
            b, fp = best.get(value, (0.0, ""))
            out.append({"axis": axis, "value": value, "best": float(b), "rows": int(n), "config": fp})
    table = pd.DataFrame(out, columns=["axis", "value", "best", "rows", "config"])
    if table.empty:
        return table.assign(spread=pd.Series(dtype=float))
    spread = table.groupby("axis")["best"].agg(lambda s: s.max() - s.min())
    table["spread"] = table["axis"].map(spread)
    return table.sort_values(["spread", "axis", "best"], ascending=[False, True, False], kind="stable") \
        .reset_index(drop=True)


def knobs_text(table: pd.DataFrame, objective: str = "pair_recall", top: int = 5) -> str:
    """'what mattered: shingle (word5 55.2% ... char3 31.0%), ...': the axes with the widest spread."""
    if table.empty:
        return "what mattered: one value per axis was measured"
    parts = []
    for axis, g in list(table.groupby("axis", sort=False))[:top]:
        g = g.sort_values("best", ascending=False)
        hi, lo = g.iloc[0], g.iloc[-1]
        parts.append(f"{axis.replace('_', ' ')} {g['spread'].iloc[0]:.1%} ({hi['value']} {hi['best']:.1%} .. "
                     f"{lo['value']} {lo['best']:.1%})")
    return f"what mattered (best {objective.replace('_', ' ')} within the budget per value; spread): " + "; ".join(parts)


__all__ = ["knobs", "knobs_text"]
