"""Rates averaged over the hash seed: the seed-free expected value of the rates that include the hash.

A configuration verified without the hash (exact similarity >= t, or the short rule's exact text)
verifies pair p with probability

    q_p = P(J_p) * 1[s_p >= t],   P(J) = 1 - (1 - J^r)^b,

where J_p is the pair's exact (sketched) Jaccard, which drives the band S-curve, and s_p its verified
measure (J, C or weighted J). Over hash seeds:

* pair precision: E[tp] / (E[tp] + E[fp]) = sum_dup q / sum_labeled q over the labeled pairs that pass
  (a ratio of expectations; the delta method gives its hash variance from the independent Bernoulli
  variances sum q (1 - q));
* false-removal and missed-removal rates are document-level, after the verified pairs are clustered:
  no closed form. :func:`removal_draws` draws the verified graph ``draws`` times, each pair an
  independent Bernoulli(q_p), clusters each draw as the sweep does and counts removals. The expected
  rate is the pooled ratio over the draws (sum of false removals / sum of labeled removals), its hash
  standard deviation the spread of the per-draw rates. Approximation, stated: real band collisions of
  pairs that share documents are positively correlated (a band that collides a-b and b-c tends to
  collide a-c), which independent draws ignore; the marginal P(J) of every pair is exact.

The uniforms are a fixed hash of (pair, draw), not a seeded generator over the pair list: the same
pair gets the same draws in every configuration (common random numbers, so configurations compare
without simulation noise between them), and the same inputs give the same bytes.
"""

from __future__ import annotations

import numpy as np

from calib.candidates.lsh import s_curve
from calib.clusters.clustering import cluster_pairs
from calib.clusters.truth import Truth

# The columns a sweep row gains, each with what its value (and interval) covers: declared once here,
# listed by docs/seed-robust-search.md (a test keeps the two the same).
COLUMNS = {
    "expected_pair_precision": "pair precision averaged over hash seeds: sum of q over the labeled duplicate "
                               "pairs that pass the threshold / sum of q over every labeled pair that passes, "
                               "q = P(J) = 1 - (1 - J^r)^b; no seed (NaN for estimated or no verification).",
    "expected_false_removal_rate": "false-removal rate averaged over hash seeds: the verified graph drawn "
                                   "hash_draws times, each pair in it with probability q, independently (the "
                                   "real bands correlate pairs that share documents), clustered as the sweep "
                                   "clusters; pooled false / labeled removals over the draws.",
    "expected_missed_removal_rate": "missed-removal rate averaged over the same draws.",
    "pair_precision_hash_sd": "standard deviation of pair precision over hash seeds on these documents (delta "
                              "method over independent Bernoulli(q) pairs); sampling not included.",
    "false_removal_rate_hash_sd": "standard deviation of the false-removal rate over the draws: hash luck on "
                                  "these documents; sampling not included.",
    "missed_removal_rate_hash_sd": "standard deviation of the missed-removal rate over the draws.",
    "false_removal_rate_seed_high": "expected_false_removal_rate + 1.645 false_removal_rate_hash_sd: the rate "
                                    "a new seed stays under 95% of the time, on these documents (hash only, "
                                    "no sampling); the recommendation checks the budget on it too.",
    "hash_draws": "how many draws of the verified graph the expected removal rates average (16, fewer when a "
                  "configuration verifies millions of pairs).",
    "pair_precision_low": "with pair_precision_high: cluster-bootstrap (or Wilson) interval widened by the hash "
                          "sd, so it covers the value another seed gives (method suffix +hash).",
    "false_removal_rate_low": "with false_removal_rate_high: likewise for the false-removal rate (+hash where "
                              "the rule is exact; sampling only for estimated or no verification).",
    "missed_removal_rate_low": "with missed_removal_rate_high: likewise for the missed-removal rate.",
    "seed_swing": "the row's standing against the budget swings with the seed: the seed check's seeds "
                  "disagreed, or expected +- 1.645 hash sd straddles the budget, or the measured and expected "
                  "rates sit on different sides of it (search results; the Sweep page marks it '± seed').",
    "seeds_held": "on rows the seed check re-ran: on how many of their seeds the budget held, e.g. 5/5.",
}

