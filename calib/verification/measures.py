"""Verification measures: the similarity a configuration compares with its threshold.

A measure is one registered :class:`Measure`: its exact value per pair from
the shingle sets, its estimate from the signatures (and the exact set sizes),
and its all-pairs join above a threshold (the label-free reference of a
sweep). Registered here:

* ``jaccard``: J = |A & B| / |A | B| (:mod:`calib.verification.jaccard`);
* ``containment``: C = |A & B| / |A|, A the smaller set (:mod:`calib.verification.containment`).
  Its clustering keeps the containing (longer) document and proposes the
  contained, shorter one for removal, so it requires the ``longest``
  representative rule (by shingle-set size): ``keep = "longest"``.

A new measure is one module with the three functions plus one
:func:`register` call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from calib.verification import containment, jaccard, weighted_jaccard


@dataclass(frozen=True)
class Measure:
    """``exact(sets, i, j)``, ``estimate(sig, sizes, i, j)``, ``all_pairs(sets, t, active=, max_pairs=)``.
    ``symbol``: its letter in labels (J, C). ``keep``: the representative rule it requires (None: any)."""

    name: str
    symbol: str
    exact: Callable
    estimate: Callable
    all_pairs: Callable
    keep: str | None = None
    help: str = ""


MEASURES: dict[str, Measure] = {}


def register(m: Measure) -> Measure:
    MEASURES[m.name] = m
    return m


def get_measure(name) -> Measure:
    """The registered measure ``name`` (any case)."""
    key = str(getattr(name, "value", name)).strip().lower()
    if key not in MEASURES:
        raise ValueError(f"measure must be one of {tuple(MEASURES)}, got {name!r}")
    return MEASURES[key]


def _estimate_jaccard(sig: np.ndarray, sizes: np.ndarray, i, j) -> np.ndarray:
    from calib.sketches.minhash import estimate_jaccard
    return estimate_jaccard(sig, i, j)


JACCARD = register(Measure("jaccard", "J", jaccard.pairs_jaccard, _estimate_jaccard, jaccard.all_pairs_above,
                           help="|A & B| / |A | B|"))
CONTAINMENT = register(Measure("containment", "C", containment.pairs_containment,
                               containment.estimate_containment, containment.all_pairs_containment_above,
                               keep="longest", help="|A & B| / |A|, A the smaller set"))
WEIGHTED_JACCARD = register(Measure("weighted_jaccard", "Jw", weighted_jaccard.pairs_weighted_jaccard,
                                    weighted_jaccard.estimate_weighted_jaccard,
                                    weighted_jaccard.all_pairs_weighted_above,
                                    help="sum min(w) / sum max(w) of the weighted shingle sets"))
MEASURE_NAMES = tuple(MEASURES)
