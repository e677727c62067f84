"""From review decisions to pair labels when several people review: the label rule, and the
adjudication queue.

The label rule, per pair (decisions on a single document give no pair label):

1. the latest *adjudication* of the pair, if any (an adjudicated 'unsure' leaves the pair unlabeled);
2. else the reviewers' votes: each reviewer's latest 'review' decision on the pair (their own later
   decision replaces their earlier one); 'unsure' votes abstain. When every remaining vote agrees
   (one reviewer counts as unanimous) that is the label;
3. else the pair is *contested*: excluded from the labels, counted, and offered for adjudication.

This replaces "the latest decision wins", under which a second reviewer silently overwrote the first.
Works on any frame of decisions with columns id_a, id_b, decision, reviewer and, when present,
kind ('review' | 'adjudication'; missing means 'review') and id (insertion order; missing means the
frame's order), e.g. ``ReviewStore.all_decisions()``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

LABELS = ("duplicate", "not_duplicate")
STATUSES = ("adjudicated", "unanimous", "contested", "undecided")
RULE = ("the latest adjudication; else the reviewers' decisions when they all agree (one reviewer counts, "
        "each reviewer's latest decision, 'unsure' abstains); else contested: excluded and counted")


def decisions_of(store, *, notes: bool = False) -> pd.DataFrame:
    """Every decision of a review store, oldest first, with ``kind`` (a store without the column:
    every decision is a review). Without ``notes`` only the columns the label rule and agreement read
    (no note, no fingerprint): a teammate's huge notes are never fetched for them."""
    if hasattr(store, "all_decisions"):
        return store.all_decisions(notes=notes)
    return store.all().assign(kind="review")


def pair_decisions(decisions: pd.DataFrame) -> pd.DataFrame:
    """The decisions on pairs (id_b set), with ``kind`` and ``order`` (insertion order) filled in,
    oldest first; id_a < id_b as the store keeps them."""
    missing = [c for c in ("id_a", "id_b", "decision", "reviewer") if c not in decisions.columns]
    if missing:
        raise ValueError(f"decisions is missing column(s) {missing}")
    d = decisions[decisions["id_b"].notna()].copy()
    d["kind"] = d["kind"].fillna("review").astype(str) if "kind" in d.columns else "review"
    d["order"] = d["id"].to_numpy(np.int64) if "id" in d.columns else np.arange(len(d), dtype=np.int64)
    a, b = d["id_a"].astype(str).to_numpy(object), d["id_b"].astype(str).to_numpy(object)
    d["id_a"], d["id_b"] = np.where(a < b, a, b), np.where(a < b, b, a)
    d["reviewer"] = d["reviewer"].astype(str)
    return d.sort_values("order", kind="stable").reset_index(drop=True)


def reviewer_votes(decisions: pd.DataFrame) -> pd.DataFrame:
    """Each reviewer's latest review decision per pair (unsure included): id_a, id_b, reviewer,
    decision, order. Adjudications are not votes."""
    d = pair_decisions(decisions)
    d = d[d["kind"] == "review"]
    return (d.drop_duplicates(["id_a", "id_b", "reviewer"], keep="last")
            [["id_a", "id_b", "reviewer", "decision", "order"]].reset_index(drop=True))


