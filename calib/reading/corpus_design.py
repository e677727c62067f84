"""The design of a corpus-scale draw (``kind = "corpus"``): pairs drawn from every document.

A draw over the whole corpus (:mod:`calib.labeling.corpus_draw`) reaches a
corpus pair by two independent routes:

1. **LSH route.** A loose MinHash LSH pass over all ``N`` documents (``b``
   bands of ``r`` rows) makes a pair a candidate with probability
   ``P(J) = 1 - (1 - J^r)^b`` over the hash (the S-curve). ``V =
   verify_hashes`` further MinHash values (columns the bands do not use, so
   independent of the collision given J) estimate J as ``Jv = K / V``, ``K ~
   Binomial(V, J)`` agreements. Strata (``strata_by``):

   * ``"estimate"`` (every draw since the scale work): band h holds the
     candidates with ``e_h <= Jv < e_{h+1}`` (``Jv = 1`` in the last band);
     ``N_h`` of them (``population[h]``), ``n_h`` (``drawn[h]``) drawn by
     simple random sampling. Only the drawn pairs' exact J is computed. Given
     the hash, a candidate of band h is drawn with probability ``f_h = n_h /
     N_h``, exactly; over the hash, a pair of exact J lands in band h with
     ``p_h(J) = P(J) B_h(J)``, ``B_h(J) = P[e_h <= K/V < e_{h+1}]`` (binomial,
     independent of the collision), so

         pi_L(J) = sum_h P(J) B_h(J) f_h.

     Unbiased: the Horvitz-Thompson weight uses the *exact* J of the drawn
     pair (the probability is a property of the pair, not of its estimate),
     and a pair whose Jv falls in another band than its J is covered by that
     band's term. A pair below ``edges[0]`` still has ``pi_L > 0`` (its Jv can
     land above the floor); ``f_h`` is treated as fixed, as N_h is a sum over
     ~N^2 independent pair events (the usual two-phase approximation).
   * ``"exact"`` (design.json written before): the kept candidates (``Jv >=
     verify_cut``, probability ``Q(J) = P[K >= ceil(V verify_cut)]``) with
     exact J >= ``edges[0]`` are cut into bands by exact J: ``pi_L = P(J)
     Q(J) f_h(J)``.

   In both, ``p_h(J)`` (:meth:`CorpusDesign.route_matrix`) gives ``pi_L =
   sum_h p_h f_h``; the loose pass's variance (Poisson over pairs, then SRS in
   the band) is ``sum_k (y_k / pi_k)^2 (sum_h p_h f_h^2 - pi_L^2)``, estimated
   over the drawn band pairs with one more ``1 / pi`` (:meth:`loose_term`).
2. **Uniform route.** ``m`` distinct pairs of two random documents out of the
   ``N(N-1)/2`` (``population[-1]``): ``pi_U = m / (N(N-1)/2)``.

A pair's inclusion probability is the union ``pi = 1 - (1 - pi_L)(1 - pi_U)``
(a pair below the floor has ``pi_L = 0``). Rows of pairs.csv name the route
that drew them (a band, or ``uniform``); the Horvitz-Thompson weights
``1 / pi`` do not depend on it (:mod:`calib.estimates.corpus_weighted`).

``later`` keeps, per drawn pair (``"id_a\\tid_b"``), the exact J of the later
document's (in corpus order) links to earlier documents among the kept
candidates: a document is removed by a keep-first rule when it has a verified
earlier neighbour, so a verified pair counts ``1 / d`` removed documents, ``d``
the later document's verified earlier neighbours.

``slice_docs`` (``{field: {value: documents}}``, values as text, ``"(missing)"`` for a
document without one) counts the corpus's N non-empty documents per value of each slice field
given to the draw (``--slice-fields``): the denominators of the per-slice shares of
:mod:`calib.estimates.corpus_slices`. A design.json written before it has none (``{}``).

``corpus`` is the corpus file's absolute path and ``corpus_sha256`` its sha256 (``--more``
re-reads it from any folder and refuses another file); ``digests`` seal the drawn set's four
files (:mod:`calib.reading.drawn_check`, which checks them against each other).

An old design.json (no ``kind``: the document-sample design of
:mod:`calib.reading.design`) still loads as that design (:func:`load_design`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np

from calib.reading.design import Design, _check_count, check_fields, check_format

KIND = "corpus"
DEFAULT_CORPUS_EDGES = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def loose_curve(sim, b: int, r: int) -> np.ndarray:
    """P(J) = 1 - (1 - J^r)^b: the loose pass's collision probability."""
    s = np.clip(np.asarray(sim, dtype=float), 0.0, 1.0)
    with np.errstate(divide="ignore"):
        return -np.expm1(b * np.log1p(-(s ** r)))


