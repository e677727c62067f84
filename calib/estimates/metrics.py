"""Metrics of one configuration against the ground truth, with 95% intervals.

Pair level (over true duplicate pairs P, from labels):
  candidate recall  = |P and LSH candidates| / |P|
  pair recall       = |P and verified| / |P|
  pair precision    = |verified labeled duplicate| / |verified and labeled|
Document level, after clustering verified pairs and keeping one
representative per cluster:
  false removal     = a removed document labeled NOT a duplicate of its
                      representative; rate over labeled removals
  unlabeled removal = its pair with the representative carries no label
  missed removal    = in a true duplicate cluster of size m, every kept
                      member beyond one; rate over sum(m - 1)
Intervals: Wilson score intervals (:mod:`calib.estimates.stats`) where the trials are
independent (no document or group in two trials); a cluster bootstrap
(:mod:`calib.estimates.bootstrap`) where they share one; for band-collision rates
widened by the hash variance from the band jackknife (:mod:`calib.estimates.jackknife`,
method suffix ``+hash``). ``<rate>_interval`` names the method used. Expected rates (no hash seed): mean over the pairs of the
S-curve at each pair's exact Jaccard, ``P(J) = 1 - (1 - J^r)^b``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calib.estimates.bootstrap import BOOTSTRAP, WILSON, WILSON_CLUSTERS, ClusterBootstrap, Counts
from calib.clusters.clustering import Clustering
from calib.estimates.jackknife import hash_sd, widen
from calib.candidates.lsh import s_curve
from calib.estimates.stats import rate, wilson
from calib.clusters.truth import Truth


def binomial(name: str, k: int, n: int, alpha: float = 0.05) -> dict:
    """{name: k/n, name_low, name_high} with a Wilson interval (NaN when n = 0)."""
    lo, hi = wilson(k, n, alpha)
    return {name: float(rate(k, n)), f"{name}_low": float(lo), f"{name}_high": float(hi)}


def counted_rate(name: str, counts: Counts, boot: ClusterBootstrap | None, *, macro: bool = False,
                 hash_sd: float | None = None) -> dict:
    """{name, name_low, name_high, name_interval[, name_macro]} of one rate.

    Sampling part: the cluster-bootstrap interval when its trials share a
    unit (and a bootstrap is given), else Wilson. At k = 0 or k = n every
    resample gives the same rate, so the percentile interval has no width (0
    false removals of 198 would read "95% upper 0.00%"): the Wilson interval
    over the units that hold the trials (``wilson-clusters``) stands in, as
    wide as if each unit were one trial (the most dependence there can be). ``hash_sd`` (the band
    jackknife's hash standard deviation, :mod:`calib.estimates.jackknife`): the interval
    is widened to cover the rate another hash seed gives. ``macro``: also the
    per-unit (group) mean of the rate, each group weighted once."""
    k, n = counts.k_total, counts.n_total
    if boot is not None and counts.dependent:
        if 0 < k < n:
            lo, hi = boot.interval(counts)
            method = BOOTSTRAP
        else:
            m = counts.units_with_trials
            lo, hi = (float(x) for x in wilson(k / n * m if n else 0.0, m))
            method = WILSON_CLUSTERS
    else:
        lo, hi = (float(x) for x in wilson(k, n))
        method = WILSON
    est = float(rate(k, n))
    if hash_sd is not None and not np.isnan(hash_sd):
        lo, hi = widen(est, lo, hi, hash_sd)
        method += "+hash"
    out = {name: est, f"{name}_low": lo, f"{name}_high": hi, f"{name}_interval": method}
    if macro:
        out[f"{name}_macro"] = counts.macro()
    return out


def expected_rate(sim: np.ndarray, b: int, r: int, mask: np.ndarray | None = None) -> float:
    """Mean over pairs of P(candidate | J) = 1 - (1 - J^r)^b at their exact J
    (times ``mask``, e.g. J >= threshold for exact verification): the rate the
    S-curve predicts, averaged over hash seeds, with no seed at all."""
    sim = np.asarray(sim, dtype=np.float64)
    if not len(sim):
        return float("nan")
    p = s_curve(sim, b, r)
    return float(np.mean(p if mask is None else p * mask))


def candidate_metrics(pos_candidate: np.ndarray, n_candidates: float, n_docs: int) -> dict:
    """Candidate recall over true duplicate pairs, candidate count and reduction."""
    total = n_docs * (n_docs - 1) // 2
    out = {"n_positive": int(len(pos_candidate)), "candidates": float(n_candidates),
           "reduction": float(1 - n_candidates / total) if total else float("nan")}
    out.update(binomial("candidate_recall", int(pos_candidate.sum()), len(pos_candidate)))
    return out


def pair_metrics(pos_verified: np.ndarray, verified_labels: np.ndarray) -> dict:
    """Recall over true duplicate pairs; precision over verified labeled pairs."""
    tp = int((verified_labels == 1).sum())
    fp = int((verified_labels == 0).sum())
    out = {"verified": int(len(verified_labels)), "verified_unlabeled": int((verified_labels == -1).sum()),
           "verified_true": tp, "verified_false": fp}
    out.update(binomial("pair_recall", int(pos_verified.sum()), len(pos_verified)))
    out.update(binomial("pair_precision", tp, tp + fp))
    return out


def document_outcomes(truth: Truth, clustering: Clustering, true_clusters: np.ndarray) -> pd.DataFrame:
    """Per document: removed, its label against its representative, missed."""
    n = truth.n
    rows = np.arange(n, dtype=np.int64)
    rep = clustering.representative
    removed = clustering.removed
    lab = np.full(n, -1, dtype=np.int8)
    lab[removed] = truth.label(rows[removed], rep[removed])
    # Missed: kept members of a true cluster beyond its first kept member.
    kept = ~removed
    kept_rows = np.flatnonzero(kept)  # ascending, so the first kept row of a cluster comes first
    _, first = np.unique(true_clusters[kept_rows], return_index=True)
    missed = kept.copy()
    missed[kept_rows[first]] = False
    sizes = np.bincount(true_clusters, minlength=true_clusters.max(initial=-1) + 1)
    in_dup_cluster = sizes[true_clusters] > 1
    return pd.DataFrame({
        "removed": removed,
        "representative": rep,
        "chained": clustering.chained,
        "false_removal": removed & (lab == 0),
        "true_removal": removed & (lab == 1),
        "unlabeled_removal": removed & (lab == -1),
        "in_duplicate_cluster": in_dup_cluster,
        "missed": missed,
    })


def removal_metrics(outcomes: pd.DataFrame, true_clusters: np.ndarray) -> dict:
    sizes = np.bincount(true_clusters)
    expected = int((sizes[sizes > 1] - 1).sum())
    false = int(outcomes["false_removal"].sum())
    true = int(outcomes["true_removal"].sum())
    out = {"removed": int(outcomes["removed"].sum()), "true_removals": true, "false_removals": false,
           "unlabeled_removals": int(outcomes["unlabeled_removal"].sum()),
           "chained_removals": int(outcomes["chained"].sum()),
           "expected_removals": expected, "missed_removals": int(outcomes["missed"].sum())}
    out.update(binomial("false_removal_rate", false, false + true))
    out.update(binomial("missed_removal_rate", out["missed_removals"], expected))
    out.update(standing(out["removed"], true, false))
    return out


def standing(removed: int, true: int, false: int) -> dict:
    """What a false-removal rate stands on: how many removals carry a label, their
    share, and the rate over all removals if every unlabeled one were false
    (upper bound) or fine (lower bound). NaN when nothing is removed."""
    unlabeled = removed - true - false
    return {"labeled_removals": true + false,
            "labeled_removal_share": float(rate(true + false, removed)),
            "false_removal_rate_if_unlabeled_fine": float(rate(false, removed)),
            "false_removal_rate_if_unlabeled_false": float(rate(false + unlabeled, removed))}


def collision_rates(sim: np.ndarray, collide: np.ndarray, b: int, r: int, bins: int = 20, *,
                    boot: ClusterBootstrap | None = None, i: np.ndarray | None = None, j: np.ndarray | None = None,
                    first: np.ndarray | None = None) -> pd.DataFrame:
    """Empirical candidate rate per exact-Jaccard bin, next to the S-curve.

    One row per bin of [0, 1] with pairs in it: n pairs, k candidates, the
    rate with its interval, ``expected`` = the mean of P(J) over the bin's
    pairs (what the rate is on average over hash seeds), and ``theory`` = P(s)
    at the bin's mean similarity. ``collide``: bool per pair, or the band
    counts of :func:`calib.candidates.lsh.band_hits`. With ``boot`` and the pairs (i, j)
    the interval is a cluster bootstrap where the bin's pairs share
    documents; with ``first`` (and counts) it is widened by the band
    jackknife's hash spread (:func:`counted_rate`); else Wilson.
    """
    edges = np.linspace(0.0, 1.0, bins + 1)
    idx = np.clip(np.searchsorted(edges, sim, side="right") - 1, 0, bins - 1)
    hit = np.asarray(collide) > 0
    n = np.bincount(idx, minlength=bins)
    k = np.bincount(idx, weights=hit.astype(np.float64), minlength=bins)
    s_sum = np.bincount(idx, weights=sim, minlength=bins)
    expected = np.bincount(idx, weights=s_curve(sim, b, r), minlength=bins)
    lo, hi = wilson(k, n)
    method = np.full(bins, WILSON, dtype=object)
    if boot is not None:
        trials = boot.pairs(i, j)
        for t in np.flatnonzero(n):  # one bootstrap per bin (at most `bins`)
            m = idx == t
            sd = None if first is None else hash_sd(np.asarray(collide)[m], first[m], b, r, sim[m])
            out = counted_rate("r", trials.subset(m).counts(hit[m]), boot, hash_sd=sd)
            lo[t], hi[t], method[t] = out["r_low"], out["r_high"], out["r_interval"]
    with np.errstate(invalid="ignore"):
        s_mean = s_sum / n
        expected = expected / n
    frame = pd.DataFrame({"bin_low": edges[:-1], "bin_high": edges[1:], "pairs": n, "candidates": k.astype(np.int64),
                          "rate": rate(k, n), "rate_low": lo, "rate_high": hi, "rate_interval": method,
                          "expected": expected, "mean_similarity": s_mean,
                          "theory": s_curve(np.nan_to_num(s_mean), b, r)})
    return frame[frame["pairs"] > 0].reset_index(drop=True)


def rate_at_or_above(curve: pd.DataFrame, threshold: float) -> tuple[int, int, float]:
    """(candidates, pairs, rate) over the bins of a :func:`collision_rates`
    frame that start at or above ``threshold`` (NaN rate when no pair is there)."""
    above = curve[curve["bin_low"] >= threshold - 1e-9]
    k, n = int(above["candidates"].sum()), int(above["pairs"].sum())
    return k, n, (k / n if n else float("nan"))


def expected_at_or_above(curve: pd.DataFrame, threshold: float) -> float:
    """The seed-free expected rate over the same bins as :func:`rate_at_or_above`:
    the mean of P(J) over their pairs (NaN when no pair is there)."""
    above = curve[curve["bin_low"] >= threshold - 1e-9]
    n = above["pairs"].sum()
    return float((above["expected"] * above["pairs"]).sum() / n) if n else float("nan")
