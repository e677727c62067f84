"""Sweeps: evaluate a grid of configurations on one labeled sample.

Work is shared along the pipeline and cached by fingerprint in a
:class:`Workspace` (one per sample):

* shingle sets once per representation's shingling fingerprint;
* signatures once per (shingling, seed, scheme) at the largest hash count
  for a prefix-stable scheme (``prefix``), once per hash count for the
  others (``datasketch`` draws all a's before the b's, ``oph``'s bins depend
  on the hash count);
* exact-Jaccard reference pairs (every pair with J >= the lowest threshold)
  once per representation: exact verification of a split is then "reference
  pairs that collide in a band", with no need to materialize candidates;
* candidate pairs once per (signatures, b, r).

Exact copies (identical shingle sets, :mod:`calib.copies`) are collapsed to
one canonical row before banding and before the reference join, and their
pairs expanded by multiplicity afterwards: the pairs are exactly those of an
uncollapsed run, and their number is known before any is built, so the pair
budget ``max_pairs`` is checked on document pairs without the m^2 work.

A progress callback ``progress(fraction, message)`` is all the engine knows
of progress bars: the CLI plugs in tqdm, the app ``st.progress``.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, fields
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from calib.base import verbs as _api
from calib.candidates import lsh
from calib.estimates.bootstrap import ClusterBootstrap, cluster_units
from calib.clusters.clustering import Clustering, Representative, cluster_pairs
from calib.search.config import Config, Verify, config_columns, config_from_row, fill_unset  # noqa: F401 (config_from_row: public here too)
from calib.verification.copies import Copies, find_copies, spread
from calib.base.fields import axis
from calib.verification.jaccard import TooManyPairs, pairs_jaccard
from calib.estimates.jackknife import hash_sd
from calib.verification.measures import MEASURE_NAMES, get_measure
from calib.estimates.metrics import (candidate_metrics, collision_rates, counted_rate, document_outcomes,
    expected_rate, pair_metrics, removal_metrics)
from calib.sketches.minhash import get_scheme, signatures
from calib.candidates.pairs import first_of_each
from calib.sketches.represent import Representation
from calib.reading.sample import Sample
from calib.search.seeds import across_seeds  # noqa: F401  (re-exported: calib.sweep.across_seeds)
from calib.sketches.shingles import ShingleSets, shingle_hashes
from calib.sketches.boilerplate import Stoplist, stoplist
from calib.verification.short import apply_rule, positive_rule, short_mask, text_keys
from calib.clusters.truth import Truth, largest_cluster_share, truth_from_sample
from calib.sketches.weighted_minhash import frequencies_from_sets, pairs_weighted_jaccard, weigh

ProgressFn = Callable[[float, str], None]
BOOTSTRAP_REPLICATES = 1000
NEGATIVE_PAIRS = 20_000


def _no_progress(fraction: float, message: str) -> None:
    pass


class Workspace:
    """The expensive, reusable steps for one sample, cached by fingerprint."""

    def __init__(self, sample: Sample, *, collapse: bool = True, ignore_categories: Iterable[str] = (),
                 frequencies: Callable | None = None, frequencies_source: str = "sample",
                 line_corpus: list[str] | None = None):
        self.collapse = collapse  # False: band and join every row (the reference the tests compare with)
        self.line_corpus = line_corpus  # texts whose line counts make the boilerplate stoplist (None: the sample's)
        # weighting idf: the document frequencies come from the sample, or from frequencies(rep) (a named corpus)
        self._frequencies_of = frequencies
        self.frequencies_source = frequencies_source if frequencies is not None else "sample"
        self._df: dict[str, object] = {}
        if sample.n < 2:
            raise ValueError(f"sample {sample.name!r} has {sample.n} document(s); calibration needs at least 2")
        self.sample = sample
        self._sets: dict[str, ShingleSets] = {}
        self._texts: dict[str, tuple[Stoplist, list[str]]] = {}  # boilerplate stripping, per normalization+share
        self._keys: dict[str, np.ndarray] = {}
        self._copies: dict[str, Copies] = {}
        self._sigs: dict[tuple, np.ndarray] = {}
        self._ref: dict[str, tuple[float, tuple]] = {}
        self._ref_over: dict[str, list[TooManyPairs]] = {}
        self._cands: dict[tuple, tuple[np.ndarray, np.ndarray] | lsh.TooManyCandidates] = {}
        self._set_truth(truth_from_sample(sample, ignore_categories))

    def _set_truth(self, truth: Truth) -> None:
        """The labels and everything derived from them (the label-free caches above stay)."""
        self.truth = truth
        self.true_clusters = truth.clusters()
        # Rates over pairs that share documents get cluster-bootstrap intervals (true clusters = units).
        self.boot = ClusterBootstrap(cluster_units(self.true_clusters), replicates=BOOTSTRAP_REPLICATES, seed=0)
        self._pos: dict[str, np.ndarray] = {}
        self._est: dict[tuple, np.ndarray] = {}
        self._neg: tuple[np.ndarray, np.ndarray] | None = None
        self._trials: dict[str, object] = {}
        self._neg_j: dict[str, np.ndarray] = {}
        self.largest_group_share = largest_cluster_share(truth)[0]

    @property
    def ignored_categories(self) -> tuple[str, ...]:
        return self.truth.ignored_categories

    def ignoring(self, categories: Iterable[str]) -> "Workspace":
        """This workspace with the labeled pairs of ``categories`` counted as unlabeled:
        itself when it already ignores exactly those, else a view sharing its
        shingles, signatures, reference joins and candidates (they need no label)."""
        categories = tuple(categories)
        if set(categories) == set(self.ignored_categories):
            return self
        other = copy.copy(self)
        other._set_truth(truth_from_sample(self.sample, categories))
        return other

    def cache_info(self) -> dict:
        """How many results of each expensive step this workspace holds."""
        return {"shingle_sets": len(self._sets), "signature_matrices": len(self._sigs),
                "reference_sets": len(self._ref), "candidate_sets": len(self._cands)}

    def relabeled(self, sample: Sample) -> "Workspace":
        """This workspace for ``sample``, the same documents with other pair labels (as
        :meth:`ignoring`: a view sharing the label-free caches), so a sweep under the new labels
        redoes only the metrics."""
        if sample.n != self.sample.n or not np.array_equal(sample.ids, self.sample.ids):
            raise ValueError("relabeled: the sample must hold the same documents in the same order")
        other = copy.copy(self)
        other.sample = sample
        other._set_truth(truth_from_sample(sample, self.ignored_categories))
        return other

    # -- representation ------------------------------------------------------
    def stripped(self, rep: Representation) -> tuple[Stoplist | None, list[str]]:
        """The line stoplist of ``rep.strip_lines`` (None: off) and the texts it leaves (calib.boilerplate)."""
        if not rep.strip_lines:
            return None, self.sample.texts
        key = rep.normalization().with_(strip_lines=rep.strip_lines).fingerprint()
        if key not in self._texts:
            st = stoplist(self.line_corpus if self.line_corpus is not None else self.sample.texts, rep,
                          rep.strip_lines)
            self._texts[key] = (st, st.strip_all(self.sample.texts, rep))
        return self._texts[key]

    def sets(self, rep: Representation) -> ShingleSets:
        """The shingle sets, weighted (:class:`calib.weighted_minhash.WeightedSets`) under a weighting."""
        key = rep.shingling_fingerprint()
        if key not in self._sets:
            self._sets[key] = shingle_hashes(self.stripped(rep)[1], rep, unique=True)
        if rep.weighting == "none":
            return self._sets[key]
        wkey = f"{key}:{rep.weighting}"
        if wkey not in self._sets:
            self._sets[wkey] = weigh(self._sets[key], rep, self.frequencies(rep))
        return self._sets[wkey]

    def frequencies(self, rep: Representation):
        """The document-frequency table of ``rep``'s shingles (the sample's, or the named corpus's)."""
        key = rep.shingling_fingerprint()
        if key not in self._df:
            self._df[key] = (self._frequencies_of(rep) if self._frequencies_of is not None else
                             frequencies_from_sets(self.sets(rep.with_(weighting="none", scheme="prefix"))))
        return self._df[key]

    def sketch_similarity(self, rep: Representation, i, j) -> np.ndarray:
        """What a signature column's collision probability is: J, or weighted J under a weighting."""
        if rep.weighting == "none":
            return pairs_jaccard(self.sets(rep), i, j)
        return pairs_weighted_jaccard(self.sets(rep), i, j)

    def text_keys(self, rep: Representation) -> np.ndarray:
        """Digests of the normalized (stripped) texts: the short documents' exact match (calib.short)."""
        key = rep.shingling_fingerprint()
        if key not in self._keys:
            self._keys[key] = text_keys(self.stripped(rep)[1], rep)
        return self._keys[key]

    def short(self, cfg: Config) -> np.ndarray:
        return short_mask(self.sets(cfg.rep).sizes(), cfg.min_shingles)

    def copies(self, rep: Representation) -> Copies:
        """Groups of documents with identical shingle sets (none when not collapsing)."""
        key = rep.shingling_fingerprint()
        if key not in self._copies:
            self._copies[key] = find_copies(self.sets(rep)) if self.collapse else Copies(np.arange(self.sample.n))
        return self._copies[key]

    def active(self, rep: Representation) -> np.ndarray:
        """Documents with at least one shingle (the others never become candidates)."""
        return self.sets(rep).sizes() > 0

    def _sig_key(self, rep: Representation) -> tuple:
        base = (rep.shingling_fingerprint(), rep.seed, rep.scheme) + (
            () if rep.weighting == "none" else (rep.weighting,))
        return base if get_scheme(rep.scheme).prefix_stable else base + (rep.num_perm,)

    def signatures(self, rep: Representation) -> np.ndarray:
        """(n, rep.num_perm) signatures; prefix-stable schemes share prefixes."""
        key = self._sig_key(rep)
        have = self._sigs.get(key)
        if have is None or have.shape[1] < rep.num_perm:
            have = signatures(self.sets(rep), rep.num_perm, rep.seed, rep.scheme)
            self._sigs[key] = have
        return have[:, :rep.num_perm]

    def reference_pairs(self, rep: Representation, floor: float, max_pairs: int | None = None,
                        measure: str = "jaccard") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every pair with exact ``measure`` >= floor (i, j, J or C), cached per
        representation and measure.

        Raises :class:`calib.jaccard.TooManyPairs` when more than ``max_pairs``
        pairs have J >= floor: the join stops there, so memory stays within
        the budget. Such a failure is remembered (it proves at least ``found``
        pairs at that floor and below).
        """
        key = (rep.shingling_fingerprint(), measure) + (() if rep.weighting == "none" else (rep.weighting,))
        for exc in self._ref_over.get(key, ()):
            if floor <= exc.threshold and max_pairs is not None and exc.found > max_pairs:
                raise TooManyPairs(floor, exc.found, max_pairs)
        cached = self._ref.get(key)
        if cached is None or cached[0] > floor:
            try:
                cached = (floor, self._join(rep, floor, max_pairs, measure))
            except TooManyPairs as exc:
                self._ref_over.setdefault(key, []).append(exc)
                raise
            self._ref[key] = cached
        i, j, s = cached[1]
        if cached[0] < floor:
            m = s >= floor
            i, j, s = i[m], j[m], s[m]
        if max_pairs is not None and len(i) > max_pairs:
            raise TooManyPairs(floor, len(i), max_pairs)
        return i, j, s

    def _join(self, rep: Representation, floor: float, max_pairs: int | None, measure: str = "jaccard"):
        """The measure's all-pairs join on canonical rows, expanded to every document pair
        (an exact copy has J = C = 1 with its canonical row, and its other pairs are the canonical's)."""
        cp = self.copies(rep)
        ci, cj, cs = get_measure(measure).all_pairs(self.sets(rep), floor, active=cp.is_canonical,
                                                    max_pairs=max_pairs)
        total = cp.pair_count(ci, cj)
        if max_pairs is not None and total > max_pairs:
            raise TooManyPairs(floor, total, max_pairs)
        ii, jj, src = cp.expand(ci, cj)
        return ii, jj, spread(cs, src, 1.0)

    def positive_jaccard(self, rep: Representation) -> np.ndarray:
        """J of the duplicate pairs (weighted J under a weighting: what drives the band S-curve)."""
        key = rep.shingling_fingerprint() + ("" if rep.weighting == "none" else f":{rep.weighting}")
        if key not in self._pos:
            self._pos[key] = self.sketch_similarity(rep, self.truth.pos_i, self.truth.pos_j)
        return self._pos[key]

    def estimates(self, rep: Representation, what: str, i: np.ndarray, j: np.ndarray,
                  measure: str = "jaccard") -> np.ndarray:
        """MinHash estimates of J (or of another measure) for a fixed pair set ('reference',
        'positive'), cached per signature matrix and hash count (they do not depend on b, r)."""
        key = self._sig_key(rep) + (rep.num_perm, what, len(i)) + (() if measure == "jaccard" else (measure,))
        if key not in self._est:
            self._est[key] = get_measure(measure).estimate(self.signatures(rep), self.sets(rep).sizes(), i, j)
        return self._est[key]

    def positive_similarity(self, rep: Representation, measure: str) -> np.ndarray:
        """The measure's exact value on the duplicate pairs (J: :meth:`positive_jaccard`)."""
        if measure == "jaccard":
            return self.positive_jaccard(rep)
        key = (rep.shingling_fingerprint(), measure) + (() if rep.weighting == "none" else (rep.weighting,))
        if key not in self._pos:
            self._pos[key] = get_measure(measure).exact(self.sets(rep), self.truth.pos_i, self.truth.pos_j)
        return self._pos[key]

    def negative_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Labeled non-duplicate pairs (i < j) for false-candidate rates: the
        explicit ones, plus, with groups (every cross-group pair is labeled),
        all cross-group pairs when there are at most NEGATIVE_PAIRS pairs in
        all, else a seeded uniform sample of about that many."""
        if self._neg is None:
            t, n = self.truth, self.sample.n
            codes = [t.codes[t.labels == 0]]
            if t.groups is not None:
                if n * (n - 1) // 2 <= NEGATIVE_PAIRS:
                    a, c = np.triu_indices(n, 1)
                else:
                    rng = np.random.default_rng(0)
                    a, c = rng.integers(0, n, NEGATIVE_PAIRS), rng.integers(0, n, NEGATIVE_PAIRS)
                a, c = np.minimum(a, c).astype(np.int64), np.maximum(a, c).astype(np.int64)
                keep = (a != c)
                keep[keep] = t.label(a[keep], c[keep]) == 0
                codes.append(a[keep] * n + c[keep])
            allc = np.unique(np.concatenate(codes))
            allc = allc[~np.isin(allc, t.ignored)]  # an ignored category is no non-duplicate either
            self._neg = (allc // n, allc % n)
        return self._neg

    def trials(self, which: str):
        """The bootstrap's view of the 'positive' (duplicate) or 'negative' pairs."""
        if which not in self._trials:
            i, j = (self.truth.pos_i, self.truth.pos_j) if which == "positive" else self.negative_pairs()
            self._trials[which] = self.boot.pairs(i, j)
        return self._trials[which]

    def negative_jaccard(self, rep: Representation) -> np.ndarray:
        key = rep.shingling_fingerprint() + ("" if rep.weighting == "none" else f":{rep.weighting}")
        if key not in self._neg_j:
            ni, nj = self.negative_pairs()
            self._neg_j[key] = self.sketch_similarity(rep, ni, nj)
        return self._neg_j[key]

    def candidates(self, rep: Representation, b: int, r: int, max_pairs: int | None):
        """Candidate pairs, or the TooManyCandidates that stopped them."""
        key = self._sig_key(rep) + (rep.num_perm, b, r)
        if key not in self._cands:
            try:
                self._cands[key] = self._candidate_pairs(rep, b, r, max_pairs)
            except lsh.TooManyCandidates as exc:
                self._cands[key] = exc
        return self._cands[key]

    def _candidate_pairs(self, rep: Representation, b: int, r: int, max_pairs: int | None):
        """Banding of canonical rows, expanded to every document pair."""
        cp = self.copies(rep)
        ci, cj = lsh.candidate_pairs(self.signatures(rep), b, r, active=self.active(rep) & cp.is_canonical,
                                     max_pairs=max_pairs)
        total = cp.pair_count(ci, cj)
        if max_pairs is not None and total > max_pairs:
            raise lsh.TooManyCandidates(b, r, total, max_pairs, total)
        ii, jj, _ = cp.expand(ci, cj)
        return ii, jj


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
    :func:`~calib.fields.axis` naming the Config field it sweeps (``of``) and
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
                                       help="shingle weights: none, idf (idf: ICWS signatures, scheme icws, "
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
        """The default search's first grid for this sample (see :func:`calib.search.grid_from_sample`):
        ``base``'s axes named in ``given`` are kept, the others chosen from the sample."""
        from calib.search.from_sample import grid_from_sample
        ws = _workspace(sample_or_ws, (base or cls()).ignore_categories)
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

    def size(self) -> int:
        return sum(1 for _ in self.configs())

    def __str__(self) -> str:
        return (f"Grid: {len(self.representations)} representation(s) x num_perm {list(self.num_perms)} x "
                f"{f'seeds {list(self.seeds)} x ' if self.seeds else ''}"
                f"{'all splits' if self.splits is None else f'{len(self.splits)} splits'} x verify "
                f"{[v.value for v in self.verify]} x "
                f"{f'measures {list(self.measures)} x ' if self.measures != ('jaccard',) else ''}"
                f"{f'weightings {list(self.weightings)} x ' if self.weightings != ('none',) else ''}"
                f"{f'strip_lines {list(self.strip_lines)} x ' if self.strip_lines != (0.0,) else ''}"
                f"{f'min_shingles {list(self.min_shingles)} ({self.short_docs}) x ' if self.min_shingles != (0,) else ''}"
                f"thresholds {list(self.thresholds)} x {list(self.policies)} = "
                f"{self.size()} configs"
                f"{f'; ignoring categories {list(self.ignore_categories)}' if self.ignore_categories else ''}")


def _weighted_pairing(rep: Representation, rep_kw: dict, kw: dict, measures: tuple[str, ...]) -> bool:
    """A weighting other than none is sketched by the weighted scheme icws and verified by
    weighted Jaccard: set both in the keyword arguments (a jaccard measure becomes
    weighted_jaccard). False for a combination with no weighted form (containment), or one
    the grid holds already (jaccard beside weighted_jaccard)."""
    if rep_kw.get("weighting", rep.weighting) == "none":
        return True
    if not get_scheme(rep_kw.get("scheme", rep.scheme)).weighted:
        rep_kw["scheme"] = "icws"
    m = kw.get("measure", "jaccard")
    if m == "jaccard" and "weighted_jaccard" not in measures:
        kw["measure"] = "weighted_jaccard"
    return kw.get("measure", "jaccard") == "weighted_jaccard"


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
                 measure: str = "jaccard"):
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
        ni, nj = ws.negative_pairs()
        neg_hits = lsh.band_hits(sig, ni, nj, b, r)
        neg_exact = ws.negative_jaccard(rep)
        boot = ws.boot
        self.candidate_rates = {
            **counted_rate("candidate_recall", ws.trials("positive").counts(self.pos_candidate), boot, macro=True,
                           hash_sd=self.pos_hash_sd(None)),
            "expected_candidate_recall": expected_rate(self.pos_exact, b, r),
            "negative_pairs": int(len(ni)),
            **counted_rate("false_candidate_rate", ws.trials("negative").counts(neg_hits[0] > 0), boot,
                           hash_sd=hash_sd(*neg_hits, b, r, neg_exact)),
            "expected_false_candidate_rate": expected_rate(neg_exact, b, r)}
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
    """``verified`` flags of pairs (i, j) under the config's minimum length (calib.short)."""
    if not cfg.min_shingles:
        return verified
    return positive_rule(verified, i, j, ws.short(cfg), cfg.short_docs, ws.text_keys(cfg.rep))


