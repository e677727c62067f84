"""The loose LSH pass of a corpus-scale draw: one streaming pass, then candidate pairs.

Per batch of documents (:func:`calib.reading.corpus.iter_corpus`,
read a batch ahead by a second thread): text -> ``b*r + verify`` MinHash
values chunk by chunk over the threads (by default the ``oph`` scheme,
one-permutation hashing, O(n + k) a document, which follows the S-curve
``P(J) = 1 - (1 - J^r)^b`` of independent permutations within the noise on
documents of a few KB, bench/results/loose_curve.md; ``prefix``, independent
affine permutations, makes it hold per pair) -> ``b`` band keys (kept as 32-bit
values: a chance collision of two 32-bit keys adds about ``n^2 / 2^33`` pairs
per band, which the verify cut drops) and the ``verify`` further values. Only
these are held: ``4 (b + verify)`` bytes a document, no text.

Candidates: for each band, the documents sorted by key; in every run of equal
keys each pair is emitted by the first band it collides in (no global dedup).
Their count is checked against ``max_pairs`` before they are built. A
candidate is kept when its J estimated on the ``verify`` columns reaches the
cut (:func:`calib.reading.corpus_design.verify_pass` gives the chance of that).
"""

from __future__ import annotations

import queue
import threading
from contextlib import closing
from dataclasses import dataclass, replace
from typing import Callable, Iterator

import numpy as np
from numba import njit

from calib.candidates import lsh
from calib.sketches.minhash import signatures_from_texts

_NO_MIN = np.uint32(0xFFFFFFFF)  # every value of an empty set's signature


class TooManyLoosePairs(RuntimeError):
    """More candidate pairs than the budget: one readable line."""


@dataclass(frozen=True, eq=False)
class LoosePass:
    ids: list[str]           # every non-empty document, in corpus order
    rows: np.ndarray         # int64: corpus position (line / row, empty documents included) of each
    keys: np.ndarray         # (b, n) uint32 band keys
    vsig: np.ndarray         # (n, verify) uint32
    active: np.ndarray       # bool: the document has a shingle (takes part in banding)
    skipped_empty: int

    @property
    def n(self) -> int:
        return len(self.ids)


def _prefetch(batches: Iterator, depth: int = 2) -> Iterator:
    """``batches`` read and parsed by a second thread, ``depth`` ahead: the parsing (Python,
    holding the GIL) overlaps the kernels of the batch before (numba, ``nogil``)."""
    q: queue.Queue = queue.Queue(depth)
    stop = threading.Event()
    end = object()

    def put(x) -> bool:
        while not stop.is_set():
            try:
                q.put(x, timeout=0.1)
                return True
            except queue.Full:
                pass
        return False

    def run() -> None:
        try:
            for x in batches:
                if not put(x):
                    return
        except BaseException as exc:  # handed to the reader, raised there
            put(exc)
            return
        put(end)

    t = threading.Thread(target=run, daemon=True, name="corpus-prefetch")
    t.start()
    try:
        while (x := q.get()) is not end:
            if isinstance(x, BaseException):
                raise x
            yield x
    finally:
        stop.set()
        t.join()


def stream(corpus, rep, b: int, r: int, verify: int, *, batch_size: int, id_field: str, text_field: str,
           n_hint: int, update: Callable[[int], None] = lambda m: None, scheme: str = "prefix") -> LoosePass:
    """Pass 1 over ``corpus``: band keys and verify values of every non-empty document.

    Reading runs a batch ahead in a second thread; each batch is shingled and sketched chunk by
    chunk over :func:`calib.sketches.chunks.num_threads` threads (text in, signature out: no
    batch-sized shingle array). A document without a shingle has every value 2^32 - 1 (no
    minimum): it takes no part in banding."""
    from calib.reading.corpus import duplicate_id, iter_corpus
    num_perm = b * r + verify
    sig_rep = replace(rep, num_perm=num_perm, scheme=scheme)
    keys = np.empty((b, n_hint), dtype=np.uint32)
    vsig = np.empty((n_hint, verify), dtype=np.uint32)
    active = np.zeros(n_hint, dtype=bool)
    rows = np.empty(n_hint, dtype=np.int64)
    ids: list[str] = []
    seen: dict[str, int] = {}
    n = pos = skipped = 0
    batches = iter_corpus(corpus, batch_size=batch_size, id_field=id_field, text_field=text_field, drawing=True)
    with closing(_prefetch(batches)) as ahead:  # an error below stops the reader thread at once
        for b_ids, b_texts, _ in ahead:
            keep = [k for k, x in enumerate(b_texts) if x.strip()]
            skipped += len(b_texts) - len(keep)
            m = len(keep)
            if n + m > n_hint:
                raise ValueError(f"{corpus}: the file changed while it was read")
            for k in keep:
                d = b_ids[k]
                if d in seen:
                    raise duplicate_id(corpus, d, seen[d], pos + k)
                seen[d] = pos + k
                ids.append(d)
            if m:
                sig = signatures_from_texts([b_texts[k] for k in keep], sig_rep)
                keys[:, n:n + m] = lsh.band_keys(sig[:, :b * r], b, r)  # low 32 bits kept
                vsig[n:n + m] = sig[:, b * r:]
                active[n:n + m] = (sig != _NO_MIN).any(axis=1)
                rows[n:n + m] = pos + np.asarray(keep, dtype=np.int64)
            n += m
            pos += len(b_texts)
            update(len(b_texts))
    del seen
    return LoosePass(ids, rows[:n].copy(), keys[:, :n].copy() if n < n_hint else keys, vsig[:n], active[:n], skipped)