def pair_verdicts(decisions: pd.DataFrame) -> pd.DataFrame:
    """One row per reviewed pair: id_a, id_b, status (see :data:`STATUSES`), label (duplicate,
    not_duplicate, or None), reviewers (number who voted, 'unsure' included), votes ("ana: duplicate;
    bo: not duplicate", oldest first), adjudicator, unsure (how many of the votes are 'unsure')."""
    d = pair_decisions(decisions)
    cols = ["id_a", "id_b", "status", "label", "reviewers", "votes", "adjudicator", "unsure"]
    if d.empty:
        return pd.DataFrame(columns=cols)
    votes = reviewer_votes(d).sort_values(["id_a", "id_b", "order"], kind="stable")
    adj = d[d["kind"] == "adjudication"].drop_duplicates(["id_a", "id_b"], keep="last").set_index(["id_a", "id_b"])
    # whole-array group operations over the votes sorted by pair: one reviewer's 300,000 decisions take
    # seconds, not minutes (a pandas aggregation per pair took 15 minutes)
    item = votes.groupby(["id_a", "id_b"], sort=True).ngroup().to_numpy(np.int64)  # non-decreasing: sorted by pair
    starts = np.flatnonzero(np.r_[True, item[1:] != item[:-1]]) if len(item) else np.zeros(0, np.int64)
    ends = np.r_[starts[1:], len(item)].astype(np.int64)
    said = votes["decision"].astype(str).to_numpy(object)
    parts = (votes["reviewer"].astype(str) + ": " + votes["decision"].astype(str).str.replace("_", " ", regex=False)).tolist()
    n = len(starts)
    dup = np.bincount(item, weights=said == LABELS[0], minlength=n)
    not_dup = np.bincount(item, weights=said == LABELS[1], minlength=n)
    n_decided = (dup > 0).astype(np.int64) + (not_dup > 0)
    out = pd.DataFrame({
        "id_a": votes["id_a"].to_numpy(object)[starts], "id_b": votes["id_b"].to_numpy(object)[starts],
        "status": np.where(n_decided == 1, "unanimous", np.where(n_decided > 1, "contested", "undecided")).astype(object),
        "label": np.where(n_decided == 1, np.where(dup > 0, LABELS[0], LABELS[1]).astype(object), None),
        "reviewers": (ends - starts).astype(np.int64),  # one vote per reviewer and pair
        "votes": ["; ".join(parts[a:b]) for a, b in zip(starts.tolist(), ends.tolist())], "adjudicator": None,
        "unsure": np.bincount(item, weights=said == "unsure", minlength=n).astype(np.int64)}, columns=cols)
    voted = set(zip(out["id_a"], out["id_b"]))
    extra = [k for k in adj.index if k not in voted]
    if extra:  # adjudicated with no review vote: still a verdict
        out = pd.concat([out, pd.DataFrame([[a, b, None, None, 0, "", None, 0] for a, b in extra], columns=cols)],
                        ignore_index=True)
    key = pd.MultiIndex.from_arrays([out["id_a"], out["id_b"]])
    has = key.isin(adj.index)
    if has.any():
        got = adj.reindex(key[has])
        ruled = got["decision"].to_numpy(object)
        out.loc[has, "status"] = np.where(ruled == "unsure", "undecided", "adjudicated")
        out.loc[has, "label"] = np.where(ruled == "unsure", None, ruled)
        out.loc[has, "adjudicator"] = got["reviewer"].to_numpy(object)
    return out.sort_values(["id_a", "id_b"], kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class LabelCounts:
    """How the reviews became labels: labels used (adjudicated + unanimous), the pairs left out
    (contested; undecided: every vote 'unsure', or an adjudicated 'unsure'), and two counts named
    the same wherever they appear (the kappa table, the export's evidence, the pages): ``unsure``,
    the 'unsure' decisions (each reviewer's latest vote per pair), and ``double_reviewed``, the
    pairs two or more reviewers decided ('unsure' included; kappa rates those with two or more
    duplicate / not_duplicate votes)."""
    used: int
    adjudicated: int
    unanimous: int
    contested: int
    undecided: int
    unsure: int
    double_reviewed: int

    def as_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        return (f"{self.used:,} label(s) used ({self.adjudicated:,} adjudicated, {self.unanimous:,} unanimous); "
                f"{self.contested:,} contested pair(s) excluded; {self.undecided:,} undecided pair(s) excluded; "
                f"{self.unsure:,} unsure decision(s); {self.double_reviewed:,} double-reviewed pair(s)")


def label_counts(verdicts: pd.DataFrame) -> LabelCounts:
    s = verdicts["status"].value_counts()
    n = {k: int(s.get(k, 0)) for k in STATUSES}
    unsure = int(verdicts["unsure"].sum()) if "unsure" in verdicts.columns else 0
    return LabelCounts(n["adjudicated"] + n["unanimous"], n["adjudicated"], n["unanimous"], n["contested"],
                       n["undecided"], unsure, int((verdicts["reviewers"] >= 2).sum()))


def review_labels(decisions: pd.DataFrame) -> tuple[pd.DataFrame, LabelCounts]:
    """Pair labels under the label rule (columns id_a, id_b, label, category='review', the input of
    :func:`calib.review.labels.with_review_labels`) and how many pairs each part of the rule gave."""
    v = pair_verdicts(decisions)
    lab = v[v["label"].notna()]
    labels = pd.DataFrame({"id_a": lab["id_a"].astype(str).to_numpy(), "id_b": lab["id_b"].astype(str).to_numpy(),
                           "label": lab["label"].astype(str).to_numpy(), "category": "review"})
    return labels, label_counts(v)


def resolved_decisions(decisions: pd.DataFrame) -> pd.DataFrame:
    """The decision in force per pair under the label rule, in the shape of ``ReviewStore.latest()``'s
    id_a, id_b, decision (contested pairs read 'unsure': no label), for readers that took the latest."""
    v = pair_verdicts(decisions)
    return pd.DataFrame({"id_a": v["id_a"].astype(str), "id_b": v["id_b"].astype(str),
                         "decision": v["label"].where(v["label"].notna(), "unsure").astype(str)})


def adjudication_queue(decisions: pd.DataFrame) -> pd.DataFrame:
    """Contested pairs not yet adjudicated, oldest conflict first: id_a, id_b, reviewers, votes."""
    v = pair_verdicts(decisions)
    q = v[v["status"] == "contested"]
    if q.empty:
        return q[["id_a", "id_b", "reviewers", "votes"]].reset_index(drop=True)
    last = reviewer_votes(decisions).groupby(["id_a", "id_b"])["order"].max()
    q = q.assign(_last=last.reindex(pd.MultiIndex.from_arrays([q["id_a"], q["id_b"]])).to_numpy())
    return q.sort_values(["_last", "id_a", "id_b"], kind="stable")[["id_a", "id_b", "reviewers", "votes"]] \
        .reset_index(drop=True)


def check_adjudicator(decisions: pd.DataFrame, id_a: str, id_b: str, adjudicator: str) -> None:
    """An adjudicator is a third person: refuse one who voted on the pair (ValueError)."""
    v = reviewer_votes(decisions)
    a, b = min(id_a, id_b), max(id_a, id_b)
    mine = v[(v["id_a"] == a) & (v["id_b"] == b) & (v["reviewer"] == adjudicator.strip())]
    if len(mine):
        raise ValueError(f"{adjudicator.strip()} reviewed {a} / {b}: another person adjudicates it")


__all__ = ["LABELS", "STATUSES", "RULE", "LabelCounts", "decisions_of", "pair_decisions", "reviewer_votes", "pair_verdicts",
           "label_counts", "review_labels", "resolved_decisions", "adjudication_queue", "check_adjudicator"]
