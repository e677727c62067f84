"""A generated corpus with planted near-duplicates at known rates, from the real text in data/base.

Singletons (one base text each), duplicate families of 2-3 documents (word
substitutions at a rate drawn per document, so their Jaccard spans the whole
range from light to heavy edits) and "boilerplate" pairs that share a long
passage but are labeled not duplicates (they become false removals at low
thresholds). The ``group`` column is the oracle: same group = duplicate.
Deterministic for a given seed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from _families import _bases  # the same base texts, read the same way


def _edit(words: list[str], rng: np.random.Generator, rate: float, vocab: np.ndarray) -> str:
    hit = rng.random(len(words)) < rate
    return " ".join(np.where(hit, vocab[rng.integers(0, len(vocab), len(words))], np.array(words, dtype=object)))


def planted_corpus(seed: int = 0, singletons: int = 1000, families: int = 250, boilerplate: int = 100,
                   edit=(0.0, 0.15)) -> pd.DataFrame:
    """Documents ``id``, ``text``, ``group`` (same group = duplicate), in a seeded random order."""
    rng = np.random.default_rng(seed)
    bases = _bases(40)
    need = singletons + families + 3 * boilerplate
    if need > len(bases):
        raise ValueError(f"{need} base texts needed, data/base has {len(bases)}")
    order = rng.permutation(len(bases))
    vocab = np.array(sorted({w for p in bases[order[-1]] + bases[order[-2]] for w in p.split()}), dtype=object)
    docs, k = [], 0
    for s in range(singletons):
        docs.append((f"S{s}", " ".join(bases[order[k]]), f"S{s}"))
        k += 1
    for f in range(families):
        words = " ".join(bases[order[k]]).split()
        k += 1
        for m in range(int(rng.integers(2, 4))):
            docs.append((f"F{f}-{m}", _edit(words, rng, rng.uniform(*edit), vocab), f"F{f}"))
    for b in range(boilerplate):
        shared = " ".join(bases[order[k]]).split()
        share = rng.uniform(0.3, 0.9)  # the tails are short next to the shared passage at high shares
        for m in (1, 2):
            tail = " ".join(bases[order[k + m]]).split()
            cut = max(1, int(len(tail) * (1 - share)))
            docs.append((f"B{b}-{m}", " ".join(shared + tail[:cut]), f"B{b}-{m}"))
        k += 3
    frame = pd.DataFrame(docs, columns=["id", "text", "group"])
    return frame.iloc[rng.permutation(len(frame))].reset_index(drop=True)


def write_corpus(frame: pd.DataFrame, path) -> Path:
    path = Path(path)
    with open(path, "w", encoding="utf-8") as f:
        for d, t in zip(frame["id"], frame["text"]):
            f.write(json.dumps({"id": d, "text": t}) + "\n")
    return path
