"""The sampling design of a drawn set of pairs: strata and inclusion probabilities.

A drawn set (:mod:`calib.labeling.draw`) is a two-stage sample of the corpus's pairs:

1. a simple random sample S of ``n`` documents out of the corpus's ``N``
   (documents with an empty text are not part of the population): every
   corpus pair lies in S with probability ``pi1 = n(n-1) / (N(N-1))``;
2. the n(n-1)/2 pairs of S are partitioned by their exact Jaccard J (under
   the design's representation) into similarity bands ``[e_0, e_1), ...,
   [e_{H-1}, 1]`` above the floor ``e_0``, plus the stratum ``uniform``: every
   pair with J < e_0, almost all of them. From stratum h, holding ``N_h``
   pairs, ``m_h`` are drawn by simple random sampling without replacement.

A pair of stratum h is in the drawn set with probability
``pi = pi1 * m_h / N_h`` (its ``inclusion_probability`` in pairs.csv). The
estimators (:mod:`calib.labeling.weighted`) work on stage 2 (``N_h``, ``n_h``): ``pi1``
is the same for every pair and cancels in every ratio.

The representation J is computed under is kept as its document (the
``Representation.to_dict()`` written in design.json): the sample loader reads
designs below the sketching stage, and the draw (:mod:`calib.labeling.draw`,
:func:`~calib.labeling.draw.representation`) builds the Representation from it.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass, field, fields, replace

import numpy as np

UNIFORM = "uniform"
DEFAULT_EDGES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
FORMAT = 1


MAX_COUNT = 2**53  # document and pair counts beyond this are no draw's (and lose float precision)


def _check_count(name: str, v) -> None:
    """A count read from design.json: an integer in [0, 2**53], not 1e308 or 1.5."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v <= MAX_COUNT:
        raise ValueError(f"{name} must be an integer in [0, 2**53], got {v!r}")


def check_fields(cls, d: dict, *, objects: tuple[str, ...], arrays: tuple[str, ...]) -> dict:
    """design.json's fields for ``cls(**d)``: none missing, none unknown, ``objects`` JSON objects,
    ``arrays`` JSON arrays (made tuples); the derived ``strata`` is dropped."""
    d = dict(d)
    d.pop("strata", None)
    known = {f.name for f in fields(cls)}
    missing = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING
               and f.name not in d]
    if missing:
        raise ValueError(f"no {missing[0]!r} field")
    unknown = sorted(set(d) - known)
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r}")
    for k in objects:
        if k in d and not isinstance(d[k], dict):
            raise ValueError(f"field {k!r} must be a JSON object")
    for k in arrays:
        if k in d:
            if not isinstance(d[k], list):
                raise ValueError(f"field {k!r} must be a JSON array")
            d[k] = tuple(d[k])
    return d


def check_format(fmt) -> None:
    """design.json's ``format``: this calib's, or one line saying whose it is."""
    if fmt != FORMAT:
        newer = isinstance(fmt, int) and not isinstance(fmt, bool) and fmt > FORMAT
        raise ValueError(f"design format {fmt!r} is not {FORMAT}, the format this calib reads"
                         + (" (written by a newer calib: upgrade it)" if newer else ""))


def band_names(edges) -> tuple[str, ...]:
    """``J0.10-0.20`` ... one name per band between consecutive edges."""
    return tuple(f"J{lo:.2f}-{hi:.2f}" for lo, hi in zip(edges[:-1], edges[1:]))


