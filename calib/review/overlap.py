"""Which pairs a reviewer is offered: the overlap share routed to a second, blind reviewer.

A pair falls in the overlap when a hash of its two ids and a seed, read as a number in [0, 1), is
below ``share``: the same pairs on every machine and in every session, whoever asks. A pair is
offered to reviewer R when R has not decided it and it is not adjudicated, and either nobody has
decided it yet, or it is in the overlap and fewer than two distinct reviewers have decided it.
The page that shows it does not show the other reviewer's decision (a blind second review).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from calib.review.adjudication import pair_decisions

DEFAULT_SHARE = 0.2


def check_share(share: float) -> float:
    share = float(share)
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"overlap share must be between 0 and 1, got {share:g}")
    return share


def overlap_position(id_a, id_b, seed: int = 0) -> np.ndarray:
    """A number in [0, 1) per pair, from a hash of the (ordered) ids and the seed."""
    out = np.empty(len(id_a), dtype=np.float64)
    for k, (a, b) in enumerate(zip(id_a, id_b)):
        a, b = (str(a), str(b)) if str(a) < str(b) else (str(b), str(a))
        h = hashlib.blake2b(f"{int(seed)}\x00{a}\x00{b}".encode(), digest_size=8).digest()
        out[k] = int.from_bytes(h, "big") / 2.0 ** 64
    return out


def in_overlap(id_a, id_b, share: float, seed: int = 0) -> np.ndarray:
    """True for the pairs routed to a second reviewer."""
    return overlap_position(id_a, id_b, seed) < check_share(share)


def offered_to(pairs: pd.DataFrame, decisions: pd.DataFrame, reviewer: str, *, share: float = DEFAULT_SHARE,
               seed: int = 0) -> pd.DataFrame:
    """The rows of ``pairs`` (id_a, id_b, any order; the queue's order is kept) offered to ``reviewer``,
    with a column ``second_review`` (True: someone else decided it, this is the blind second look).
    An empty name is someone who has decided nothing yet (what a newcomer would be offered)."""
    reviewer = str(reviewer or "").strip()
    a0, b0 = pairs["id_a"].astype(str).to_numpy(object), pairs["id_b"].astype(str).to_numpy(object)
    key = pd.MultiIndex.from_arrays([np.where(a0 < b0, a0, b0), np.where(a0 < b0, b0, a0)])
    d = pair_decisions(decisions)
    reviews = d[d["kind"] == "review"]
    who = reviews.groupby(["id_a", "id_b"])["reviewer"].agg(lambda r: frozenset(r))
    adjudicated = pd.MultiIndex.from_frame(d.loc[d["kind"] == "adjudication", ["id_a", "id_b"]]) \
        if (d["kind"] == "adjudication").any() else pd.MultiIndex.from_arrays([[], []])
    seen = who.reindex(key)
    n_seen = np.array([0 if not isinstance(s, frozenset) else len(s) for s in seen], dtype=np.int64)
    mine = np.array([isinstance(s, frozenset) and reviewer in s for s in seen], dtype=bool)
    overlap = in_overlap(a0, b0, share, seed) if len(pairs) else np.zeros(0, bool)
    keep = ~mine & ~key.isin(adjudicated) & ((n_seen == 0) | (overlap & (n_seen < 2)))
    return pairs[keep].assign(second_review=(n_seen[keep] > 0))


__all__ = ["DEFAULT_SHARE", "check_share", "overlap_position", "in_overlap", "offered_to"]
