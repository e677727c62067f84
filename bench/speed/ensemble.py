"""LSH Ensemble all-pairs candidates: calib.candidates.ensemble vs datasketch's MinHashLSHEnsemble.

    PYTHONPATH=. python -m bench.speed.ensemble [--docs 2000] [--out bench/results/ensemble.md]

Generated nested shingle sets (tests/test_containment.py's generator: sizes 1-120, a third of the
sets mostly copied from an earlier one), datasketch-identical signatures (scheme 'datasketch'),
containment threshold 0.5, num_perm 128, 8 partitions, m 8. datasketch: index every document, then
every document queries it (its own key left out). calib: ensemble_directed with datasketch's
partition bounds (the candidate sets are checked equal) and ensemble_pairs with its own equi-depth
partitions. Recall is over the brute-force pairs with C >= 0.5 (a pair found from its smaller side).
"""

from __future__ import annotations

from bench.record import write_result
import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from datasketch import MinHash, MinHashLSHEnsemble  # noqa: E402

from calib.verification.containment import all_pairs_containment_above  # noqa: E402
from calib.candidates.ensemble import Ensemble, ensemble_directed, ensemble_pairs  # noqa: E402
from calib.sketches.minhash import signatures  # noqa: E402
from test_containment import nested_sets  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--out", default="bench/results/ensemble.md")
    a = ap.parse_args(argv)
    sets, _ = nested_sets(0, n=a.docs, vocab=20 * a.docs)
    sizes = sets.sizes()
    ens = Ensemble(0.5, 128, num_part=8, m=8)
    sig = signatures(sets, 128, 1, "datasketch")
    ens.table()  # the (b, r) table is built once per (t, num_perm, m), like datasketch's constructor

    t0 = time.perf_counter()
    index = MinHashLSHEnsemble(threshold=0.5, num_perm=128, num_part=8, m=8)
    mhs = [MinHash(num_perm=128, hashvalues=sig[d], scheme="affine32") for d in range(sets.n)]
    index.index([(d, mhs[d], int(sizes[d])) for d in range(sets.n) if sizes[d] > 0])
    ds = {d: set(index.query(mhs[d], int(sizes[d]))) - {d} for d in range(sets.n) if sizes[d] > 0}
    t_ds = time.perf_counter() - t0

    uppers = np.array([u for u in index.uppers if u is not None])
    t0 = time.perf_counter()
    q, x = ensemble_directed(sig, sizes, ens, uppers=uppers)
    t_dir = time.perf_counter() - t0
    mine: dict[int, set] = {d: set() for d in ds}
    for qq, xx in zip(q.tolist(), x.tolist()):
        mine[qq].add(xx)
    equal = mine == ds

    t0 = time.perf_counter()
    i, j = ensemble_pairs(sig, sizes, ens)
    t_pairs = time.perf_counter() - t0
    bi, bj, _ = all_pairs_containment_above(sets, 0.5)
    truth = set(zip(bi.tolist(), bj.tolist()))
    ours = set(zip(i.tolist(), j.tolist()))
    theirs = {(min(d, y), max(d, y)) for d, ys in ds.items() for y in ys if (sizes[d], d) < (sizes[y], y)}
    rec = lambda c: len(truth & c) / len(truth)  # noqa: E731
    text = "\n".join([
        "# LSH Ensemble candidates: calib vs datasketch", "",
        f"`PYTHONPATH=. python -m bench.speed.ensemble --docs {a.docs}`: {sets.n} generated sets, C >= 0.5, num_perm 128, "
        f"8 partitions, m 8; {len(truth)} brute-force pairs with C >= 0.5.", "",
        "| method | seconds | directed candidates | pairs (smaller side queries) | recall |", "|---|---|---|---|---|",
        f"| datasketch MinHashLSHEnsemble: index + every document queries | {t_ds:.2f} | "
        f"{sum(len(v) for v in ds.values())} | {len(theirs)} | {rec(theirs):.3f} |",
        f"| calib ensemble_directed, datasketch's partitions | {t_dir:.2f} | {len(q)} | - | - |",
        f"| calib ensemble_pairs, equi-depth partitions | {t_pairs:.2f} | - | {len(ours)} | {rec(ours):.3f} |", "",
        f"Directed candidate sets equal to datasketch's, document by document: **{equal}**.", ""])
    write_result(a.out, text)
    print(text)


if __name__ == "__main__":
    main()
