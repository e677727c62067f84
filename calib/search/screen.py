"""The search's cheap estimates: a configuration's rates from exact similarities alone, no hashing.

An exactly verified configuration verifies pair p with probability

    q_p = P(J_p) 1[s_p >= t],   P(J) = 1 - (1 - J^r)^b

(:mod:`calib.estimates.over_hash`), so its rates over the hash follow from the representation's
reference join (every pair with s >= the scan's floor) and the labeled pairs' similarities:

* expected pair recall = mean of q over the duplicate pairs;
* expected false-removal rate and its hash sd: the verified graph drawn with probabilities q,
  clustered as a sweep clusters (:func:`~calib.estimates.over_hash.removal_draws`).

No signature, candidate list or bootstrap interval is computed, so a search can look at thousands of
(threshold, split) points for what a few measured rows cost. With a perfect split (q = 1 above t) the
same sums give a **ceiling**: the best pair recall any split can reach with this representation,
measure and clustering policy within the false-removal budget (:func:`ceiling`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from calib.candidates import lsh
from calib.clusters.clustering import Representative, cluster_pairs
from calib.estimates.over_hash import removal_draws, seed_high
from calib.search.config import Config
from calib.search.grid import MAX_ROWS
from calib.verification.jaccard import TooManyPairs
from calib.verification.short import apply_rule, positive_rule

SCAN_STEP = 0.01                  # the threshold scan's step
SCAN_FLOORS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)  # reference joins go this low, a step at a time, as the scan needs
MAX_SCAN_PAIRS = 3_000_000        # a reference join above this many pairs ends the scan there
OVER = 2                          # the scan stops after this many thresholds in a row over 1.5x the budget
SPLIT_LEVELS = (0.9, 0.97, 0.99, 0.999)  # S-curve heights at the passing duplicates' low J (steep splits)


@dataclass(frozen=True, eq=False)
class Ceiling:
    """A setting's threshold scan under a perfect split: thresholds (descending) with the pair recall
    and false-removal rate reached there, and the best threshold within the budget."""

    thresholds: np.ndarray
    recall: np.ndarray
    false_removal_rate: np.ndarray
    labeled_removals: np.ndarray
    budget: float

    @property
    def best(self) -> tuple[float, float] | None:
        """(threshold, pair recall) of the highest recall within the budget (lowest such threshold)."""
        ok = np.flatnonzero(self.within())
        if not len(ok):
            return None
        k = ok[np.argmax(self.recall[ok] + 1e-9 * np.arange(len(ok)))]
        return float(self.thresholds[k]), float(self.recall[k])

    def within(self, margin: float = 1.0) -> np.ndarray:
        frr = np.nan_to_num(self.false_removal_rate, nan=0.0)
        return frr <= self.budget * margin

    @property
    def value(self) -> float:
        """The ceiling's pair recall (0 when no threshold fits the budget)."""
        b = self.best
        return 0.0 if b is None else b[1]

    def closest(self) -> tuple[float, float, float]:
        """(threshold, recall, rate) of the lowest false-removal rate with any recall: where nothing fits."""
        frr = np.nan_to_num(self.false_removal_rate, nan=np.inf)
        live = self.recall > 0
        if not live.any():
            return float("nan"), 0.0, float("nan")
        k = np.flatnonzero(live)[np.argmin(frr[live])]
        return float(self.thresholds[k]), float(self.recall[k]), float(self.false_removal_rate[k])


def _lengths(ws, cfg: Config):
    return ws.sets(cfg.rep).sizes() if cfg.representative is Representative.LONGEST else None


def _passing_positives(ws, cfg: Config, t: float) -> np.ndarray:
    pos = ws.positive_similarity(cfg.rep, cfg.measure) >= t
    if cfg.min_shingles:
        pos = positive_rule(pos, ws.truth.pos_i, ws.truth.pos_j, ws.short(cfg), cfg.short_docs,
                            ws.text_keys(cfg.rep))
    return pos


def _reference(ws, cfg: Config, floor: float):
    """(i, j, s, sketch J) of every pair with the measure >= floor, under the short rule."""
    i, j, s = ws.reference_pairs(cfg.rep, floor, MAX_SCAN_PAIRS, cfg.measure)
    own = "jaccard" if cfg.rep.weighting == "none" else "weighted_jaccard"
    sj = s if cfg.measure == own else ws.sketch_similarity(cfg.rep, i, j)
    if cfg.min_shingles:
        short = ws.short(cfg)
        i, j, (s, sj) = apply_rule(i, j, [s, sj], short, cfg.short_docs, ws.text_keys(cfg.rep)[short])
    return i, j, s, sj


def _removals(ws, cfg: Config, i, j, s) -> tuple[int, int]:
    """(false, true) labeled removals when exactly the pairs (i, j) are verified."""
    cl = cluster_pairs(ws.sample.n, i, j, s, policy=cfg.policy, representative=cfg.representative,
                       lengths=_lengths(ws, cfg), max_component=cfg.max_component)
    rows = np.flatnonzero(cl.removed)
    lab = ws.truth.label(rows, cl.representative[rows])
    return int((lab == 0).sum()), int((lab == 1).sum())


def scan_floor(ws, cfg: Config) -> float:
    """The lowest threshold worth scanning: just under nearly every duplicate pair's similarity."""
    pos = ws.positive_similarity(cfg.rep, cfg.measure)
    return max(SCAN_STEP, float(np.quantile(pos, 0.02)) - SCAN_STEP) if len(pos) else 0.5


