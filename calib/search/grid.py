"""The grid: which configurations a sweep evaluates, typed or chosen from the sample.

:class:`Grid` is the cartesian product of its axes (each an
:func:`~calib.base.fields.axis` naming the Config field it sweeps and its CLI
flag), with the splits b x r <= num_perm of each hash count, and rule ``none``
without thresholds. :func:`grid_from_sample` (``Grid.from_sample``) chooses
four of its axes from the sample instead: shingle kinds and sizes from the
documents' lengths, thresholds from where the labeled duplicate (and
non-duplicate) pairs' exact similarities lie, and, per threshold, the splits
whose S-curve 1 - (1 - s^r)^b makes nearly every duplicate above it a candidate
while keeping the 50% point (1/b)^(1/r) as high as possible (steep near the
threshold), within a budget of configurations. Axes the caller gives are kept
as given.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, fields, replace
from typing import Iterable

import numpy as np
import pandas as pd

from calib.base.fields import axis
from calib.candidates import lsh
from calib.reading.sample import Sample
from calib.search.config import Config, Verify
from calib.search.workspace import Workspace, as_workspace
from calib.sketches.schemes import DEFAULT_WEIGHTED, get_scheme
from calib.sketches.represent import Representation
from calib.verification.measures import MEASURE_NAMES, get_measure

MAX_CONFIGS = 300          # grid from the sample: at most this many configurations per seed unless given axes ask for more
MAX_PART_CUTS = 4          # a measure part (containment) of the grid from the sample: at most 4 thresholds, 4 splits
MAX_THRESHOLDS = 8
MAX_SPLITS = 8            # spread over the 50% points the thresholds asked for
DUPLICATE_QUANTILES = (0.02, 0.05, 0.1, 0.2, 0.35, 0.5)
NEGATIVE_QUANTILE = 0.999
HARD_QUANTILES = (0.5, 0.9, 0.99)
CANDIDATE_LEVELS = (0.95, 0.995)  # S-curve height at the duplicates' low J that a chosen split must reach
MAX_ROWS = 32              # rows per band considered (r); b = num_perm // r uses most of the hashes
SEARCH_NUM_PERM = 128
CHOSEN_AXES = ("representations", "thresholds", "splits", "num_perms")  # the Grid axes the sample can choose


def _strs(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in str(text).split(",") if x.strip())


def _numbers(kind):
    def parse(text: str) -> tuple:
        try:
            return tuple(kind(x) for x in _strs(text))
        except ValueError:
            raise ValueError(f"expected comma-separated {'integers' if kind is int else 'numbers'}, got {text!r}")
    return parse


def _optional_int(text: str) -> int | None:
    t = str(text).strip().lower()
    if t in ("", "none"):
        return None
    try:
        return int(t)
    except ValueError:
        raise ValueError(f"expected an integer or 'none', got {text!r}")


# The default grid's representations, used by Grid(), `calib sweep`, `calib
# export` and the Sweep page alike: word 3- and 5-grams and character 5-grams
# (character shingles win on the shipped sample: higher pair recall within a
# 1% false-removal budget than either word size).
DEFAULT_REPRESENTATIONS = (Representation(shingle="word", k=3), Representation(shingle="word", k=5),
                           Representation(shingle="char", k=5))

# The axes whose loops Grid.configs writes itself (num_perm fixes the splits;
# rule none has no threshold); every other axis is a plain cartesian factor.
_STRUCTURAL = ("rep.num_perm", "rep.seed", "b,r", "threshold")


@dataclass(frozen=True)
class Grid:
    """The configurations a sweep evaluates: their cartesian product.

    ``splits=None`` means every (b, r) with b*r == num_perm; explicit splits
    are kept for each hash count where b*r <= num_perm. Each field is an
    :func:`~calib.base.fields.axis` naming the Config field it sweeps (``of``) and
    its CLI flag: a new axis is one field here, and the CLI, the configs and
    the summary pick it up.
    """

    representations: tuple[Representation, ...] = axis(
        DEFAULT_REPRESENTATIONS, of=None,
        help="representations (the CLI builds them from --shingles and --normalizations)")
    num_perms: tuple[int, ...] = axis((128, 256), of="rep.num_perm", flag="--num-perm", parse=_numbers(int),
                                      help="hash counts (num_perm)")
    seeds: tuple[int, ...] | None = axis(
        None, of="rep.seed", flag="--seeds", parse=_numbers(int),
        help="hash seeds, e.g. 1,2,3: every configuration once per seed, to measure hash luck "
             "(none: each representation's own seed)")
    splits: tuple[tuple[int, int], ...] | None = axis(
        None, of="b,r", flag="--splits", parse=lsh.parse_splits,
        help="LSH splits: 'all' (every b x r == num_perm) or a list like 16x8,32x4 (bands x rows)")
    verify: tuple[Verify, ...] = axis((Verify.EXACT,), of="verify", flag="--verify", parse=_strs,
                                      help="verification rules: exact, estimated, none")
    measures: tuple[str, ...] = axis(("jaccard",), of="measure", flag="--measures", parse=_strs,
                                     help="verification measures: jaccard, containment (containment keeps the "
                                     "longest document of a cluster), weighted_jaccard")
    weightings: tuple[str, ...] = axis(("none",), of="rep.weighting", flag="--weighting", parse=_strs,
                                       help="shingle weights: none, idf (idf: weighted MinHash, scheme dart unless a weighted one is named, "
                                       "verified by weighted Jaccard: a jaccard measure becomes weighted_jaccard "
                                       "there, containment has no weighted form and is not paired with idf)")
    thresholds: tuple[float, ...] = axis((0.5, 0.6, 0.7, 0.8, 0.9), of="threshold", flag="--thresholds",
                                         parse=_numbers(float), help="final Jaccard thresholds")
    policies: tuple[str, ...] = axis(("connected",), of="policy", flag="--policies", parse=_strs,
                                     help="clustering policies: connected, star")
    representative: str = axis("first", of="representative", flag="--representative", parse=str, fixed=True,
                               help="which document each cluster keeps: first, longest, medoid")
    max_component: int | None = axis(None, of="max_component", flag="--max-component", parse=_optional_int,
                                     fixed=True, help="giant-component guard: components larger than this are "
                                     "clustered with the star rule and flagged ('none': no guard)")
    strip_lines: tuple[float, ...] = axis((0.0,), of="rep.strip_lines", flag="--strip-lines", parse=_numbers(float),
                                          help="boilerplate: shares of documents above which a line is stripped, "
                                          "e.g. 0,0.01,0.05 (0: off)")
    min_shingles: tuple[int, ...] = axis((0,), of="min_shingles", flag="--min-shingles", parse=_numbers(int),
                                         help="minimum lengths in distinct shingles, e.g. 0,5,10 (0: off)")
    short_docs: str = axis("exclude", of="short_docs", flag="--short-docs", parse=str, fixed=True,
                           help="short documents: exclude (kept, counted, not examined) or exact (equal "
                           "normalized text only)")
    max_pairs: int | None = axis(20_000_000, of=None, flag="--max-pairs", parse=_optional_int, fixed=True,
                                 help="candidate pairs above which a split is reported as too loose "
                                 "instead of materialized")
    max_configs: int = axis(MAX_CONFIGS, of=None, flag="--max-configs", parse=int, fixed=True,
                            help="the grid chosen from the sample: at most this many configurations per seed "
                            "(its thresholds are thinned to fit; the grid line names any left out)")
    also: tuple = axis((), of=None, fixed=True,
                       help="further grids swept with this one (the default search's containment part, with "
                       "its own thresholds and splits)")
    ignore_categories: tuple[str, ...] = axis(
        (), of=None, flag="--ignore-categories", parse=_strs, fixed=True,
        help="pair categories that count neither right nor wrong (e.g. heavy): their labeled pairs are "
             "unlabeled for every rate, and listed")

    def __post_init__(self) -> None:
        if not self.representations:
            raise ValueError("Grid.representations is empty")
        if not self.num_perms or any(not isinstance(m, int) or m < 1 for m in self.num_perms):
            raise ValueError(f"Grid.num_perms must be integers >= 1, got {self.num_perms!r}")
        try:
            object.__setattr__(self, "verify", tuple(Verify.parse(v) for v in self.verify))
        except ValueError as exc:
            raise ValueError(f"Grid.verify: {exc}") from None
        try:
            if not self.measures:
                raise ValueError("empty")
            object.__setattr__(self, "measures", tuple(get_measure(m).name for m in self.measures))
        except ValueError:
            raise ValueError(f"Grid.measures must be some of {MEASURE_NAMES}, got {self.measures!r}") from None
        if not self.thresholds or any(not 0.0 < t <= 1.0 for t in self.thresholds):
            raise ValueError(f"Grid.thresholds must be in (0, 1], got {self.thresholds!r}")
        if self.splits is not None:
            for b, r in self.splits:
                if b < 1 or r < 1:
                    raise ValueError(f"Grid.splits: b and r must be >= 1, got ({b}, {r})")
            if not any(b * r <= m for b, r in self.splits for m in self.num_perms):
                raise ValueError(f"Grid.splits: no split has b*r <= any of num_perms {self.num_perms}")
        if self.max_component is not None and (isinstance(self.max_component, bool)
                                               or not isinstance(self.max_component, int) or self.max_component < 2):
            raise ValueError(f"Grid.max_component must be none or an integer >= 2, got {self.max_component!r}")
        if self.seeds is not None:
            if not self.seeds or len(set(self.seeds)) != len(self.seeds) or any(
                    isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 0 for x in self.seeds):
                raise ValueError(f"Grid.seeds must be distinct integers >= 0, got {self.seeds!r}")
            object.__setattr__(self, "seeds", tuple(int(x) for x in self.seeds))
        if isinstance(self.ignore_categories, str) or any(not isinstance(c, str) or not c
                                                          for c in self.ignore_categories):
            raise ValueError(f"Grid.ignore_categories must be a tuple of category names, got {self.ignore_categories!r}")
        object.__setattr__(self, "ignore_categories", tuple(self.ignore_categories))
        if isinstance(self.max_configs, bool) or not isinstance(self.max_configs, int) or self.max_configs < 1 \
                or not all(isinstance(g, Grid) for g in self.also):
            raise ValueError(f"Grid.max_configs must be an integer >= 1 and Grid.also Grids, got "
                             f"{self.max_configs!r}, {self.also!r}")
        if self.max_pairs is not None and (not isinstance(self.max_pairs, int) or self.max_pairs < 0):
            raise ValueError(f"Grid.max_pairs must be None or an integer >= 0, got {self.max_pairs!r}")
        for f in fields(self):
            value = getattr(self, f.name)
            if not f.metadata["fixed"] and value is not None and not len(value):
                raise ValueError(f"Grid.{f.name} ({f.metadata['flag'] or f.name}) is empty: nothing to sweep")
        for _ in self.configs():  # every configuration valid now, not a traceback midway through a sweep
            pass

    @classmethod
    def from_sample(cls, sample_or_ws: Sample | Workspace, base: "Grid | None" = None,
                    given: tuple[str, ...] = ()) -> "Grid":
        """The default search's first grid for this sample (see :func:`grid_from_sample`):
        ``base``'s axes named in ``given`` are kept, the others chosen from the sample."""
        ws = as_workspace(sample_or_ws, (base or cls()).ignore_categories)
        return grid_from_sample(ws, base, given=given)[0]

    def splits_for(self, num_perm: int) -> list[tuple[int, int]]:
        if self.splits is None:
            return lsh.splits(num_perm)
        return [(b, r) for b, r in self.splits if b * r <= num_perm]

    def _axes(self) -> tuple[list[tuple[str, tuple]], dict]:
        """(plain axes as (Config field, values), fixed Config fields)."""
        plain, fixed = [], {}
        for f in fields(self):
            of = f.metadata["of"]
            if of is None or of in _STRUCTURAL:
                continue
            if f.metadata["fixed"]:
                fixed[of] = getattr(self, f.name)
            else:
                plain.append((of, tuple(getattr(self, f.name))))
        return plain, fixed

    def configs(self) -> Iterable[Config]:
        plain, fixed = self._axes()
        names = [name for name, _ in plain]
        reps = [rep.with_(seed=seed) for rep in self.representations for seed in (self.seeds or (rep.seed,))]
        for rep, m in itertools.product(reps, self.num_perms):
            for (b, r), combo in itertools.product(self.splits_for(m), itertools.product(*(v for _, v in plain))):
                kw = dict(zip(names, combo))
                rep_kw = {k[4:]: kw.pop(k) for k in names if k.startswith("rep.")}
                if not _weighted_pairing(rep, rep_kw, kw, self.measures):
                    continue
                rep_c = rep.with_(num_perm=m, **rep_kw)
                none = Verify.parse(kw.get("verify", Verify.EXACT)) is Verify.NONE
                keep = get_measure(kw.get("measure", "jaccard")).keep  # containment: keep the longest
                fx = fixed if keep is None else {**fixed, "representative": keep}
                for t in ((None,) if none else self.thresholds):
                    yield Config(rep_c, b, r, threshold=t, **kw, **fx)
        for part in self.also:
            yield from part.configs()

    def size(self) -> int:
        return sum(1 for _ in self.configs())

    def __str__(self) -> str:
        def words(values) -> str:  # "exact, estimated": no Python list reprs in what people read
            return ", ".join(f"{v:g}" if isinstance(v, float) else str(getattr(v, "value", v)) for v in values)
        n = len(self.representations)
        axes = [f"Grid: {n} representation{'s' if n != 1 else ''}", f"num_perm {words(self.num_perms)}"]
        axes += [f"seeds {words(self.seeds)}"] if self.seeds else []
        axes += ["all splits" if self.splits is None else f"{len(self.splits)} splits", f"verify {words(self.verify)}"]
        axes += [f"measures {words(self.measures)}"] if self.measures != ("jaccard",) else []
        axes += [f"weightings {words(self.weightings)}"] if self.weightings != ("none",) else []
        axes += [f"boilerplate lines stripped at {words(self.strip_lines)}"] if self.strip_lines != (0.0,) else []
        axes += [f"minimum shingles {words(self.min_shingles)} ({self.short_docs})"] if self.min_shingles != (0,) else []
        axes += [f"thresholds {words(self.thresholds)}", f"policies {words(self.policies)}"]
        parts = "".join(f" (with {p.size()} of a {p.measures[0]} part)" for p in self.also)
        return (f"{' x '.join(axes)} = {self.size()} configurations{parts}"
                + (f"; ignoring categories {words(self.ignore_categories)}" if self.ignore_categories else ""))


