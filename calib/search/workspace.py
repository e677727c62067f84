"""The workspace: the expensive, label-free steps of one sample, cached by fingerprint.

Every configuration a sweep scores shares work with others along the pipeline,
so a :class:`Workspace` (one per sample) computes each step once:

* shingle sets once per representation's shingling fingerprint;
* signatures once per (shingling, seed, scheme) at the largest hash count
  for a prefix-stable scheme (``prefix``), once per hash count for the
  others (``datasketch`` draws all a's before the b's, ``oph``'s bins depend
  on the hash count);
* exact-Jaccard reference pairs (every pair with J >= the lowest threshold)
  once per representation: exact verification of a split is then "reference
  pairs that collide in a band", with no need to materialize candidates;
* candidate pairs once per (signatures, b, r).

Exact copies (identical shingle sets, :mod:`calib.verification.copies`) are collapsed to
one canonical row before banding and before the reference join, and their
pairs expanded by multiplicity afterwards: the pairs are exactly those of an
uncollapsed run, and their number is known before any is built, so the pair
budget ``max_pairs`` is checked on document pairs without the m^2 work.
With ``disk`` (``calib sweep`` and the app) the steps are also kept on disk across runs
(:mod:`calib.search.stored`), and ``computed`` / ``loaded`` count each step computed or loaded.
The labels (truth, duplicate and non-duplicate pairs, the cluster bootstrap)
sit beside these caches and can be swapped (:meth:`Workspace.ignoring`,
:meth:`Workspace.relabeled`) without redoing them.
"""

from __future__ import annotations

import copy
from collections import Counter
from contextlib import contextmanager
from typing import Callable, Iterable

import numpy as np

from calib.candidates import lsh
from calib.estimates.bootstrap import ClusterBootstrap, cluster_units
from calib.search.config import Config
from calib.search import stored
from calib.search.stored import Stored, kept, text_array, array_text
from calib.verification.copies import Copies, find_copies, set_digests, spread
from calib.verification.jaccard import TooManyPairs, pairs_jaccard
from calib.verification.measures import get_measure
from calib.sketches.minhash import signatures
from calib.sketches.schemes import get_scheme
from calib.sketches.represent import Representation
from calib.reading.files import SampleError
from calib.reading.sample import Sample
from calib.sketches.shingles import ShingleSets, shingle_hashes
from calib.sketches.boilerplate import Stoplist, stoplist
from calib.sketches.line_table import LineTable
from calib.verification.short import short_mask, text_keys
from calib.clusters.truth import Truth, largest_cluster_share, truth_from_sample
from calib.sketches.weighted_minhash import frequencies_from_sets, weigh
from calib.verification.weighted_jaccard import pairs_weighted_jaccard

BOOTSTRAP_REPLICATES = 1000
NEGATIVE_PAIRS = 20_000


def check_design_representation(design) -> None:
    """A drawn set's design.json names the representation its strata were computed under; the
    loader (below the sketching stage) keeps it as a dict, so it is checked here, before any work."""
    try:
        Representation.from_dict(design.rep)
    except (ValueError, TypeError) as exc:
        raise SampleError(f"not a calib draw design ({exc})", file="design.json", field="rep") from None


