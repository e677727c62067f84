"""What two threads can give for text in -> signature out, from CPU time (not wall time).

    PYTHONPATH=. python -m bench.speed.thread_model [--docs 1500] [--repeats 5]

On a shared machine the wall time of two threads measures the other jobs (bench/speed/throughput.py states
its load). This script measures what does not depend on them: each chunk's thread CPU time, one
chunk at a time in one thread, split into the compiled kernels (numba ``nogil``: they run beside
each other) and the rest (Python holding the GIL: it cannot). Two threads then need at least

    max(the larger thread's share of the chunks (chunks dealt in order to the thread that frees
        first), the GIL-held part of every chunk together)

and the ratio of one thread's total to that bound is the speed-up two free cores would give, if
memory and cache were not shared (bench/speed/throughput.py's two-process table measures that part).
Texts: bench/corpora/real_text.py's licence corpus (as ``bench/speed/throughput.py --corpus licences``).
"""

from __future__ import annotations

from bench.record import RESULTS_DIR, load, write_result
import argparse
import statistics
import time
from pathlib import Path

import numba
import numpy as np

from bench.corpora.real_text import documents, licence_paragraphs
from calib.sketches import oph, oph_texts, shingles
from calib.sketches.minhash import _sketcher
from calib.sketches.represent import Representation

RESULTS = RESULTS_DIR / "thread_model.md"
KERNELS = ("_normalize", "_normalize_strs", "_shingle_offsets", "_hash_spans", "_signatures")


def chunk_times(docs, rep, threads: int) -> list[tuple[float, float]]:
    """(total, kernels) thread CPU seconds of each chunk that ``threads`` threads would be handed."""
    numba.set_num_threads(threads)
    spent = {"k": 0.0}
    wrapped = []
    import calib.sketches.encode as enc
    import calib.sketches.minhash as mh
    for mod in (enc, shingles, oph, oph_texts, mh):
        for name in KERNELS:
            f = mod.__dict__.get(name)
            if f is None:
                continue

            def timed(*a, _f=f):
                c = time.thread_time()
                out = _f(*a)
                spent["k"] += time.thread_time() - c
                return out
            wrapped.append((mod, name, f))
            setattr(mod, name, timed)
    try:
        permuted = oph.parameters(rep.seed)[:2] if rep.scheme == "oph" else None
        out = []
        for s, e in shingles.text_chunks(docs):
            spent["k"] = 0.0
            c = time.thread_time()
            if permuted is not None:  # as signatures_from_texts: one compiled pass for str texts
                if not oph_texts.signatures_into(docs[s:e], rep, np.empty((e - s, rep.num_perm), np.uint32)):
                    sets = shingles.chunk_sets(docs[s:e], rep, unique=False, permuted=permuted)
                    oph.signatures_permuted(sets.offsets, sets.hashes, rep.num_perm, rep.seed)
            else:
                sets = shingles.chunk_sets(docs[s:e], rep, unique=False)
                _sketcher(rep.scheme, sets)(sets.offsets, 0, len(sets.hashes), rep.num_perm, rep.seed)
            out.append((time.thread_time() - c, spent["k"]))
        return out
    finally:
        for mod, name, f in wrapped:
            setattr(mod, name, f)


def bound(times: list[tuple[float, float]], threads: int) -> float:
    free = [0.0] * threads
    for total, _ in times:
        free[int(np.argmin(free))] += total
    return max(max(free), sum(t - k for t, k in times))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=1500)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    docs = documents(args.docs, paras=licence_paragraphs())
    load0 = load()
    lines = ["# Two threads from CPU time (bench/speed/thread_model.py)\n",
             f"{len(docs):,} licence-like documents ({sum(map(len, docs)) / 1e6:.1f} M characters), char 5-grams, "
             f"256 hashes. Thread CPU time of each chunk, median of {args.repeats} passes; load average (1 min) "
             f"{load0:.1f} before and LOAD1 after (CPU time moves with it less than wall time: shared cache "
             "and memory still slow a busy machine's cores).\n",
             "| scheme | chunks (1 / 2 threads) | 1 thread: CPU s | of it GIL-held (not kernels) | 2 threads: bound s | "
             "speed-up bound |", "|---|---:|---:|---:|---:|---:|"]
    for scheme in ("oph", "prefix", "datasketch"):
        rep = Representation(shingle="char", k=5, num_perm=256, seed=1, scheme=scheme)
        chunk_times(docs[:64], rep, 1)  # kernels loaded
        one, two, gil, b2 = [], [], [], []
        for _ in range(args.repeats):
            t1 = chunk_times(docs, rep, 1)
            t2 = chunk_times(docs, rep, 2)
            one.append(sum(t for t, _ in t1))
            gil.append(sum(t - k for t, k in t1))
            two.append(len(t2))
            b2.append(bound(t2, 2))
        m1, mg, mb = statistics.median(one), statistics.median(gil), statistics.median(b2)
        lines.append(f"| {scheme} | {len(t1)} / {two[0]} | {m1:.4f} | {mg:.4f} ({mg / m1:.1%}) | {mb:.4f} | "
                     f"{m1 / mb:.2f}x |")
    text = "\n".join(lines).replace("LOAD1", f"{load():.1f}") + "\n"
    write_result(args.out, text)
    print(text)


if __name__ == "__main__":
    main()
