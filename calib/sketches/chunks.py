"""Run per-document work over chunks of documents in threads.

Text in -> shingles -> signature is a per-document computation. It runs here
as chunks of about :data:`TARGET` units (characters of text, or shingles)
taken in turn by ``threads`` Python threads (the caller's among them). Each
chunk runs a short Python part (slicing its texts, the kernel calls), which
holds the GIL, and compiled kernels that release it (numba ``nogil``; texts of
compact ASCII ``str`` objects are read from their own buffers there), so one
thread's Python part overlaps the other threads' kernels. Parallel kernels
(numba ``prange``) did the same work with a serial Python part before them;
with two threads they gained 1.5x, chunks gain 1.7-1.9x
(``bench/speed/throughput.py``, which also measures what two independent
processes reach on the same machine).

Chunks also keep each chunk's intermediate arrays (normalized bytes, shingle
hashes) in cache, and memory freed by one chunk is reused by the next: there
is no corpus-sized hash array to fault in page by page.

Chunks are cut by position only, and each chunk's result is a function of its
own documents, so results (and their bytes) do not depend on the thread count.
"""

from __future__ import annotations

import threading
from typing import Callable, TypeVar

import numpy as np

T = TypeVar("T")

# ~1 M characters a chunk (about 200 documents of 5 KB). Each chunk costs
# ~80 us of Python (its encode, the kernel calls), all of it holding
# the GIL, so with two threads small chunks serialize: 64 K-character chunks
# gave 1.3x on two threads, 256 K 1.73x, 1 M 1.79x (bench/speed/throughput.py
# corpus, oph scheme). A chunk's arrays (~5 MB) still sit in the L3 cache.
TARGET = 1 << 20
# Inputs are cut into a multiple of the thread count, at least four chunks a thread
# (so the last chunk does not run alone for long), but none below this size.
MIN_TARGET = 1 << 16


def num_threads() -> int:
    """Threads calib's chunked work uses: numba's setting (``NUMBA_NUM_THREADS``,
    ``numba.set_num_threads``), so one knob sets every kernel's parallelism."""
    import numba

    return int(numba.get_num_threads())


def bounds(weights: np.ndarray, target: int | None = None, max_items: int | None = None) -> list[tuple[int, int]]:
    """Consecutive (start, end) item ranges of about ``target`` total weight
    (default: :data:`TARGET`, or less for small inputs, see
    :data:`MIN_TARGET`), each at most ``max_items`` long; empty for no items.

    Item i joins chunk floor(W_i / target), W_i the weight before it: a chunk
    ends after the item that carries the running total past a multiple of
    ``target``, so a heavy item closes its chunk."""
    w = np.asarray(weights, dtype=np.int64)
    if target is None:
        # a whole number of chunks a thread (at least four, none over TARGET): 7 chunks on 2 threads
        # leave one thread idle for the last (1.75x at best; 8 give 2x)
        threads, total = num_threads(), int(w.sum())
        per = max(4, -(-total // (TARGET * threads)))
        target = max(MIN_TARGET, -(-total // (per * threads)))
    n = len(w)
    if n == 0:
        return []
    before = np.cumsum(w) - w
    cuts = np.flatnonzero(np.diff(before // max(int(target), 1))) + 1
    edges = np.concatenate(([0], cuts, [n]))
    out = []
    step = n if max_items is None else max(int(max_items), 1)
    for s, e in zip(edges[:-1].tolist(), edges[1:].tolist()):
        out.extend((a, min(a + step, e)) for a in range(s, e, step))
    return out


def run(work: Callable[[int, int], T], spans: list[tuple[int, int]], threads: int | None = None) -> list[T]:
    """``work(start, end)`` for every span, up to ``threads`` spans at once;
    the results in span order. The calling thread works too (alone when there
    is one thread or one span). An exception in a span is raised here (the
    first span's, when several fail); no new span starts after one fails.

    Each thread takes the next span itself when it is done with one: no thread
    waits on another's result, and the caller is not woken once a span (on a
    virtual machine each such wake-up of an idle core costs tens of
    microseconds, paid once a span by the thread that needs the GIL next)."""
    threads = num_threads() if threads is None else int(threads)
    if threads <= 1 or len(spans) <= 1:
        return [work(s, e) for s, e in spans]
    results: list = [None] * len(spans)
    failed: list[tuple[int, BaseException]] = []
    todo = iter(range(len(spans)))  # next() of a range iterator is atomic under the GIL

    def loop() -> None:
        for c in todo:
            if failed:
                return
            try:
                results[c] = work(*spans[c])
            except BaseException as exc:  # re-raised by the caller, after every thread has stopped
                failed.append((c, exc))
                return

    helpers = [threading.Thread(target=loop, name=f"calib-chunk-{h}")
               for h in range(min(threads, len(spans)) - 1)]
    for h in helpers:
        h.start()
    try:
        loop()
    finally:
        for h in helpers:
            h.join()
    if failed:
        raise min(failed, key=lambda f: f[0])[1]
    return results