def verify_pass(sim, hashes: int, cut: float) -> np.ndarray:
    """Q(J) = P[Binomial(hashes, J) >= ceil(hashes * cut)]: a candidate's estimated J passes the cut."""
    from scipy.stats import binom
    k = math.ceil(hashes * cut - 1e-9)
    s = np.clip(np.asarray(sim, dtype=float), 0.0, 1.0)
    return binom.sf(k - 1, hashes, s) if k > 0 else np.ones_like(s)


@dataclass(frozen=True)
class CorpusDesign:
    """Strata of a corpus-scale draw: bands of candidates (``population[h]`` = N_h) then
    ``uniform`` (``population[-1]`` = N(N-1)/2, every corpus pair)."""

    rep: dict = field(hash=False)
    edges: tuple[float, ...]
    corpus_docs: int                 # N: non-empty documents
    sample_docs: int                 # documents in documents.jsonl (those of the drawn pairs)
    population: tuple[int, ...]
    drawn: tuple[int, ...]
    seed: int
    b: int                           # loose pass: bands
    r: int                           # loose pass: rows per band
    verify_hashes: int = 128
    verify_cut: float = 0.15
    corpus: str = ""
    skipped_empty: int = 0
    draws: int = 1
    candidates: int = 0              # loose candidate pairs before the verify cut
    scheme: str = "prefix"           # the loose pass's MinHash scheme (prefix: independent permutations)
    strata_by: str = "exact"         # "estimate": bands by the verify estimate K / V (new draws); "exact": by J
    kind: str = KIND
    later: dict = field(default_factory=dict, hash=False, compare=False)
    doc_index: tuple[int, ...] = field(default=(), hash=False, compare=False)  # each document's place among the N
    extra: dict = field(default_factory=dict, compare=False)
    slice_docs: dict = field(default_factory=dict, hash=False)  # {field: {value: documents}} over the N
    id_field: str = "id"             # the corpus's id and text fields (--more re-reads the corpus by them)
    text_field: str = "text"
    corpus_sha256: str = ""          # sha256 of the corpus file drawn from (--more refuses another); "" if unknown
    digests: dict = field(default_factory=dict, hash=False, compare=False)  # the set's parts: calib.reading.drawn_check

    def __post_init__(self) -> None:
        Design(self.rep, self.edges, 2, 2, (0,) * len(self.edges), (0,) * len(self.edges), 0)  # edges' rule
        if self.kind != KIND:
            raise ValueError(f"kind must be {KIND!r}, got {self.kind!r}")
        for name in ("corpus_docs", "sample_docs", "seed", "skipped_empty", "draws", "b", "r", "verify_hashes",
                     "candidates"):
            _check_count(name, getattr(self, name))
        for name in ("population", "drawn"):
            for v in getattr(self, name):
                _check_count(name, v)
        if len(self.population) != len(self.strata) or len(self.drawn) != len(self.strata):
            raise ValueError(f"the design has {len(self.strata)} strata, population/drawn give "
                             f"{len(self.population)}/{len(self.drawn)}")
        if any(m > p for m, p in zip(self.drawn, self.population)):
            raise ValueError("a stratum has more drawn pairs than pairs")
        if self.population[-1] != self.corpus_docs * (self.corpus_docs - 1) // 2:
            all_pairs = self.corpus_docs * (self.corpus_docs - 1) // 2
            raise ValueError(f"the uniform stratum holds {self.population[-1]:,} pairs, not the {all_pairs:,} "
                             f"pairs of corpus_docs {self.corpus_docs:,}")
        if self.strata_by not in ("estimate", "exact"):
            raise ValueError(f"strata_by must be 'estimate' or 'exact', got {self.strata_by!r}")
        if self.scheme not in ("prefix", "oph"):
            raise ValueError(f"scheme must be 'prefix' or 'oph', got {self.scheme!r}")
        _check_slice_docs(self.slice_docs, self.corpus_docs)
        _check_types(self)
        for name in ("id_field", "text_field"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"{name} must be a field name, got {getattr(self, name)!r}")
        if self.b < 1 or self.r < 1 or not 0.0 <= self.verify_cut < 1.0:
            raise ValueError(f"loose pass b={self.b}, r={self.r}, verify_cut={self.verify_cut!r}: b, r >= 1 and "
                             "verify_cut in [0, 1) expected")

    # -- the same surface as Design ------------------------------------------------
    strata = Design.strata
    floor = Design.floor
    pi1 = 1.0  # no document-sample stage: every document's pairs can be drawn
    stratum_index = Design.stratum_index
    shingle_label = Design.shingle_label

    def route_matrix(self, sim) -> np.ndarray:
        """(pairs, bands) p_h(J): the chance over the hash that a pair of exact J ``sim`` is a
        kept candidate of band h (see the module docstring)."""
        sim = np.clip(np.atleast_1d(np.asarray(sim, dtype=float)).ravel(), 0.0, 1.0)
        H = len(self.edges) - 1
        P = loose_curve(sim, self.b, self.r)
        out = np.zeros((len(sim), H))
        if self.strata_by == "exact":
            h = self.stratum_index(sim)
            band = np.flatnonzero(h < H)
            out[band, h[band]] = (P * verify_pass(sim, self.verify_hashes, self.verify_cut))[band]
            return out
        from scipy.stats import binom
        V = self.verify_hashes
        k = np.arange(V + 1)
        hk = self.stratum_index(k / V)
        pmf = binom.pmf(k[None, :], V, sim[:, None])
        for h in range(H):
            out[:, h] = pmf[:, hk == h].sum(axis=1)
        return out * P[:, None]

    def p_candidate(self, sim) -> np.ndarray:
        """The chance over the hash that a pair of exact J is a candidate of some band:
        P(J) Q(J) for J >= the floor (0 below) when strata are by J, P(J) P[Jv >= floor] by Jv."""
        sim = np.asarray(sim, dtype=float)
        return self.route_matrix(sim).sum(axis=1).reshape(sim.shape)

    def _fractions(self, drawn) -> np.ndarray:
        n = np.asarray(self.drawn if drawn is None else drawn, dtype=float)
        N = np.asarray(self.population, dtype=float)
        return np.where(N > 0, n / np.maximum(N, 1), 0.0)

    def pair_probability(self, sim, drawn=None) -> np.ndarray:
        """pi per pair of exact J ``sim``: 1 - (1 - pi_L)(1 - pi_U), with ``drawn`` (default the
        design's) pairs per stratum, e.g. the labeled ones."""
        sim = np.asarray(sim, dtype=float)
        frac = self._fractions(drawn)
        pi_l = self.route_matrix(sim) @ frac[:-1]
        # at most 1: with every band taken whole the routes' sum is 1 up to rounding (1.0000000000000002)
        return np.minimum(1.0 - (1.0 - pi_l) * (1.0 - frac[-1]), 1.0).reshape(sim.shape)

    def loose_term(self, sim, drawn=None) -> np.ndarray:
        """Per drawn band pair: (sum_h p_h f_h^2 - pi_L^2) / pi_L^3, so that the loose pass's
        variance of sum e / pi is estimated by sum e^2 loose_term over the band pairs
        (strata by J: (1 - p) / (p^2 f_h), p = P(J) Q(J))."""
        sim = np.asarray(sim, dtype=float)
        frac = self._fractions(drawn)[:-1]
        m = self.route_matrix(sim)
        pi_l = m @ frac
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(pi_l > 0, (m @ frac ** 2 - pi_l ** 2) / np.maximum(pi_l, 1e-300) ** 3, 0.0)
        return np.maximum(t, 0.0).reshape(sim.shape)

    def inclusion_probability(self) -> np.ndarray:
        """Per stratum, the route's own fraction n_h / N_h (a pair's pi also holds P(J) Q(J))."""
        pop = np.asarray(self.population, dtype=float)
        return np.where(pop > 0, np.asarray(self.drawn) / np.maximum(pop, 1), 0.0)

    with_drawn = Design.with_drawn
    to_json = Design.to_json

    @classmethod
    def from_dict(cls, d: dict) -> "CorpusDesign":
        d = check_fields(cls, d, objects=("rep", "later", "extra", "slice_docs", "digests"),
                         arrays=("edges", "population", "drawn", "doc_index"))
        if isinstance(d.get("verify_cut"), bool) or not isinstance(d.get("verify_cut", 0.0), (int, float)):
            raise ValueError("field 'verify_cut' must be a number")
        return cls(**d)

    def __str__(self) -> str:
        return (f"corpus draw: {sum(self.drawn):,} pairs from all {self.corpus_docs:,} documents in "
                f"{len(self.strata)} strata by {self.shingle_label()} J"
                f"{' estimated on ' + str(self.verify_hashes) + ' values' if self.strata_by == 'estimate' else ''} "
                f"(loose LSH b={self.b} r={self.r} {self.scheme}, "
                f"P(J={self.floor:g}) = {float(self.p_candidate(self.floor)):.3f}, "
                f"P(0.5) = {float(self.p_candidate(0.5)):.3f})")


