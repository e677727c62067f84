"""The recommendation: the one configuration of a sweep's rows to use, and what it stands on.

:func:`recommend` is the empirical optimum: the row with the highest objective
(pair recall by default) among the rows whose false-removal rate (or, with a ``confidence``,
its one-sided upper bound at that confidence: :mod:`calib.estimates.exceedance`) is within the
budget; a row whose removals are all unlabeled has an
unknown rate and is not recommended; nor is a row that removes nothing (its rate is not
measured either, whatever the recall). Ties go to the row that stands on more
labels, then to the fewest candidates. :func:`standing_text` says in one line
what a row's rates stand on (labeled removals, ignored pairs, a dominant group);
:func:`recommendation_line` is the one line that says a recommendation (the CLI's sweep and export,
the Sweep page): the configuration, its figures, the rule it was picked by and how likely its
false-removal rate is to exceed the budget.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calib.estimates.exceedance import check_confidence, exceed_probability, upper_bounds
from calib.estimates.figures import pct, probability, summary

SEED_HIGH = "false_removal_rate_seed_high"
DOMINANT_GROUP = 0.5  # a labeled group holding more than this share of the duplicate pairs drives pair-level rates


def standing_text(row) -> str:
    """What a row's rates stand on, in one line: labeled removals, the false-removal
    rate's bounds over every removal, ignored pairs, and a dominant group's weight."""
    parts = []
    removed = int(row.get("removed", 0) or 0)
    if removed and "labeled_removals" in row and not pd.isna(row["labeled_removals"]):
        frr = "false_removal_rate"
        parts.append(f"{int(row['labeled_removals']):,} of {removed:,} removals labeled "
                     f"({row['labeled_removal_share']:.0%}); false-removal rate over all removals "
                     f"{pct(row['false_removal_rate_if_unlabeled_fine'], frr)} if every unlabeled one is fine, "
                     f"{pct(row['false_removal_rate_if_unlabeled_false'], frr)} if every one is false")
    if row.get("ignored_pairs"):
        parts.append(f"{int(row['ignored_pairs'])} labeled pair(s) of ignored categories "
                     f"{row['ignored_categories']} counted neither right nor wrong")
    share = row.get("largest_group_pair_share")
    if share is not None and not pd.isna(share) and share > DOMINANT_GROUP and (row.get("n_positive") or 0) >= 10:
        macro = row.get("pair_recall_macro")
        parts.append(f"one labeled group holds {share:.0%} of the duplicate pairs: pair recall "
                     f"{pct(row['pair_recall'])} is mostly that group's; per-group (macro) pair recall "
                     f"{pct(macro)}" if macro is not None and not pd.isna(macro) else
                     f"one labeled group holds {share:.0%} of the duplicate pairs (pair-level rates are mostly its)")
    return "; ".join(parts)


def with_recommendation(results: pd.DataFrame, **criteria) -> pd.DataFrame:
    """``results`` with a boolean ``recommended`` column: True on the one row
    :func:`recommend` picks under ``criteria`` (all False when none fits)."""
    best = recommend(results, **criteria)
    out = results.drop(columns=["recommended"], errors="ignore")
    rec = (out["config_fingerprint"] == best["config_fingerprint"]) if best is not None else False
    return out.assign(recommended=pd.Series(rec, index=out.index, dtype=bool))


def held_rate(rows: pd.DataFrame, confidence: float | None = None) -> pd.Series:
    """The false-removal rate the budget is held on: the point estimate (``confidence`` None), or its
    one-sided upper bound at ``confidence`` (:func:`calib.estimates.exceedance.upper_bound`; 0.975 is the
    two-sided 95% interval's upper end). NaN where it is not measured."""
    rate = pd.to_numeric(rows["false_removal_rate"], errors="coerce")
    c = check_confidence(confidence)
    if c is None:
        return rate
    high = pd.to_numeric(rows["false_removal_rate_high"], errors="coerce") if "false_removal_rate_high" in rows \
        else pd.Series(np.nan, index=rows.index)
    return pd.Series(upper_bounds(rate, high, c), index=rows.index)


def ranked(results: pd.DataFrame, *, max_false_removal_rate: float = 0.01, objective: str = "pair_recall",
           confidence: float | None = None, any_seed: bool = True) -> pd.DataFrame:
    """The rows :func:`recommend` may pick, best first (empty when none fits, or nothing was swept)."""
    if "status" not in results:  # an empty grid: no row, not even a column
        return results.iloc[:0]
    ok = results[results["status"] == "ok"]
    if "n_positive" in ok and not (ok["n_positive"] > 0).any():
        return ok.iloc[:0]  # no duplicate labels: recall is undefined, nothing to recommend
    # A rate not measured (NaN: no labeled removal, nothing removed, every document too short) is
    # not a rate of 0: such a row is never recommended.
    rate = held_rate(ok, confidence)
    ok = ok[rate.notna() & (rate <= max_false_removal_rate)]
    if any_seed and SEED_HIGH in ok:  # the rate a new seed gives (95% upper bound over the hash) too;
        ok = ok[ok[SEED_HIGH].fillna(0.0) <= max_false_removal_rate]  # NaN: a rule using the hash, seed check only
    # Ties on the objective go to the row that stands on more labels (the lowest false-removal rate
    # over all removals if every unlabeled one were false), then to the fewest candidates.
    worst = ok["false_removal_rate_if_unlabeled_false"] if "false_removal_rate_if_unlabeled_false" in ok else 0.0
    key = ok.assign(_cand=ok["candidates"].fillna(np.inf), _worst=pd.Series(worst, index=ok.index).fillna(0.0))
    key = key.sort_values([objective, "_worst", "_cand", "config_fingerprint"], ascending=[False, True, True, True],
                          kind="stable")
    return results.loc[key.index]


def recommend(results: pd.DataFrame, *, max_false_removal_rate: float = 0.01, objective: str = "pair_recall",
              confidence: float | None = None, any_seed: bool = True) -> pd.Series | None:
    """The empirical optimum: max ``objective`` subject to the false-removal
    budget (on the rate, or with ``confidence`` on its one-sided upper bound at that confidence, so
    the rate exceeds the budget with probability at most 1 - confidence) and, with ``any_seed``, to the budget
    on the rate another hash seed would give (``false_removal_rate_seed_high``, the expected
    rate over the hash + 1.645 hash sd, :mod:`calib.estimates.over_hash`), so the pick is not
    the luckiest seed's; ties go to the row whose
    removals are most labeled (lowest rate if every unlabeled removal were
    false), then to the fewest candidates. None when no configuration fits the budget, or the sample has
    no duplicate label. A configuration whose removals are all unlabeled has
    an unknown false-removal rate and is not recommended."""
    ok = ranked(results, max_false_removal_rate=max_false_removal_rate, objective=objective,
                confidence=confidence, any_seed=any_seed)
    return None if ok.empty else ok.iloc[0]


def closest(results: pd.DataFrame, *, max_false_removal_rate: float = 0.01,
            objective: str = "pair_recall", confidence: float | None = None) -> tuple[pd.Series | None, str]:
    """Where nothing fits the budget: (the row that comes closest, what binds it and what would
    relax it, in words). Closest: the lowest false-removal rate a row reaches while finding any
    duplicate (its rate, or with ``confidence`` its one-sided upper bound at that confidence, and, where
    it has one, the rate another seed would give, whichever is higher), ties to the higher objective.
    None (with the reason) when no row finds a duplicate at all."""
    ok = results[(results["status"] == "ok") & (results[objective].fillna(0) > 0)] if len(results) else results
    if not len(results):
        return None, "no configuration was swept"
    if ok.empty:
        return None, "no configuration found any labeled duplicate"
    frr = held_rate(ok, confidence)
    high = pd.to_numeric(ok[SEED_HIGH], errors="coerce") if SEED_HIGH in ok else frr
    worst = np.fmax(frr.to_numpy(float), high.to_numpy(float))
    known = ~np.isnan(worst)
    if not known.any():
        return ok.iloc[0], ("every configuration's removals are unlabeled: the false-removal rate is unknown; "
                            "label some of the proposed removals (calib draw, or the Label page)")
    pick = ok[known].assign(_w=worst[known]).sort_values(["_w", objective], ascending=[True, False],
                                                           kind="stable").iloc[0]
    row = results.loc[pick.name]
    rate, seedh = float(row["false_removal_rate"]), float(row.get(SEED_HIGH, np.nan))
    false, labeled = int(row.get("false_removals", 0) or 0), int(row.get("labeled_removals", 0) or 0)
    bound = float(held_rate(results.loc[[pick.name]], confidence).iloc[0])
    if confidence is not None and rate <= max_false_removal_rate < bound:
        binds = (f"its false-removal rate's {100 * confidence:g}% one-sided upper bound {bound:.2%} (measured "
                 f"{rate:.2%}, {false} of {labeled} labeled removals false; "
                 f"{exceed_text(row, max_false_removal_rate)}): more labels narrow it, or a lower --confidence")
    elif rate > max_false_removal_rate:
        need = int(np.ceil(false - max_false_removal_rate * labeled - 1e-9)) if labeled else false
        binds = (f"its false-removal rate {rate:.2%} ({false} of {labeled} labeled removals false; "
                 f"{max(need, 1)} fewer would fit)")
    else:
        binds = (f"the rate another hash seed would give, {seedh:.2%} (measured {rate:.2%}): the pick must hold "
                 f"on any seed")
    held = bound if confidence is not None and not np.isnan(bound) else rate
    relax = (f"a budget of {np.ceil(max(held, 0 if np.isnan(seedh) else seedh) * 1000) / 1000:.1%} "
             f"admits it; or more hashes (a steeper S-curve), or labels on its "
             f"{int(row.get('unlabeled_removals', 0) or 0)} unlabeled removals, or a category ignored that the "
             f"false removals come from (--ignore-categories)")
    return row, (f"nothing within the false-removal budget {max_false_removal_rate:.2%}: the closest is "
                 f"{config_text(row)} ({objective.replace('_', ' ')} {row[objective]:.1%}); what binds: "
                 f"{binds}; to relax: {relax}")


def config_text(row) -> str:
    """A row's configuration in one phrase, every knob the recommendation depends on: 'word2 nopunct
    num_perm=256 b=64 r=4 exact J t=0.57 star clusters' (measure named when not Jaccard)."""
    measure = row.get("measure", "jaccard")
    measure = "" if measure is None or measure == "jaccard" or measure != measure else f" {measure}"
    policy = row.get("policy")
    clusters = f" {policy} clusters" if isinstance(policy, str) and policy else ""
    verify = row.get("verify", "")
    return (f"{row['representation']} num_perm={row['num_perm']} b={row['b']} r={row['r']} {verify}{measure} "
            f"t={row['threshold']}{clusters}")


def held_words(confidence: float | None = None) -> str:
    """What the budget is held on, in words: 'false-removal rate' or "false-removal rate's 95% one-sided
    upper bound"."""
    c = check_confidence(confidence)
    return "false-removal rate" if c is None else f"false-removal rate's {100 * c:g}% one-sided upper bound"


def rule_text(budget: float, confidence: float | None = None, objective: str = "pair_recall") -> str:
    """The rule a recommendation was picked by, in words: 'max pair recall, false-removal rate <= 1.00%'
    (the point estimate) or 'max pair recall, false-removal rate's 95% one-sided upper bound <= 1.00%'."""
    return f"max {objective.replace('_', ' ')}, {held_words(confidence)} <= {budget:.2%}"


def exceed_text(row, budget: float) -> str:
    """How likely the row's false-removal rate is to exceed ``budget``, from its 95% interval read as a
    normal approximation (:mod:`calib.estimates.exceedance`): 'P(false-removal rate > 1.00%) = 23.4%';
    '' when the rate or its interval is not measured."""
    p = exceed_probability(row.get("false_removal_rate"), row.get("false_removal_rate_low"),
                           row.get("false_removal_rate_high"), budget)
    return "" if p != p else f"P(false-removal rate > {budget:.2%}) = {probability(p)}"


def seed_text(row) -> str:
    """How a row's false-removal rate holds across hash seeds, for its line."""
    out = ""
    e = row.get("expected_false_removal_rate")
    if e is not None and not pd.isna(e):
        frr = "false_removal_rate"
        out += (f" (false-removal rate expected over seeds {pct(e, frr)}, a new seed <= "
                f"{pct(row['false_removal_rate_seed_high'], frr)} at 95%)")
    if row.get("seeds_held"):
        out += f"; held the budget on {row['seeds_held'].replace('/', ' of ')} seeds"
    if row.get("seed_swing"):
        out += "; SWINGS WITH THE SEED (column seed_swing)"
    return out


def recommendation_line(row, *, budget: float, confidence: float | None = None, objective: str = "pair_recall",
                        lead: str = "recommended", note: str = "", seeds: bool = True, extra: str = "",
                        rule: str | None = None) -> str:
    """The one line that says a recommendation, as the CLI's sweep and export and the Sweep page write it:
    '<lead> (<rule><note>): <configuration>: <figures>; P(false-removal rate > budget) = p; <seed
    figures> (<fingerprint>)'. ``rule``: :func:`rule_text` (point estimate, or the one-sided upper bound
    at ``confidence``); the probability: :func:`exceed_text`; ``note``: words added to the rule (e.g. the
    sweep's ' (mean over seeds 1,2)'); ``seeds``: the hash-seed figures (:func:`seed_text`) too; ``extra``:
    words after the figures (e.g. pair recall over the seeds); ``rule``: words in place of the rule (a row
    not picked by one)."""
    exceed = exceed_text(row, budget)
    rule = rule_text(budget, confidence, objective) if rule is None else rule
    return (f"{lead} ({rule}{note}): {config_text(row)}: {summary(row)}"
            + (f"; {exceed}" if exceed else "") + extra + (seed_text(row) if seeds else "")
            + f" ({row['config_fingerprint']})")