DRAWS = 16                 # draws of the verified graph per configuration
MAX_DRAWN_EDGES = 4_000_000  # fewer draws when a configuration verifies very many pairs
Z95_ONE_SIDED = 1.6448536269514722


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finalizer (uint64 -> uint64)."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def pair_uniforms(i: np.ndarray, j: np.ndarray, n: int, draws: int) -> np.ndarray:
    """(draws, pairs) uniforms in [0, 1), a fixed function of (i, j, draw)."""
    code = np.asarray(i, np.uint64) * np.uint64(n) + np.asarray(j, np.uint64)
    with np.errstate(over="ignore"):
        x = _mix(code[None, :] + np.uint64(0x9E3779B97F4A7C15) * (np.arange(draws, dtype=np.uint64)[:, None] + 1))
    return (x >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def expected_precision(q: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(E[tp] / E[tp + fp], its hash sd by the delta method) over pairs verified with probability ``q``
    (labels 1 / 0; unlabeled pairs count in neither)."""
    pos, neg = q[labels == 1], q[labels == 0]
    a, c = float(pos.sum()), float(neg.sum())
    if a + c <= 0:
        return float("nan"), float("nan")
    va, vc = float((pos * (1 - pos)).sum()), float((neg * (1 - neg)).sum())
    # R = a / (a + c): dR/da = c / (a + c)^2, dR/dc = -a / (a + c)^2
    return a / (a + c), float(np.sqrt(c * c * va + a * a * vc) / (a + c) ** 2)


def removal_draws(truth: Truth, true_clusters: np.ndarray, i: np.ndarray, j: np.ndarray, sim: np.ndarray,
                  q: np.ndarray, *, policy, representative, lengths=None, max_component=None,
                  draws: int = DRAWS) -> dict:
    """Expected false- and missed-removal rates over the hash, and their hash sd, from ``draws``
    independent-Bernoulli draws of the verified graph (pairs (i, j), verified similarity ``sim``,
    probability ``q``). All draws are clustered at once, as one graph of ``draws`` disjoint copies
    of the sample (copy k holds rows k*n .. k*n + n - 1)."""
    n = truth.n
    draws = int(max(2, min(draws, MAX_DRAWN_EDGES // max(1, len(i)))))
    keep = pair_uniforms(i, j, n, draws) < q[None, :]
    k_of, p_of = np.nonzero(keep)
    off = k_of.astype(np.int64) * n
    big_lengths = None if lengths is None else np.tile(np.asarray(lengths), draws)
    cl = cluster_pairs(n * draws, i[p_of] + off, j[p_of] + off, sim[p_of], policy=policy,
                       representative=representative, lengths=big_lengths,
                       max_component=max_component)
    rows = np.flatnonzero(cl.removed)
    draw = rows // n
    lab = truth.label(rows % n, cl.representative[rows] % n)
    false = np.bincount(draw[lab == 0], minlength=draws).astype(np.float64)
    true = np.bincount(draw[lab == 1], minlength=draws).astype(np.float64)
    # missed: kept members of a true duplicate cluster beyond its first kept one, per draw
    sizes = np.bincount(true_clusters)
    expected = float((sizes[sizes > 1] - 1).sum())
    kept = np.flatnonzero(~cl.removed)
    tc = true_clusters[kept % n]
    dup = sizes[tc] > 1
    tag = (kept[dup] // n) * (int(true_clusters.max(initial=0)) + 1) + tc[dup]
    clusters_kept = np.bincount(np.unique(tag) // (int(true_clusters.max(initial=0)) + 1), minlength=draws)
    missed = np.bincount(kept[dup] // n, minlength=draws) - clusters_kept
    labeled = false + true
    with np.errstate(invalid="ignore", divide="ignore"):
        per_draw = false / labeled
    seen = per_draw[labeled > 0]
    frr = float(false.sum() / labeled.sum()) if labeled.sum() else float("nan")
    miss = missed / expected if expected else np.full(draws, np.nan)
    return {"expected_false_removal_rate": frr,
            "false_removal_rate_hash_sd": float(seen.std(ddof=1)) if len(seen) > 1 else float("nan"),
            "expected_missed_removal_rate": float(np.mean(miss)),
            "missed_removal_rate_hash_sd": float(np.std(miss, ddof=1)) if expected else float("nan"),
            "hash_draws": draws}


def seed_high(expected: float, sd: float) -> float:
    """One-sided 95% upper bound of the rate a new seed gives on these documents: expected + 1.645 sd."""
    if np.isnan(expected):
        return float("nan")
    return float(min(1.0, expected + Z95_ONE_SIDED * (0.0 if np.isnan(sd) else sd)))


def verify_probability(sketch_j: np.ndarray, b: int, r: int) -> np.ndarray:
    """P(candidate) of each pair, the S-curve at its exact Jaccard."""
    return s_curve(np.asarray(sketch_j, np.float64), b, r)
