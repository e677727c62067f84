"""Generated samples for the seed-robust search, from the real text in data/base.

:func:`steep_sample`: near-duplicate pairs (word substitutions: J about 0.6-1) beside a few hard
negatives, pairs labeled not duplicate that share most of their text (J 0.62-0.8, inside the
duplicates' range), and singletons. A split whose 50% point lies above a threshold just
above the hard negatives lets hash luck decide which of them are removed.

:func:`inside_sample`: duplicates that are short documents copied (lightly edited) inside long ones:
Jaccard is low for them (the short one is a small part of the long one), containment about 1.
Deterministic for a given seed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from _families import _bases
from _planted import _edit

from calib.reading.sample import Sample, from_frames


WORDS = 200  # the inside sample's long documents: at most this many words (a small, fast sample)


def _words(bases, k, cap=None) -> list[str]:
    return " ".join(bases[k]).split()[:cap]


def _start(seed: int, min_words: int):
    """(rng, base texts, their seeded order, a vocabulary of substitutes) of one sample."""
    rng = np.random.default_rng(seed)
    bases = _bases(min_words)
    order = rng.permutation(len(bases))
    vocab = np.array(sorted({w for p in bases[order[-1]] + bases[order[-2]] for w in p.split()}), dtype=object)
    return rng, bases, order, vocab


def _shared_passage_pairs(docs, rng, bases, order, k, count, j_range, cap=None) -> int:
    """``count`` pairs labeled not duplicate (groups of one), each a shared passage followed by its own
    text: J = h / (h + 2 t) for a passage of h words and two own parts of t words, so t = h (1 - J) / (2 J)
    for J drawn from ``j_range``. Returns the next unused base."""
    for h in range(count):
        shared = _words(bases, order[k], cap)
        j = rng.uniform(*j_range)
        own = max(1, int(len(shared) * (1 - j) / (2 * j)))
        for m in (1, 2):
            docs.append((f"H{h}-{m}", " ".join(shared + _words(bases, order[k + m])[:own]), f"H{h}-{m}"))
        k += 3
    return k


def _singletons(docs, bases, order, k, count, cap=None) -> int:
    for s in range(count):
        docs.append((f"S{s}", " ".join(_words(bases, order[k], cap)), f"S{s}"))
        k += 1
    return k


def _sample(docs, rng, name: str) -> Sample:
    frame = pd.DataFrame(docs, columns=["id", "text", "group"])
    return from_frames(frame.iloc[rng.permutation(len(frame))].reset_index(drop=True), name=name, slice_columns=())


def steep_sample(seed: int = 0, pairs: int = 80, hard: int = 10, singletons: int = 40,
                 edit=(0.0, 0.06), hard_j=(0.62, 0.8)) -> Sample:
    rng, bases, order, vocab = _start(seed, 80)
    docs, k = [], 0
    for f in range(pairs):
        words = _words(bases, order[k])
        k += 1
        for m in range(2):
            docs.append((f"F{f}-{m}", _edit(words, rng, rng.uniform(*edit), vocab), f"F{f}"))
    k = _shared_passage_pairs(docs, rng, bases, order, k, hard, hard_j)
    _singletons(docs, bases, order, k, singletons)
    return _sample(docs, rng, f"steep-{seed}")


def inside_sample(seed: int = 0, pairs: int = 30, hard: int = 20, singletons: int = 20, part=(0.15, 0.4),
                  hard_j=(0.2, 0.45)) -> Sample:
    """``pairs`` short documents (a ``part`` of a long one, lightly edited) inside their long one,
    and ``hard`` pairs labeled not duplicate that share a passage (a header: J in ``hard_j``,
    containment about 2J / (1 + J), below the copies' 1)."""
    rng, bases, order, vocab = _start(seed, 150)
    docs, k = [], 0
    for f in range(pairs):
        words = _words(bases, order[k], WORDS)
        k += 1
        n = max(20, int(len(words) * rng.uniform(*part)))
        start = int(rng.integers(0, len(words) - n + 1))
        docs.append((f"L{f}", " ".join(words), f"F{f}"))
        docs.append((f"P{f}", _edit(words[start:start + n], rng, rng.uniform(0.0, 0.01), vocab), f"F{f}"))
    k = _shared_passage_pairs(docs, rng, bases, order, k, hard, hard_j, WORDS // 2)
    _singletons(docs, bases, order, k, singletons, WORDS)
    return _sample(docs, rng, f"inside-{seed}")