def _score(ws: Workspace, st: _SplitState, cfg: Config, detail: bool = False):
    row = config_columns(cfg)
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
        row.update({"pair_recall_macro": np.nan, "expected_pair_recall": np.nan})
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
        row.update(counted_rate("pair_precision", boot.pair_counts(vi[lab], vj[lab], labels[lab] == 1), boot))
        sim = cfg.similarity(vs, ve)
        lengths = ws.sets(cfg.rep).sizes() if cfg.representative is Representative.LONGEST else None
        clustering = cluster_pairs(ws.sample.n, vi, vj, sim, policy=cfg.policy,
                                   representative=cfg.representative, lengths=lengths,
                                   max_component=cfg.max_component)
        outcomes = document_outcomes(ws.truth, clustering, ws.true_clusters)
        row.update(removal_metrics(outcomes, ws.true_clusters))
        labeled_removal = np.flatnonzero((outcomes["false_removal"] | outcomes["true_removal"]).to_numpy())
        row.update(counted_rate("false_removal_rate", boot.doc_counts(
            labeled_removal, outcomes["false_removal"].to_numpy()[labeled_removal]), boot))
        # missed removals: trials are the m-1 "extra" members of each true cluster, counted per cluster
        row.update(_missed_rate(ws, outcomes))
        row["giant_components"] = int(len(np.unique(clustering.component[clustering.flagged_giant])))
        if ws.sample.design is not None:  # labels of a stratified draw: corpus-level estimates replace the rates
            from calib.labeling.weighted import rates as weighted_rates
            row.update(weighted_rates(ws, cfg, clustering))
        verified = Verified(vi, vj, vs, ve, labels)
    if not detail:
        return row
    return row, verified, clustering, outcomes


