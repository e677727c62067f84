"""Weighted MinHash against classic MinHash: text in -> signature out, one thread.

    PYTHONPATH=. python -m bench.speed.weighted_throughput [--docs 1500] [--icws-docs 150] [--repeats 3]

Licence texts (bench/corpora/real_text.py, /usr/share/common-licenses paragraphs), char 5-grams,
128 hashes, seed 1. The IDF table is the corpus's own, counted before the timing (as a
sweep's workspace holds it). Every timed call starts from the raw texts: normalization,
shingling, the IDF look-up of each shingle (weighted rows) and the signature kernel are
inside. Methods run round robin, ``--repeats`` rounds, medians; ICWS (O(n k) logarithms)
on the first ``--icws-docs`` documents (rates are per document). Then the estimators on
the same documents: exact weighted Jaccard of random pairs and of pairs sharing
paragraphs (among the first 400 documents), against the fraction of equal columns of dart and of icws.
"""

from __future__ import annotations

from bench.record import RESULTS_DIR, load, write_result
import argparse
import os
import statistics
import time
from pathlib import Path

import numba
import numpy as np

from bench.corpora.real_text import documents, licence_paragraphs
from calib.sketches.minhash import estimate_jaccard, signatures, signatures_from_texts
from calib.sketches.represent import Representation
from calib.sketches.shingles import shingle_hashes
from calib.sketches.weighted_minhash import WeightedSets, frequencies_from_sets
from calib.verification.weighted_jaccard import pairs_weighted_jaccard

