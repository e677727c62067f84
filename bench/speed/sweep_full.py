"""Full sweep timing: every (b, r) with b*r == 128 and b*r == 256, five final
thresholds, on 10,000 documents, once shingles, signatures and the exact
reference pairs exist (they are computed first, untimed, as a Workspace
caches them).

Documents: the shipped sample (2,360 labeled documents) plus word-shuffled
copies of its texts as unlabeled singletons, up to 10,000.

    python -m bench.speed.sweep_full [--docs 10000] [--shingle word --k 5]
"""

from __future__ import annotations

from bench.record import RESULTS_DIR, write_result
import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from calib.sketches.represent import Representation  # noqa: E402
from calib.reading.sample import from_frames  # noqa: E402
from calib.reading.samples import load_sample  # noqa: E402
from calib.search.grid import Grid  # noqa: E402
from calib.search.sweep import sweep  # noqa: E402
from calib.search.workspace import Workspace  # noqa: E402


def ten_thousand(n_docs: int):
    base = load_sample(ROOT / "data" / "sample")
    docs = base.docs[["id", "text", "group", "domain", "language"]].copy()
    rng = np.random.default_rng(0)
    extra = []
    k = 0
    while len(docs) + len(extra) < n_docs:
        t = base.texts[k % base.n].split()
        rng.shuffle(t)
        extra.append({"id": f"noise{k:06d}", "text": " ".join(t), "group": None,
                      "domain": base.docs["domain"].iloc[k % base.n], "language": "en"})
        k += 1
    docs = pd.concat([docs, pd.DataFrame(extra)], ignore_index=True)
    pairs = base.pairs.assign(id_a=base.ids[base.pairs["i"]], id_b=base.ids[base.pairs["j"]],
                              label=base.pairs["is_duplicate"])
    return from_frames(docs, pairs[["id_a", "id_b", "label", "category"]], name=f"bench{n_docs}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=10_000)
    ap.add_argument("--shingle", default="word")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    sample = ten_thousand(a.docs)
    rep = Representation(shingle=a.shingle, k=a.k)
    grid = Grid(representations=(rep,), num_perms=(128, 256))
    ws = Workspace(sample)
    t0 = time.perf_counter()
    ws.signatures(rep.with_(num_perm=256))
    ws.reference_pairs(rep, min(grid.thresholds))
    prep = time.perf_counter() - t0
    sweep(ws, Grid(representations=(rep,), num_perms=(64,), splits=((8, 8),), thresholds=(0.8,)))  # compile
    times = []
    for _ in range(a.repeats):
        ws._cands.clear()  # time the candidate generation too, not only the cached metrics
        t0 = time.perf_counter()
        res = sweep(ws, grid)
        times.append(time.perf_counter() - t0)
    ok = res[res["status"] == "ok"]
    lines = [
        f"# Full sweep on {sample.n:,} documents ({rep.shingle_label()}, {len(grid.splits_for(128)) + len(grid.splits_for(256))} "
        f"splits of 128 and 256 x {len(grid.thresholds)} thresholds = {len(res)} configurations)",
        "",
        f"- shingles + signatures (256) + exact reference pairs, once: {prep:.2f} s (untimed below)",
        f"- sweep wall time, median of {a.repeats}: **{statistics.median(times):.2f} s** (runs: "
        + ", ".join(f"{t:.2f}" for t in times) + ")",
        f"- splits evaluated: {res.groupby(['num_perm', 'b', 'r']).ngroups}, of which too loose to materialize: "
        f"{res[res['status'] != 'ok'].groupby(['num_perm', 'b', 'r']).ngroups}",
        f"- largest materialized candidate set: {int(ok['candidates'].max()):,} pairs",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    write_result(RESULTS_DIR / f"sweep_full_{rep.shingle_label()}.md", text)


if __name__ == "__main__":
    main()