def _missed_rate(ws: Workspace, outcomes: pd.DataFrame) -> dict:
    """Missed-removal rate with its trials counted per true cluster (m - 1 each)."""
    boot = ws.boot
    size = np.bincount(boot.units, minlength=boot.n_units)
    missed = np.bincount(boot.units, weights=outcomes["missed"].to_numpy(np.float64), minlength=boot.n_units)
    return counted_rate("missed_removal_rate", boot.unit_counts(missed, np.maximum(size - 1, 0)), boot)


def sweep(sample_or_ws: Sample | Workspace, grid: Grid = Grid(), *, progress: ProgressFn | None = None) -> pd.DataFrame:
    """One row per configuration of the grid, every metric with its interval."""
    ws = _workspace(sample_or_ws, grid.ignore_categories)
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
        progress(done / len(configs), f"{rep.shingle_label()} num_perm={rep.num_perm} b={b} r={r}")
        st = _SplitState(ws, rep, b, r, floors[rep.shingling_fingerprint(), m], max_pairs, m)
        for cfg in cfgs:
            rows.append(_score(ws, st, cfg))
        done += len(cfgs)
    progress(1.0, "done")
    out = fill_unset(_fill_unset(pd.DataFrame(rows)))
    if "short_documents" in out:  # counted where a minimum length is set; no minimum, no short document
        out["short_documents"] = out["short_documents"].fillna(0).astype(np.int64)
    return out


