"""Chunked, threaded text -> signature (calib/chunks.py): the chunks cover every
document once and in order, results do not depend on the thread count or the
chunk size, errors in a worker thread reach the caller, and the per-document
kernels release the GIL (without it threads would run one at a time)."""

from __future__ import annotations

import threading

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calib.sketches import chunks
from calib.sketches.minhash import signatures, signatures_from_texts
from calib.sketches.schemes import scheme_names
from calib.sketches.represent import Representation
from calib.sketches.shingles import ShingleSets, concat_sets, shingle_hashes


def brute_bounds(w, target, max_items):
    """Reference: walk the items, cut where the running total before an item
    enters a new multiple of target, then split runs longer than max_items."""
    out, start, before = [], 0, 0
    for i, x in enumerate(w):
        if i > start and before // target != (before - w[i - 1]) // target:
            out.append((start, i))
            start = i
        before += x
    if len(w):
        out.append((start, len(w)))
    if max_items is None:
        return out
    return [(a, min(a + max_items, e)) for s, e in out for a in range(s, e, max_items)]


def test_inputs_are_cut_into_a_multiple_of_the_threads_four_chunks_a_thread_at_least(monkeypatch):
    monkeypatch.setattr(chunks, "num_threads", lambda: 2)
    w = np.full(1000, 1000)  # 1 M in all: 8 chunks of 125 K (above MIN_TARGET, below TARGET)
    assert chunks.bounds(w) == chunks.bounds(w, target=125_000) and len(chunks.bounds(w)) == 8
    assert len(chunks.bounds(np.full(10, 1000))) == 1  # 10 K in all: one chunk of MIN_TARGET
    big = np.full(1000, 100_000)  # 100 M: 96 chunks (48 a thread) of 1,041,667, none over TARGET
    assert chunks.bounds(big) == chunks.bounds(big, target=1_041_667) and len(chunks.bounds(big)) == 96
    # 9.4 M: 10 chunks, not 9 of TARGET (9 on 2 threads run in 5 rounds: 1.8x at best)
    assert len(chunks.bounds(np.full(2000, 4_700))) == 10


def test_bounds_hand_computed():
    # weights 3,3,3,3 with target 5: totals before each item are 0,3,6,9 -> chunks by 0//5,3//5,6//5,9//5 = 0,0,1,1
    assert chunks.bounds([3, 3, 3, 3], target=5) == [(0, 2), (2, 4)]
    # a heavy item closes its chunk (totals before: 0, 1, 101)
    assert chunks.bounds([1, 100, 1], target=10) == [(0, 2), (2, 3)]
    assert chunks.bounds([1, 1, 1, 1, 1], target=100, max_items=2) == [(0, 2), (2, 4), (4, 5)]
    assert chunks.bounds([], target=10) == []
    assert chunks.bounds([0, 0, 0], target=10) == [(0, 3)]


@given(st.lists(st.integers(0, 50), max_size=60), st.integers(1, 80), st.one_of(st.none(), st.integers(1, 7)))
@settings(max_examples=300, deadline=None)
def test_bounds_cover_every_item_once_in_order(w, target, max_items):
    got = chunks.bounds(np.array(w, dtype=np.int64), target=target, max_items=max_items)
    assert [i for s, e in got for i in range(s, e)] == list(range(len(w)))
    assert all(e > s for s, e in got)
    if max_items is not None:
        assert all(e - s <= max_items for s, e in got)
    assert got == brute_bounds(w, target, max_items)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_run_returns_in_span_order(threads):
    spans = chunks.bounds(np.ones(50, dtype=np.int64), target=3)
    assert list(chunks.run(lambda s, e: (s, e), spans, threads=threads)) == spans


def test_run_one_thread_stays_in_the_calling_thread():
    seen = set(chunks.run(lambda s, e: threading.get_ident(), [(0, 1), (1, 2)], threads=1))
    assert seen == {threading.get_ident()}


