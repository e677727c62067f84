"""Short documents: a minimum length in shingles, and what happens below it.

A document is *short* under ``Config.min_shingles`` = m > 0 when its shingle
set (distinct shingles, after boilerplate stripping) has at least 1 and fewer
than m members; an empty document is empty, not short (it is never a
candidate anyway, and counted apart). ``Config.short_docs`` says what becomes
of short documents:

* ``exclude``: left out of near-duplicate detection. No pair with a short
  document is verified (``calib apply`` and the Spark engine leave them out of
  banding), so none is removed; they are counted (``short_docs`` in the
  results row, ``short_documents`` in the apply summary) and kept.
* ``exact``: matched by exact equality of their normalized text only (the
  text that is shingled, after stripping): every pair of short documents with
  equal normalized text is verified, with similarity 1 (equal texts have equal
  sets), and no pair of a short with a longer document is.

Texts are compared by a 128-bit digest (xxh3_128) of their normalized UTF-8.
"""

from __future__ import annotations

import numpy as np
import xxhash

from calib.verification.copies import Copies
from calib.sketches.represent import Representation, normalize

SHORT_RULES = ("exclude", "exact")


def short_mask(sizes: np.ndarray, min_shingles: int) -> np.ndarray:
    """Documents with 1 <= |set| < min_shingles (none when min_shingles is 0)."""
    sizes = np.asarray(sizes)
    return (sizes > 0) & (sizes < min_shingles)


def text_keys(texts, rep: Representation) -> np.ndarray:
    """(n, 2) uint64: the 128-bit digest of each normalized text (already stripped)."""
    out = np.zeros((len(texts), 2), np.uint64)
    for t, text in enumerate(texts):
        out[t] = np.frombuffer(xxhash.xxh3_128_digest(normalize(text, rep).encode("utf-8", "surrogatepass")),
                               dtype=np.uint64)
    return out


def exact_pairs(rows: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every pair (i < j, sorted by (i, j)) of ``rows`` (ascending) with equal ``keys`` rows."""
    rows = np.asarray(rows, np.int64)
    if len(rows) < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    _, first, inverse = np.unique(np.ascontiguousarray(keys).view("V16").ravel(), return_index=True,
                                  return_inverse=True)
    a, b, _ = Copies(first[inverse.ravel()]).expand(np.zeros(0, np.int64), np.zeros(0, np.int64))
    return rows[a], rows[b]


def apply_rule(i: np.ndarray, j: np.ndarray, sims: list[np.ndarray], short: np.ndarray, rule: str,
               keys: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Verified pairs (i, j) with their similarity columns ``sims`` under the rule:
    pairs with a short document dropped; with ``exact``, every pair of short
    documents with equal ``keys`` (rows of the short documents, in row order)
    added with similarity 1. The result is sorted by (i, j)."""
    keep = ~(short[i] | short[j])
    i, j, sims = i[keep], j[keep], [s[keep] for s in sims]
    if rule == "exact":
        ei, ej = exact_pairs(np.flatnonzero(short), keys)
        i, j = np.r_[i, ei], np.r_[j, ej]
        sims = [np.r_[s, np.ones(len(ei))] for s in sims]
        order = np.lexsort((j, i))
        i, j, sims = i[order], j[order], [s[order] for s in sims]
    return i, j, sims


def positive_rule(verified: np.ndarray, i: np.ndarray, j: np.ndarray, short: np.ndarray, rule: str,
                  keys: np.ndarray | None = None) -> np.ndarray:
    """Which of the pairs (i, j), verified as ``verified`` says, stay verified under the rule
    (``keys``: one row per document here)."""
    out = verified & ~(short[i] | short[j])
    if rule == "exact":
        out |= short[i] & short[j] & (keys[i] == keys[j]).all(axis=1)
    return out


def summary(sizes: np.ndarray, min_shingles: int, rule: str) -> dict:
    """The apply summary's account of short documents (nothing when there is no minimum)."""
    if not min_shingles:
        return {}
    what = ("not examined for near duplicates (kept)" if rule == "exclude"
            else "matched by equal normalized text only")
    return {"short_documents": int(short_mask(sizes, min_shingles).sum()),
            "short_documents_rule": f"fewer than {min_shingles} distinct shingles: {rule}, {what}"}
