"""MinHash signatures for a whole sample: an (n, num_perm) uint32 matrix.

A *scheme* turns the hashed shingles of each document into ``num_perm``
values; the estimate of Jaccard similarity is the fraction of equal columns,
whatever the scheme. Schemes are registered in :data:`SCHEMES` (one function
``(offsets, hashes, num_perm, seed) -> matrix`` plus one line in
:mod:`calib.sketches.schemes`); :class:`~calib.sketches.represent.Representation`
accepts any registered name.

Registered here:

* ``datasketch`` and ``prefix`` use datasketch 2.x's ``affine32``
  construction, O(n k) per document::

      x = fmix32(h(shingle))                  # MurmurHash3 finalizer, a bijection
      sig[d, p] = min over shingles of (a_p * x + b_p) mod 2^32     (a_p odd)

  ``datasketch`` draws (a_p, b_p) with ``np.random.RandomState(seed)`` exactly
  as ``datasketch.MinHash(num_perm, seed)`` does (all a's, then all b's), so
  rows are bit-identical to ``MinHash(num_perm, seed, hashfunc).hashvalues``;
  because all a's come before the b's, 128 columns are NOT a prefix of 256.
  ``prefix`` draws (a_p, b_p) = splitmix64(seed, p), so permutation p does not
  depend on num_perm: the first m columns of a 256-column matrix are the
  m-column matrix (prefix reuse in sweeps). Its old name ``fast`` is still
  accepted (:data:`ALIASES`); it was never faster, only prefix-stable.
* ``oph``: one-permutation hashing with optimal densification
  (:mod:`calib.sketches.oph`), O(n + k) per document.
* ``dart`` and ``icws``: the *weighted* schemes, one of which a representation with
  ``weighting = "idf"`` needs; their columns collide with probability the weighted
  Jaccard (plain J with unit weights, ``weighting = "none"``). ``dart``: dart throwing
  (:mod:`calib.sketches.dart_minhash`), O(n + k log k) per document, the default.
  ``icws``: improved consistent weighted sampling (:mod:`calib.sketches.weighted_minhash`),
  O(n k); prefix-stable (column p's variates are a hash of (seed, p, shingle)).

A document with no shingle gets the all-0xFFFFFFFF row (datasketch's empty
MinHash) under every scheme.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
from numba import njit, prange

from calib.sketches import chunks, weighted_minhash
from calib.sketches.hashing import fmix32
from calib.sketches.schemes import get_scheme
from calib.base.validate import pair_arrays
from calib.sketches.shingles import ShingleSets, chunk_sets, text_chunks

if TYPE_CHECKING:
    from calib.sketches.represent import Representation

EMPTY = np.uint32(0xFFFFFFFF)


# -- affine32 schemes (datasketch, prefix) ----------------------------------------

def permutations(num_perm: int, seed: int, scheme: str) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) uint32 arrays of the affine32 permutations; a is odd.

    Self-contained (the datasketch target inserts its source verbatim)."""
    if scheme == "datasketch":
        gen = np.random.RandomState(seed)
        a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
        b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
        return a, b
    if scheme in ("prefix", "fast"):  # 'fast': the prefix scheme's first name
        p = np.arange(num_perm, dtype=np.uint64)
        with np.errstate(over="ignore"):
            za = _splitmix64(np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + 2 * p)
            zb = _splitmix64(np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + 2 * p + np.uint64(1))
        a = (za & np.uint64(0xFFFFFFFF)).astype(np.uint32) | np.uint32(1)
        b = (zb & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        return a, b
    raise ValueError(f"signature scheme {scheme!r} has no affine32 permutations")


def _splitmix64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True)
def _signatures(offsets, hashes, a, b):
    n = len(offsets) - 1
    k = len(a)
    out = np.empty((n, k), dtype=np.uint32)
    for d in range(n):
        row = np.full(k, 0xFFFFFFFF, dtype=np.uint32)
        # Repeated shingles cannot change a minimum: a small open-addressing
        # set skips them (a third of char 5-grams in prose), cheaper than
        # sorting and far cheaper than k multiply-adds each.
        size = 16
        while size < 2 * (offsets[d + 1] - offsets[d]):
            size *= 2
        table = np.zeros(size, dtype=np.uint32)
        used = np.zeros(size, dtype=np.bool_)
        mask = size - 1
        for t in range(offsets[d], offsets[d + 1]):
            x = fmix32(hashes[t])
            slot = x & mask
            seen = False
            while used[slot]:
                if table[slot] == x:
                    seen = True
                    break
                slot = (slot + 1) & mask
            if seen:
                continue
            used[slot] = True
            table[slot] = x
            for p in range(k):
                # the cast keeps the low 32 bits: the mod 2^32 of affine32
                row[p] = min(row[p], np.uint32(a[p] * x + b[p]))
        out[d, :] = row
    return out


@lru_cache(maxsize=16)
def _cached_permutations(num_perm: int, seed: int, scheme: str) -> tuple[np.ndarray, np.ndarray]:
    # drawn once per (num_perm, seed), not once per chunk of documents
    return permutations(num_perm, seed, scheme)


def _affine32_sketch(name: str):
    def sketch(offsets, hashes, num_perm, seed):
        a, b = _cached_permutations(int(num_perm), int(seed), name)
        return _signatures(offsets, hashes, a, b)
    return sketch


