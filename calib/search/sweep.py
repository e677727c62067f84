"""The sweep loop: evaluate a grid of configurations on one labeled sample.

Configurations are grouped by (representation, b, r, measure); each group's
split state (:class:`_SplitState`: band hits of the labeled pairs, candidate
pairs, the reference join's pairs that collide) is built once on the
:class:`~calib.search.workspace.Workspace`'s cached shingles and signatures,
and each configuration of the group is then scored by its threshold,
verification, clustering and short-document rule: one results row with every
rate and its interval (cluster bootstrap over true clusters, band jackknife
for hash luck; a stratified draw's labels get design-weighted estimates,
:mod:`calib.estimates.design_weighted`). :func:`evaluate` keeps everything of
one configuration; :func:`collision_curve` compares empirical candidate rates
with the S-curve.

A progress callback ``progress(fraction, message)`` is all the engine knows
of progress bars: the CLI plugs in tqdm, the app ``st.progress``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from calib.base import verbs as _api
from calib.candidates import lsh
from calib.clusters.clustering import Clustering, Representative, cluster_pairs
from calib.search.config import Config, Verify, config_columns, config_from_row, fill_unset  # noqa: F401 (config_from_row: public here too)
from calib.verification.jaccard import TooManyPairs
from calib.estimates.design_weighted import rates as weighted_rates
from calib.estimates.jackknife import hash_sd
from calib.estimates.metrics import (candidate_metrics, collision_rates, counted_rate, document_outcomes,
    expected_rate, pair_metrics, removal_metrics)
from calib.verification.measures import get_measure
from calib.candidates.pairs import first_of_each
from calib.sketches.represent import Representation
from calib.reading.sample import Sample
from calib.verification.short import apply_rule, positive_rule
# calib.sweep is this module: the names it had before the split stay importable from it (documented:
# calib.search.grid.Grid, calib.search.seeds.across_seeds, calib.search.recommend.recommend; the CLI imports the others here)
from calib.search.grid import Grid
from calib.search.over_hash import NAN_ROW, over_hash
from calib.search.recommend import recommend, standing_text, with_recommendation  # noqa: F401
from calib.search.seeds import across_seeds  # noqa: F401
from calib.search.watch import report as _report, stopped as _stopped
from calib.search import stored
from calib.search.workspace import Workspace, as_workspace

ProgressFn = Callable[[float, str], None]


def _no_progress(fraction: float, message: str) -> None:
    pass


@dataclass(frozen=True, eq=False)
class Verified:
    """The verified pairs of one configuration, with both similarities."""

    i: np.ndarray
    j: np.ndarray
    exact: np.ndarray
    estimated: np.ndarray
    label: np.ndarray


@dataclass(frozen=True, eq=False)
class Evaluation:
    """Everything measured for one configuration (for pages and exports)."""

    config: Config
    row: dict
    verified: Verified | None
    clustering: Clustering | None
    outcomes: pd.DataFrame | None
    labeled: pd.DataFrame  # the sample's labeled + duplicate pairs with candidate/verified flags


class _SplitState:
    """What one (representation, num_perm, b, r) shares across thresholds."""

    def __init__(self, ws: Workspace, rep: Representation, b: int, r: int, floors, max_pairs,
                 measure: str = "jaccard", candidate_rates: bool = True):
        self.ws, self.rep, self.b, self.r = ws, rep, b, r
        self.measure = get_measure(measure)
        floors = sorted(set(floors)) if np.iterable(floors) else [floors]
        sig = ws.signatures(rep)
        self.sig = sig
        t = ws.truth
        self.pos_hits = lsh.band_hits(sig, t.pos_i, t.pos_j, b, r)
        self.pos_candidate = self.pos_hits[0] > 0
        self.pos_exact = ws.positive_jaccard(rep)
        self.pos_est = ws.estimates(rep, "positive", t.pos_i, t.pos_j)
        # the verified measure on the duplicate pairs (pos_exact stays J: it drives the band S-curve)
        self.pos_sim = ws.positive_similarity(rep, measure)
        self.pos_sim_est = ws.estimates(rep, "positive", t.pos_i, t.pos_j, measure)
        self.candidate_rates = self._candidate_rates() if candidate_rates else {}
        cands = ws.candidates(rep, b, r, max_pairs)
        self.exploded = isinstance(cands, lsh.TooManyCandidates)
        self.cands = None if self.exploded else cands
        self.candidate_upper = cands.upper_bound if self.exploded else len(cands[0])
        # The label-free reference join, from the lowest floor that fits the
        # pair budget (a threshold below it gets the status too_many_pairs).
        self.floor, self.ref_floor = floors[0], None
        ri = rj = np.zeros(0, np.int64)
        rs = np.zeros(0)
        for f in floors:
            try:
                ri, rj, rs = ws.reference_pairs(rep, f, max_pairs, measure)
            except TooManyPairs:
                continue
            self.ref_floor = f
            break
        hit = lsh.collides(sig, ri, rj, b, r)
        self.ref_all = (ri, rj, rs, hit)
        self.ref = (ri[hit], rj[hit], rs[hit],
                    ws.estimates(rep, f"reference>={self.ref_floor}", ri, rj, measure)[hit])
        self._est_cands = None
        self._ref_j = None  # the reference pairs' exact J, when the verified measure is another (over_hash)

    def _candidate_rates(self) -> dict:
        """Candidate recall and the false-candidate rate (exact J of the labeled non-duplicates: an
        export's target evidence, which shows neither, goes without, see :func:`evaluate_row`)."""
        ws, b, r = self.ws, self.b, self.r
        ni, nj = ws.negative_pairs()
        neg_hits = lsh.band_hits(self.sig, ni, nj, b, r)
        neg_exact = ws.negative_jaccard(self.rep)
        boot = ws.boot
        return {
            **counted_rate("candidate_recall", ws.trials("positive").counts(self.pos_candidate), boot, macro=True,
                           hash_sd=self.pos_hash_sd(None)),
            "expected_candidate_recall": expected_rate(self.pos_exact, b, r),
            "negative_pairs": int(len(ni)),
            **counted_rate("false_candidate_rate", ws.trials("negative").counts(neg_hits[0] > 0), boot,
                           hash_sd=hash_sd(*neg_hits, b, r, neg_exact)),
            "expected_false_candidate_rate": expected_rate(neg_exact, b, r)}

    def reference_covers(self, threshold: float | None) -> bool:
        """Do the reference pairs hold every pair with J >= threshold (None: any J)?"""
        if self.ref_floor is None:
            return False
        return self.ref_floor == self.floor or (threshold is not None and threshold >= self.ref_floor)

    def verified(self, cfg: Config) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """(i, j, exact J, estimated J) of the pairs ``cfg`` verifies, None if candidates
        (or, for exact verification, the pairs above the threshold) exceed the budget."""
        if cfg.verify is Verify.EXACT:  # the reference pairs that collide: no candidate list needed
            if not self.reference_covers(cfg.threshold):
                return None
            ri, rj, rs, re = self.ref
            m = cfg.passes(rs)
            return ri[m], rj[m], rs[m], re[m]
        if self.exploded:
            return None
        ci, cj = self.cands
        sets = self.ws.sets(self.rep)
        if self._est_cands is None:
            self._est_cands = self.measure.estimate(self.sig, sets.sizes(), ci, cj)
        est = self._est_cands
        m = cfg.passes(est)
        i, j = ci[m], cj[m]
        return i, j, self.measure.exact(sets, i, j), est[m]

    def pos_hash_sd(self, mask: np.ndarray | None) -> float:
        """Hash standard deviation of a rate over the duplicate pairs (band jackknife)."""
        return hash_sd(*self.pos_hits, self.b, self.r, self.pos_exact, mask)

    def positive_verified(self, cfg: Config) -> np.ndarray:
        v = self.pos_candidate & cfg.passes(cfg.similarity(self.pos_sim, self.pos_sim_est))
        return _short_rule(self.ws, cfg, v, self.ws.truth.pos_i, self.ws.truth.pos_j)


def _short_rule(ws: Workspace, cfg: Config, verified: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """``verified`` flags of pairs (i, j) under the config's minimum length (calib.verification.short)."""
    if not cfg.min_shingles:
        return verified
    return positive_rule(verified, i, j, ws.short(cfg), cfg.short_docs, ws.text_keys(cfg.rep))


def _score(ws: Workspace, st: _SplitState, cfg: Config, detail: bool = False):
    row = config_columns(cfg)
    row.update(ws.stands_on(cfg.rep))  # idf frequencies' and stoplist's source and sha256 (export --from-sweep checks)
    row["n_docs"] = ws.sample.n
    row["empty_docs"] = int((~ws.active(cfg.rep)).sum())
    row["ignored_categories"] = ",".join(ws.ignored_categories)
    row["ignored_pairs"] = int(len(ws.truth.ignored))
    row["largest_group_pair_share"] = ws.largest_group_share
    if cfg.min_shingles:
        row["short_documents"] = int(ws.short(cfg).sum())
    covered = st.reference_covers(cfg.threshold)
    row["status"] = ("too_many_pairs" if cfg.verify is Verify.EXACT and not covered else
                     "too_many_candidates" if st.exploded else "ok")
    row.update(candidate_metrics(st.pos_candidate, float("nan") if st.exploded else st.candidate_upper, ws.sample.n))
    row.update(st.candidate_rates)
    row["candidates_upper_bound"] = st.candidate_upper
    ri, rj, rs, hit = st.ref_all
    sim_mask = rs >= (cfg.threshold if cfg.threshold is not None else 0.0)  # "similar": J (C) >= t (any for rule none)
    row["similar_pairs"] = int(sim_mask.sum()) if covered else float("nan")
    row["similar_recall"] = float(hit[sim_mask].mean()) if covered and sim_mask.any() else float("nan")
    ver = st.verified(cfg)
    verified = clustering = outcomes = None
    if ver is None:
        for name in ("pair_recall", "pair_precision", "false_removal_rate", "missed_removal_rate"):
            row.update({name: np.nan, f"{name}_low": np.nan, f"{name}_high": np.nan, f"{name}_interval": ""})
        row.update({"pair_recall_macro": np.nan, "expected_pair_recall": np.nan, **NAN_ROW})
    else:
        vi, vj, vs, ve = ver
        if cfg.min_shingles:
            short = ws.short(cfg)
            vi, vj, (vs, ve) = apply_rule(vi, vj, [vs, ve], short, cfg.short_docs,
                                          ws.text_keys(cfg.rep)[short])
        labels = ws.truth.label(vi, vj)
        pos_verified = st.positive_verified(cfg)
        row.update(pair_metrics(pos_verified, labels))
        boot = ws.boot
        # Hash-free verification (exact J >= t, or none) leaves the bands the only hash luck in pair recall;
        # its expected value needs no seed then either.
        hash_free = cfg.verify is not Verify.ESTIMATED
        # the short rule too (an exact-text pair has J = 1: it collides surely)
        passing = _short_rule(ws, cfg, cfg.passes(st.pos_sim), ws.truth.pos_i, ws.truth.pos_j)
        row.update(counted_rate("pair_recall", ws.trials("positive").counts(pos_verified), boot, macro=True,
                                hash_sd=st.pos_hash_sd(passing) if hash_free else None))
        row["expected_pair_recall"] = (expected_rate(st.pos_exact, cfg.b, cfg.r, passing)
                                       if hash_free else float("nan"))
        lab = labels >= 0
        hashed = over_hash(ws, st, cfg)  # seed-free rates and hash sds (NaN for rules that use the hash)
        row.update(counted_rate("pair_precision", boot.pair_counts(vi[lab], vj[lab], labels[lab] == 1), boot,
                                hash_sd=hashed["pair_precision_hash_sd"]))
        sim = cfg.similarity(vs, ve)
        lengths = ws.sets(cfg.rep).sizes() if cfg.representative is Representative.LONGEST else None
        clustering = cluster_pairs(ws.sample.n, vi, vj, sim, policy=cfg.policy,
                                   representative=cfg.representative, lengths=lengths,
                                   max_component=cfg.max_component)
        outcomes = document_outcomes(ws.truth, clustering, ws.true_clusters)
        row.update(removal_metrics(outcomes, ws.true_clusters))
        labeled_removal = np.flatnonzero((outcomes["false_removal"] | outcomes["true_removal"]).to_numpy())
        row.update(counted_rate("false_removal_rate", boot.doc_counts(
            labeled_removal, outcomes["false_removal"].to_numpy()[labeled_removal]), boot,
            hash_sd=hashed["false_removal_rate_hash_sd"]))
        # missed removals: trials are the m-1 "extra" members of each true cluster, counted per cluster
        row.update(_missed_rate(ws, outcomes, hashed["missed_removal_rate_hash_sd"]))
        row.update(hashed)
        row["giant_components"] = int(len(np.unique(clustering.component[clustering.flagged_giant])))
        if ws.sample.design is not None:  # labels of a stratified draw: corpus-level estimates replace the rates
            row.update(weighted_rates(ws, cfg, clustering))
        verified = Verified(vi, vj, vs, ve, labels)
    if not detail:
        return row
    return row, verified, clustering, outcomes


def _missed_rate(ws: Workspace, outcomes: pd.DataFrame, hash_sd: float | None = None) -> dict:
    """Missed-removal rate with its trials counted per true cluster (m - 1 each), widened by ``hash_sd``."""
    boot = ws.boot
    size = np.bincount(boot.units, minlength=boot.n_units)
    missed = np.bincount(boot.units, weights=outcomes["missed"].to_numpy(np.float64), minlength=boot.n_units)
    return counted_rate("missed_removal_rate", boot.unit_counts(missed, np.maximum(size - 1, 0)), boot,
                        hash_sd=hash_sd)


def sweep(sample_or_ws: Sample | Workspace, grid: Grid = Grid(), *, progress: ProgressFn | None = None) -> pd.DataFrame:
    """One row per configuration of the grid, every metric with its interval."""
    ws = as_workspace(sample_or_ws, grid.ignore_categories)
    return sweep_configs(ws, list(grid.configs()), grid.max_pairs, progress=progress,
                         default_floor=min(grid.thresholds))


def sweep_configs(ws: Workspace, configs: list[Config], max_pairs: int | None = 20_000_000, *,
                  progress: ProgressFn | None = None, default_floor: float | None = None) -> pd.DataFrame:
    """One row per configuration of a list (e.g. a second pass), on the workspace's caches and labels.
    ``default_floor``: the reference join's floor for a measure with no exact-verified configuration
    (default: its lowest threshold)."""
    progress = progress or _no_progress
    # each shingling's reference join for a measure starts at its own lowest exact threshold: one floor
    # for all (word2's 0.1 beside char3's 0.5 on short records) joins char3 down to 0.1, most pairs
    floors = {}
    for key in dict.fromkeys((c.rep.shingling_fingerprint(), c.measure) for c in configs):
        exact_ts = [c.threshold for c in configs if c.verify is Verify.EXACT
                    and (c.rep.shingling_fingerprint(), c.measure) == key]
        floors[key] = sorted(set(exact_ts)) if exact_ts else [default_floor if default_floor is not None else min(
            (c.threshold for c in configs if c.threshold is not None), default=1.0)]
    groups: dict[tuple, list[Config]] = {}
    for c in configs:
        groups.setdefault((c.rep, c.b, c.r, c.measure), []).append(c)
    rows, done = [], 0
    progress(0.0, f"{len(configs)} configurations")
    for (rep, b, r, m), cfgs in groups.items():
        if _stopped():  # asked to stop (calib.search.watch): the rows scored so far stand
            break
        progress(done / len(configs), f"{rep.shingle_label()} num_perm={rep.num_perm} b={b} r={r}")
        fl = floors[rep.shingling_fingerprint(), m]
        split: list[_SplitState] = []  # the split's state, built for the first row an earlier run did not store
        for cfg in cfgs:
            def score(cfg: Config = cfg) -> dict:  # called at once, by kept, when the row is not on disk
                if not split:
                    split.append(_SplitState(ws, rep, b, r, fl, max_pairs, m))
                return _score(ws, split[0], cfg)
            rows.append(stored.kept(ws, "rows", stored.row_key(ws, cfg, fl, max_pairs), score, stored.row_arrays,
                                    stored.array_row))
        done += len(cfgs)
    progress(1.0, "done")
    out = fill_unset(_fill_unset(pd.DataFrame(rows)))
    if "short_documents" in out:  # counted where a minimum length is set; no minimum, no short document
        out["short_documents"] = out["short_documents"].fillna(0).astype(np.int64)
    _report(out)
    return out


def _fill_unset(frame: pd.DataFrame) -> pd.DataFrame:
    """A Representation field left out of the rows at its default (``doc_if_set``) shows
    that default where other rows of the table set it (a weighting column: none, not NaN)."""
    for f in fields(Representation):
        if f.metadata["doc_if_set"] and f.name in frame:
            frame[f.name] = frame[f.name].where(frame[f.name].notna(), f.default)
    return frame


def evaluate(sample_or_ws: Sample | Workspace, config: Config, *, max_pairs: int | None = 20_000_000,
             ignore_categories: Iterable[str] | None = None) -> Evaluation:
    """All details of one configuration: metrics row, verified pairs, clusters, outcomes.
    ``ignore_categories``: pair categories counted as unlabeled (None: the workspace's own choice)."""
    ws = as_workspace(sample_or_ws, ignore_categories)
    # Reference pairs down to the threshold, as a sweep over it would use (so
    # similar_recall agrees); rule none has no threshold.
    floor = config.threshold if config.threshold else 1.0
    st = _SplitState(ws, config.rep, config.b, config.r, floor, max_pairs, config.measure)
    row, verified, clustering, outcomes = _score(ws, st, config, detail=True)
    return Evaluation(config, row, verified, clustering, outcomes, labeled_pairs(ws, config))


def evaluate_row(ws: Workspace, config: Config, *, max_pairs: int | None = 20_000_000) -> dict:
    """:func:`evaluate`'s metrics row without its details (verified pairs, clusters, labeled
    pairs) and without the candidate rates, whose false-candidate rate needs the exact J of every
    labeled non-duplicate pair: every other figure is :func:`evaluate`'s, computed alike."""
    floor = config.threshold if config.threshold else 1.0
    return _score(ws, _SplitState(ws, config.rep, config.b, config.r, floor, max_pairs, config.measure,
                                  candidate_rates=False), config)


def labeled_pairs(ws: Workspace, config: Config) -> pd.DataFrame:
    """The sample's labeled pairs (and group-derived duplicates), with exact and
    estimated similarity (of the config's measure: J, or C for containment),
    candidate and verified flags, for per-category breakdowns."""
    s = ws.sample
    p = s.pairs
    i = np.concatenate([p["i"].to_numpy(np.int64), ws.truth.pos_i])
    j = np.concatenate([p["j"].to_numpy(np.int64), ws.truth.pos_j])
    cat = np.concatenate([p["category"].astype(str).to_numpy(), np.full(ws.truth.n_positive, "(group)", dtype=object)])
    first = first_of_each(i, j, s.n)
    i, j, cat = i[first], j[first], cat[first]
    sig = ws.signatures(config.rep)
    measure = get_measure(config.measure)
    exact = measure.exact(ws.sets(config.rep), i, j)
    est = measure.estimate(sig, ws.sets(config.rep).sizes(), i, j)
    cand = lsh.collides(sig, i, j, config.b, config.r)
    verified = _short_rule(ws, config, cand & config.passes(config.similarity(exact, est)), i, j)
    return pd.DataFrame({"i": i, "j": j, "id_a": s.ids[i], "id_b": s.ids[j], "category": cat,
                         "label": ws.truth.label(i, j), "exact": exact, "estimated": est,
                         "candidate": cand, "verified": verified})


def collision_curve(ws: Workspace, rep: Representation, b: int, r: int, *, floor: float = 0.3,
                    random_pairs: int = 20_000, bins: int = 20, seed: int = 0,
                    max_pairs: int | None = 20_000_000) -> pd.DataFrame:
    """Empirical candidate rate per exact-J bin against the S-curve and the
    expected rate, with intervals that cover sampling (cluster bootstrap where
    a bin's pairs share documents) and hash luck (band jackknife). Under a
    weighting the bins are of weighted J (what an ICWS column collides with:
    the S-curve is the same 1 - (1 - s^r)^b at s = J_w).

    Pairs: every pair with J >= floor, the labeled pairs, and a seeded
    uniform sample of random pairs (which fill the low bins). More than
    ``max_pairs`` pairs above the floor is a ValueError (nothing is dropped).
    """
    n = ws.sample.n
    try:
        ri, rj, _ = ws.reference_pairs(rep, floor, max_pairs,
                                       "jaccard" if rep.weighting == "none" else "weighted_jaccard")
    except TooManyPairs as exc:
        raise ValueError(f"{exc}; the collision curve measures every one of them") from None
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, random_pairs)
    c = rng.integers(0, n, random_pairs)
    keep = a != c
    a, c = np.minimum(a[keep], c[keep]), np.maximum(a[keep], c[keep])
    p = ws.sample.pairs
    i = np.concatenate([ri, a, p["i"].to_numpy(np.int64), ws.truth.pos_i])
    j = np.concatenate([rj, c, p["j"].to_numpy(np.int64), ws.truth.pos_j])
    first = first_of_each(i, j, n)
    i, j = i[first], j[first]
    active = ws.active(rep)
    m = active[i] & active[j]
    i, j = i[m], j[m]
    sim = ws.sketch_similarity(rep, i, j)
    count, first = lsh.band_hits(ws.signatures(rep), i, j, b, r)
    return collision_rates(sim, count, b, r, bins, boot=ws.boot, i=i, j=j, first=first)

def slice_breakdown(ev: Evaluation, sample: Sample, *, alpha: float = 0.05) -> pd.DataFrame:
    """Every rate of one configuration per slice, with a Fisher test vs the rest.

    Pair level, by ``category``: candidate recall and pair recall over the
    duplicate pairs, false verification over the labeled non-duplicates.
    Document level, by each slice column: removal rate (all documents), false
    removals among labeled removals, missed removals among documents of true
    duplicate clusters. Document rows with ``flagged`` differ significantly (Holm-
    adjusted Fisher exact p < alpha) from the other slices of their column. Pair
    categories (exact copy, translation, ...) differ by design, being kinds of pairs
    of unlike difficulty: they keep their p values but are never flagged. The
    category '(group)' holds the duplicate pairs the groups imply that the pair
    file does not list (``calib samples summary``: pairs_within_groups_not_listed).
    """
    from calib.estimates.slices import slice_report
    parts = []
    lab = ev.labeled.assign(duplicate=ev.labeled["label"] == 1, not_duplicate=ev.labeled["label"] == 0)
    for metric, success, mask in (("candidate_recall", "candidate", "duplicate"),
                                  ("pair_recall", "verified", "duplicate"),
                                  ("false_verification_rate", "verified", "not_duplicate")):
        r = slice_report(lab, ["category"], success, mask, alpha=alpha)
        parts.append(r.assign(level="pair", metric=metric))
    if ev.outcomes is not None and sample.slice_columns:
        docs = pd.concat([sample.docs[list(sample.slice_columns)].reset_index(drop=True),
                          ev.outcomes.reset_index(drop=True)], axis=1)
        docs["labeled_removal"] = docs["true_removal"] | docs["false_removal"]
        for metric, success, mask in (("removal_rate", "removed", None),
                                      ("false_removal_rate", "false_removal", "labeled_removal"),
                                      ("missed_removal_rate", "missed", "in_duplicate_cluster")):
            r = slice_report(docs, list(sample.slice_columns), success, mask, alpha=alpha)
            parts.append(r.assign(level="document", metric=metric))
    out = pd.concat(parts, ignore_index=True)
    out.loc[out["level"] == "pair", "flagged"] = False  # kinds of pairs differ by design
    out = out[out["n"] > 0]
    return out[["level", "metric", "column", "value", "n", "k", "rate", "ci_low", "ci_high",
                "p_value", "p_adjusted", "flagged"]].reset_index(drop=True)

# calib.sweep(...) is sweep(...) (the public API, see calib/__init__.py)
_api.callable_module(__name__, sweep)
