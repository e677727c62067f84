"""The seed-free (expected over the hash) rates of one exactly verified configuration, on the sweep's state.

The verified-with-probability pairs are the reference join's pairs that pass the threshold (every pair
an exact rule can verify), each with q = P(J) (:mod:`calib.estimates.over_hash`); the short-document
rule is applied to them as to the measured pairs (an equal-text pair of short documents: J = 1, q = 1).
Configurations whose verification uses the hash (estimated) or has no threshold (none) get NaN.
"""

from __future__ import annotations

import numpy as np

from calib.clusters.clustering import Representative
from calib.estimates.over_hash import (expected_precision, removal_draws, seed_high, verify_probability)
from calib.search.config import Verify
from calib.verification.short import apply_rule

NAN_ROW = {"expected_pair_precision": np.nan, "pair_precision_hash_sd": np.nan,
           "expected_false_removal_rate": np.nan, "false_removal_rate_hash_sd": np.nan,
           "expected_missed_removal_rate": np.nan, "missed_removal_rate_hash_sd": np.nan,
           "false_removal_rate_seed_high": np.nan, "hash_draws": 0}


def reference_sketch_j(st) -> np.ndarray:
    """Exact J (weighted J under a weighting) of the split state's reference pairs: what drives the
    S-curve; the reference similarity itself when the verified measure is that one."""
    if st._ref_j is None:
        ri, rj, rs, _ = st.ref_all
        own = "jaccard" if st.rep.weighting == "none" else "weighted_jaccard"
        st._ref_j = rs if st.measure.name == own else st.ws.sketch_similarity(st.rep, ri, rj)
    return st._ref_j


def over_hash(ws, st, cfg) -> dict:
    """The row's expected_* rates and hash standard deviations (NaN where the rule uses the hash)."""
    if cfg.verify is not Verify.EXACT or not st.reference_covers(cfg.threshold):
        return dict(NAN_ROW)
    ri, rj, rs, _ = st.ref_all
    m = cfg.passes(rs)
    i, j, s, sj = ri[m], rj[m], rs[m], reference_sketch_j(st)[m]
    if cfg.min_shingles:
        short = ws.short(cfg)
        i, j, (s, sj) = apply_rule(i, j, [s, sj], short, cfg.short_docs, ws.text_keys(cfg.rep)[short])
    q = verify_probability(sj, cfg.b, cfg.r)
    prec, prec_sd = expected_precision(q, ws.truth.label(i, j))
    lengths = ws.sets(cfg.rep).sizes() if cfg.representative is Representative.LONGEST else None
    d = removal_draws(ws.truth, ws.true_clusters, i, j, s, q, policy=cfg.policy,
                      representative=cfg.representative, lengths=lengths, max_component=cfg.max_component)
    return {"expected_pair_precision": prec, "pair_precision_hash_sd": prec_sd, **d,
            "false_removal_rate_seed_high": seed_high(d["expected_false_removal_rate"],
                                                      d["false_removal_rate_hash_sd"])}
