"""Candidate generation for every LSH split (b, r) with b*r == 128 and b*r == 256.

Corpus: 10,000 real-text documents (bench/corpora/real_text.py), of which 10 % are
planted light edits of other documents (word replacements, a dropped or
moved paragraph, case/whitespace changes), so candidate sets contain real
near-duplicates as well as chance collisions. Signatures (char 5-grams,
'fast' scheme, 256 and 128 permutations) are computed once, untimed.

Timed: for each split, ``band_keys(sig, b, r)`` then
``candidate_pairs(sig, b, r, keys=keys, max_pairs=...)`` (the same work as
``candidate_pairs(sig, b, r)``, with the key time reported separately). A
split that raises ``TooManyCandidates`` has been evaluated (its pair count is
known before any pair is materialized) and is reported with its upper bound.
Rounds are repeated; per-split and total times are medians over rounds, at 2
threads and at 1 thread. A separate, untimed-in-the-table pass splits
``candidate_pairs`` into its internal stages (sort, count, emit, final sort).

Run:  PYTHONPATH=. python -m bench.speed.sweep_splits [--repeats 3] [--max-pairs 50000000]
"""

from __future__ import annotations

from bench.record import RESULTS_DIR, load_averages, write_result
import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numba
import numpy as np

from bench.corpora.real_text import documents_with_near_duplicates
from calib.candidates.lsh import (TooManyCandidates, _count_pairs, _first_counts, _first_pairs, band_keys,
    candidate_pairs, s_at_probability, splits)
from calib.sketches.minhash import signatures
from calib.sketches.represent import Representation
from calib.sketches.shingles import shingle_hashes

RESULTS = RESULTS_DIR / "sweep_splits.md"


def run_split(sig, b, r, active, max_pairs):
    """One split; returns (key seconds, pairs seconds, n pairs or None, upper bound or None, pairs)."""
    t0 = time.perf_counter()
    keys = band_keys(sig, b, r)
    t1 = time.perf_counter()
    try:
        ii, jj = candidate_pairs(sig, b, r, active=active, keys=keys, max_pairs=max_pairs)
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1, len(ii), None, (ii, jj)
    except TooManyCandidates as e:
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1, None, e.upper_bound, None


