"""A generated corpus with large groups, built from the real text in data/base.

Like the licence corpora that broke the Wilson intervals: a few big families
of near-identical documents (each a base text with a few per-document word
substitutions and, now and then, a dropped paragraph) hold most of the
same-group pairs, next to many small groups (2-3 documents, lighter or heavier
edits) and singletons. Deterministic for a given seed.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd

from calib.reading.sample import Sample, from_frames

BASE = Path(__file__).resolve().parents[1] / "data" / "base" / "base_texts.jsonl.gz"


def _bases(min_words: int) -> list[list[str]]:
    out = []
    with gzip.open(BASE, "rt", encoding="utf-8") as f:
        for line in f:
            paras = json.loads(line)["paragraphs"]
            if sum(len(p.split()) for p in paras) >= min_words:
                out.append(paras)
    return out


def _variant(paras: list[str], rng: np.random.Generator, edit: float, vocab: np.ndarray, drop: float) -> str:
    keep = [p for p in paras if rng.random() >= drop] or paras[:1]
    words = " ".join(keep).split()
    hit = rng.random(len(words)) < edit
    words = np.where(hit, vocab[rng.integers(0, len(vocab), len(words))], np.array(words, dtype=object))
    return " ".join(words)


def family_sample(seed: int = 0, families=(70, 50, 35), small_groups: int = 120, singletons: int = 150,
                  edit=(0.01, 0.05)) -> Sample:
    """Documents with a ``group`` column: ``families`` big near-identical
    groups, ``small_groups`` groups of 2-3 and ``singletons`` lone documents."""
    rng = np.random.default_rng(seed)
    bases = _bases(150)
    order = rng.permutation(len(bases))
    vocab = np.array(sorted({w for p in bases[order[-1]] + bases[order[-2]] for w in p.split()}), dtype=object)
    docs, k = [], 0
    for f, size in enumerate(families):
        paras = bases[order[k]]
        k += 1
        for m in range(size):
            docs.append((f"F{f}-{m}", _variant(paras, rng, rng.uniform(*edit), vocab, 0.05), f"F{f}"))
    for g in range(small_groups):
        paras = bases[order[k]]
        k += 1
        for m in range(int(rng.integers(2, 4))):
            docs.append((f"G{g}-{m}", _variant(paras, rng, rng.uniform(0.0, 0.12), vocab, 0.1), f"G{g}"))
    for s in range(singletons):
        docs.append((f"S{s}", " ".join(bases[order[k]]), f"S{s}"))
        k += 1
    frame = pd.DataFrame(docs, columns=["id", "text", "group"])
    return from_frames(frame, name=f"families-{seed}", slice_columns=())