@njit(cache=True)
def _band_pairs(keys, band, order, active, emit, out_i, out_j, start):
    """Pairs of one band (sorted by ``order``) whose first colliding band it is; counted,
    and with ``emit`` written from ``start`` on. Returns the count."""
    n = order.shape[0]
    c = 0
    s = 0
    while s < n:
        e = s + 1
        k0 = keys[band, order[s]]
        while e < n and keys[band, order[e]] == k0:
            e += 1
        if e - s > 1:
            for x in range(s, e):
                p = order[x]
                if not active[p]:
                    continue
                for y in range(x + 1, e):
                    q = order[y]
                    if not active[q]:
                        continue
                    lo, hi = min(p, q), max(p, q)
                    first = True
                    for prev in range(band):
                        if keys[prev, lo] == keys[prev, hi]:
                            first = False
                            break
                    if first:
                        if emit:
                            out_i[start + c] = lo
                            out_j[start + c] = hi
                        c += 1
        s = e
    return c


@njit(cache=True, nogil=True)
def _agreements(vsig, i, j):
    out = np.zeros(len(i), dtype=np.int32)
    for t in range(len(i)):
        c = 0
        for k in range(vsig.shape[1]):
            if vsig[i[t], k] == vsig[j[t], k]:
                c += 1
        out[t] = c
    return out


def bucket_pairs(sorted_keys: np.ndarray) -> int:
    """Pairs sharing a key, sum of n(n-1)/2 over the runs of equal ``sorted_keys``, without walking them."""
    if len(sorted_keys) < 2:
        return 0
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    n = np.diff(np.r_[starts, len(sorted_keys)]).astype(np.int64)
    return int((n * (n - 1) // 2).sum())


def candidates(lp: LoosePass, cut: float, max_pairs: int | None,
               update: Callable[[int], None] = lambda m: None) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Kept candidate pairs (i < j, indices into ``lp.ids``, sorted), their agreements on the
    verify columns (int16; J estimated as agreements / verify) and the number before the cut.
    Band by band: memory is the kept pairs plus one band's sort order."""
    b = lp.keys.shape[0]
    empty = np.zeros(0, np.int64)
    need = int(np.ceil(lp.vsig.shape[1] * cut - 1e-9))
    kept_i, kept_j, kept_a, total = [], [], [], 0
    for band in range(b):
        order = np.argsort(lp.keys[band], kind="stable")
        most = bucket_pairs(lp.keys[band][order][lp.active[order]])  # n(n-1)/2 per bucket: no walk over them
        if max_pairs is not None and band == 0 and most > max_pairs:  # the first band's pairs are all new
            raise TooManyLoosePairs(f"the loose pass collides {most:,} pairs in band 1 of {b}, more than "
                                    f"{max_pairs:,}: the corpus holds many near-identical documents; raise "
                                    f"--max-pairs or take a stricter loose split (--loose)")
        c = _band_pairs(lp.keys, band, order, lp.active, False, empty, empty, 0)
        total += c
        if max_pairs is not None and total > max_pairs:
            raise TooManyLoosePairs(f"the loose pass collides more than {max_pairs:,} pairs by band {band + 1} of "
                                    f"{b}: the corpus holds many near-identical documents; raise --max-pairs or "
                                    f"take a stricter loose split (--loose)")
        ii, jj = np.empty(c, np.int64), np.empty(c, np.int64)
        _band_pairs(lp.keys, band, order, lp.active, True, ii, jj, 0)
        agree = _agreements(lp.vsig, ii, jj)
        ok = agree >= need
        kept_i.append(ii[ok])
        kept_j.append(jj[ok])
        kept_a.append(agree[ok].astype(np.int16))
        update(1)
    i = np.concatenate(kept_i) if kept_i else empty
    j = np.concatenate(kept_j) if kept_j else empty
    a = np.concatenate(kept_a) if kept_a else np.zeros(0, np.int16)
    srt = np.lexsort((j, i))
    return i[srt], j[srt], a[srt], total
