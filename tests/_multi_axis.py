"""A planted sample whose best configuration differs from the first grid's in several axes at once.

Made from the real paragraphs in data/base:

* duplicate pairs: a text and the same text re-punctuated and re-wrapped (every comma, full stop,
  colon, ... followed or preceded by other marks, lines broken elsewhere), with a light edit (about 2%
  of the words replaced). With punctuation kept, their word shingles barely overlap; without, they
  sit near J = 0.8 (word 3-grams);
* template siblings, labeled not duplicates: a text and a copy with about 10% of its words replaced
  and its punctuation untouched. With punctuation kept they are far more alike than the duplicates;
  without, they sit near J = 0.55 (word 3-grams), below the duplicates;
* singletons.

So the configuration that finds the duplicates drops punctuation **and** verifies at a threshold
between the siblings and the duplicates under that normalization, which neither the first grid
(thresholds placed from the duplicates' similarities with punctuation) nor a one-axis step from its
rows reaches. Deterministic for a given seed.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
from _families import _bases

from calib.reading.sample import Sample, from_frames

MARKS = np.array([",", ";", ":", ".", "!", "?", "--", "(", ")", "'", '"', "/"], dtype=object)


def _repunctuate(text: str, rng: np.random.Generator) -> str:
    words = text.split()
    out = []
    for w in words:
        core = re.sub(r"[^\w]", "", w) or w
        out.append(core + (str(rng.choice(MARKS)) if rng.random() < 0.3 else ""))
    lines, line = [], []
    for w in out:  # re-wrapped at another width
        line.append(w)
        if rng.random() < 0.08:
            lines.append(" ".join(line))
            line = []
    return "\n".join(lines + [" ".join(line)])


def _edit(text: str, rng: np.random.Generator, rate: float, vocab: np.ndarray) -> str:
    words = text.split()
    hit = rng.random(len(words)) < rate
    return " ".join(np.where(hit, vocab[rng.integers(0, len(vocab), len(words))], np.array(words, dtype=object)))


def multi_axis_sample(seed: int = 0, duplicates: int = 80, siblings: int = 80, singletons: int = 200) -> Sample:
    rng = np.random.default_rng(seed)
    bases = [" ".join(p) for p in _bases(120)]
    order = rng.permutation(len(bases))
    vocab = np.array(sorted({w for t in bases[:50] for w in t.lower().split() if w.isalpha()}), dtype=object)
    docs, k = [], 0
    for d in range(duplicates):
        text = bases[order[k]]
        k += 1
        docs += [(f"D{d}a", text, f"D{d}"), (f"D{d}b", _repunctuate(_edit(text, rng, 0.02, vocab), rng), f"D{d}")]
    for s in range(siblings):
        text = bases[order[k]]
        k += 1
        docs += [(f"T{s}a", text, None), (f"T{s}b", _edit(text, rng, 0.10, vocab), None)]
    for s in range(singletons):
        docs.append((f"S{s}", bases[order[k]], None))
        k += 1
    frame = pd.DataFrame(docs, columns=["id", "text", "group"]).sample(frac=1.0, random_state=seed)
    pairs = pd.DataFrame([(f"T{s}a", f"T{s}b", "not_duplicate", "sibling") for s in range(siblings)],
                         columns=["id_a", "id_b", "label", "category"])
    return from_frames(frame, pairs, name=f"multi-axis-{seed}")
