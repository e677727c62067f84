"""Weighted MinHash (IDF, ICWS) against classic MinHash on the shipped sample: what weighting buys against boilerplate.

    PYTHONPATH=. python -m bench.search.weighted_boilerplate [--out bench/results/weighted_boilerplate.md]
        [--reps word5,char5] [--thresholds 0.3,0.4,0.5,0.6,0.7,0.8] [--split 32x4] [--skip-speed]

Quality, on data/sample (2,396 documents, 64 labeled boilerplate pairs):
for each representation and threshold t, the unweighted config (scheme prefix,
exact J >= t) and the weighted one (weighting idf, scheme icws, exact J_w >= t),
both num_perm 128 and the same LSH split, are evaluated (``calib.search.sweep.labeled_pairs``).
Reported per category: the share of its labeled pairs that are verified
(candidate in some band and exact similarity >= t): for ``boilerplate`` (labeled
not_duplicate) that is the false verification rate, for the duplicate
categories the pair recall. Intervals: Wilson 95% over the category's pairs
(pairs taken as independent trials; pairs sharing a document make them a little narrow).

Speed and memory (unless --skip-speed): a fresh interpreter per case shingles the
corpus, counts document frequencies and sketches num_perm 128 signatures
(classic ``prefix`` vs ``icws`` with IDF weights), reporting wall time (one
run after a warm-up on 50 documents that compiles the kernels), the peak RSS
of the whole child (``ru_maxrss``) and, above the RSS the run started from
(imports, texts and kernels loaded), the peak of the run itself (VmHWM reset
through /proc/self/clear_refs); on data/sample and on data/corpus/docs.jsonl.gz.
"""

from __future__ import annotations

from bench.record import RESULTS_DIR
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

DUPLICATE_FIRST = ("boilerplate",)


def quality(reps: list[str], thresholds: list[float], split: tuple[int, int]) -> str:
    import numpy as np
    import pandas as pd

    from calib.search.config import Config
    from calib.sketches.represent import Representation
    from calib.reading.samples import load_sample
    from calib.estimates.stats import wilson
    from calib.search.sweep import labeled_pairs
    from calib.search.workspace import Workspace

    ws = Workspace(load_sample(ROOT / "data" / "sample"))
    b, r = split
    rows = []
    for name in reps:
        kind = name.rstrip("0123456789")
        plain = Representation(shingle=kind, k=int(name[len(kind):]), num_perm=128)
        weighted = plain.with_(scheme="icws", weighting="idf")
        for t in thresholds:
            for label, rep, measure in (("unweighted J", plain, "jaccard"), ("idf J_w", weighted, "weighted_jaccard")):
                lp = labeled_pairs(ws, Config(rep, b, r, threshold=t, measure=measure))
                lp = lp[lp["category"] != "(group)"]
                for cat, g in lp.groupby("category"):
                    k, n = int(g["verified"].sum()), len(g)
                    lo, hi = wilson(k, n)
                    rows.append({"rep": name, "t": t, "weights": label, "category": cat,
                                 "dup": bool((g["label"] == 1).all()), "k": k, "n": n, "rate": k / n,
                                 "low": float(lo), "high": float(hi)})
    df = pd.DataFrame(rows)
    out = [f"## Quality on data/sample (num_perm 128, b={b} r={r}, exact verification at the same t)\n",
           "Boilerplate: **false verification rate** (share of the 64 boilerplate pairs, labeled not_duplicate, "
           "that are verified). Other duplicate categories: **pair recall**. Each cell: rate [95% Wilson].\n"]
    cats = [c for c in DUPLICATE_FIRST if c in set(df["category"])] + sorted(
        c for c in set(df["category"]) if c not in DUPLICATE_FIRST and df[df["category"] == c]["dup"].all())
    other_neg = sorted(c for c in set(df["category"]) if c not in cats)

    def cell(g):
        return f"{g['rate']:.3f} [{g['low']:.3f}, {g['high']:.3f}]"

    for name in reps:
        out.append(f"\n### {name}\n")
        out.append("| t | weights | " + " | ".join(f"{c} (n={int(df[(df.category == c)].n.iloc[0])})"
                                                  for c in cats) + " | pooled recall of the duplicate categories |")
        out.append("|---|---|" + "---|" * (len(cats) + 1))
        for t in thresholds:
            for label in ("unweighted J", "idf J_w"):
                g = df[(df.rep == name) & (df.t == t) & (df.weights == label)].set_index("category")
                dup = g[g["dup"]]
                k, n = int(dup["k"].sum()), int(dup["n"].sum())
                lo, hi = wilson(k, n)
                out.append(f"| {t:g} | {label} | " + " | ".join(cell(g.loc[c]) for c in cats)
                           + f" | {k / n:.3f} [{float(lo):.3f}, {float(hi):.3f}] |")
        if other_neg:
            out.append(f"\nOther not_duplicate categories (verified share, i.e. false verification) for {name}:\n")
            out.append("| t | weights | " + " | ".join(other_neg) + " |")
            out.append("|---|---|" + "---|" * len(other_neg))
            for t in thresholds:
                for label in ("unweighted J", "idf J_w"):
                    g = df[(df.rep == name) & (df.t == t) & (df.weights == label)].set_index("category")
                    out.append(f"| {t:g} | {label} | " + " | ".join(cell(g.loc[c]) for c in other_neg) + " |")
    return "\n".join(out) + "\n"