def _fill_unset(frame: pd.DataFrame) -> pd.DataFrame:
    """A Representation field left out of the rows at its default (``doc_if_set``) shows
    that default where other rows of the table set it (a weighting column: none, not NaN)."""
    for f in fields(Representation):
        if f.metadata["doc_if_set"] and f.name in frame:
            frame[f.name] = frame[f.name].where(frame[f.name].notna(), f.default)
    return frame


def _workspace(sample_or_ws: Sample | Workspace, ignore_categories: Iterable[str] | None) -> Workspace:
    """The workspace to score on: ``sample_or_ws``'s (or a new one), ignoring
    ``ignore_categories`` (None: whatever the workspace already ignores)."""
    if isinstance(sample_or_ws, Workspace):
        return sample_or_ws if ignore_categories is None else sample_or_ws.ignoring(ignore_categories)
    return Workspace(sample_or_ws, ignore_categories=ignore_categories or ())


def evaluate(sample_or_ws: Sample | Workspace, config: Config, *, max_pairs: int | None = 20_000_000,
             ignore_categories: Iterable[str] | None = None) -> Evaluation:
    """All details of one configuration: metrics row, verified pairs, clusters, outcomes.
    ``ignore_categories``: pair categories counted as unlabeled (None: the workspace's own choice)."""
    ws = _workspace(sample_or_ws, ignore_categories)
    # Reference pairs down to the threshold, as a sweep over it would use (so
    # similar_recall agrees); rule none has no threshold.
    floor = config.threshold if config.threshold else 1.0
    st = _SplitState(ws, config.rep, config.b, config.r, floor, max_pairs, config.measure)
    row, verified, clustering, outcomes = _score(ws, st, config, detail=True)
    return Evaluation(config, row, verified, clustering, outcomes, labeled_pairs(ws, config))


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