@dataclass(frozen=True)
class Design:
    """Strata of a drawn set. ``population[h]`` = N_h pairs of the document
    sample in stratum h, ``drawn[h]`` = m_h pairs drawn from it; the strata are
    the bands of ``edges`` (in order) then ``uniform``."""

    rep: dict = field(hash=False)    # the Representation's document (Representation.to_dict())
    edges: tuple[float, ...]
    corpus_docs: int                 # N: non-empty documents in the corpus
    sample_docs: int                 # n: documents in the sample
    population: tuple[int, ...]
    drawn: tuple[int, ...]
    seed: int
    corpus: str = ""
    skipped_empty: int = 0           # corpus documents with an empty text (outside the population)
    draws: int = 1                   # 1 + the number of `--more` rounds
    extra: dict = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        e = np.asarray(self.edges, dtype=float)
        if len(e) < 2 or not np.all(np.isfinite(e)) or np.any(np.diff(e) <= 0) or e[0] <= 0 or e[-1] > 1:
            raise ValueError(f"band edges must increase within (0, 1], got {list(self.edges)}")
        for name in ("corpus_docs", "sample_docs", "seed", "skipped_empty", "draws"):
            _check_count(name, getattr(self, name))
        for name in ("population", "drawn"):
            for v in getattr(self, name):
                _check_count(name, v)
        if self.sample_docs > self.corpus_docs:
            raise ValueError(f"sample_docs {self.sample_docs:,} is more than corpus_docs {self.corpus_docs:,}")
        if len(self.population) != len(self.strata) or len(self.drawn) != len(self.strata):
            raise ValueError(f"the design has {len(self.strata)} strata, population/drawn give "
                             f"{len(self.population)}/{len(self.drawn)}")
        if any(m > p for m, p in zip(self.drawn, self.population)):
            raise ValueError("a stratum has more drawn pairs than pairs")

    @property
    def strata(self) -> tuple[str, ...]:
        return band_names(self.edges) + (UNIFORM,)

    @property
    def floor(self) -> float:
        return float(self.edges[0])

    @property
    def pi1(self) -> float:
        """Probability that a corpus pair lies in the document sample."""
        n, N = self.sample_docs, self.corpus_docs
        return n * (n - 1) / (N * (N - 1)) if N > 1 else 1.0

    def stratum_index(self, sim: np.ndarray) -> np.ndarray:
        """Stratum of each pair from its exact J: band h for e_h <= J < e_{h+1}
        (J = 1 in the last band), H (uniform) below the floor."""
        sim = np.asarray(sim, dtype=float)
        h = np.searchsorted(np.asarray(self.edges, dtype=float), sim, side="right") - 1
        h = np.minimum(h, len(self.edges) - 2)
        return np.where(sim < self.edges[0], len(self.edges) - 1, h).astype(np.int64)

    def inclusion_probability(self) -> np.ndarray:
        """pi1 * m_h / N_h per stratum (0 for an empty stratum)."""
        pop = np.asarray(self.population, dtype=float)
        return np.where(pop > 0, self.pi1 * np.asarray(self.drawn) / np.maximum(pop, 1), 0.0)

    def with_drawn(self, drawn) -> "Design":
        return replace(self, drawn=tuple(int(x) for x in drawn), draws=self.draws + 1)

    def to_json(self) -> str:
        d = asdict(self)
        d["strata"] = list(self.strata)
        d["format"] = FORMAT
        return json.dumps(d, indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> "Design":
        d = json.loads(text)
        if not isinstance(d, dict):
            kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(d), "a number")
            raise ValueError(f"a design is a JSON object, got {kind}")
        if "format" not in d:
            raise ValueError(f"no 'format' field (a design written by calib draw has \"format\": {FORMAT})")
        check_format(d.pop("format"))
        design = cls(**check_fields(cls, d, objects=("rep",), arrays=("edges", "population", "drawn")))
        pairs = design.sample_docs * (design.sample_docs - 1) // 2
        if sum(design.population) != pairs:  # a draw's strata partition the sample's pairs
            raise ValueError(f"population sums to {sum(design.population):,}, not the {pairs:,} pairs of "
                             f"sample_docs {design.sample_docs:,}")
        return design

    def shingle_label(self) -> str:
        """``char5``: the shingles the strata's J is computed on (as ``Representation.shingle_label``)."""
        return f"{self.rep.get('shingle', '?')}{self.rep.get('k', '?')}"

    def __str__(self) -> str:
        return (f"stratified draw: {self.sample_docs:,} of {self.corpus_docs:,} documents, "
                f"{sum(self.drawn):,} pairs in {len(self.strata)} strata by {self.shingle_label()} J "
                f"(floor {self.floor:g})")