def _weighted_pairing(rep: Representation, rep_kw: dict, kw: dict, measures: tuple[str, ...]) -> bool:
    """A weighting other than none is sketched by a weighted scheme (the representation's, else
    :data:`~calib.sketches.schemes.DEFAULT_WEIGHTED`) and verified by weighted Jaccard: set both
    in the keyword arguments (a jaccard measure becomes weighted_jaccard). False for a combination with no weighted form (containment), or one
    the grid holds already (jaccard beside weighted_jaccard)."""
    if rep_kw.get("weighting", rep.weighting) == "none":
        return True
    if not get_scheme(rep_kw.get("scheme", rep.scheme)).weighted:
        rep_kw["scheme"] = DEFAULT_WEIGHTED
    m = kw.get("measure", "jaccard")
    if m == "jaccard" and "weighted_jaccard" not in measures:
        kw["measure"] = "weighted_jaccard"
    return kw.get("measure", "jaccard") == "weighted_jaccard"


# -- the grid chosen from the sample ---------------------------------------------

def shingles_for_lengths(median_chars: float, median_words: float) -> tuple[tuple[str, int], ...]:
    """Shingle kinds and sizes for documents of these median lengths.

    Word k-grams: sizes k with at least 5 shingles in a median document (k <= words / 5), the two
    largest of 1, 2, 3, 5 (short records: word 1/2; long texts: word 3/5). Character k-grams: 3, 4
    and 5 for records under 300 characters (a typo changes few of them), 4 and 5 under 1,000, else 5.
    """
    words = [k for k in (1, 2, 3, 5) if k * 5 <= max(median_words, 5)][-2:]
    chars = (3, 4, 5) if median_chars < 300 else (4, 5) if median_chars < 1000 else (5,)
    return tuple(("char", k) for k in chars) + tuple(("word", k) for k in words)


