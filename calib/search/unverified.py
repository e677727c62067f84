"""Splits for a tool that verifies nothing: the S-curve is the removal rule.

With no verification every LSH candidate is a duplicate, so pair p is verified with probability

    q_p = P(J_p) = 1 - (1 - J_p^r)^b

at every similarity, and the split (b, r) (and the hash count it is cut from) is the whole
decision: a split built to be verified (steep just below the threshold, candidates for nearly every
duplicate) lets every loose candidate through. A split that holds the budget unverified is steep
*at* the duplicates' edge: many rows per band, its 50% point (1/b)^(1/r) high.

:func:`unverified_cuts` ranks every split in two steps, both from exact similarities, before any is
measured: first the pair-level expectations over the labeled pairs (expected pair recall = mean of q
over the duplicate pairs; expected false share = sum of q over the reference join's pairs labeled not
duplicate over the sum over its labeled pairs, in J bins of 0.01), one S-curve per split, to keep the few worth a closer look; then the
expected document-level rates over the reference join (every pair with J >= the floor drawn with
probability q and clustered as the tool clusters, :func:`~calib.estimates.over_hash.removal_draws`),
ranked like :func:`calib.search.screen.best_cuts`: expected pair recall among those whose seed-high
rate holds the budget. Pairs below the floor (J < 0.3 by default) are left out of the expectation;
the measured rows that follow count them.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from calib.candidates import lsh
from calib.estimates.over_hash import removal_draws, seed_high
from calib.search.config import Config
from calib.search.grid import MAX_ROWS
from calib.search.screen import _lengths, _passing_positives, _reference
from calib.verification.jaccard import TooManyPairs

FLOORS = (0.3, 0.4, 0.5)  # the reference join's floor: the lowest that fits MAX_SCAN_PAIRS
NUM_PERMS = (128, 256, 512, 1024)
SHORTLIST = 3               # splits per hash count and margin kept by the pair-level step
PAIR_MARGINS = (0.5, 0.25, 0.1)  # the pair-level step's bounds on the false share, times the budget (it
# counts pairs, not removals: chaining and hash luck add removals, so the shares are kept well under it)
WHOLE_MAX = 1024            # whole-signature tools (Milvus): num_perm = b * r up to this
BIN = 0.01                  # the pair-level step's J bins


def splits_for(num_perm: int | None, whole: bool = False, min_bands: int = 1) -> list[tuple[int, int, int]]:
    """(num_perm, b, r) of every split considered: b*r <= num_perm (whole signature: num_perm = b*r for
    every b*r from 64 to :data:`WHOLE_MAX`), r <= MAX_ROWS, b >= ``min_bands``."""
    out = []
    for r in range(1, MAX_ROWS + 1):
        if whole:
            out += [(b * r, b, r) for b in range(max(min_bands, -(-64 // r)), WHOLE_MAX // r + 1)]
        else:
            out += [(num_perm, b, r) for b in range(min_bands, num_perm // r + 1)]
    return out


def expected_unverified(ws, cfg: Config, floor: float) -> dict:
    """Expected pair recall, false-removal rate, its hash sd and seed-high bound of one unverified
    configuration, over the pairs with J >= ``floor`` (module docstring)."""
    i, j, s, sj = _reference(ws, cfg, floor)
    q = lsh.s_curve(sj, cfg.b, cfg.r)
    d = removal_draws(ws.truth, ws.true_clusters, i, j, s, q, policy=cfg.policy, representative=cfg.representative,
                      lengths=_lengths(ws, cfg), max_component=cfg.max_component)
    passing = _passing_positives(ws, cfg, 0.0)
    pos_q = lsh.s_curve(ws.positive_jaccard(cfg.rep), cfg.b, cfg.r)
    recall = float(np.mean(pos_q * passing)) if len(passing) else float("nan")
    frr, sd = d["expected_false_removal_rate"], d["false_removal_rate_hash_sd"]
    return {"recall": recall, "frr": frr, "frr_sd": sd, "frr_high": seed_high(frr, sd)}


def _floor(ws, cfg: Config) -> float | None:
    for f in FLOORS:
        try:
            _reference(ws, cfg, f)
            return f
        except TooManyPairs:
            continue
    return None


def shortlist(ws, cfg: Config, budget: float, floor: float, *, num_perms=NUM_PERMS, whole: bool = False,
              min_bands: int = 1, per: int = SHORTLIST) -> list[tuple[int, int, int]]:
    """The splits the pair-level step keeps (module docstring): per hash count, the ``per`` of highest
    expected pair recall whose expected false share (over the reference join's labeled pairs, by J bins
    of :data:`BIN`) is within each of :data:`PAIR_MARGINS` times the budget (failing any, the lowest shares)."""
    pos = ws.positive_jaccard(cfg.rep)
    passing = _passing_positives(ws, cfg, 0.0)
    i, j, _, sj = _reference(ws, cfg, floor)
    lab = ws.truth.label(i, j)
    cands = splits_for(None, True, min_bands) if whole else [
        s for m in num_perms for s in splits_for(m, False, min_bands)]
    if not cands or not len(pos):
        return []
    edges = np.arange(0.0, 1.0 + BIN, BIN)
    mid = np.append((edges[:-1] + edges[1:]) / 2, 1.0)  # the last bin: J = 1 (exact copies)
    def counts(x):
        return np.bincount(np.minimum((np.asarray(x) / BIN).astype(np.int64), len(mid) - 1), minlength=len(mid))
    n_false, n_true, n_pos = counts(sj[lab == 0]), counts(sj[lab == 1]), counts(pos[passing])
    m_, b_, r_ = (np.array(x) for x in zip(*cands))
    q = 1.0 - (1.0 - mid[None, :] ** r_[:, None]) ** b_[:, None]
    recall = (q * n_pos).sum(axis=1) / max(1, len(pos))
    fp, tp = (q * n_false).sum(axis=1), (q * n_true).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(tp + fp > 0, fp / (tp + fp), 1.0)
    out = []
    groups = [np.arange(len(cands))] if whole else [np.flatnonzero(m_ == m) for m in sorted(set(m_.tolist()))]
    for idx in groups:
        for margin in PAIR_MARGINS:
            ok = idx[share[idx] <= margin * budget]
            pick = ok[np.argsort(-recall[ok], kind="stable")][:per] if len(ok) else \
                idx[np.argsort(share[idx], kind="stable")][:per]
            out += [cands[k] for k in pick]
    return list(dict.fromkeys(out))


def unverified_cuts(ws, setting: Config, budget: float, *, num_perms=NUM_PERMS, keep: int = 3, whole: bool = False,
                    min_bands: int = 1) -> list[Config]:
    """The splits of ``setting`` (a configuration with rule none: its representation, clustering and
    short rule) worth measuring, best first, ``keep`` of them (module docstring)."""
    floor = _floor(ws, setting)
    if floor is None:
        return []
    scored = []
    for m, b, r in shortlist(ws, setting, budget, floor, num_perms=num_perms, whole=whole, min_bands=min_bands,
                             per=max(SHORTLIST * (len(num_perms) if whole else 1), keep)):
        c = replace(setting, rep=setting.rep.with_(num_perm=m), b=b, r=r)
        e = expected_unverified(ws, c, floor)
        ok = e["frr_high"] <= budget or np.isnan(e["frr_high"])
        scored.append((not ok, -e["recall"] if ok else e["frr_high"], m, c.fingerprint(), c))
    scored.sort(key=lambda x: x[:4])
    out: dict = {}
    for x in scored:  # one split per (hash count, rows): neighbouring b differ by little
        out.setdefault((x[4].rep.num_perm, x[4].r), x[4])
    return list(out.values())[:keep]


__all__ = ["expected_unverified", "shortlist", "splits_for", "unverified_cuts"]