DOMINANT_GROUP = 0.5  # a labeled group holding more than this share of the duplicate pairs drives pair-level rates


def standing_text(row) -> str:
    """What a row's rates stand on, in one line: labeled removals, the false-removal
    rate's bounds over every removal, ignored pairs, and a dominant group's weight."""
    parts = []
    removed = int(row.get("removed", 0) or 0)
    if removed and "labeled_removals" in row and not pd.isna(row["labeled_removals"]):
        parts.append(f"{int(row['labeled_removals'])} of {removed} removals labeled "
                     f"({row['labeled_removal_share']:.0%}); false-removal rate over all removals "
                     f"{row['false_removal_rate_if_unlabeled_fine']:.4f} if every unlabeled one is fine, "
                     f"{row['false_removal_rate_if_unlabeled_false']:.4f} if every one is false")
    if row.get("ignored_pairs"):
        parts.append(f"{int(row['ignored_pairs'])} labeled pair(s) of ignored categories "
                     f"{row['ignored_categories']} counted neither right nor wrong")
    share = row.get("largest_group_pair_share")
    if share is not None and not pd.isna(share) and share > DOMINANT_GROUP and (row.get("n_positive") or 0) >= 10:
        macro = row.get("pair_recall_macro")
        parts.append(f"one labeled group holds {share:.0%} of the duplicate pairs: pair recall "
                     f"{row['pair_recall']:.3f} is mostly that group's; per-group (macro) pair recall "
                     f"{float(macro):.3f}" if macro is not None and not pd.isna(macro) else
                     f"one labeled group holds {share:.0%} of the duplicate pairs (pair-level rates are mostly its)")
    return "; ".join(parts)


