"""Design-weighted rates: corpus-level rates from a stratified draw's labels (:mod:`calib.labeling.draw`).

The labeled pairs of a drawn set over-represent the high-similarity bands on
purpose, so their plain proportions describe the draw, not the corpus. Every
rate here is a ratio R = Y / X of two population totals over the pairs of the
document sample (Y = sum of y_k, X = sum of x_k: for pair recall, y = duplicate
and verified, x = duplicate), estimated from stratum h's n_h labeled pairs out
of its N_h pairs (a simple random sample within each stratum, see
:mod:`calib.reading.design`) by the combined ratio estimator

    Y^ = sum_h N_h ybar_h,   X^ = sum_h N_h xbar_h,   R^ = Y^ / X^

(Horvitz-Thompson totals with weights N_h / n_h = 1 / pi_h, up to the constant
stage-1 factor pi1 that cancels in the ratio). Its variance, by linearization
(Cochran 1977, 6.11) with the residuals e_k = y_k - R^ x_k:

    V^(R^) = 1/X^2 sum_h N_h^2 (1 - n_h/N_h) s2_{e,h} / n_h

(s2_{e,h} the sample variance of e in stratum h, ddof 1). The 95% interval is
Wilson's at the effective sample size n_eff = R^(1 - R^) / V^ (Korn and
Graubard 1998): it keeps the interval inside [0, 1] and, when no event was
seen (R^ = 0, V^ = 0), uses Kish's n_eff = (sum w x)^2 / sum w^2 x instead of
a zero-width interval. What the interval does not cover: the stage-1 luck of
which documents the sample holds (small when the sample holds many duplicate
families; the coverage test measures the whole), and label errors.

Rates (``<rate>_interval`` = ``stratified``): candidate and pair recall,
pair precision, and the false-removal rate (y = removed document's pair with
its representative is labeled not duplicate, x = it is such a pair).

The label planner that says which strata to label next
(:func:`calib.labeling.weighted.next_labels`) works on these estimates.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calib.candidates import lsh
from calib.verification.measures import get_measure
from calib.estimates.ratio import RATES, STRATIFIED, Z95, Ratio  # noqa: F401 (Z95, Ratio: shared names)
from calib.estimates.stats import wilson

def stratified_ratio(h: np.ndarray, y: np.ndarray, x: np.ndarray, population, labeled_per_stratum,
                     smooth: float = 0.5, units: np.ndarray | None = None, n_units: int = 0) -> Ratio:
    """Combined ratio estimate of sum(y)/sum(x) over all pairs, from labeled
    pairs in strata ``h`` (see the module docstring). ``population[h]`` = N_h,
    ``labeled_per_stratum[h]`` = n_h (every labeled pair of h, x or not).

    ``smooth`` (default 0.5, Jeffreys): in a stratum with at least one
    labeled x, the variance uses the counts of (y, x) = (1, 1) and (0, 1) each
    plus ``smooth``, so a stratum where every labeled duplicate was found (or
    none was) still carries the variance of the split it may hide; the
    estimate itself uses the raw counts. A stratum with no labeled x gets no
    variance: it is taken to hold none (a half pair there would stand for
    N_h / (2 n_h) phantom pairs, thousands in the low bands); label more there
    (:func:`calib.labeling.weighted.next_labels` proposes it) to learn otherwise.

    ``units`` (the document-sample unit of each pair, of ``n_units``): the
    variance is at least the ultimate-cluster one, which also covers which
    documents the sample drew (stage 1): with z_u = sum over unit u's pairs
    of w_k e_k, V^ = U/(U-1) sum_u (z_u - zbar)^2 / X^2 (Hansen, Hurwitz and
    Madow 1953; conservative for a sample without replacement).
    """
    h = np.asarray(h, dtype=np.int64)
    y = np.asarray(y, dtype=float) * np.asarray(x, dtype=float)
    x = np.asarray(x, dtype=float)
    N = np.asarray(population, dtype=float)
    n = np.asarray(labeled_per_stratum, dtype=float)
    H = len(N)
    w = np.where(n > 0, N / np.maximum(n, 1), 0.0)       # 1 / pi_h within the document sample
    Y = float((w[h] * y).sum())
    X = float((w[h] * x).sum())
    m = int(x.sum())
    if X <= 0:
        return Ratio(np.nan, np.nan, np.nan, np.nan, m, 0.0)
    R = Y / X
    a = np.bincount(h, weights=y, minlength=H)            # y = 1, x = 1
    b = np.bincount(h, weights=x, minlength=H) - a        # y = 0, x = 1 (the rest of n: x = 0)
    k = np.where(a + b > 0, smooth, 0.0)
    tot = np.maximum(n + 2 * k, 1e-300)
    pa, pb = (a + k) / tot, (b + k) / tot
    # residual e = y - R x: 1 - R (a), -R (b), 0 (c); its variance within the stratum, ddof 1
    mean = pa * (1 - R) - pb * R
    s2 = (pa * (1 - R) ** 2 + pb * R ** 2 - mean ** 2) * np.where(n > 1, n / np.maximum(n - 1, 1), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(n > 0, N ** 2 * (1.0 - n / np.maximum(N, 1)) * s2 / np.maximum(n, 1), 0.0)
    var = var_strat = max(float(v.sum()) / X ** 2, 0.0)
    # For planning labels, a band next to a band with labeled x also gets the half pair of x it may hide
    # (Jeffreys on all three counts): duplicates thin out as J falls, so the next labels explore the band
    # below (and above) the ones where they were found; far bands (thousands of noise pairs) are not asked for.
    seen = (a + b) > 0
    seen[-1] = False
    near = np.zeros(H, dtype=bool)
    near[:-1] = seen[:-1]
    near[1:-1] |= seen[:-2]      # the band just below in J has x
    near[:-2] |= seen[1:-1]      # the band just above in J has x
    kp = np.where((n > 0) & near, smooth, 0.0)
    kp[-1] = 0.0
    tp = np.maximum(n + 3 * kp, 1e-300)
    qa, qb = (a + kp) / tp, (b + kp) / tp
    qm = qa * (1 - R) - qb * R
    s2_plan = np.maximum((qa * (1 - R) ** 2 + qb * R ** 2 - qm ** 2) * np.where(n > 1, n / np.maximum(n - 1, 1), 1.0), s2)
    if units is not None and n_units > 1:
        z = np.bincount(units, weights=w[h] * (y - R * x), minlength=n_units)
        var = max(var, n_units / (n_units - 1) * float(((z - z.mean()) ** 2).sum()) / X ** 2)
    if var > 0 and 0.0 < R < 1.0:
        n_eff = R * (1.0 - R) / var
    else:  # no event (or all events) and no spread: Kish's effective size of the weights
        wx = w[h][x > 0]
        n_eff = float(wx.sum() ** 2 / (wx ** 2).sum()) if len(wx) else 0.0
    lo, hi = wilson(R * n_eff, n_eff)
    return Ratio(float(R), float(lo), float(hi), float(var), m, float(n_eff), s2_plan, X,
                 var / var_strat if var_strat > 0 else 1.0)


def design_pairs(ws, cfg, clustering) -> pd.DataFrame:
    """The labeled pairs of a drawn sample with their stratum index and what
    ``cfg`` does to them: ``h``, ``duplicate``, ``candidate``, ``verified``,
    ``removal`` (the pair of a removed document and its representative); ``i``, ``j`` the pair's documents."""
    s = ws.sample
    design = s.design
    p = s.pairs
    # labels from elsewhere (a review of a pair the draw did not pick) have no stratum and no inclusion
    # probability: they are not part of the design and stay out of the estimate
    if "stratum" not in p:  # no labeled pair yet
        p = p.assign(stratum=pd.Series(dtype="str"))
    p = p[p["stratum"].notna() & (p["stratum"].astype(str) != "")]
    i = p["i"].to_numpy(np.int64)
    j = p["j"].to_numpy(np.int64)
    index = pd.Series(range(len(design.strata)), index=design.strata)
    h = index.reindex(p["stratum"].astype(str)).to_numpy(np.int64)
    sig = ws.signatures(cfg.rep)
    cand = lsh.collides(sig, i, j, cfg.b, cfg.r)
    measure = get_measure(cfg.measure)  # J, or containment C
    sets = ws.sets(cfg.rep)
    exact = measure.exact(sets, i, j)
    verified = cand & cfg.passes(cfg.similarity(exact, measure.estimate(sig, sets.sizes(), i, j)))
    removal = np.zeros(len(i), dtype=bool)
    if clustering is not None:
        d = np.flatnonzero(clustering.removed)
        r = clustering.representative[d]
        codes = np.minimum(d, r).astype(np.int64) * s.n + np.maximum(d, r)
        removal = np.isin(i * s.n + j, codes)
    frame = pd.DataFrame({"h": h, "duplicate": p["is_duplicate"].to_numpy(bool), "candidate": cand,
                          "verified": verified, "removal": removal, "unit": pair_units(s.n, i, j), "i": i, "j": j})
    if getattr(design, "kind", "") == "corpus":  # pairs of every document: removal weighted 1/d, see corpus_weighted
        from calib.estimates.corpus_weighted import earlier_links
        from calib.sketches.represent import Representation
        from calib.verification.jaccard import pairs_jaccard
        ids = s.docs["id"].to_numpy(object)
        frame["similarity"] = pairs_jaccard(ws.sets(Representation.from_dict(design.rep)), i, j)
        threshold = float(getattr(cfg, "threshold", None) or 0.0)
        frame["removal"] = verified / earlier_links(design, ids[i], ids[j], threshold)
    return frame


