"""How a recommendation hangs on contested labels: the configurations of a sweep scored again
with every contested pair labeled duplicate, then not duplicate.

Contested pairs (reviewers disagree, no adjudication) are left out of the labels
(:mod:`calib.review.adjudication`); this says what the recommendation would be had they gone either way.
The same configurations as the sweep's table are scored on a relabeled view of the workspace
(:meth:`calib.search.workspace.Workspace.relabeled`): shingles, signatures and candidates are reused, only the
metrics are redone.
"""

from __future__ import annotations

import pandas as pd

from calib.search.config import config_from_row
from calib.review.labels import with_review_labels
from calib.search.seeds import across_seeds
from calib.search.recommend import with_recommendation
from calib.search.sweep import sweep_configs
from calib.search.workspace import Workspace

WAYS = ("duplicate", "not_duplicate")
COLUMNS = ("labels", "config_fingerprint", "config", "pair_recall", "false_removal_rate", "pair_recall_change",
           "false_removal_rate_change", "same_config", "base_pair_recall", "base_false_removal_rate")


def _describe(row) -> str:
    return (f"{row['representation']} num_perm={row['num_perm']} b={row['b']} r={row['r']} {row['verify']} "
            f"t={row['threshold']}")


def _recommendation_table(results: pd.DataFrame, budget: float) -> pd.DataFrame:
    table = across_seeds(results) if results["seed"].nunique() > 1 else results
    return with_recommendation(table.drop(columns=["recommended"], errors="ignore"), max_false_removal_rate=budget)


def _best(table: pd.DataFrame):
    rows = table[table["recommended"]]
    return rows.iloc[0] if len(rows) else None


def contested_sensitivity(ws: Workspace, results: pd.DataFrame, contested: pd.DataFrame, *,
                          budget: float = 0.01, max_pairs: int | None = 20_000_000, progress=None) -> pd.DataFrame:
    """One row per labeling ('as labeled', 'contested -> duplicate', 'contested -> not duplicate'):
    the recommended configuration, its pair recall and false-removal rate, their change from the
    recommendation as labeled, whether it is the same configuration, and how the configuration
    recommended as labeled fares under that labeling (base_*).

    ``results``: the sweep's table on ``ws`` (its configurations are scored again);
    ``contested``: id_a, id_b of the contested pairs."""
    base = _recommendation_table(results, budget)
    best = _best(base)
    rows = [_row("as labeled", best, best, best)]
    configs = [config_from_row(r) for _, r in results.drop_duplicates("config_fingerprint").iterrows()]
    for way in WAYS:
        labels = pd.DataFrame({"id_a": contested["id_a"].astype(str), "id_b": contested["id_b"].astype(str),
                               "label": way, "category": "contested"})
        sample, _, _ = with_review_labels(ws.sample, labels)
        table = _recommendation_table(sweep_configs(ws.relabeled(sample), configs, max_pairs, progress=progress),
                                      budget)
        same = None if best is None else table[table["config_fingerprint"] == best["config_fingerprint"]]
        rows.append(_row(f"contested -> {way.replace('_', ' ')}", _best(table), best,
                         None if same is None or same.empty else same.iloc[0]))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _row(name: str, rec, best, base_under) -> dict:
    nan = float("nan")
    out = {"labels": name, "config_fingerprint": None, "config": "(none within the budget)", "pair_recall": nan,
           "false_removal_rate": nan, "pair_recall_change": nan, "false_removal_rate_change": nan,
           "same_config": best is None and rec is None,
           "base_pair_recall": nan if base_under is None else float(base_under["pair_recall"]),
           "base_false_removal_rate": nan if base_under is None else float(base_under["false_removal_rate"])}
    if rec is not None:
        out.update(config_fingerprint=rec["config_fingerprint"], config=_describe(rec),
                   pair_recall=float(rec["pair_recall"]), false_removal_rate=float(rec["false_removal_rate"]),
                   same_config=best is not None and rec["config_fingerprint"] == best["config_fingerprint"])
        if best is not None:
            out.update(pair_recall_change=float(rec["pair_recall"] - best["pair_recall"]),
                       false_removal_rate_change=float(rec["false_removal_rate"] - best["false_removal_rate"]))
    return out


def summary_lines(table: pd.DataFrame) -> list[str]:
    """The sensitivity table as lines for the CLI."""
    out = []
    for _, r in table.iterrows():
        if r["config_fingerprint"] is None:
            out.append(f"  {r['labels']}: no configuration within the budget")
            continue
        change = "" if r["labels"] == "as labeled" else (
            f" ({'same configuration' if r['same_config'] else 'another configuration'}; recall "
            f"{r['pair_recall_change']:+.3f}, false-removal rate {r['false_removal_rate_change']:+.4f}; the "
            f"configuration recommended as labeled: recall {r['base_pair_recall']:.3f}, false-removal rate "
            f"{r['base_false_removal_rate']:.4f})")
        out.append(f"  {r['labels']}: {r['config']} ({r['config_fingerprint']}): pair recall {r['pair_recall']:.3f}, "
                   f"false-removal rate {r['false_removal_rate']:.4f}{change}")
    return out


__all__ = ["WAYS", "COLUMNS", "contested_sensitivity", "summary_lines"]