def ceiling(ws, cfg: Config, budget: float) -> Ceiling:
    """The threshold scan of ``cfg``'s setting (its representation, measure, clustering policy and
    short rule; its split and threshold ignored) under a perfect split, from 1.0 down in steps of
    :data:`SCAN_STEP` until the rate stays over 1.5 times the budget (:data:`OVER` steps in a row) or the
    duplicates run out. Reference joins are made one floor at a time (:data:`SCAN_FLOORS`)."""
    low = scan_floor(ws, cfg)
    floors = [f for f in SCAN_FLOORS if f > low] + [low]
    ts, rec, frr, lab = [], [], [], []
    n_pos = max(1, len(ws.truth.pos_i))
    over, k, ref, ref_floor = 0, 0, None, 1.0
    last = (None, -1, (0, 0))  # (join, pairs >= t, their removals): a step that verifies no new pair clusters alike
    for t in np.round(np.arange(1.0, low - 1e-9, -SCAN_STEP), 3):
        try:
            while ref is None or t < ref_floor:  # floors[-1] is the scan's lowest threshold
                ref_floor = floors[k]
                k += 1
                ref = _reference(ws, cfg, ref_floor)
        except TooManyPairs:
            break
        i, j, s, _ = ref
        m = s >= t
        count = int(np.count_nonzero(m))
        if last[0] is not ref or last[1] != count:  # within one join the pairs >= t only grow as t falls
            last = (ref, count, _removals(ws, cfg, i[m], j[m], s[m]))
        false, true = last[2]
        ts.append(t)
        rec.append(_passing_positives(ws, cfg, t).sum() / n_pos)
        frr.append(false / (false + true) if false + true else np.nan)
        lab.append(false + true)
        over = over + 1 if frr[-1] > 1.5 * budget else 0
        if over >= OVER:
            break
    return Ceiling(np.array(ts), np.array(rec, float), np.array(frr, float), np.array(lab, int), budget)


def expected(ws, cfg: Config, floor: float | None = None) -> dict:
    """Expected pair recall, false-removal rate, its hash sd and seed-high bound of one exactly verified
    configuration (module docstring). ``floor``: the reference join to read (default: the threshold)."""
    i, j, s, sj = _reference(ws, cfg, cfg.threshold if floor is None else min(floor, cfg.threshold))
    m = s >= cfg.threshold
    i, j, s, sj = i[m], j[m], s[m], sj[m]
    q = lsh.s_curve(sj, cfg.b, cfg.r)
    d = removal_draws(ws.truth, ws.true_clusters, i, j, s, q, policy=cfg.policy, representative=cfg.representative,
                      lengths=_lengths(ws, cfg), max_component=cfg.max_component)
    passing = _passing_positives(ws, cfg, cfg.threshold)
    pos_q = lsh.s_curve(ws.positive_jaccard(cfg.rep), cfg.b, cfg.r)
    recall = float(np.mean(pos_q * passing)) if len(passing) else float("nan")
    frr, sd = d["expected_false_removal_rate"], d["false_removal_rate_hash_sd"]
    return {"recall": recall, "frr": frr, "frr_sd": sd, "frr_high": seed_high(frr, sd)}


def steep(ws, cfg: Config, levels=SPLIT_LEVELS) -> list[tuple[int, int]]:
    """Splits (b = num_perm // r, r) with the highest 50% point whose S-curve reaches each level at the
    5th percentile of the J of the duplicates that pass ``cfg``'s threshold."""
    from calib.search.grid import steep_splits
    passing = ws.positive_jaccard(cfg.rep)[_passing_positives(ws, cfg, cfg.threshold)]
    low = float(np.quantile(passing, 0.05)) if len(passing) else cfg.threshold
    return steep_splits(low, cfg.rep.num_perm, levels)


def best_cuts(ws, cfg: Config, ceil: Ceiling, budget: float, num_perms=(128, 256), keep: int = 4) -> list[Config]:
    """The configurations of ``cfg``'s setting worth measuring: around the ceiling's best threshold
    (and a little above it: hash luck and chaining raise the rate), every hash count, steep splits;
    ranked by expected pair recall among those whose seed-high rate holds the budget (failing that,
    by the seed-high rate), ``keep`` of them."""
    best = ceil.best
    if best is None:
        t0 = ceil.closest()[0]
        if np.isnan(t0):
            return []
        starts = [t0]
    else:
        t0 = best[0]
        starts = sorted({t0, *[float(t) for t in ceil.thresholds[ceil.within(0.5)][-1:]]})
    ts = sorted({round(min(1.0, max(SCAN_STEP, t + d)), 3) for t in starts for d in (0.0, 0.01, 0.02, 0.04)})
    scored = []
    for m in num_perms:
        for t in ts:
            c = replace(cfg, rep=cfg.rep.with_(num_perm=m), threshold=t)
            for b, r in steep(ws, c):
                if r > MAX_ROWS:
                    continue
                c2 = replace(c, b=b, r=r)
                e = expected(ws, c2)
                ok = e["frr_high"] <= budget or np.isnan(e["frr_high"])
                scored.append((not ok, -e["recall"] if ok else e["frr_high"], m, -t, c2.fingerprint(), c2, e))
    scored.sort(key=lambda x: x[:5])
    return [x[5] for x in scored[:keep]]


__all__ = ["Ceiling", "best_cuts", "ceiling", "expected", "scan_floor", "steep"]