def pair_units(n: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Unit of each pair for the ultimate-cluster variance: the connected
    component of its documents in the graph of the labeled pairs (pairs that
    share a document move together when the document sample changes).
    Numbered over all n documents (a document without a labeled pair is a unit
    of its own, with a zero total)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    g = coo_matrix((np.ones(len(i)), (i, j)), shape=(n, n))
    _, comp = connected_components(g, directed=False)
    return comp[i].astype(np.int64)


def _yx(frame: pd.DataFrame, rate: str) -> tuple[np.ndarray, np.ndarray]:
    dup = frame["duplicate"].to_numpy(bool)
    if rate == "candidate_recall":
        return dup & frame["candidate"].to_numpy(bool), dup
    if rate == "pair_recall":
        return dup & frame["verified"].to_numpy(bool), dup
    if rate == "pair_precision":
        v = frame["verified"].to_numpy(bool)
        return dup & v, v
    if rate == "false_removal_rate":
        rm = frame["removal"].to_numpy(bool)
        return rm & ~dup, rm
    raise ValueError(f"unknown rate {rate!r}")


def estimate(frame: pd.DataFrame, design, rate: str) -> Ratio:
    """One rate of :func:`design_pairs`' frame, weighted by the design."""
    if getattr(design, "kind", "") == "corpus":
        from calib.estimates import corpus_weighted
        return corpus_weighted.estimate(frame, design, rate)
    y, x = _yx(frame, rate)
    n_h = np.bincount(frame["h"].to_numpy(np.int64), minlength=len(design.strata))
    units = frame["unit"].to_numpy(np.int64) if "unit" in frame else None
    return stratified_ratio(frame["h"].to_numpy(np.int64), y, x, design.population, n_h,
                            units=units, n_units=design.sample_docs if units is not None else 0)


def rates(ws, cfg, clustering) -> dict:
    """The results-row columns of a drawn sample: every rate of :data:`RATES`
    weighted (``<rate>``, ``_low``, ``_high``, ``_interval`` = stratified), the
    plain proportion beside it (``<rate>_unweighted``), labeled pairs per stratum."""
    design = ws.sample.design
    frame = design_pairs(ws, cfg, clustering)
    if getattr(design, "kind", "") == "corpus":
        from calib.estimates import corpus_weighted
        return corpus_weighted.rates(frame, design)
    row: dict = {}
    for name in RATES:
        y, x = _yx(frame, name)
        est = estimate(frame, design, name)
        row.update({name: est.estimate, f"{name}_low": est.low, f"{name}_high": est.high,
                    f"{name}_interval": STRATIFIED,
                    f"{name}_unweighted": float(y.sum() / x.sum()) if x.sum() else float("nan")})
    counts = np.bincount(frame["h"].to_numpy(np.int64), minlength=len(design.strata))
    row["estimates"] = f"weighted by inclusion probability ({len(frame)} labels in {len(design.strata)} strata)"
    row["labels_per_stratum"] = " ".join(f"{s}:{c}" for s, c in zip(design.strata, counts))
    return row