prefix_sketch = _affine32_sketch("prefix")  # the kernels of the registered schemes (calib.sketches.schemes)
datasketch_sketch = _affine32_sketch("datasketch")


def _sketcher(scheme: str, sets: ShingleSets):
    """The scheme's ``sketch(offsets, hashes, num_perm, seed)`` for slices of ``sets``,
    with the sets' weights (if any) handed to a weighted scheme."""
    s = get_scheme(scheme)
    weights = getattr(sets, "weights", None)
    if not s.weighted:
        return lambda off, lo, hi, m, seed: s.sketch(off, sets.hashes[lo:hi], m, seed)
    return lambda off, lo, hi, m, seed: s.sketch(off, sets.hashes[lo:hi], m, seed,
                                                 None if weights is None else weights[lo:hi])


def signatures(sets: ShingleSets, num_perm: int, seed: int = 1, scheme: str = "prefix",
               *, batch_size: int = 20_000) -> np.ndarray:
    """(n, num_perm) uint32 signature matrix of the shingle sets.

    Computed in chunks of at most ``batch_size`` documents over
    :func:`calib.sketches.chunks.num_threads` threads (the kernels release the GIL).
    """
    if num_perm < 1:
        raise ValueError(f"num_perm must be >= 1, got {num_perm}")
    sketch = _sketcher(scheme, sets)
    out = np.empty((sets.n, num_perm), dtype=np.uint32)

    def work(s: int, e: int) -> None:
        off = sets.offsets[s:e + 1]
        out[s:e] = sketch(off - off[0], off[0], off[-1], num_perm, seed)

    for _ in chunks.run(work, chunks.bounds(sets.sizes(), max_items=batch_size)):
        pass
    return out


def signatures_from_texts(texts: list[str], rep: "Representation", *, batch_size: int = 20_000,
                          frequencies=None) -> np.ndarray:
    """Text in -> signature out, in chunks of at most ``batch_size`` documents
    over :func:`calib.sketches.chunks.num_threads` threads: each chunk is encoded,
    shingled and sketched by one thread, so memory grows with the chunk, not
    the corpus, and one chunk's Python part overlaps the others' kernels.
    ``frequencies``: the document-frequency table of a weighted representation."""
    if rep.num_perm < 1:
        raise ValueError(f"num_perm must be >= 1, got {rep.num_perm}")
    out = np.empty((len(texts), rep.num_perm), dtype=np.uint32)
    if rep.scheme == "oph" and rep.weighting == "none" and rep.hashfunc != "sha1":
        # oph's permutation runs inside the hashing loop: no hash array is read back to permute it
        from calib.sketches import oph, oph_texts
        permuted = oph.parameters(rep.seed)[:2]

        def work(s: int, e: int) -> None:
            if oph_texts.signatures_into(texts[s:e], rep, out[s:e]):  # str texts: one compiled pass each
                return
            sets = chunk_sets(texts[s:e], rep, unique=False, permuted=permuted)
            oph.signatures_permuted(sets.offsets, sets.hashes, rep.num_perm, rep.seed, out=out[s:e])
    else:
        def work(s: int, e: int) -> None:
            sets = weighted_minhash.weigh(chunk_sets(texts[s:e], rep, unique=False), rep, frequencies)
            out[s:e] = _sketcher(rep.scheme, sets)(sets.offsets, 0, len(sets.hashes), rep.num_perm, rep.seed)

    for _ in chunks.run(work, text_chunks(texts, max_docs=batch_size)):
        pass
    return out


@njit(cache=True, parallel=True)
def _estimate(sig, i, j, m):
    out = np.empty(len(i), dtype=np.float64)
    for t in prange(len(i)):
        c = 0
        for p in range(m):
            c += sig[i[t], p] == sig[j[t], p]
        out[t] = c / m
    return out


def estimate_jaccard(sig: np.ndarray, i: np.ndarray, j: np.ndarray, num_perm: int | None = None) -> np.ndarray:
    """MinHash estimate of J for pairs (i, j): fraction of equal values in the
    first ``num_perm`` columns."""
    m = sig.shape[1] if num_perm is None else int(num_perm)
    if not 1 <= m <= sig.shape[1]:
        raise ValueError(f"num_perm={m} outside 1..{sig.shape[1]}")
    i, j = pair_arrays(i, j, sig.shape[0])
    return _estimate(sig, i, j, m)


def estimate_sd(s, num_perm: int) -> np.ndarray:
    """Standard deviation of the MinHash estimate at true Jaccard ``s``: with
    independent permutations the estimate is a binomial proportion of
    ``num_perm`` trials, so sd = sqrt(s (1 - s) / num_perm)."""
    s = np.asarray(s, dtype=np.float64)
    return np.sqrt(s * (1.0 - s) / num_perm)


def estimate_errors(exact, estimated, threshold: float | None = None) -> dict:
    """How far estimates stray from exact J: mean and largest |estimate - exact|,
    and (with a threshold) how many pairs the two put on opposite sides of it."""
    exact, estimated = np.asarray(exact, np.float64), np.asarray(estimated, np.float64)
    err = np.abs(estimated - exact)
    out = {"pairs": int(len(err)), "mean_abs": float(err.mean()) if len(err) else float("nan"),
           "max_abs": float(err.max()) if len(err) else float("nan"), "flips": None}
    if threshold is not None:
        out["flips"] = int(((estimated >= threshold) != (exact >= threshold)).sum())
    return out