def with_recommendation(results: pd.DataFrame, **criteria) -> pd.DataFrame:
    """``results`` with a boolean ``recommended`` column: True on the one row
    :func:`recommend` picks under ``criteria`` (all False when none fits)."""
    best = recommend(results, **criteria)
    out = results.drop(columns=["recommended"], errors="ignore")
    rec = (out["config_fingerprint"] == best["config_fingerprint"]) if best is not None else False
    return out.assign(recommended=pd.Series(rec, index=out.index, dtype=bool))


def recommend(results: pd.DataFrame, *, max_false_removal_rate: float = 0.01, objective: str = "pair_recall",
              use_upper_bound: bool = False) -> pd.Series | None:
    """The empirical optimum: max ``objective`` subject to the false-removal
    budget (on the rate, or on its upper 95% bound); ties go to the row whose
    removals are most labeled (lowest rate if every unlabeled removal were
    false), then to the fewest candidates. None when no configuration fits the budget, or the sample has
    no duplicate label. A configuration whose removals are all unlabeled has
    an unknown false-removal rate and is not recommended."""
    ok = results[results["status"] == "ok"]
    if "n_positive" in ok and not (ok["n_positive"] > 0).any():
        return None  # no duplicate labels: recall is undefined, nothing to recommend
    col = "false_removal_rate_high" if use_upper_bound else "false_removal_rate"
    # An unknown rate (no labeled removal) passes only when nothing is removed.
    known = ok[col].notna() | (ok.get("removed", pd.Series(0, index=ok.index)) == 0)
    ok = ok[known & (ok[col].fillna(0.0) <= max_false_removal_rate)]
    if ok.empty:
        return None
    # Ties on the objective go to the row that stands on more labels (the lowest false-removal rate
    # over all removals if every unlabeled one were false), then to the fewest candidates.
    worst = ok["false_removal_rate_if_unlabeled_false"] if "false_removal_rate_if_unlabeled_false" in ok else 0.0
    key = ok.assign(_cand=ok["candidates"].fillna(np.inf), _worst=pd.Series(worst, index=ok.index).fillna(0.0))
    key = key.sort_values([objective, "_worst", "_cand", "config_fingerprint"], ascending=[False, True, True, True],
                          kind="stable")
    return results.loc[key.index[0]]


def slice_breakdown(ev: Evaluation, sample: Sample, *, alpha: float = 0.05) -> pd.DataFrame:
    """Every rate of one configuration per slice, with a Fisher test vs the rest.

    Pair level, by ``category``: candidate recall and pair recall over the
    duplicate pairs, false verification over the labeled non-duplicates.
    Document level, by each slice column: removal rate (all documents), false
    removals among labeled removals, missed removals among documents of true
    duplicate clusters. Rows with ``flagged`` differ significantly (Holm-
    adjusted Fisher exact p < alpha) from the other slices of their column.
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
    out = out[out["n"] > 0]
    return out[["level", "metric", "column", "value", "n", "k", "rate", "ci_low", "ci_high",
                "p_value", "p_adjusted", "flagged"]].reset_index(drop=True)

# calib.sweep(...) is sweep(...) (the public API, see calib/__init__.py)
_api.callable_module(__name__, sweep)