def _rounded(values, step: float = 0.05, low: float = 0.05, high: float = 0.95) -> list[float]:
    v = np.clip(np.round(np.asarray(values, dtype=np.float64) / step) * step, low, high)
    return sorted({round(float(x), 3) for x in v})


def _thin(values: list[float], keep: int) -> list[float]:
    """At most ``keep`` of the sorted ``values``, evenly spread, both ends kept."""
    if len(values) <= keep:
        return values
    idx = np.unique(np.round(np.linspace(0, len(values) - 1, keep)).astype(int))
    return [values[i] for i in idx]


def steep_splits(low_j: float, num_perm: int, levels=CANDIDATE_LEVELS) -> list[tuple[int, int]]:
    """For each level, the split (b = num_perm // r, r) with the highest 50% point whose
    S-curve reaches that level at Jaccard ``low_j`` (the loosest one when none does)."""
    cands = [(num_perm // r, r) for r in range(1, min(num_perm, MAX_ROWS) + 1)]
    at = np.array([lsh.s_curve(low_j, b, r) for b, r in cands])
    p50 = np.array([(1.0 / b) ** (1.0 / r) for b, r in cands])
    out = []
    for level in levels:
        ok = np.flatnonzero(at >= level)
        pick = ok[np.argmax(p50[ok])] if len(ok) else int(np.argmax(at))
        out.append(cands[pick])
    return list(dict.fromkeys(out))


def pair_similarities(ws, rep: Representation, measure: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(duplicate pairs' exact measure, their exact J, non-duplicate pairs' exact measure)."""
    dup = ws.positive_similarity(rep, measure)
    dup_j = ws.positive_jaccard(rep)
    ni, nj = ws.negative_pairs()
    neg = ws.negative_jaccard(rep) if measure == "jaccard" else get_measure(measure).exact(ws.sets(rep), ni, nj)
    return dup, dup_j, neg


def nonduplicate_floor(neg: np.ndarray) -> float:
    """Just above nearly every labeled non-duplicate's similarity (0 without any)."""
    return float(np.quantile(neg, NEGATIVE_QUANTILE)) + 0.025 if len(neg) else 0.0


@dataclass(frozen=True)
class SampleChoice:
    """Why the grid is what it is, in figures and one readable line."""

    median_chars: float
    median_words: float
    similarity_range: tuple[float, float]  # labeled duplicates' exact similarity, 2nd-98th percentile
    chosen: tuple[str, ...]                # the axes this choice set (the others were given)
    left_out: tuple[float, ...] = ()       # thresholds thinned away to fit the cap
    over: tuple[int, bool] = (0, False)    # (configurations per seed before thinning, still over the cap after)
    cap: int = MAX_CONFIGS
    measure_note: str = ""                 # whether containment is swept, and why

    def text(self, grid) -> str:
        shingles = ", ".join(r.shingle_label() for r in dict.fromkeys(
            r.with_(seed=1, num_perm=128) for r in grid.representations))
        lo, hi = self.similarity_range
        splits = "all splits" if grid.splits is None else ", ".join(f"{b}x{r}" for b, r in grid.splits)
        given = [a for a in CHOSEN_AXES if a not in self.chosen]
        return (f"grid from the sample: median {self.median_chars:.0f} characters, {self.median_words:.0f} words "
                f"per document -> {shingles}; thresholds {', '.join(f'{t:g}' for t in grid.thresholds)}"
                + (f" spanning the labeled duplicates' exact similarities {lo:.2f}-{hi:.2f}" if np.isfinite(lo)
                   else " (default: no labeled duplicate to place them by)")
                + f"; splits {splits} "
                f"(steep near each threshold) at num_perm {', '.join(map(str, grid.num_perms))}; "
                f"{grid.size()} configurations" + (f" (given: {', '.join(given)})" if given else "")
                + "".join(f"; {p.measures[0]} part: thresholds {', '.join(f'{t:g}' for t in p.thresholds)}, "
                          f"splits {'all' if p.splits is None else ', '.join(f'{b}x{r}' for b, r in p.splits)}, "
                          f"{p.size()} of them" for p in grid.also)
                + (f"; {self.measure_note}" if self.measure_note else "") + self._cap_text(grid))

    def _cap_text(self, grid) -> str:
        """What the cap on configurations left out, and how to get it back (nothing when nothing was)."""
        if not self.left_out and not self.over[1]:
            return ""
        seeds = f" x {len(grid.seeds)} seeds" if grid.seeds else ""
        out = f"; cap {self.cap} configurations per seed{seeds}"
        if self.left_out:
            out += (f": left out thresholds {', '.join(f'{t:g}' for t in self.left_out)} ({self.over[0]} "
                    f"configurations with them; --max-configs {self.over[0]} sweeps them, or give --thresholds)")
        if self.over[1]:
            out += (": still over it with 3 thresholds (the given axes ask for more; narrow them, "
                    "e.g. fewer --min-shingles or --policies)")
        return out


def _cuts(ws, reps, measures, num_perms, base, chosen, max_thresholds=MAX_THRESHOLDS, max_splits=MAX_SPLITS):
    """(thresholds, splits, the labeled duplicates' similarities) of ``measures`` on ``reps``: the
    chosen axes from the labeled pairs, the others ``base``'s."""
    sims, lows = [], []
    for rep in reps:
        for m in measures:
            dup, dup_j, neg = pair_similarities(ws, rep, m)
            sims.append(dup)
            if len(dup):
                lows.append((dup, dup_j, neg))
    thresholds = base.thresholds
    if "thresholds" in chosen and lows:
        cand = []
        for dup, _, neg in lows:
            # no lower than just above nearly every labeled non-duplicate: below, removals are mostly false
            floor = nonduplicate_floor(neg)
            cand += list(np.maximum(np.quantile(dup, DUPLICATE_QUANTILES), floor))
            hard = neg[neg >= floor]  # the labeled non-duplicates above it: a threshold just above each of their high
            if len(hard):             # quantiles trades a little recall for fewer false removals
                cand += list(np.quantile(hard, HARD_QUANTILES) + 0.025)
        thresholds = tuple(_thin(_rounded(cand), max_thresholds))
    splits = base.splits
    if "splits" in chosen and lows:
        picked = []
        for t in thresholds:
            for dup, dup_j, _ in lows:  # the J the duplicates passing t have: the S-curve must reach them
                passing = dup_j[dup >= t]
                if len(passing):
                    for m in num_perms:
                        picked += steep_splits(float(np.quantile(passing, 0.05)), m)
        picked = sorted(set(picked), key=lambda s: (1.0 / s[0]) ** (1.0 / s[1]))  # by 50% point
        splits = tuple(_thin(picked, max_splits)) or None
    return thresholds, splits, sims


def per_seed_size(grid) -> int:
    """Configurations of ``grid`` per hash seed (the cap counts these: seeds repeat them, they are no new ones)."""
    return replace(grid, seeds=None).size() if grid.seeds else grid.size()


def grid_from_sample(ws, base=None, *, given: tuple[str, ...] = (), max_configs: int | None = None):
    """(Grid, SampleChoice): ``base`` (a Grid, default ``Grid()``) with the axes not in ``given``
    (``representations``, ``thresholds``, ``splits``, ``num_perms``) chosen from the sample of
    workspace ``ws``, its thresholds thinned to at most ``max_configs`` configurations per seed
    (default ``base.max_configs``; what is left out is said in the choice's line). Unless
    ``measures`` is in ``given`` (or ``base`` sweeps more than Jaccard), containment is added as a
    part of its own when the labeled duplicates ask for it (:mod:`calib.search.measure_choice`),
    leaving the Jaccard part as it would be without it."""
    from calib.search.measure_choice import containment_worth
    base = base if base is not None else Grid()
    cap = base.max_configs if max_configs is None else max_configs
    texts = pd.Series(ws.sample.texts, dtype=object).astype(str)
    median_chars = float(texts.str.len().median())
    median_words = float(texts.str.split().str.len().median())
    chosen = tuple(a for a in CHOSEN_AXES if a not in given)
    template = base.representations[0]
    reps = base.representations
    if "representations" in chosen:
        reps = tuple(template.with_(shingle=kind, k=k)
                     for kind, k in shingles_for_lengths(median_chars, median_words))
    num_perms = (SEARCH_NUM_PERM,) if "num_perms" in chosen else base.num_perms
    thresholds, splits, sims = _cuts(ws, reps, base.measures, num_perms, base, chosen)
    alld = np.concatenate(sims) if sims else np.zeros(0)
    sim_range = ((float(np.quantile(alld, 0.02)), float(np.quantile(alld, 0.98))) if len(alld)
                 else (float("nan"), float("nan")))
    grid = full = replace(base, representations=reps, thresholds=thresholds, splits=splits, num_perms=num_perms)
    while per_seed_size(grid) > cap and "thresholds" in chosen and len(grid.thresholds) > 3:
        grid = replace(grid, thresholds=tuple(_thin(list(grid.thresholds), len(grid.thresholds) - 1)))
    left = tuple(t for t in full.thresholds if t not in grid.thresholds)
    over = (per_seed_size(full) if left else 0, per_seed_size(grid) > cap)
    measure_note = ""
    if "measures" not in given and base.measures == ("jaccard",) and not base.also:
        worth, measure_note = containment_worth(ws, reps)
        if worth:  # its own thresholds and splits (C runs higher than J), a few of each
            th, sp, _ = _cuts(ws, reps, ("containment",), num_perms, base, chosen, MAX_PART_CUTS, MAX_PART_CUTS)
            grid = replace(grid, also=(replace(grid, measures=("containment",), thresholds=th, splits=sp),))
    return grid, SampleChoice(median_chars, median_words, sim_range, chosen, left, over, cap, measure_note)
