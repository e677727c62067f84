"""Text in -> OPH signature out on real multilingual text: ASCII and non-ASCII documents apart.

Corpus: Debian's manual pages in 16 languages (``bench/corpora/manpages.py``, built on demand in
a cache folder, never committed), one page a document. Representation: NFKC + lowercase +
whitespace collapse, char 5-grams, xxhash, 256 values, scheme ``oph``, seed 1;
``signatures_from_texts`` from the raw ``str`` texts to the signatures. Figures, each the best of
``--repeats`` rounds (every configuration once a round, round-robin), with the machine's load
average taken beside each:

* throughput (UTF-8 MB/s and documents/s) at one and two threads of the ASCII pages, the others,
  and the whole corpus (most of it not ASCII), and how many pages went to Python (NFKC across
  code points);
* calib against rensa's fastest path (``bench/speed/throughput.py``'s: shingles in Python, then
  ``RMinHash.update`` or ``digest_matrix_from_token_sets``, whichever is faster) on one thread,
  on a corpus where one page in six is not ASCII (every ASCII page, a fifth as many others).

Run:  PYTHONPATH=. python -m bench.speed.throughput_unicode [--repeats 5] [--rensa-docs 600]
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import numba
import numpy as np

from bench.corpora.manpages import load
from bench.record import RESULTS_DIR, load as load_avg, machine, write_result
from bench.speed.throughput import REP_OPH, run_rensa_matrix, run_rensa_update
from calib.sketches.encode import _normalize_strs, ascii_table, str_sources, unicode_arguments
from calib.sketches.minhash import signatures_from_texts
from calib.sketches.str_objects import STR_DATA, WIDE_DATA

RESULTS = RESULTS_DIR / "throughput_unicode.md"


def megabytes(docs: list[str]) -> float:
    return sum(len(t.encode("utf-8", "surrogatepass")) for t in docs) / 1e6


def to_python(docs: list[str]) -> int:
    """How many of ``docs`` the compiled normalization hands to Python."""
    address, wide = str_sources(docs)
    return int(_normalize_strs(address, id(str), STR_DATA, WIDE_DATA, *ascii_table(REP_OPH),
                               *unicode_arguments(REP_OPH, wide))[2].sum())


def calib_run(docs, threads):
    numba.set_num_threads(threads)
    return signatures_from_texts(docs, REP_OPH)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rensa-docs", type=int, default=600, help="documents of the mixed corpus timed for rensa")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)

    recs = load()
    texts = [r["text"] for r in recs]
    plain = [t for t in texts if t.isascii()]
    other = [t for t in texts if not t.isascii()]
    rng = random.Random(1)
    mixed = plain + rng.sample(other, len(plain) // 5)
    rng.shuffle(mixed)
    groups = {"ASCII pages": plain, "the other pages": other, "the whole corpus": texts,
              "one page in six not ASCII": mixed}
    calib_run(texts[:50], 1)  # compile / load the kernels
    best: dict[tuple[str, int], tuple[float, float]] = {}
    cpu_best: dict[str, float] = {}  # one thread: the calling thread's CPU seconds (less moved by other work)
    rensa_best = calib_mixed = None
    sub = mixed[:args.rensa_docs]
    for _ in range(args.repeats):
        for name, docs in groups.items():
            for threads in (1, 2):
                busy = load_avg()
                t0, c0 = time.perf_counter(), time.thread_time()
                calib_run(docs, threads)
                dt, cpu = time.perf_counter() - t0, time.thread_time() - c0
                if (name, threads) not in best or dt < best[name, threads][0]:
                    best[name, threads] = (dt, busy)
                if threads == 1:
                    cpu_best[name] = min(cpu_best.get(name, cpu), cpu)
        numba.set_num_threads(1)
        for fn in (run_rensa_update, run_rensa_matrix):
            busy = load_avg()
            t0 = time.perf_counter()
            fn(sub)
            per_doc = (time.perf_counter() - t0) / len(sub)
            if rensa_best is None or per_doc < rensa_best[0]:
                rensa_best = (per_doc, busy, fn.__name__)
    dt, busy = best["one page in six not ASCII", 1]
    calib_mixed = (dt / len(mixed), busy)

    lines = []
    w = lines.append
    w("# Throughput on real multilingual text: ASCII and non-ASCII documents "
      "(`python -m bench.speed.throughput_unicode`)\n")
    w(f"Machine: {machine()}, numba {numba.__version__}; shared with other work (load average beside each "
      f"figure: the 1-minute one when the run started; an idle machine is 0-1).\n")
    langs = sorted({r["lang"] for r in recs})
    w(f"Corpus: {len(texts):,} Debian manual pages ({megabytes(texts):.1f} MB of UTF-8) in {len(langs)} languages "
      f"({', '.join(langs)}), built by `bench/corpora/manpages.py`; {len(plain):,} pages are all ASCII. "
      f"Representation: {REP_OPH.label()} {REP_OPH.hashfunc} {REP_OPH.scheme}/{REP_OPH.num_perm}, "
      f"`signatures_from_texts` from the `str` texts; best of {args.repeats} rounds.\n")
    w("| documents | pages | MB | one thread | one thread, per CPU second | two threads | 2 / 1 | load (1, 2) "
      "| to Python |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, docs in groups.items():
        mb = megabytes(docs)
        (t1, l1), (t2, l2) = best[name, 1], best[name, 2]
        w(f"| {name} | {len(docs):,} | {mb:.1f} | **{mb / t1:.0f} MB/s**, {len(docs) / t1:,.0f} docs/s | "
          f"{mb / cpu_best[name]:.0f} MB/s | "
          f"{mb / t2:.0f} MB/s, {len(docs) / t2:,.0f} docs/s | {t1 / t2:.2f}x | {l1:.1f}, {l2:.1f} | "
          f"{to_python(docs)} |")
    ratio = (megabytes(other) / best["the other pages", 1][0]) / (megabytes(plain) / best["ASCII pages", 1][0])
    w("")
    cpu_ratio = (megabytes(other) / cpu_best["the other pages"]) / (megabytes(plain) / cpu_best["ASCII pages"])
    w(f"Non-ASCII pages at {ratio:.2f}x the MB/s of ASCII ones on one thread ({cpu_ratio:.2f}x per CPU second).\n")
    per_doc, rload, rname = rensa_best
    w(f"rensa's fastest path (`{rname}`, shingles built in Python with calib's `normalize`) on the first "
      f"{len(sub):,} documents of the corpus where one page in six is not ASCII: {1 / per_doc:,.0f} docs/s "
      f"(load {rload:.1f}); calib one thread on all {len(mixed):,}: {1 / calib_mixed[0]:,.0f} docs/s "
      f"(load {calib_mixed[1]:.1f}): **{per_doc / calib_mixed[0]:.1f}x rensa**.\n")
    w("\"to Python\": pages whose NFKC depends on neighbouring code points (a mark composing with the letter "
      "before it), normalized by Python's `normalize` and spliced back; every other page is normalized in "
      "compiled code from its own str buffer.")
    text = "\n".join(lines) + "\n"
    print(text)
    write_result(args.out, text)


if __name__ == "__main__":
    main()
