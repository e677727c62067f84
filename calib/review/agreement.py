"""How often reviewers agree: Cohen's kappa (two reviewers) or Fleiss' kappa (more), with intervals,
overall, per category and per reviewer.

Votes are each reviewer's latest review decision per pair (:func:`calib.review.adjudication.reviewer_votes`);
'unsure' votes and adjudications are left out of kappa (an abstention is not a rating) and counted
in the ``unsure`` column. Only pairs rated by two or more reviewers enter kappa.

- Cohen's kappa when the ratings of the scope come from exactly two reviewers;
- Fleiss' kappa otherwise, in the form that allows a varying number of raters per pair: per-pair
  agreement sum n_ij(n_ij - 1) / (n_i(n_i - 1)) averaged over pairs, chance agreement from the pooled
  category shares (Fleiss 1971 when every pair has the same number of raters);
- per reviewer R: Cohen's kappa over the (R's rating, another reviewer's rating) couples of the pairs
  R rated with others ("R against the others").

Intervals: percentile bootstrap over pairs (the pairs are resampled, every rating of a pair moves
with it), ``replicates`` resamples, seeded; NaN where kappa is undefined (one category only).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calib.review.adjudication import LABELS, reviewer_votes

REPLICATES = 1000
COLUMNS = ("scope", "group", "method", "kappa", "low", "high", "pairs", "agreed", "reviewers", "ratings", "unsure")


def _kappa(po: np.ndarray, pe: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(pe < 1.0, (po - pe) / (1.0 - pe), np.nan)


def _cohen_weighted(x: np.ndarray, y: np.ndarray, w: np.ndarray, k: int) -> np.ndarray:
    """Cohen's kappa of coded ratings x, y (ints < k) under row weights w (R, n): one per resample."""
    tot = w.sum(axis=1)
    po = (w @ (x == y).astype(float)) / tot
    px = w @ np.eye(k)[x] / tot[:, None]
    py = w @ np.eye(k)[y] / tot[:, None]
    return _kappa(po, (px * py).sum(axis=1))