def test_run_raises_a_worker_error_in_the_caller():
    def work(s, e):
        if s == 4:
            raise ValueError("chunk 4 failed")
        return s

    with pytest.raises(ValueError, match="chunk 4 failed"):
        list(chunks.run(work, [(i, i + 1) for i in range(8)], threads=2))


def test_run_raises_the_first_failing_spans_error_and_starts_no_span_after_it():
    import time

    started = []

    def work(s, e):
        started.append(s)
        if s in (0, 5):
            raise ValueError(f"chunk {s} failed")
        time.sleep(0.01)
        return s

    with pytest.raises(ValueError, match="chunk 0 failed"):
        chunks.run(work, [(i, i + 1) for i in range(20)], threads=2)
    assert 0 in started and len(started) <= 3  # the other thread's span in progress, at most one more


def test_run_works_in_the_calling_thread_and_helpers():
    import time

    def work(s, e):
        time.sleep(0.005)
        return threading.get_ident()

    seen = chunks.run(work, [(i, i + 1) for i in range(12)], threads=2)
    assert threading.get_ident() in seen and len(set(seen)) == 2


def _texts(seed=7, n=120):
    rng = np.random.default_rng(seed)
    words = ["alpha", "beta", "gamma", "Delta", "épsilon", "zeta", "ETA", "théta", "  ", "\t", "x"]
    return ["".join(rng.choice(words, size=int(m))) for m in rng.integers(0, 90, n)] + ["", "ab", "ﬁ ﬂ"]


@pytest.mark.parametrize("scheme", scheme_names())
def test_signatures_independent_of_threads_and_chunk_size(monkeypatch, scheme):
    texts = _texts()
    rep = Representation(shingle="char", k=4, num_perm=64, scheme=scheme)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        monkeypatch.setattr(chunks, "TARGET", 10 ** 9)  # one chunk: the whole sample at once
        monkeypatch.setattr(chunks, "MIN_TARGET", 10 ** 9)
        whole = signatures_from_texts(texts, rep)
        sets_whole = shingle_hashes(texts, rep, unique=True)
        numba.set_num_threads(2)
        for target in (1, 37, 500):  # one document a chunk, a few, many
            monkeypatch.setattr(chunks, "TARGET", target)
            monkeypatch.setattr(chunks, "MIN_TARGET", target)
            assert len(chunks.bounds([len(t) for t in texts])) > 1
            assert np.array_equal(signatures_from_texts(texts, rep), whole)
            sets = shingle_hashes(texts, rep, unique=True)
            assert np.array_equal(sets.offsets, sets_whole.offsets)
            assert np.array_equal(sets.hashes, sets_whole.hashes)
            assert np.array_equal(signatures(sets, 64, rep.seed, scheme), whole)
    finally:
        numba.set_num_threads(old)


def test_concat_sets_keeps_documents_and_flags():
    a = ShingleSets(np.array([0, 2, 2]), np.array([5, 6], dtype=np.uint32), unique=True)
    b = ShingleSets(np.array([0, 1]), np.array([9], dtype=np.uint32), unique=False)
    got = concat_sets([a, b])
    assert got.offsets.tolist() == [0, 2, 2, 3] and got.hashes.tolist() == [5, 6, 9]
    assert got.unique is False
    assert concat_sets([a]) is a


def test_per_document_kernels_release_the_gil():
    # chunks.run gains nothing from threads if a kernel holds the GIL
    from calib.sketches import encode, minhash, oph, shingles

    from calib.sketches import oph_texts

    kernels = [encode._normalize, encode._normalize_strs, encode._splice, encode.compact, shingles._shingle_offsets,
               shingles._spans, shingles._hash_spans, shingles._sort_unique_segments, minhash._signatures,
               oph._signatures, oph_texts._signatures]
    assert [k.py_func.__name__ for k in kernels if not k.targetoptions.get("nogil")] == []
