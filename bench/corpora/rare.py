"""A corpus with rare near-duplicates and known truth, generated fast with numpy.

``n`` documents of random words (a vocabulary of random letter strings, so two
unrelated documents share almost no character 5-gram). Planted in it:

* duplicate families of 2-4 documents: a base and variants with a share
  ``U(0, max_edit)`` of their words replaced; every pair of a family is a
  duplicate (the truth), whatever its J;
* look-alike groups of 2-3 documents that are *not* duplicates: their own
  words around a shared template taking ``U(0.45, 0.85)`` of the words (a form
  letter, a product page), the pairs a loose configuration removes by mistake.

``families`` is chosen so that the duplicate pairs are about ``density`` of
all pairs (one in a million by default). Same arguments, same corpus.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True, eq=False)
class RareCorpus:
    texts: list[str]
    ids: list[str]
    family: np.ndarray    # int64[n]: duplicate family, -1 for none
    lookalike: np.ndarray  # int64[n]: look-alike group, -1 for none

    def write(self, path) -> Path:
        path = Path(path)
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "wt", encoding="utf-8") as fh:
            for d, t in zip(self.ids, self.texts):
                fh.write(json.dumps({"id": d, "text": t}) + "\n")
        return path

    def group_pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every pair (i < j) inside a family or a look-alike group, and whether it is a duplicate."""
        out_i, out_j, dup = [], [], []
        for labels, is_dup in ((self.family, True), (self.lookalike, False)):
            rows = np.flatnonzero(labels >= 0)
            order = rows[np.argsort(labels[rows], kind="stable")]
            lab = labels[order]
            starts = np.flatnonzero(np.r_[True, lab[1:] != lab[:-1]])
            ends = np.r_[starts[1:], len(lab)]
            for s, e in zip(starts, ends):
                members = np.sort(order[s:e])
                for a in range(len(members)):
                    for b in range(a + 1, len(members)):
                        out_i.append(members[a]); out_j.append(members[b]); dup.append(is_dup)
        return np.asarray(out_i, np.int64), np.asarray(out_j, np.int64), np.asarray(dup, bool)


def _vocab(rng, size: int) -> np.ndarray:
    lens = rng.integers(3, 9, size)
    letters = rng.integers(97, 123, (size, 8), dtype=np.uint8)
    return np.array([bytes(row[:k]).decode() for row, k in zip(letters, lens)], dtype=object)


def build(n: int = 100_000, *, words: tuple[int, int] = (25, 45), density: float = 1e-6, lookalikes: float = 0.5,
          max_edit: float = 0.2, vocab: int = 50_000, seed: int = 0, dup_pairs: float | None = None) -> RareCorpus:
    """The corpus (see the module docstring); ``lookalikes`` look-alike groups per family;
    ``dup_pairs`` (default ``density`` x n(n-1)/2): duplicate pairs to plant."""
    rng = np.random.default_rng(seed)
    V = _vocab(rng, vocab)
    lo, hi = words
    lens = rng.integers(lo, hi + 1, n)
    idx = rng.integers(0, vocab, (n, hi))
    family = np.full(n, -1, np.int64)
    look = np.full(n, -1, np.int64)
    pairs_wanted = density * n * (n - 1) / 2 if dup_pairs is None else dup_pairs
    sizes = rng.choice([2, 3, 4], p=[0.5, 0.3, 0.2], size=max(int(pairs_wanted / 2.6), 1))
    n_look = int(len(sizes) * lookalikes)
    look_sizes = rng.choice([2, 3], p=[0.7, 0.3], size=n_look)
    members = rng.permutation(n)[:int(sizes.sum() + look_sizes.sum())]
    k = 0
    for f, m in enumerate(sizes):
        rows = members[k:k + m]
        k += m
        family[rows] = f
        base = rows[0]
        for r in rows[1:]:
            lens[r] = lens[base]
            idx[r] = idx[base]
            edit = rng.random(hi) < rng.uniform(0, max_edit)
            idx[r, edit] = rng.integers(0, vocab, int(edit.sum()))
    for g, m in enumerate(look_sizes):
        rows = members[k:k + m]
        k += m
        look[rows] = g
        template = rng.integers(0, vocab, hi)
        shared = rng.random(hi) < rng.uniform(0.45, 0.85)
        for r in rows:
            lens[r] = lens[rows[0]]
            idx[r, shared] = template[shared]
    texts = [" ".join(V[idx[d, :lens[d]]]) for d in range(n)]
    return RareCorpus(texts, [f"d{d:07d}" for d in range(n)], family, look)


def write_blocks(path, n: int, *, block: int = 20_000, density: float = 1e-6, seed: int = 0, **kw) -> int:
    """A corpus of ``n`` documents written block by block (memory of one block): each block
    plants its share of the ``density x n(n-1)/2`` duplicate pairs (families stay inside a
    block). Returns the bytes written (uncompressed)."""
    path = Path(path)
    opener = gzip.open if path.name.endswith(".gz") else open
    size = 0
    with opener(path, "wt", encoding="utf-8") as fh:
        for k, start in enumerate(range(0, n, block)):
            m = min(block, n - start)
            c = build(m, density=density, seed=seed * 100_003 + k, dup_pairs=density * (n - 1) * m / 2, **kw)
            for d, t in zip(c.ids, c.texts):
                line = json.dumps({"id": f"b{k}-{d}", "text": t}) + "\n"
                size += len(line)
                fh.write(line)
    return size