def _fleiss_weighted(counts: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Fleiss' kappa (varying raters per item allowed) of an item x category count table under item weights."""
    n_i = counts.sum(axis=1)
    p_i = ((counts * (counts - 1)).sum(axis=1)) / (n_i * (n_i - 1))
    pbar = (w @ p_i) / w.sum(axis=1)
    pj = (w @ counts) / (w @ n_i)[:, None]
    return _kappa(pbar, (pj ** 2).sum(axis=1))


def _codes(*arrays) -> tuple[list[np.ndarray], int]:
    cats = sorted(set().union(*[set(map(str, a)) for a in arrays]))
    look = {c: k for k, c in enumerate(cats)}
    return [np.array([look[str(v)] for v in a], dtype=np.int64) for a in arrays], max(len(cats), 1)


def cohen_kappa(x, y) -> float:
    """Cohen's kappa of two raters' labels on the same items (NaN when chance agreement is 1)."""
    if len(x) != len(y):
        raise ValueError(f"two raters need labels on the same items, got {len(x)} and {len(y)}")
    if len(x) == 0:
        return float("nan")
    (cx, cy), k = _codes(x, y)
    return float(_cohen_weighted(cx, cy, np.ones((1, len(cx))), k)[0])


def fleiss_kappa(counts) -> float:
    """Fleiss' kappa of an items x categories table of rating counts (each item rated at least twice)."""
    c = np.asarray(counts, dtype=float)
    if c.ndim != 2 or len(c) == 0:
        return float("nan")
    if (c.sum(axis=1) < 2).any():
        raise ValueError("every item needs at least two ratings for Fleiss' kappa")
    return float(_fleiss_weighted(c, np.ones((1, len(c))))[0])


CHUNK_CELLS = 2_000_000  # resamples x items held at once (16 MB of weights)


def _with_replicates(stat, n: int, replicates: int, rng: np.random.Generator) -> np.ndarray:
    """``stat`` on the items as they are, then on ``replicates`` bootstrap resamples of them: stat takes
    item weights (m x n: how many times each item is drawn) and returns m values. Resamples are drawn
    in chunks so memory stays bounded for many pairs."""
    out = [stat(np.ones((1, n)))]
    step = max(1, CHUNK_CELLS // max(n, 1))
    for start in range(0, replicates, step):
        m = min(step, replicates - start)
        draws = rng.integers(0, n, size=(m, n)) + (np.arange(m) * n)[:, None]
        out.append(stat(np.bincount(draws.ravel(), minlength=m * n).reshape(m, n).astype(float)))
    return np.concatenate(out)


def _interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    v = values[np.isfinite(values)]
    if len(values) == 0 or len(v) < 0.5 * len(values) or len(v) == 0:  # mostly undefined resamples: no honest interval
        return float("nan"), float("nan")
    q = (1.0 - confidence) / 2.0
    return float(np.quantile(v, q)), float(np.quantile(v, 1.0 - q))


def _rated(votes: pd.DataFrame) -> pd.DataFrame:
    """Votes that count (duplicate / not_duplicate) on pairs with two or more of them, with an item code."""
    v = votes[votes["decision"].isin(LABELS)]
    n = v.groupby(["id_a", "id_b"])["reviewer"].transform("size")
    v = v[n >= 2].copy()
    v["item"] = v.groupby(["id_a", "id_b"], sort=True).ngroup()
    return v


def _scope_row(scope: str, group: str, votes: pd.DataFrame, *, replicates: int, confidence: float,
               seed: int) -> dict:
    unsure = int((votes["decision"] == "unsure").sum())
    v = _rated(votes)
    n_items = int(v["item"].nunique()) if len(v) else 0
    row = {"scope": scope, "group": group, "method": "", "kappa": np.nan, "low": np.nan, "high": np.nan,
           "pairs": n_items, "agreed": 0, "reviewers": int(v["reviewer"].nunique()) if len(v) else 0,
           "ratings": int(len(v)), "unsure": unsure}
    if n_items == 0:
        return row
    row["agreed"] = int((v.groupby("item")["decision"].nunique() == 1).sum())
    rng = np.random.default_rng(seed)
    if row["reviewers"] == 2:
        wide = v.pivot(index="item", columns="reviewer", values="decision")
        (x, y), k = _codes(wide.iloc[:, 0].to_numpy(), wide.iloc[:, 1].to_numpy())
        row["method"], values = "cohen", _with_replicates(lambda w: _cohen_weighted(x, y, w, k), n_items,
                                                          replicates, rng)
    else:
        code = (v["decision"] == LABELS[1]).to_numpy(np.int64)  # items x (duplicate, not_duplicate) counts
        counts = np.bincount(v["item"].to_numpy(np.int64) * 2 + code, minlength=2 * n_items).reshape(n_items, 2) \
            .astype(float)
        row["method"], values = "fleiss", _with_replicates(lambda w: _fleiss_weighted(counts, w), n_items,
                                                           replicates, rng)
    row["kappa"] = float(values[0])
    row["low"], row["high"] = _interval(values[1:] if n_items >= 2 else values[:0], confidence)
    return row


def _reviewer_row(reviewer: str, votes: pd.DataFrame, *, replicates: int, confidence: float, seed: int) -> dict:
    """Cohen's kappa of ``reviewer`` against every other rating of the pairs they rated."""
    v = _rated(votes)
    mine = v[v["reviewer"] == reviewer][["item", "decision"]]
    others = v[v["reviewer"] != reviewer][["item", "decision"]]
    couples = mine.merge(others, on="item", suffixes=("_me", "_other"))
    items = np.unique(couples["item"].to_numpy())
    same = (couples["decision_me"] == couples["decision_other"]).groupby(couples["item"]).all()
    row = {"scope": "reviewer", "group": reviewer, "method": "cohen (vs the others)", "kappa": np.nan,
           "low": np.nan, "high": np.nan, "pairs": int(len(items)),
           "agreed": int(same.sum()),
           "reviewers": int(v[v["item"].isin(items)]["reviewer"].nunique()), "ratings": int(len(couples)),
           "unsure": int(((votes["reviewer"] == reviewer) & (votes["decision"] == "unsure")).sum())}
    if len(items) == 0:
        return row
    pos = np.searchsorted(items, couples["item"].to_numpy())
    rng = np.random.default_rng(seed)
    (x, y), k = _codes(couples["decision_me"].to_numpy(), couples["decision_other"].to_numpy())
    values = _with_replicates(lambda w: _cohen_weighted(x, y, w[:, pos], k), len(items), replicates, rng)
    row["kappa"] = float(values[0])
    row["low"], row["high"] = _interval(values[1:] if len(items) >= 2 else values[:0], confidence)
    return row


def agreement_table(decisions: pd.DataFrame, categories: pd.DataFrame | None = None, *,
                    replicates: int = REPLICATES, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Kappa with its interval: one 'overall' row, one row per category, one per reviewer.

    ``categories``: id_a, id_b, category of the pairs whose category is known (the sample's labeled
    pairs); every other pair is 'unlabeled'. Columns: see :data:`COLUMNS` (pairs = pairs rated twice
    or more, agreed = those with no disagreement, ratings = the votes in kappa, unsure = abstentions).
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    votes = reviewer_votes(decisions)
    kw = {"replicates": int(replicates), "confidence": confidence, "seed": seed}
    rows = [_scope_row("overall", "all pairs", votes, **kw)]
    cat = pd.Series("unlabeled", index=votes.index, dtype=object)
    if categories is not None and len(categories) and len(votes):
        a, b = categories["id_a"].astype(str).to_numpy(object), categories["id_b"].astype(str).to_numpy(object)
        known = pd.Series(categories["category"].astype(str).to_numpy(),
                          index=pd.MultiIndex.from_arrays([np.where(a < b, a, b), np.where(a < b, b, a)]))
        known = known[~known.index.duplicated(keep="last")]
        got = known.reindex(pd.MultiIndex.from_arrays([votes["id_a"], votes["id_b"]])).to_numpy(object)
        cat = pd.Series(np.where(pd.isna(got), "unlabeled", got), index=votes.index, dtype=object)
    for name in sorted(set(cat)):
        rows.append(_scope_row("category", str(name), votes[cat == name], **kw))
    for reviewer in sorted(set(votes["reviewer"])):
        rows.append(_reviewer_row(reviewer, votes, **kw))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def sample_categories(sample, decisions: pd.DataFrame | None = None) -> pd.DataFrame:
    """id_a, id_b, category of the sample's labeled pairs (the categories agreement is broken down by),
    plus, with ``decisions``, their pairs of two documents of one group: category '(group)'."""
    p = sample.pairs
    out = pd.DataFrame({"id_a": sample.ids[p["i"].to_numpy(np.int64)], "id_b": sample.ids[p["j"].to_numpy(np.int64)],
                        "category": p["category"].astype(str).to_numpy() if "category" in p else "labeled"})
    if decisions is None or not sample.has_groups or decisions.empty:
        return out
    group = pd.Series(sample.docs["group"].to_numpy(), index=sample.docs["id"].astype(str))
    d = decisions[decisions["id_b"].notna()]
    ga = d["id_a"].astype(str).map(group)
    gb = d["id_b"].astype(str).map(group)
    same = (ga.notna() & (ga == gb)).to_numpy()
    grouped = pd.DataFrame({"id_a": d["id_a"].astype(str)[same], "id_b": d["id_b"].astype(str)[same],
                            "category": "(group)"})
    return pd.concat([grouped, out], ignore_index=True)  # an explicit pair's own category wins (kept last)


def review_evidence(decisions: pd.DataFrame, *, labels_from_reviews: bool, replicates: int = REPLICATES) -> dict:
    """What an export records about the reviews: whether its labels came from them, the label rule,
    how many labels each part of the rule gave (contested pairs excluded), and the reviewers' agreement."""
    from calib.review.adjudication import RULE, review_labels
    _, counts = review_labels(decisions)
    return {"labels_from_reviews": bool(labels_from_reviews), "label_rule": RULE, "labels": counts.as_dict(),
            "agreement": {**agreement_summary(agreement_table(decisions, replicates=replicates)),
                          "double_reviewed": counts.double_reviewed}}


def evidence_text(evidence: dict) -> str:
    """One line on what an export's review labels stand on (its ``evidence.reviews``): whether the labels
    came from the reviews, how many each part of the label rule gave, what was left out, and kappa."""
    n, a = evidence["labels"], evidence["agreement"]
    kappa = "no kappa (no pair rated by two reviewers)" if a.get("kappa") is None else (
        f"{a['method']} kappa {a['kappa']:.3f}" + ("" if a.get("kappa_low") is None else
                                                   f" [{a['kappa_low']:.3f}, {a['kappa_high']:.3f}]") +
        f" over {a['pairs_rated']:,} pair(s) rated twice or more, {a['pairs_agreed']:,} agreed")
    used = "the sample's labels include them" if evidence["labels_from_reviews"] else \
        "not used as labels (the sample's own labels; the manifest's review_status shows them)"
    return (f"{n['used']:,} review label(s): {n['adjudicated']:,} adjudicated, {n['unanimous']:,} unanimous "
            f"({used}); {n['contested']:,} contested and {n['undecided']:,} undecided pair(s) left out; "
            f"{n['double_reviewed']:,} double-reviewed pair(s), {n['unsure']:,} unsure decision(s); {kappa}")


def agreement_summary(table: pd.DataFrame) -> dict:
    """The overall row as plain numbers (for the export's evidence and the CLI's --json): pairs_rated
    is kappa's pairs (two or more duplicate / not_duplicate votes), a part of the double-reviewed
    pairs (:class:`calib.review.adjudication.LabelCounts`); unsure is the same count as there."""
    r = table[table["scope"] == "overall"].iloc[0]

    def num(x):
        return None if pd.isna(x) else round(float(x), 6)
    return {"method": r["method"] or None, "kappa": num(r["kappa"]), "kappa_low": num(r["low"]),
            "kappa_high": num(r["high"]), "pairs_rated": int(r["pairs"]), "pairs_agreed": int(r["agreed"]),
            "unsure": int(r["unsure"]), "reviewers": int(r["reviewers"]),
            "interval": "percentile bootstrap over pairs, 95%"}


__all__ = ["REPLICATES", "COLUMNS", "cohen_kappa", "fleiss_kappa", "agreement_table", "agreement_summary", "sample_categories",
           "review_evidence", "evidence_text"]
