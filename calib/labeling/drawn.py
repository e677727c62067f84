"""A drawn set in memory and what both draws share (:mod:`calib.labeling.draw`, the
document-sample draw; :mod:`calib.labeling.corpus_draw`, the corpus-scale draw): the error
type, the default representation, the allocation of pairs to strata and the
candidates file of a corpus draw."""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import pandas as pd

from calib.reading.design import Design
from calib.reading.drawn_check import CAND_DTYPE, CANDIDATES  # noqa: F401 (public here too)
from calib.sketches.represent import Representation

DEFAULT_REP = Representation(shingle="char", k=5)
MAX_PAIRS = 1_000_000  # a corpus draw's --pairs: far beyond what people label, far below a corpus's pairs


class DrawError(ValueError):
    """Bad input or options for a draw: one readable line."""


def check_options(pairs: int, uniform_share: float, seed: int, most_pairs: int | None = None) -> None:
    """The options both draws share, refused in one line before any work. ``most_pairs``: the
    most ``--pairs`` a draw takes (the corpus draw's uniform stratum holds every corpus pair; the
    document-sample draw takes every pair of its sample beyond what its strata hold)."""
    if pairs < 1:
        raise DrawError(f"--pairs must be >= 1, got {pairs}")
    if most_pairs is not None and pairs > most_pairs:
        raise DrawError(f"--pairs must be in [1, {most_pairs:,}] (pairs people label; every drawn pair's exact J "
                        f"is computed), got {pairs:,}")
    if not 0.0 <= uniform_share <= 1.0:
        raise DrawError(f"uniform share must be in [0, 1], got {uniform_share}")
    if not 0 <= seed < 2**63:
        raise DrawError(f"--seed must be an integer >= 0, got {seed}")


@dataclass(frozen=True, eq=False)
class DrawnSet:
    docs: pd.DataFrame   # id, text (the document sample, in corpus order)
    pairs: pd.DataFrame  # PAIR_COLUMNS, label "" when unlabeled
    design: Design       # or a corpus-scale design (calib.reading.corpus_design.CorpusDesign)
    candidates: np.ndarray | None = None  # a corpus design's kept candidates (calib.labeling.corpus_draw)


def allocate(total: int, population, uniform_share: float = 0.2) -> np.ndarray:
    """Pairs to draw per stratum (bands..., uniform): ``uniform_share`` of
    ``total`` to the last stratum, the rest equally over the others; no
    stratum gets more than it holds, the excess goes to those with room."""
    pop = np.asarray(population, dtype=np.int64)
    total = min(int(total), int(pop.sum()))  # more than the strata hold: all of them (and no int64 overflow)
    want = np.zeros(len(pop), dtype=float)
    want[-1] = uniform_share * total
    want[:-1] = (total - want[-1]) / max(len(pop) - 1, 1)
    return _fill(np.floor(want).astype(np.int64), pop, total)


def _fill(alloc: np.ndarray, room: np.ndarray, total: int) -> np.ndarray:
    """Cap ``alloc`` at ``room`` and hand out what is left (to the emptiest
    strata first) until ``total`` or no room is left."""
    alloc = np.minimum(alloc, room)
    left = min(int(total), int(room.sum())) - int(alloc.sum())
    while left > 0:
        free = np.flatnonzero(alloc < room)
        share = max(left // len(free), 1)
        for h in free[np.argsort(alloc[free], kind="stable")]:
            add = min(share, int(room[h] - alloc[h]), left)
            alloc[h] += add
            left -= add
            if left == 0:
                break
    return alloc


def exact_similarity(rep: dict, texts: list, i, j) -> np.ndarray:
    """Exact J of pairs (i, j) of ``texts`` under the representation document ``rep`` (design.json's):
    the similarity a drawn set's rows were drawn with."""
    from calib.sketches.shingles import shingle_hashes
    from calib.verification.jaccard import pairs_jaccard
    sets = shingle_hashes(texts, Representation.from_dict(rep), unique=True)
    return pairs_jaccard(sets, np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64))


def loose_pairs(design, texts: list, i, j) -> tuple[np.ndarray, np.ndarray]:
    """(collides, agreements) of pairs (i, j) of ``texts`` in a corpus draw's loose pass as design.json
    describes it: the signatures the pass computes (``b*r + verify_hashes`` values under its representation,
    seed and scheme), its ``b`` band keys of ``r`` rows (:mod:`calib.labeling.loose_pass`), and the
    agreements on the verify columns after them. A document without a shingle collides with none."""
    from dataclasses import replace as _replace

    from calib.candidates import lsh
    from calib.sketches.minhash import signatures_from_texts
    b, r, V = design.b, design.r, design.verify_hashes
    rep = _replace(Representation.from_dict(design.rep), num_perm=b * r + V, scheme=design.scheme)
    i, j = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
    used = np.unique(np.concatenate([i, j]))
    sig = signatures_from_texts([texts[k] for k in used.tolist()], rep)
    at = np.searchsorted(used, i), np.searchsorted(used, j)
    keys = lsh.band_keys(sig[:, :b * r], b, r).astype(np.uint32)  # (b, documents): the low 32 bits the pass keeps
    active = (sig != np.uint32(0xFFFFFFFF)).any(axis=1)
    collides = (keys[:, at[0]] == keys[:, at[1]]).any(axis=0) & active[at[0]] & active[at[1]]
    agree = (sig[at[0], b * r:] == sig[at[1], b * r:]).sum(axis=1)
    return collides, agree


def candidates_bytes(cand: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(cand, dtype=CAND_DTYPE), allow_pickle=False)
    return buf.getvalue()