CHILD = r"""
import gzip, json, resource, sys, time
sys.path.insert(0, {root!r})
from calib.sketches.represent import Representation
from calib.sketches.shingles import shingle_hashes
from calib.sketches.minhash import signatures
from calib.sketches.weighted_minhash import frequencies_from_sets, weigh
path, scheme, kind, k = {path!r}, {scheme!r}, {kind!r}, {k}
op = gzip.open if path.endswith(".gz") else open
with op(path, "rt", encoding="utf-8") as f:
    texts = [json.loads(l)["text"] for l in f if l.strip()]
rep = Representation(shingle=kind, k=k, num_perm=128)
if scheme == "icws":
    rep = rep.with_(scheme="icws", weighting="idf")
def run(texts):
    t0 = time.perf_counter()
    sets = shingle_hashes(texts, rep, unique=True)
    t1 = time.perf_counter()
    table = frequencies_from_sets(sets) if scheme == "icws" else None
    sets = weigh(sets, rep, table)
    t2 = time.perf_counter()
    sig = signatures(sets, 128, 1, rep.scheme)
    t3 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2, sets, table
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024
run(texts[:50])  # warm-up: compiles (or loads) the kernels
before = status("VmRSS:")
with open("/proc/self/clear_refs", "w") as f:  # reset the peak (VmHWM) to the current RSS
    f.write("5")
sh, df, sg, sets, table = run(texts)
run_peak = status("VmHWM:")
print(json.dumps({{"docs": len(texts), "shingles": int(len(sets.hashes)), "shingle_s": sh, "df_s": df, "sig_s": sg,
                  "table_entries": 0 if table is None else int(len(table.compact().hashes)),
                  "table_bytes": 0 if table is None else len(table.to_bytes()),
                  "before_mb": before, "run_peak_mb": run_peak,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def speed(reps: list[str]) -> str:
    corpora = [ROOT / "data" / "sample" / "docs.jsonl", ROOT / "data" / "corpus" / "docs.jsonl.gz"]
    out = ["## Time and memory of the signatures (num_perm 128)\n",
           "A fresh interpreter per case: shingling, then (icws only) the document-frequency count and the "
           "IDF weights, then the signatures (``calib.minhash.signatures`` over "
           f"{__import__('os').cpu_count()} CPU(s), shared with other jobs while measured: compare the schemes, "
           "not the absolute seconds). One run after a warm-up; *run peak - start*: the RSS the shingling, "
           "weights and signatures added (VmHWM reset before the run); *peak RSS*: the whole child's "
           "(``ru_maxrss``: imports, texts and kernel compilation included).\n",
           "| corpus | shingles | scheme | documents | shingle entries | shingling s | df + weights s | "
           "signatures s | signatures us/doc | df table (entries, bytes) | run peak - start MB | peak RSS MB |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for path in corpora:
        if not path.exists():
            out.append(f"| {path.relative_to(ROOT)} | (absent) |||||||||")
            continue
        for name in reps:
            kind = name.rstrip("0123456789")
            for scheme in ("prefix", "icws"):
                code = CHILD.format(root=str(ROOT), path=str(path), scheme=scheme, kind=kind, k=int(name[len(kind):]))
                res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
                m = json.loads(res.stdout.strip().splitlines()[-1])
                out.append(f"| {path.relative_to(ROOT)} | {name} | {scheme}{' + idf' if scheme == 'icws' else ''} | "
                           f"{m['docs']:,} | {m['shingles']:,} | {m['shingle_s']:.2f} | "
                           f"{m['df_s']:.2f} | {m['sig_s']:.2f} | {1e6 * m['sig_s'] / m['docs']:.0f} | "
                           f"{m['table_entries']:,}, {m['table_bytes']:,} | {m['run_peak_mb'] - m['before_mb']:.1f} | "
                           f"{m['peak_rss_mb']:.0f} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(RESULTS_DIR / "weighted_boilerplate.md"))
    p.add_argument("--reps", default="word5,char5")
    p.add_argument("--thresholds", default="0.3,0.4,0.5,0.6,0.7,0.8")
    p.add_argument("--split", default="32x4")
    p.add_argument("--skip-speed", action="store_true")
    a = p.parse_args(argv)
    from calib.base.atomic import write_text_atomic
    from calib.candidates.lsh import parse_splits
    reps = [x.strip() for x in a.reps.split(",") if x.strip()]
    thresholds = [float(x) for x in a.thresholds.split(",")]
    split = parse_splits(a.split)[0]
    t0 = time.perf_counter()
    text = ["# Weighted MinHash (IDF, ICWS) vs classic MinHash\n",
            "Written by `PYTHONPATH=. python -m bench.search.weighted_boilerplate` (see its docstring for the method). "
            "Weights: w = ln(1 + N / df), df counted on the sample itself.\n",
            quality(reps, thresholds, split)]
    if not a.skip_speed:
        text.append(speed(reps))
    text.append(f"\n(total bench time {time.perf_counter() - t0:.0f} s)\n")
    write_text_atomic(a.out, "\n".join(text))
    print(f"wrote {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
