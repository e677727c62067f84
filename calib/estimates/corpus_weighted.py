"""Corpus-level rates and totals from the labels of a corpus-scale draw.

The design (:mod:`calib.reading.corpus_design`) gives each labeled pair k its
inclusion probability pi_k = 1 - (1 - pi_L)(1 - pi_U), pi_L = sum_h p_h(J)
n_h / N_h with n_h the *labeled* pairs of band h (labels in file order
label a random subset of each stratum's drawn pairs) and p_h(J) the chance
that a pair of exact J is a candidate of band h (P(J) Q(J) in the band of J
when strata are by J), pi_U = n_U / (N(N-1)/2).
A rate is a ratio of Horvitz-Thompson totals

    Y^ = sum_k y_k / pi_k,   X^ = sum_k x_k / pi_k,   R^ = Y^ / X^

and its variance, linearized with e_k = y_k - R^ x_k, has two parts:

* the draw within the routes (stratum g of the route that drew the pair,
  stratified SRS): sum_g N_g^2 (1 - n_g/N_g) s2_g / n_g, s2_g the variance of
  z_k = e_k n_g / (N_g pi_k) (N_g mean(z) is the stratum's share of sum e / pi);
* the loose pass (which pairs became candidates of which band, a Poisson draw
  over pairs): sum over band pairs of e_k^2 (sum_h p_h f_h^2 - pi_L^2) / pi_L^3,
  f_h = n_h / N_h (:meth:`~calib.reading.corpus_design.CorpusDesign.loose_term`;
  (N_g / n_g) (1 - p_k) / p_k^2 e_k^2 when strata are by J).

V^(R^) = (both) / X^2; the 95% interval is Wilson's at n_eff = R^(1-R^)/V^ (as
:func:`calib.estimates.design_weighted.stratified_ratio`), and a stratum
whose labeled x all agree still gets variance from ``smooth`` (Jeffreys)
pseudo-pairs of each outcome.

Rates: candidate and pair recall, pair precision (y, x as in
:mod:`calib.estimates.design_weighted`) and the false-removal rate over
*documents*: a verified pair (i < j in corpus order) removes document j under a
keep-first rule, one of j's ``d`` verified links to earlier documents, so it
counts x = 1/d removed documents (d from the design's ``later`` J of j's earlier
candidates at the configuration's threshold); y = x when the pair is labeled
not duplicate. X^ is then the expected number of corpus documents removed
(``documents_removed``, with a normal interval on the total), it and its interval
clipped to the corpus's N documents: a Horvitz-Thompson total of a rare uniform pair
can exceed what it counts, a count of the corpus's documents cannot.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calib.estimates.ratio import RATES, STRATIFIED, Z95, Ratio
from calib.estimates.stats import wilson


def _parts(frame: pd.DataFrame, design, y: np.ndarray, x: np.ndarray, smooth: float = 0.5):
    g = frame["h"].to_numpy(np.int64)
    sim = frame["similarity"].to_numpy(float)
    S = len(design.strata)
    n = np.bincount(g, minlength=S).astype(float)
    N = np.asarray(design.population, dtype=float)
    pi = design.pair_probability(sim, drawn=n)
    y = np.asarray(y, dtype=float) * (np.asarray(x, dtype=float) > 0)
    x = np.asarray(x, dtype=float)
    lt = np.where(g < S - 1, design.loose_term(sim, drawn=n), 0.0)
    return g, n, N, pi, y, x, lt, S


def _variance(g, n, N, pi, e, x, lt, S, smooth, R):
    """(stratified part, loose-pass part, s2 per stratum) of the variance of sum e / pi."""
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(pi > 0, (n[g] / np.maximum(N[g], 1)) / pi, 0.0)
    z = e * f
    s2 = np.zeros(S)
    for h in range(S):
        zh = z[g == h]
        w = np.ones(len(zh))
        xs = (x[g == h] > 0)
        if xs.any() and smooth > 0:  # Jeffreys pseudo-pairs: one of each outcome, weight `smooth`
            scale = float((f[g == h][xs] * x[g == h][xs]).mean())
            zh = np.append(zh, [(1 - R) * scale, -R * scale])
            w = np.append(w, [smooth, smooth])
        if w.sum() > 1:
            m = (w * zh).sum() / w.sum()
            s2[h] = (w * (zh - m) ** 2).sum() / (w.sum() - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        v2 = np.where(n > 0, N ** 2 * (1 - n / np.maximum(N, 1)) * s2 / np.maximum(n, 1), 0.0).sum()
        v1 = float((lt * e ** 2).sum())
    return max(float(v2), 0.0), max(v1, 0.0), s2


def corpus_ratio(frame: pd.DataFrame, design, y, x, smooth: float = 0.5) -> Ratio:
    """R^ = Y^ / X^ over the corpus's pairs with its interval (see the module docstring)."""
    g, n, N, pi, y, x, lt, S = _parts(frame, design, y, x)
    m = int((x > 0).sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.where(pi > 0, 1.0 / pi, 0.0)
    Y, X = float((w * y).sum()), float((w * x).sum())
    if X <= 0:
        return Ratio(np.nan, np.nan, np.nan, np.nan, m, 0.0)
    R = Y / X
    v2, v1, s2 = _variance(g, n, N, pi, y - R * x, x, lt, S, smooth, R)
    var = (v2 + v1) / X ** 2
    if var > 0 and 0.0 < R < 1.0:
        n_eff = R * (1.0 - R) / var
    else:
        wx = w[x > 0]
        n_eff = float(wx.sum() ** 2 / (wx ** 2).sum()) if len(wx) else 0.0
    lo, hi = wilson(R * n_eff, n_eff)
    return Ratio(float(R), float(lo), float(hi), float(var), m, float(n_eff), s2, X,
                 (v2 + v1) / v2 if v2 > 0 else 1.0)


def corpus_total(frame: pd.DataFrame, design, x) -> tuple[float, float, float]:
    """X^ = sum x / pi with a 95% normal interval (clipped at 0; no spread without a labeled x)."""
    g, n, N, pi, _, x, lt, S = _parts(frame, design, np.zeros(len(frame)), x)
    with np.errstate(divide="ignore", invalid="ignore"):
        X = float(np.where(pi > 0, x / pi, 0.0).sum())
    v2, v1, _ = _variance(g, n, N, pi, x, x, lt, S, 0.0, 0.0)
    half = Z95 * np.sqrt(v2 + v1)
    return X, max(X - half, 0.0), X + half


def at_most(n, *values) -> tuple[float, ...]:
    """A total of documents and its interval bounds, each at most the ``n`` documents it counts among."""
    return tuple(min(float(v), float(n)) for v in values)


def earlier_links(design, id_a, id_b, threshold: float) -> np.ndarray:
    """d per pair: the later document's earlier links with J >= ``threshold`` (at least 1)."""
    out = np.ones(len(id_a))
    for k, (a, b) in enumerate(zip(id_a, id_b)):
        vals = design.later.get(f"{a}\t{b}") or design.later.get(f"{b}\t{a}") or []
        out[k] = max(1, sum(1 for v in vals if v >= threshold))
    return out


def _yx(frame: pd.DataFrame, rate: str):
    dup = frame["duplicate"].to_numpy(bool)
    if rate == "false_removal_rate":
        rm = frame["removal"].to_numpy(float)
        return rm * ~dup, rm
    v = frame["verified"].to_numpy(bool)
    if rate == "candidate_recall":
        return dup & frame["candidate"].to_numpy(bool), dup
    if rate == "pair_recall":
        return dup & v, dup
    if rate == "pair_precision":
        return dup & v, v
    raise ValueError(f"unknown rate {rate!r}")


def estimate(frame: pd.DataFrame, design, rate: str) -> Ratio:
    y, x = _yx(frame, rate)
    return corpus_ratio(frame, design, y, x)


def rates(frame: pd.DataFrame, design) -> dict:
    """The results-row columns (as :func:`calib.estimates.design_weighted.rates`) plus the corpus's
    ``documents_removed`` (with ``_low``/``_high``) and ``documents_removed_share``."""
    row: dict = {}
    for name in RATES:
        y, x = _yx(frame, name)
        est = estimate(frame, design, name)
        xs = np.asarray(x, dtype=float)
        row.update({name: est.estimate, f"{name}_low": est.low, f"{name}_high": est.high,
                    f"{name}_interval": STRATIFIED,
                    f"{name}_unweighted": float(np.sum(y * (xs > 0)) / xs.sum()) if xs.sum() else float("nan")})
    total, lo, hi = corpus_total(frame, design, frame["removal"].to_numpy(float))
    N = max(design.corpus_docs, 1)
    total, lo, hi = at_most(design.corpus_docs, total, lo, hi)
    row.update({"documents_removed": total, "documents_removed_low": lo, "documents_removed_high": hi,
                "documents_removed_share": total / N, "documents_removed_share_low": lo / N,
                "documents_removed_share_high": hi / N})
    counts = np.bincount(frame["h"].to_numpy(np.int64), minlength=len(design.strata))
    row["estimates"] = (f"weighted by inclusion probability over all {design.corpus_docs:,} documents' pairs "
                        f"({len(frame)} labels in {len(design.strata)} strata)")
    row["labels_per_stratum"] = " ".join(f"{s}:{c}" for s, c in zip(design.strata, counts))
    return row