def _check_types(d: CorpusDesign) -> None:
    """Every field's type and range, and the counts against the corpus's size: an edited
    design.json is refused here, not deep in an estimate (its parts: calib.reading.drawn_check)."""
    n = d.corpus_docs
    if d.sample_docs > n:
        raise ValueError(f"sample_docs {d.sample_docs:,} is more than corpus_docs {n:,}")
    if not 1 <= d.verify_hashes or d.b * d.r + d.verify_hashes > 8192:
        raise ValueError(f"verify_hashes {d.verify_hashes:,} with b={d.b}, r={d.r}: verify_hashes >= 1 and "
                         "b*r + verify_hashes <= 8192 expected")
    for name in ("corpus", "corpus_sha256"):
        if not isinstance(getattr(d, name), str):
            raise ValueError(f"{name} must be text, got {getattr(d, name)!r}")
    if any(isinstance(x, bool) or not isinstance(x, (int, np.integer)) or not 0 <= x < n for x in d.doc_index):
        raise ValueError(f"doc_index must hold places in [0, corpus_docs {n:,})")
    for key, vals in d.later.items():
        if not isinstance(vals, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                 and 0.0 <= v <= 1.0 for v in vals):
            raise ValueError(f"later[{key!r}] must be a list of J values in [0, 1]")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in d.digests.items()):
        raise ValueError("digests must map file names to sha256 text")


def _check_slice_docs(slice_docs: dict, n: int) -> None:
    """Each slice field's counts: documents per value (text), summing to the corpus's ``n``."""
    for f, counts in slice_docs.items():
        if not isinstance(counts, dict):
            raise ValueError(f"slice_docs[{f!r}] must be a JSON object of documents per value")
        for v in counts.values():
            _check_count(f"slice_docs[{f!r}]", v)
        if sum(counts.values()) != n:
            raise ValueError(f"slice_docs[{f!r}] counts {sum(counts.values()):,} documents, not the corpus's {n:,}")


def load_design(text: str):
    """design.json -> :class:`CorpusDesign` (``"kind": "corpus"``) or the document-sample
    :class:`~calib.reading.design.Design` (no ``kind``: every design.json written before)."""
    d = json.loads(text)
    if isinstance(d, dict) and "kind" in d:
        check_format(d.pop("format", None))
        return CorpusDesign.from_dict(d)
    return Design.from_json(text)
