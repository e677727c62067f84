"""The search's third step: the few best configurations re-run on further hash seeds before one is recommended.

A sweep measures every configuration on one hash seed, and the row that wins a budget by a hair may
have won it by hash luck: band collisions decide which near-threshold pairs are verified. The first
two passes already check the budget on the rate another seed would give (its expected value over the
hash plus 1.645 hash standard deviations, :mod:`calib.estimates.over_hash`); this step measures it.
The ``top`` best rows that fit the budget are swept again on ``more`` further seeds (their own seed + 1,
+ 2, ...; shingles and exact joins are cached, only signatures and bands are new), and the best by the
seed-average objective among those that hold the budget on every seed is recommended (failing that,
the best whose seed-average rate holds it; failing that, the first pass's pick, said so).

:func:`seed_flags` marks the rows whose standing against the budget swings with the seed
(``seed_swing``): the measured seeds disagree (checked rows), or the false-removal rate a new seed
gives, expected +- 1.645 hash sd, straddles the budget, or the measured rate and the expected one
sit on different sides of it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from calib.estimates.over_hash import Z95_ONE_SIDED
from calib.search.config import config_from_row
from calib.search.recommend import config_text, held_rate, ranked
from calib.search.sweep import sweep_configs

TOP = 5    # configurations re-run
MORE = 4   # further seeds each


@dataclass(frozen=True, eq=False)
class SeedCheck:
    """The checked configurations (one row each, best first), the rows of the further seeds, the pick."""

    table: pd.DataFrame  # config_fingerprint, seeds, held, objective/frr mean min max, picked
    rows: pd.DataFrame   # the further seeds' rows (search_pass 3)
    best: pd.Series | None
    how: str             # "every seed", "seed average", "not held"

    def text(self, objective: str = "pair_recall", budget: float = 0.01) -> str:
        if self.best is None or self.table.empty:
            return "seed check: nothing within the budget to re-run"
        t = self.table
        pick = t[t["picked"]].iloc[0]
        name = objective.replace("_", " ")
        seeds = int(pick["seeds"])
        out = (f"seed check: the best {len(t)} re-run on {seeds - 1} more seeds each; recommended "
               f"{_describe(self.best)} held the false-removal budget {budget:g} on {int(pick['held'])} of "
               f"{seeds} seeds (rate {pick['frr_min']:.4f}-{pick['frr_max']:.4f}, mean {pick['frr_mean']:.4f}; "
               f"{name} {pick['obj_min']:.3f}-{pick['obj_max']:.3f}, mean {pick['obj_mean']:.3f})")
        if self.how == "seed average":
            out += "; none held it on every seed: picked on the seed-average rate"
        elif self.how == "not held":
            out += "; none held it on every seed or on the seed average: the first pick stands, unconfirmed"
        broke = t[t["held"] < t["seeds"]]
        if len(broke):
            out += f"; {len(broke)} of the {len(t)} broke it on some seed (flagged seed_swing)"
        return out


def _describe(row) -> str:
    return config_text(row)


def _within(frame: pd.DataFrame, budget: float, confidence: float | None = None) -> np.ndarray:
    """Each row holds the budget (on its rate, or with ``confidence`` on the rate's one-sided upper bound
    at it): measured, and an unknown rate only when nothing is removed."""
    frr = held_rate(frame, confidence)
    removed = frame["removed"].fillna(0) if "removed" in frame else pd.Series(0, index=frame.index)
    ok = (frame["status"] == "ok") & ((frr <= budget) | (frr.isna() & (removed == 0)))
    return ok.to_numpy(bool)


def seed_check(ws, results: pd.DataFrame, *, budget: float = 0.01, objective: str = "pair_recall",
               top: int = TOP, more: int = MORE, max_pairs: int | None = 20_000_000, progress=None,
               confidence: float | None = None) -> SeedCheck:
    """Re-run the ``top`` best rows that fit ``budget`` on ``more`` further seeds and pick (module docstring);
    with ``confidence``, a seed holds the budget on its rate's one-sided upper bound at that confidence."""
    cands = ranked(results, max_false_removal_rate=budget, objective=objective, confidence=confidence)
    cands = cands.drop_duplicates("config_fingerprint").head(top)
    empty = pd.DataFrame(columns=["config_fingerprint", "seeds", "held", "picked"])
    if cands.empty or more < 1:
        return SeedCheck(empty, results.iloc[:0], None if cands.empty else cands.iloc[0], "not held")
    configs, owner = [], {}
    for fp, (_, row) in zip(cands["config_fingerprint"], cands.iterrows()):
        cfg = config_from_row(row)
        for k in range(1, more + 1):
            c = replace(cfg, rep=cfg.rep.with_(seed=cfg.rep.seed + k))
            configs.append(c)
            owner[c.fingerprint()] = fp
    rows = sweep_configs(ws, configs, max_pairs, progress=progress).assign(search_pass=3)
    rows["checks"] = rows["config_fingerprint"].map(owner)
    table = []
    for rank, (fp, (_, row)) in enumerate(zip(cands["config_fingerprint"], cands.iterrows())):
        every = pd.concat([cands.loc[[row.name]], rows[rows["checks"] == fp]])
        held = _within(every, budget, confidence)
        frr = every["false_removal_rate"].fillna(0.0)
        obj = every[objective]
        table.append({"config_fingerprint": fp, "rank": rank, "seeds": len(every), "held": int(held.sum()),
                      "obj_mean": float(obj.mean()), "obj_min": float(obj.min()), "obj_max": float(obj.max()),
                      "frr_mean": float(frr.mean()), "frr_min": float(frr.min()), "frr_max": float(frr.max())})
    table = pd.DataFrame(table)
    order = table.sort_values(["obj_mean", "rank"], ascending=[False, True], kind="stable")
    every_seed = order[order["held"] == order["seeds"]]
    average = order[order["frr_mean"] <= budget]
    if len(every_seed):
        pick, how = every_seed.iloc[0], "every seed"
    elif len(average):
        pick, how = average.iloc[0], "seed average"
    else:
        pick, how = table.iloc[0], "not held"
    table["picked"] = table["config_fingerprint"] == pick["config_fingerprint"]
    best = cands[cands["config_fingerprint"] == pick["config_fingerprint"]].iloc[0]
    return SeedCheck(table, rows.drop(columns=["checks"]), best, how)


def seed_flags(results: pd.DataFrame, budget: float, check: SeedCheck | None = None) -> pd.DataFrame:
    """``results`` with ``seed_swing`` (module docstring) and ``seeds_held`` ('4/5' on checked rows, else '')."""
    frr = results["false_removal_rate"]
    if "expected_false_removal_rate" in results:
        e = results["expected_false_removal_rate"]
        sd = results["false_removal_rate_hash_sd"].fillna(0.0)
        lo, hi = (e - Z95_ONE_SIDED * sd).clip(lower=0.0), e + Z95_ONE_SIDED * sd
        swing = e.notna() & (((lo <= budget) & (hi > budget)) | (frr.notna() & ((frr > budget) != (e > budget))))
    else:
        swing = pd.Series(False, index=results.index)
    held = pd.Series("", index=results.index, dtype=object)
    if check is not None and not check.table.empty:
        for _, t in check.table.iterrows():
            m = results["config_fingerprint"] == t["config_fingerprint"]
            held[m] = f"{int(t['held'])}/{int(t['seeds'])}"
            swing[m] = 0 < t["held"] < t["seeds"]
    return results.assign(seed_swing=swing.astype(bool), seeds_held=held)