class Workspace:
    """The expensive, reusable steps for one sample, cached by fingerprint."""

    def __init__(self, sample: Sample, *, collapse: bool = True, ignore_categories: Iterable[str] = (),
                 frequencies: Callable | None = None, frequencies_source: str = "sample",
                 line_corpus: list[str] | None = None, sources: dict[str, str] | None = None,
                 disk: bool | None = None):
        self.collapse = collapse  # False: band and join every row (the reference the tests compare with)
        self.line_corpus = line_corpus  # texts whose line counts make the boilerplate stoplist (None: the sample's)
        # weighting idf: the document frequencies come from the sample, or from frequencies(rep) (a named corpus)
        self._frequencies_of = frequencies
        self.frequencies_source = frequencies_source if frequencies is not None else "sample"
        # where the idf frequencies and the stoplist's line counts come from, as the user named them (the table records it)
        self.sources = {"idf": "sample", "stoplist": "sample", **(sources or {})}
        self._df: dict[str, object] = {}
        self._df_sha: dict[str, str] = {}
        if sample.n < 2:
            raise ValueError(f"sample {sample.name!r} has {sample.n} document(s); calibration needs at least 2")
        if sample.design is not None:
            check_design_representation(sample.design)
        self.sample = sample
        self._sets: dict[str, ShingleSets] = {}
        self._texts: dict[str, tuple[Stoplist, list[str]]] = {}  # boilerplate stripping, per normalization+share
        self._lines: dict[str, LineTable] = {}  # the sample's and the line corpus's lines, split once
        self._keys: dict[str, np.ndarray] = {}
        self._copies: dict[str, Copies] = {}
        self._sigs: dict[tuple, np.ndarray] = {}
        self._ref: dict[str, tuple[float, tuple]] = {}
        self._ref_over: dict[str, list[TooManyPairs]] = {}
        self._cands: dict[tuple, tuple[np.ndarray, np.ndarray] | lsh.TooManyCandidates] = {}
        # each step computed (not loaded) and loaded from disk, by name; the disk store (calib.search.stored:
        # disk True, unless CALIB_CACHE=off; None: only with CALIB_CACHE=on)
        self.computed: Counter = Counter()
        self.loaded: Counter = Counter()
        self._disk = Stored.of(self, disk)
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
        """How many results of each expensive step this workspace holds, and (``computed``, ``loaded``)
        how many it computed and loaded from disk, by step."""
        return {"shingle_sets": len(self._sets), "signature_matrices": len(self._sigs),
                "reference_sets": len(self._ref), "candidate_sets": len(self._cands),
                "computed": dict(self.computed), "loaded": dict(self.loaded), "on_disk": self._disk is not None}

    def _rep_caches(self) -> tuple[dict, ...]:
        """The caches keyed by a shingling fingerprint: the string itself, ``fp:weighting``, or a tuple led by it."""
        return (self._sets, self._keys, self._copies, self._df, self._sigs, self._ref, self._ref_over, self._cands,
                self._pos, self._est, self._neg_j)

    @contextmanager
    def transient(self):
        """Within the block, representations first sketched there are dropped on leaving it: an
        export's targets (another normalization, NeMo's character 24-grams) each hold their
        sets and signatures while they are scored, not all at once beside the config's."""
        def shingling(key) -> str:  # fingerprints are hex: the part before a ':' is the fingerprint
            return (key if isinstance(key, str) else key[0]).split(":")[0]
        before = {shingling(k) for k in self._sets}
        try:
            yield self
        finally:
            gone = {shingling(k) for k in self._sets} - before
            for cache in self._rep_caches():
                for k in [k for k in cache if shingling(k) in gone]:
                    del cache[k]

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
        """The line stoplist of ``rep.strip_lines`` (None: off) and the texts it leaves
        (:mod:`calib.sketches.boilerplate`)."""
        if not rep.strip_lines:
            return None, self.sample.texts
        key = rep.normalization().with_(strip_lines=rep.strip_lines).fingerprint()
        if key not in self._texts:
            self.computed["stripped"] += 1
            st = stoplist(self._line_table("stoplist"), rep, rep.strip_lines)
            self._texts[key] = (st, st.strip_all(self._line_table("sample"), rep))
        return self._texts[key]

    def _line_table(self, which: str) -> LineTable:
        """The lines of the sample's texts, or (``stoplist``) of the texts the stoplist is counted on."""
        which = "sample" if self.line_corpus is None else which
        if which not in self._lines:
            self._lines[which] = LineTable(self.line_corpus if which == "stoplist" else self.sample.texts)
        return self._lines[which]

    def sets(self, rep: Representation) -> ShingleSets:
        """The shingle sets, weighted (:class:`calib.sketches.weighted_minhash.WeightedSets`) under a weighting."""
        key = rep.shingling_fingerprint()
        if key not in self._sets:
            self._sets[key] = kept(self, "shingle_sets", key,
                                   lambda: shingle_hashes(self.stripped(rep)[1], rep, unique=True),
                                   lambda s: {"offsets": s.offsets, "hashes": s.hashes},
                                   lambda a: ShingleSets(a["offsets"], a["hashes"], True))
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

    def stands_on(self, rep: Representation) -> dict:
        """What ``rep``'s figures stand on beyond the sample, as a sweep row records it: an idf
        weighting's document frequencies (``idf_source``: "sample" or the corpus as named,
        ``idf_sha256``: the table's sha256, as config.json's ``weights``) and the boilerplate
        stoplist (``stoplist_source``, ``stoplist_sha256``: the stoplist.json an export writes).
        ``calib export --from-sweep`` recomputes them and refuses a row they differ from."""
        out = {}
        if rep.weighting != "none":
            key = rep.shingling_fingerprint()
            if key not in self._df_sha:
                self._df_sha[key] = self.frequencies(rep).sha256()
            out.update(idf_source=self.sources["idf"], idf_sha256=self._df_sha[key])
        if rep.strip_lines:
            key = rep.normalization().with_(strip_lines=rep.strip_lines).fingerprint()
            if f"strip:{key}" not in self._df_sha:  # every row of the representation records it
                self._df_sha[f"strip:{key}"] = kept(self, "stoplists", key, lambda: self.stripped(rep)[0].sha256(rep),
                                                    text_array, array_text)
            out.update(stoplist_source=self.sources["stoplist"], stoplist_sha256=self._df_sha[f"strip:{key}"])
        return out

    def sketch_similarity(self, rep: Representation, i, j) -> np.ndarray:
        """What a signature column's collision probability is: J, or weighted J under a weighting."""
        if rep.weighting == "none":
            return pairs_jaccard(self.sets(rep), i, j)
        return pairs_weighted_jaccard(self.sets(rep), i, j)

    def text_keys(self, rep: Representation) -> np.ndarray:
        """Digests of the normalized (stripped) texts: the short documents' exact match (calib.verification.short)."""
        key = rep.shingling_fingerprint()
        if key not in self._keys:
            self._keys[key] = kept(self, "text_keys", key, lambda: text_keys(self.stripped(rep)[1], rep),
                                   lambda k: {"keys": k}, lambda a: a["keys"])
        return self._keys[key]

    def short(self, cfg: Config) -> np.ndarray:
        return short_mask(self.sets(cfg.rep).sizes(), cfg.min_shingles)

    def copies(self, rep: Representation) -> Copies:
        """Groups of documents with identical shingle sets (none when not collapsing)."""
        key = rep.shingling_fingerprint()
        if key not in self._copies:
            self._copies[key] = kept(self, "copies", key, lambda: find_copies(self.sets(rep)) if self.collapse else
                                     Copies(np.arange(self.sample.n)), lambda c: {"canonical": c.canonical},
                                     lambda a: Copies(a["canonical"]))
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
        if have is None:
            have = stored.load_signatures(self, key, rep.num_perm)
        if have is None or have.shape[1] < rep.num_perm:
            have = signatures(self.sets(rep), rep.num_perm, rep.seed, rep.scheme)
            stored.save_signatures(self, key, have)
        self._sigs[key] = have
        return have[:, :rep.num_perm]

    def reference_pairs(self, rep: Representation, floor: float, max_pairs: int | None = None,
                        measure: str = "jaccard") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every pair with exact ``measure`` >= floor (i, j, J or C), cached per
        representation and measure.

        Raises :class:`calib.verification.jaccard.TooManyPairs` when more than ``max_pairs``
        pairs have J >= floor: the join stops there, so memory stays within
        the budget. Such a failure is remembered (it proves at least ``found``
        pairs at that floor and below).
        """
        key = (rep.shingling_fingerprint(), measure) + (() if rep.weighting == "none" else (rep.weighting,))
        stored.load_over(self, key)
        for exc in self._ref_over.get(key, ()):
            if floor <= exc.threshold and max_pairs is not None and exc.found > max_pairs:
                raise TooManyPairs(floor, exc.found, max_pairs)
        cached = self._ref.get(key)
        if cached is None or cached[0] > floor:
            cached = stored.load_join(self, key, floor) or cached
        if cached is None or cached[0] > floor:
            self.computed["joins"] += 1
            try:
                cached = (floor, self._join(rep, floor, max_pairs, measure))
            except TooManyPairs as exc:
                self._ref_over.setdefault(key, []).append(exc)
                stored.save_over(self, key)
                raise
            stored.save_join(self, key, *cached)
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
        if floor >= 1.0 and measure == "jaccard" and rep.weighting == "none" and self._distinct_canonicals(rep):
            # J = 1 means equal sets, and no two canonical rows have equal sets: the join is empty
            # (what an unverified target's scoring asks for; the join's token ranking alone took seconds)
            ci = cj = np.zeros(0, np.int64)
            cs = np.zeros(0)
        else:
            ci, cj, cs = get_measure(measure).all_pairs(self.sets(rep), floor, active=cp.is_canonical,
                                                        max_pairs=max_pairs)
        total = cp.pair_count(ci, cj)
        if max_pairs is not None and total > max_pairs:
            raise TooManyPairs(floor, total, max_pairs)
        ii, jj, src = cp.expand(ci, cj)
        return ii, jj, spread(cs, src, 1.0)

    def _distinct_canonicals(self, rep: Representation) -> bool:
        """Do the canonical rows' set digests differ (then no two hold equal sets)? A digest
        collision can leave equal sets on two canonical rows (:func:`find_copies`): then no."""
        sets, cp = self.sets(rep), self.copies(rep)
        rows = np.flatnonzero(cp.is_canonical & (sets.sizes() > 0))
        digests = set_digests(sets)[rows]
        return len(np.unique(digests, axis=0)) == len(rows)

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
            def compute():
                try:
                    return self._candidate_pairs(rep, b, r, max_pairs)
                except lsh.TooManyCandidates as exc:
                    return exc
            self._cands[key] = kept(self, "candidates", key + (max_pairs,), compute, stored.candidates_arrays,
                                    stored.arrays_candidates)
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



def as_workspace(sample_or_ws: Sample | Workspace, ignore_categories: Iterable[str] | None) -> Workspace:
    """The workspace to score on: ``sample_or_ws``'s (or a new one), ignoring
    ``ignore_categories`` (None: whatever the workspace already ignores)."""
    if isinstance(sample_or_ws, Workspace):
        return sample_or_ws if ignore_categories is None else sample_or_ws.ignoring(ignore_categories)
    return Workspace(sample_or_ws, ignore_categories=ignore_categories or ())
