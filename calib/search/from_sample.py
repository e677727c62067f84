"""The default search: a grid chosen from the sample, then a bounded second
pass around what the first one found.

* :func:`~calib.search.grid.grid_from_sample` (in :mod:`calib.search.grid`)
  picks the first pass's grid: shingles from the documents' lengths,
  thresholds from the labeled pairs' similarities, steep splits near them;
  :func:`useful` leaves out the configurations not worth sweeping.
* :func:`refine` lists the configurations around the recommended row and the
  recall / false-removal Pareto front that the first pass did not have:
  neighbouring shingle sizes, finer thresholds, steeper or looser splits,
  twice the hashes, other normalizations. They reuse the workspace's cached
  shingles and signatures.
* :func:`search` runs both and says what the second pass added.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from calib.candidates import lsh
from calib.search.capabilities import CALIB, Capabilities
from calib.search.config import Config, config_columns, config_from_row
from calib.search.grid import (CHOSEN_AXES, MAX_ROWS, Grid, SampleChoice, grid_from_sample, nonduplicate_floor,
    pair_similarities, steep_splits)
from calib.clusters.clustering import Representative
from calib.clusters.growth import ChainGrowth, chain_growth
from calib.search.explore import Exploration, explore
from calib.search.knobs import knobs
from calib.search.recommend import closest, config_text, held_rate, recommend
from calib.search.reseed import MORE as RESEED_MORE, TOP as RESEED_TOP, SeedCheck, seed_check, seed_flags
from calib.search.seeds import across_seeds
from calib.search.sweep import sweep_configs
from calib.search.watch import stopped, watching
from calib.search.workspace import as_workspace

MAX_REFINED = 160          # second pass: at most this many new configurations
FRONT_ROWS = 3             # Pareto-front rows refined besides the recommended one
KIND_ROWS = 4              # and the best rows of this many (representation, measure) pairs


def candidate_budget(n: int) -> int:
    """Expected candidate pairs above which a split is not swept by default (200 a document, at least 100,000).

    Linear in n while the pairs grow as n^2: at 50 a document, 20,000 short records kept only splits
    making candidates of under 0.5% of their pairs, which cut the loose splits (char3 32x4, char5
    42x3 at 128 hashes: about 2 million candidates) that the last 2% of the duplicates need; 4
    million candidates take seconds to verify."""
    return max(100_000, 200 * n)


def useful(ws, configs) -> tuple[list[Config], int]:
    """(the configurations worth sweeping, how many were not): a threshold below its
    representation's and measure's floor lets nearly every labeled non-duplicate pass (the
    removals are mostly false, and the exact join down there is the costliest step), and a split
    whose S-curve over the non-duplicates' Jaccard predicts more than :func:`candidate_budget`
    candidates costs more than the sweep of every other configuration."""
    n = ws.sample.n
    floors: dict[tuple, float] = {}
    loads: dict[tuple, float] = {}
    keep = []
    for c in configs:
        key = (c.rep.shingling_fingerprint(), c.measure)
        if key not in floors:
            floors[key] = nonduplicate_floor(pair_similarities(ws, c.rep, c.measure)[2]) - 0.025  # the quantile itself
        split = (c.rep.shingling_fingerprint(), c.b, c.r)
        if split not in loads:
            neg_j = ws.negative_jaccard(c.rep)
            loads[split] = float(np.mean(lsh.s_curve(neg_j, c.b, c.r))) * n * (n - 1) / 2 if len(neg_j) else 0.0
        if (c.threshold is None or c.threshold >= floors[key]) and loads[split] <= candidate_budget(n):
            keep.append(c)
    return keep, len(configs) - len(keep)




def pareto_front(results: pd.DataFrame, objective: str = "pair_recall") -> pd.DataFrame:
    """Rows no other row beats on both ``objective`` (higher) and false-removal rate (lower)."""
    ok = results[(results["status"] == "ok") & results[objective].notna() & results["false_removal_rate"].notna()]
    ok = ok.sort_values(["false_removal_rate", objective], ascending=[True, False], kind="stable")
    best, keep = -np.inf, []
    for idx, v in zip(ok.index, ok[objective].to_numpy()):
        if v > best:
            keep.append(idx)
            best = v
    return ok.loc[keep]


def _neighbours(cfg: Config, num_perm_cap: int) -> list[Config]:
    """One-step changes of one configuration (one axis at a time)."""
    rep = cfg.rep
    out = []
    for dk in (-1, 1):  # neighbouring shingle size
        k = rep.k + dk
        if k >= (2 if rep.shingle == "char" else 1):
            out.append(replace(cfg, rep=rep.with_(k=k)))
    for norm in ({"strip_punct": not rep.strip_punct}, {"lowercase": not rep.lowercase}):  # other normalizations
        out.append(replace(cfg, rep=rep.with_(**norm)))
    if cfg.threshold is not None:  # finer thresholds, and one 0.1 lower: the first pass's thresholds are
        # 0.1-0.25 apart where short records' duplicates thin out (20,000 records: 0.3, then 0.55 with
        # char3 recall 0.973 and no false removal; 0.45, with its steep splits, reaches the last 1-2%)
        for dt in (-0.1, -0.05, -0.025, 0.025, 0.05):
            t = round(cfg.threshold + dt, 3)
            if 0.0 < t <= 1.0:
                out.append(replace(cfg, threshold=t))
    p50 = (1.0 / cfg.b) ** (1.0 / cfg.r)
    if cfg.threshold is not None and p50 > cfg.threshold + 0.05:
        # the split, not the threshold, makes the cut: thresholds about its 50% point (steep splits follow)
        for t in (p50 - 0.1, p50 - 0.05, p50):
            out.append(replace(cfg, threshold=round(float(np.clip(np.round(t / 0.05) * 0.05, 0.05, 1.0)), 3)))
    if rep.num_perm * 2 <= num_perm_cap:  # twice the hashes, same S-curve shape with more bands
        out.append(replace(cfg, rep=rep.with_(num_perm=rep.num_perm * 2), b=cfg.b * 2))
    return out


def _split_neighbours(ws, cfg: Config) -> list[Config]:
    """Splits whose S-curve is steep at this threshold, and the one whose 50% point is nearest it."""
    if cfg.threshold is None:
        return []
    dup, dup_j, _ = pair_similarities(ws, cfg.rep, cfg.measure)
    passing = dup_j[dup >= cfg.threshold]
    low = float(np.quantile(passing, 0.05)) if len(passing) else cfg.threshold
    m = cfg.rep.num_perm
    picks = steep_splits(low, m, levels=(0.9, 0.99, 0.999))
    cands = [(m // r, r) for r in range(1, min(m, MAX_ROWS) + 1)]
    picks.append(min(cands, key=lambda s: abs((1.0 / s[0]) ** (1.0 / s[1]) - cfg.threshold)))
    return [replace(cfg, b=b, r=r) for b, r in dict.fromkeys(picks)]


def refine(ws, results: pd.DataFrame, *, max_false_removal_rate: float = 0.01, objective: str = "pair_recall",
           max_new: int = MAX_REFINED, num_perm_cap: int = 256, confidence: float | None = None) -> list[Config]:
    """Configurations around the recommended row and the Pareto front that ``results`` lacks
    (recommended row's neighbours first), at most ``max_new``."""
    seeds = []
    best = recommend(results, max_false_removal_rate=max_false_removal_rate, objective=objective, confidence=confidence)
    if best is not None:
        seeds.append(best)
    ok = results[(results["status"] == "ok") & (held_rate(results, confidence) <= max_false_removal_rate)]
    if "measure" in ok and ok["measure"].nunique() > 1:  # the best row of every measure: each is refined
        ranked_ok = ok.sort_values(objective, ascending=False, kind="stable")
        seeds += [row for _, row in ranked_ok.groupby("measure", sort=False).head(1).iterrows()]
    front = pareto_front(results, objective)
    near = front[front["false_removal_rate"] <= 2 * max_false_removal_rate]  # the front around the budget
    for _, row in near.sort_values(objective, ascending=False).head(FRONT_ROWS).iterrows():
        seeds.append(row)
    # the best row of each representation and measure within the budget: a kind of shingle that is
    # second on the first pass's coarse thresholds may be first between them
    per_kind = ok.sort_values(objective, ascending=False, kind="stable").groupby(
        ["representation", "measure"], sort=False).head(1)
    for _, row in per_kind.head(KIND_ROWS).iterrows():
        seeds.append(row)
    have = set(results["config_fingerprint"])
    out: dict[str, Config] = {}
    for row in seeds:
        cfg = config_from_row(row)
        near = _neighbours(cfg, num_perm_cap)
        far = [c for c in near if c.threshold is not None and cfg.threshold is not None
               and abs(c.threshold - cfg.threshold) > 0.05]  # a new cut: with the splits steep there
        for c in near + _split_neighbours(ws, cfg) + [x for c in far for x in _split_neighbours(ws, c)]:
            fp = c.fingerprint()
            if fp not in have and fp not in out:
                out[fp] = c
    return list(out.values())[:max_new]


@dataclass(frozen=True, eq=False)
class SearchResult:
    """Both passes' rows (column ``search_pass``: 1 or 2), the first pass's grid and what refining added."""

    results: pd.DataFrame
    grid: object
    choice: SampleChoice | None
    skipped: int  # first-pass configurations below their representation's non-duplicate floor
    first_best: pd.Series | None
    best: pd.Series | None
    refined: int
    second_pass: bool
    refined_best: pd.Series | None = None  # the second pass's pick, before the seed check
    check: SeedCheck | None = None  # the third step (None: off, or the grid's own several seeds)
    budget: float = 0.01
    confidence: float | None = None  # the budget held on the rate's one-sided upper bound at this confidence
    exploration: Exploration | None = None  # what the second pass's exploration looked at
    closest: pd.Series | None = None  # nothing within the budget: the row that comes closest
    closest_text: str = ""             # and what binds it, what would relax it
    chain: ChainGrowth | None = None   # the pick's removals by chaining alone, whole sample and halves
    stopped: bool = False              # asked to stop (calib.search.watch): the rows measured until then

    def knobs(self, objective: str = "pair_recall") -> pd.DataFrame:
        """Per axis, the best row within the budget at each value (:func:`calib.search.knobs.knobs`)."""
        return knobs(self.results, budget=self.budget, objective=objective, confidence=self.confidence)

    def added_text(self, objective: str = "pair_recall") -> str:
        return (f"first pass: {int((self.results['search_pass'] == 1).sum())} configurations"
                + (f" ({self.skipped} of the grid's skipped: threshold below the 99.9th percentile of their "
                   f"representation's labeled non-duplicates, or a split expected to make more candidates "
                   f"than the budget)" if self.skipped else "")
                + "; " + self._second_text(objective)
                + ("" if self.check is None else "; " + self.check.text(objective, self.budget))
                + (f"; {self.closest_text}" if self.closest_text else "")
                + ("; stopped on request: the rows measured until then" if self.stopped else ""))

    def _second_text(self, objective: str) -> str:
        best = self.refined_best
        if not self.second_pass:
            return "second pass: off"
        if self.stopped and not self.refined and self.exploration is None:
            return "second pass: not run"
        explored = ("" if self.exploration is None else
                    f" and {sum(len(r) for r in self.exploration.rows)} from {len(self.exploration.ceilings)} "
                    f"settings explored ({len(self.exploration.rounds)} rounds)")
        if not self.refined and not explored:
            return "second pass: nothing new to try around the front"
        if best is None:
            return (f"second pass: {self.refined} configurations around the front{explored}; still nothing within "
                    f"the budget")
        if self.first_best is not None and self.first_best["config_fingerprint"] == best["config_fingerprint"]:
            return (f"second pass: {self.refined} configurations around the front{explored}; the first pass's "
                    f"recommendation stands ({objective_text(objective, best[objective])})")
        before = (objective_text(objective, self.first_best[objective]) if self.first_best is not None
                  else "nothing within the budget")
        if self.first_best is not None and self.first_best[objective] == best[objective]:
            before += " (a tie: more labeled removals or fewer candidates)"
        return (f"second pass: {self.refined} configurations around the front{explored}; the recommendation moved from "
                f"{before} to {best[objective]:.1%} ({config_text(best)})")


def objective_text(objective: str, value: float) -> str:
    """'pair recall 77.6%': an objective's name in words and its value as a percentage."""
    return f"{objective.replace('_', ' ')} {value:.1%}"


def refined(ws, first: pd.DataFrame, *, max_false_removal_rate: float = 0.01, objective: str = "pair_recall",
            max_pairs: int | None = 20_000_000, seeds: tuple[int, ...] | None = None, num_perm_cap: int = 256,
            progress=None, confidence: float | None = None, target: Capabilities = CALIB) -> tuple[pd.DataFrame, int]:
    """(``first`` with the second pass's rows appended, ``search_pass`` 2; how many configurations it added),
    each as ``target`` runs it."""
    first = first if "search_pass" in first else first.assign(search_pass=1)
    more = refine(ws, across_seeds(first) if seeds else first, max_false_removal_rate=max_false_removal_rate,
                  objective=objective, num_perm_cap=num_perm_cap, confidence=confidence)
    have = set(first["config_fingerprint"])
    more = [c for c in useful(ws, target.fixed(more))[0] if c.fingerprint() not in have]
    if seeds:  # each new configuration once per seed, like the first pass's
        more = [replace(c, rep=c.rep.with_(seed=s)) for c in more for s in seeds]
    if not more:
        return first, 0
    second = sweep_configs(ws, more, max_pairs, progress=progress)
    return pd.concat([first, second.assign(search_pass=2)], ignore_index=True), len(more)


def second(ws, first: pd.DataFrame, *, max_false_removal_rate: float = 0.01, objective: str = "pair_recall",
           max_pairs: int | None = 20_000_000, seeds: tuple[int, ...] | None = None, num_perm_cap: int = 256,
           effort: float = 1.0, progress=None, confidence: float | None = None,
           target: Capabilities = CALIB) -> tuple[pd.DataFrame, int, Exploration | None]:
    """The second pass: :func:`refined` (one step around the front), then the exploration of every axis
    (:mod:`calib.search.explore`, ``effort``; off at 0 and with several seeds). (``first`` with both
    steps' rows appended, search_pass 2; how many the first step added; what the exploration saw)."""
    progress = progress or (lambda f, m: None)
    exploring = effort > 0 and seeds is None
    rows, added = refined(ws, first, max_false_removal_rate=max_false_removal_rate, objective=objective,
                          max_pairs=max_pairs, seeds=seeds, num_perm_cap=num_perm_cap, confidence=confidence,
                          progress=lambda f, m: progress((0.2 if exploring else 1.0) * f,
                                                         f"second pass, around the front: {m}"), target=target)
    if not exploring or stopped():
        return rows, added, None
    more, exploration = explore(ws, rows, budget=max_false_removal_rate, objective=objective, effort=effort,
                                max_pairs=max_pairs, confidence=confidence, target=target,
                                progress=lambda f, m: progress(0.2 + 0.8 * f, f"second pass, exploration: {m}"))
    return pd.concat([rows, more], ignore_index=True), added, exploration


def search(ws, grid=None, *, given: tuple[str, ...] = (), max_false_removal_rate: float = 0.01,
           objective: str = "pair_recall", second_pass: bool = True, skip: bool | None = None,
           check_top: int = RESEED_TOP, check_seeds: int = RESEED_MORE, effort: float = 1.0,
           progress=None, confidence: float | None = None, target: Capabilities = CALIB, stop=None,
           measured=None) -> SearchResult:
    """The default search: a grid from the sample (``grid``'s axes named in ``given`` kept; no
    ``grid``: every axis chosen), swept, then refined once around the front, then the ``check_top``
    best rows re-run on ``check_seeds`` further seeds before one is recommended
    (:mod:`calib.search.reseed`; 0: off; a grid of several seeds is recommended on their means
    instead). ``skip``: leave out the grid's configurations :func:`useful` rejects (default: when
    the sample chose an axis; a grid given whole is swept whole). ``effort``: the second pass's
    exploration of every axis (:mod:`calib.search.explore`) runs up to ``4 x effort`` rounds (0: off;
    with a grid of several seeds it is off). ``confidence``: every step recommends by the budget held on the
    false-removal rate's one-sided upper bound at this confidence (:func:`calib.search.recommend.recommend`);
    None: on the rate itself. ``target``: what the tool that will run the pick runs
    (:mod:`calib.search.capabilities`; default calib's engines, every configuration): every
    configuration is projected onto it before it is measured, so each row is one the tool runs as
    written, and for a tool that verifies nothing the splits whose unverified candidates hold the
    budget (:mod:`calib.search.unverified`) join the first pass. ``progress(fraction, message)``: called with a fraction
    that never goes down and ends at 1.0, and a message naming the step and the setting being
    tried. ``stop()`` (True: stop) is asked between settings and ``measured(rows)`` gets each batch
    of scored rows (:mod:`calib.search.watch`): a stopped search skips its later steps and returns
    what it measured (``stopped``)."""
    with watching(stop, measured):
        return _search(ws, grid, given=given, max_false_removal_rate=max_false_removal_rate, objective=objective,
                       second_pass=second_pass, skip=skip, check_top=check_top, check_seeds=check_seeds,
                       effort=effort, confidence=confidence, target=target, progress=_monotone(progress))


def _monotone(progress):
    """``progress`` fed the running maximum of the fractions (the steps' shares are estimates: an
    exploration that ends early jumps ahead, it never goes back)."""
    top = [0.0]

    def call(f: float, m: str) -> None:
        top[0] = min(1.0, max(top[0], float(f)))
        if progress is not None:
            progress(top[0], m)
    return call


def _search(ws, grid, *, given, max_false_removal_rate, objective, second_pass, skip, check_top, check_seeds,
            effort, confidence, target, progress) -> SearchResult:
    ws = as_workspace(ws, (grid or Grid()).ignore_categories)
    choice = None
    if grid is None or not set(CHOSEN_AXES) <= set(given):
        grid, choice = grid_from_sample(ws, grid, given=given)
    configs, skipped = useful(ws, target.fixed(grid.configs())) if (choice is not None if skip is None else skip) \
        else (target.fixed(grid.configs()), 0)
    if not target.verifies and choice is not None:  # the split is the decision: each setting's own steep splits
        configs = target.fixed(configs + unverified_first(ws, configs, max_false_removal_rate, target))
    if not configs:  # nothing left to sweep: no front to refine, no pick to check
        progress(1.0, "done")
        return SearchResult(seed_flags(no_rows(), max_false_removal_rate), grid, choice, skipped, None, None, 0,
                            second_pass, budget=max_false_removal_rate, confidence=confidence,
                            closest_text=empty_grid_text(skipped, max_false_removal_rate))
    seeds = grid.seeds if grid.seeds is not None and len(grid.seeds) > 1 else None
    checking = check_top > 0 and check_seeds > 0 and seeds is None
    share = (0.4 if second_pass else 0.9) if checking else (0.5 if second_pass else 1.0)
    first = sweep_configs(ws, configs, grid.max_pairs, default_floor=min(grid.thresholds),
                          progress=lambda f, m: progress(share * f, f"first pass: {m}"))
    first = (no_rows() if first.empty else first).assign(search_pass=1)  # empty: stopped before the first row

    def best_of(rows):  # several seeds: recommend on the across-seed means, as calib sweep does
        return recommend(across_seeds(rows) if seeds else rows, max_false_removal_rate=max_false_removal_rate,
                         objective=objective, confidence=confidence)

    first_best = best_of(first)
    rows, added, exploration = first, 0, None
    if second_pass and not stopped():
        rows, added, exploration = second(ws, first, max_false_removal_rate=max_false_removal_rate,
                                          objective=objective, max_pairs=grid.max_pairs, seeds=seeds,
                                          num_perm_cap=max(max(grid.num_perms) * 2, 256), effort=effort,
                                          confidence=confidence, target=target,
                                          progress=lambda f, m: progress(share + 0.5 * f, m))
    best = refined_best = best_of(rows)
    check = None
    if checking and best is not None and not stopped():
        check = seed_check(ws, rows, budget=max_false_removal_rate, objective=objective, top=check_top,
                           confidence=confidence, more=check_seeds, max_pairs=grid.max_pairs,
                           progress=lambda f, m: progress(0.9 + 0.1 * f, f"seed check: {m}"))
        rows, best = pd.concat([rows, check.rows], ignore_index=True), check.best
    rows = seed_flags(rows, max_false_removal_rate, check)
    if target.name != CALIB.name:  # which tool the rows were measured for (calib's: no column, as before)
        rows = rows.assign(target=target.name)
    if check is not None:  # the picked row as the table holds it (with its seed flags)
        best = rows[rows["config_fingerprint"] == best["config_fingerprint"]].iloc[0]
    near, near_text = (None, "") if best is not None else closest(
        rows, max_false_removal_rate=max_false_removal_rate, objective=objective, confidence=confidence)
    halted = stopped()
    chain = None if best is None else pick_growth(ws, config_from_row(best), grid.max_pairs)
    progress(1.0, "stopped" if halted else "done")
    return SearchResult(rows, grid, choice, skipped, first_best, best, added, second_pass, refined_best,
                        check, max_false_removal_rate, confidence, exploration, near, near_text, chain, halted)


def no_rows() -> pd.DataFrame:
    """A sweep table without a row (every configuration of the grid skipped), with the columns that
    the recommendation, the knobs and the CLI read."""
    figures = ("pair_recall", "false_removal_rate", "false_removal_rate_high", "candidates", "removed", "search_pass")
    return pd.DataFrame({c: pd.Series(dtype=object) for c in [*config_columns(Config()), "status"]}
                        | {c: pd.Series(dtype=float) for c in figures})


def empty_grid_text(skipped: int, budget: float) -> str:
    """Why a grid whose every configuration was skipped recommends nothing, and what would change it."""
    return (f"nothing within the false-removal budget {budget:.2%}: all {skipped} configurations of the grid were "
            f"skipped, so none was measured (labeled non-duplicates as similar as the duplicates leave no threshold "
            f"between them); check those labels, or sweep a grid of your own (--shingles, --num-perm, --splits, "
            f"--thresholds)")


def unverified_first(ws, configs: list[Config], budget: float, target: Capabilities) -> list[Config]:
    """For a tool that verifies nothing: the best unverified splits of each setting of ``configs``."""
    from calib.search.explore import setting_of
    from calib.search.unverified import unverified_cuts
    settings = {}
    for c in configs:
        s = setting_of(c)
        settings.setdefault(s.fingerprint(), s)
    return [c for s in settings.values() for c in unverified_cuts(
        ws, s, budget, whole=target.whole_signature, min_bands=target.min_bands)]


def pick_growth(ws, config: Config, max_pairs: int | None) -> ChainGrowth | None:
    """The chain growth (:mod:`calib.clusters.growth`) of one configuration's verified pairs."""
    from calib.search.sweep import evaluate
    ev = evaluate(ws, config, max_pairs=max_pairs)
    if ev.verified is None:
        return None
    v = ev.verified
    lengths = ws.sets(config.rep).sizes() if config.representative is Representative.LONGEST else None
    return chain_growth(ws.sample.n, v.i, v.j, config.similarity(v.exact, v.estimated), policy=config.policy,
                        representative=config.representative, lengths=lengths, max_component=config.max_component)