def profile_split(sig, b, r, active, max_pairs) -> dict[str, float]:
    """candidate_pairs' stages, replicated with perf_counter between them."""
    t = {}
    t0 = time.perf_counter()
    keys = band_keys(sig, b, r)
    t1 = time.perf_counter()
    order = np.argsort(keys, axis=1)
    sk = np.take_along_axis(keys, order, axis=1)
    t2 = time.perf_counter()
    upper = int(_count_pairs(sk, order, active).sum())
    t3 = time.perf_counter()
    t["band keys"] = t1 - t0
    t["sort each band (argsort, take_along_axis)"] = t2 - t1
    t["count per-band collisions (`_count_pairs`)"] = t3 - t2
    if max_pairs is not None and upper > max_pairs:
        return t
    keys_t = np.ascontiguousarray(keys.T)
    bands = np.arange(b, dtype=np.int64)
    counts = _first_counts(sk, order, active, keys_t, bands)
    t4 = time.perf_counter()
    offsets = np.zeros(b + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    ii = np.empty(offsets[b], dtype=np.int64)
    jj = np.empty(offsets[b], dtype=np.int64)
    _first_pairs(sk, order, active, keys_t, bands, True, offsets, ii, jj)
    t5 = time.perf_counter()
    srt = np.argsort(ii * np.int64(sig.shape[0]) + jj, kind="stable")
    ii, jj = ii[srt], jj[srt]
    t6 = time.perf_counter()
    t["count distinct pairs at their first band (`_first_counts`)"] = t4 - t3
    t["emit them (`_first_pairs`)"] = t5 - t4
    t["sort pairs (numpy)"] = t6 - t5
    return t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-pairs", type=int, default=50_000_000,
                    help="TooManyCandidates limit (calib's default is 50,000,000)")
    ap.add_argument("--threads", default="2,1", help="numba thread counts to time, first one is the headline")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    threads = [int(x) for x in args.threads.split(",")]

    docs, planted = documents_with_near_duplicates(args.docs)
    n = len(docs)
    print(f"{n} docs, {len(planted)} planted near-duplicate pairs", file=sys.stderr)

    # signatures once (not part of the timed sweep)
    numba.set_num_threads(max(threads))
    rep = Representation(shingle="char", k=5, num_perm=256, seed=1, scheme="fast")
    t0 = time.perf_counter()
    sets = shingle_hashes(docs, rep, unique=False)
    sig256 = signatures(sets, 256, rep.seed, rep.scheme)
    t1 = time.perf_counter()
    sig128 = signatures(sets, 128, rep.seed, rep.scheme)
    t2 = time.perf_counter()
    assert np.array_equal(sig128, sig256[:, :128]), "fast scheme: 128 columns are the prefix of 256"
    active = sets.sizes() > 0
    sigs = {128: sig128, 256: sig256}
    print(f"signatures: 256 in {t1 - t0:.2f} s, 128 in {t2 - t1:.2f} s (untimed for the sweep)", file=sys.stderr)

    # planted pairs, as sorted codes i*n+j, for recall per split
    pi = np.array([min(s, d) for s, d, _ in planted], dtype=np.int64)
    pj = np.array([max(s, d) for s, d, _ in planted], dtype=np.int64)
    planted_code = pi * n + pj

    # warm up (compile or load every kernel, including the emit path)
    for th in threads:
        numba.set_num_threads(th)
        for b, r in ((16, 8), (256, 1)):
            run_split(sig256[:300], b, r, active[:300], max_pairs=10)
            run_split(sig256[:300], b, r, active[:300], max_pairs=None)

    all_splits = [(m, b, r) for m in (128, 256) for b, r in splits(m)]
    per = {th: {s: [] for s in all_splits} for th in threads}
    totals = {th: [] for th in threads}
    result = {}
    load0 = load_averages()
    for rnd in range(args.repeats):
        for th in threads:
            numba.set_num_threads(th)
            tot = 0.0
            for s in all_splits:
                m, b, r = s
                tk, tp, npairs, upper, pairs = run_split(sigs[m], b, r, active, args.max_pairs)
                per[th][s].append((tk, tp))
                tot += tk + tp
                if s not in result:
                    recall = None
                    if pairs is not None:
                        code = pairs[0] * n + pairs[1]
                        recall = float(np.isin(planted_code, code).mean())
                    result[s] = (npairs, upper, recall)
                del pairs
            totals[th].append(tot)
            print(f"round {rnd + 1}, {th} thread(s): {tot:.2f} s", file=sys.stderr)

    load1 = load_averages()
    # stage profile: one pass per thread count
    prof = {}
    for th in threads:
        numba.set_num_threads(th)
        acc = {}
        for m, b, r in all_splits:
            for k, v in profile_split(sigs[m], b, r, active, args.max_pairs).items():
                acc[k] = acc.get(k, 0.0) + v
        prof[th] = acc

    lines = []
    w = lines.append
    w("# LSH split sweep: candidate pairs for every (b, r) with b*r = 128 and 256\n")
    w(f"Corpus: {n:,} documents (`bench/corpora/real_text.py`, real docstring and licence prose, 3-8 KB), "
      f"{len(planted):,} of them planted light edits of another document. Char 5-grams, `fast` scheme, "
      f"seed 1. Signatures computed once, untimed ({t1 - t0:.1f} s for 256 columns incl. shingling, "
      f"{t2 - t1:.1f} s for 128 from the same shingle sets). `max_pairs` = {args.max_pairs:,} "
      f"(of {n * (n - 1) // 2:,} possible pairs). Machine: {os.cpu_count()} CPUs, shared; "
      f"median of {args.repeats} rounds; numba {numba.__version__}; load average (1 min) {load0[0]:.2f} "
      f"before and {load1[0]:.2f} after the timed rounds (above ~1 other jobs compete for the cores).\n")
    w("## Total for all splits\n")
    w("| numba threads | all 17 splits: median s | min s | max s | target |")
    w("|---:|---:|---:|---:|---|")
    for th in threads:
        med = statistics.median(totals[th])
        w(f"| {th} | {med:.2f} | {min(totals[th]):.2f} | {max(totals[th]):.2f} | "
          f"{'met (< 5 s)' if med < 5 else '**missed** (>= 5 s)'} |")
    w("")
    w(f"## Per split ({', '.join(f'{t} thread' + ('s' if t > 1 else '') for t in threads)})\n")
    w("A split reported as *too many* raised `TooManyCandidates`: the count (sum over bands of colliding "
      "pairs, an upper bound on distinct pairs) is known without materializing any pair; it counts as "
      "evaluated. Recall = fraction of the planted near-duplicate pairs that are candidates.\n")
    head = "| num_perm | b | r | s at P=0.5 | candidate pairs | planted recall |"
    sep = "|---:|---:|---:|---:|---:|---:|"
    for th in threads:
        head += f" keys s ({th}t) | pairs s ({th}t) | total s ({th}t) |"
        sep += "---:|---:|---:|"
    w(head)
    w(sep)
    for s in all_splits:
        m, b, r = s
        npairs, upper, recall = result[s]
        pc = f"{npairs:,}" if npairs is not None else f"too many (upper bound {upper:,})"
        rc = f"{recall:.3f}" if recall is not None else "-"
        row = f"| {m} | {b} | {r} | {s_at_probability(b, r):.3f} | {pc} | {rc} |"
        for th in threads:
            tk = statistics.median(x[0] for x in per[th][s])
            tp = statistics.median(x[1] for x in per[th][s])
            tt = statistics.median(x[0] + x[1] for x in per[th][s])
            row += f" {tk:.3f} | {tp:.3f} | {tt:.3f} |"
        w(row)
    w("")
    w("## Where the time goes (one extra pass, `candidate_pairs` stages timed separately, summed over all splits)\n")
    w("| stage | " + " | ".join(f"{th} thread(s): s | share" for th in threads) + " |")
    w("|---|" + "---:|---:|" * len(threads))
    for k in prof[threads[0]]:
        row = f"| {k} |"
        for th in threads:
            tot = sum(prof[th].values())
            row += f" {prof[th].get(k, 0.0):.3f} | {prof[th].get(k, 0.0) / tot:.0%} |"
        w(row)
    w("| **total** |" + "".join(f" {sum(prof[th].values()):.3f} | |" for th in threads))
    w("")
    text = "\n".join(lines)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_result(args.out, text + "\n")
    print(f"\nwritten to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