RESULTS = RESULTS_DIR / "weighted_throughput.md"
REP = Representation(shingle="char", k=5, num_perm=128, seed=1, scheme="prefix")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=1500)
    ap.add_argument("--icws-docs", type=int, default=150)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    docs = documents(args.docs, paras=licence_paragraphs())
    sets = shingle_hashes(docs, REP, unique=True)
    table = frequencies_from_sets(sets)
    cases = [("prefix", "classic MinHash `prefix`, unweighted", REP, len(docs)),
             ("oph", "`oph`, unweighted", REP.with_(scheme="oph"), len(docs)),
             ("dart_idf", "**`dart` + idf** (weighted)", REP.with_(scheme="dart", weighting="idf"), len(docs)),
             ("dart", "`dart`, unit weights (= J)", REP.with_(scheme="dart"), len(docs)),
             ("icws_idf", "`icws` + idf (weighted, the reference)", REP.with_(scheme="icws", weighting="idf"),
              min(args.icws_docs, len(docs)))]
    for _, _, rep, _ in cases:  # numba's caches, outside the timing
        for th in (1, 2):
            numba.set_num_threads(th)
            signatures_from_texts(docs[:32], rep, frequencies=table)
    per_doc: dict[tuple[str, int], list[float]] = {}
    load0 = load()
    for _ in range(args.repeats):
        for key, _, rep, n in cases:
            for th in ((1, 2) if key in ("prefix", "dart_idf") else (1,)):
                numba.set_num_threads(th)
                t0 = time.perf_counter()
                signatures_from_texts(docs[:n], rep, frequencies=table)
                per_doc.setdefault((key, th), []).append((time.perf_counter() - t0) / n)
    load1 = load()
    numba.set_num_threads(2)
    med = {k: statistics.median(v) for k, v in per_doc.items()}

    # the estimators: random pairs, and pairs of documents that share paragraphs (higher J_w)
    w = WeightedSets.from_table(sets, table)
    rng = np.random.default_rng(0)
    few = min(400, len(docs))                            # icws signs these (O(n k) logarithms)
    i = rng.integers(0, few, 4000)
    j = rng.integers(0, few, 4000)
    keep = i != j
    i, j = i[keep], j[keep]
    exact = pairs_weighted_jaccard(w, i, j)
    top = np.argsort(exact)[-400:]                      # the most similar of them
    sub = np.unique(np.concatenate([i, j]))
    part = WeightedSets(*_subset(w, sub))
    pos = np.searchsorted(sub, i), np.searchsorted(sub, j)
    seeds = {"dart": range(1, 21), "icws": range(1, 4)}
    est = {scheme: np.array([estimate_jaccard(signatures(part, REP.num_perm, s, scheme), *pos) for s in ss])
           for scheme, ss in seeds.items()}                # (seed, pair)

    lines = ["# Weighted MinHash: text in -> signature out (bench/speed/weighted_throughput.py)\n",
             f"{len(docs):,} licence texts (bench/corpora/real_text.py, mean {np.mean([len(t) for t in docs]) / 1e3:.1f} K "
             f"characters), char 5-grams, 128 hashes, seed 1, IDF table of the corpus ({len(table.hashes):,} "
             f"shingles). Median of {args.repeats} round-robin rounds; ICWS timed on the first {cases[-1][3]} "
             f"documents. Machine: {os.cpu_count()} CPUs shared with other jobs, load average (1 min) "
             f"{load0:.1f} before, {load1:.1f} after: the ratios (same run) are the figures to read. "
             f"{time.strftime('%Y-%m-%d', time.gmtime())}.\n",
             "| method | threads | us/doc | docs/s | vs `prefix` (1 thread) |", "|---|---:|---:|---:|---:|"]
    base = med["prefix", 1]
    for key, label, _, _ in cases:
        for th in (1, 2):
            if (key, th) in med:
                lines.append(f"| {label} | {th} | {med[key, th] * 1e6:,.0f} | {1 / med[key, th]:,.0f} | "
                             f"{med[key, th] / base:.2f}x |")
    lines += ["", f"`dart` + idf costs {med['dart_idf', 1] / base:.2f}x `prefix` (target: at most 3x); "
              f"`icws` + idf {med['icws_idf', 1] / base:.0f}x; dart is {med['icws_idf', 1] / med['dart_idf', 1]:.0f}x "
              f"faster than icws. Two threads: dart + idf {med['dart_idf', 1] / med['dart_idf', 2]:.2f}x one thread, "
              f"prefix {med['prefix', 1] / med['prefix', 2]:.2f}x.\n",
              "## The estimators on the same documents (128 columns)\n",
              f"Mean over the pairs of each seed's estimate, then over seeds ({len(seeds['dart'])} for dart, "
              f"{len(seeds['icws'])} for icws; the pairs share the seed's hash functions, so one seed's mean "
              "errs as a whole: average seeds, not pairs); mean abs error per pair at seed 1.\n",
              "| pairs | pairs | mean exact J_w | dart: mean estimate (se over seeds) | icws: mean estimate | "
              "mean abs error dart | mean abs error icws |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name, m in (("random", np.ones(len(i), bool)), ("most similar 400", np.isin(np.arange(len(i)), top))):
        per_seed = {k: v[:, m].mean(axis=1) for k, v in est.items()}
        lines.append(f"| {name} | {m.sum():,} | {exact[m].mean():.4f} | {per_seed['dart'].mean():.4f} "
                     f"({per_seed['dart'].std(ddof=1) / np.sqrt(len(per_seed['dart'])):.4f}) | "
                     f"{per_seed['icws'].mean():.4f} | {np.abs(est['dart'][0, m] - exact[m]).mean():.4f} | "
                     f"{np.abs(est['icws'][0, m] - exact[m]).mean():.4f} |")
    lines.append("\nBoth estimators are unbiased for J_w with binomial variance J_w (1 - J_w) / 128 "
                 "(tests/test_dart_minhash.py checks the collision rate of every column over 400 seeds).")
    text = "\n".join(lines) + "\n"
    write_result(args.out, text)
    print(text)


def _subset(w: WeightedSets, rows: np.ndarray):
    """(offsets, hashes, unique, weights) of the documents ``rows`` of ``w``, as one CSR."""
    sizes = w.sizes()[rows]
    off = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    idx = np.concatenate([np.arange(w.offsets[r], w.offsets[r + 1]) for r in rows])
    return off, w.hashes[idx], True, w.weights[idx]


if __name__ == "__main__":
    main()
