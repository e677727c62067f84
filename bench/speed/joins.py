"""CPU seconds of the exact joins the default search makes: Jaccard and containment at each floor of the
threshold scan (``calib.search.screen.SCAN_FLOORS``, 0.9 down to 0.3, each join from scratch as the scan
makes it, stopped by ``MAX_SCAN_PAIRS`` as the scan is), on the canonical rows of word and character
representations, as the search's workspace joins them. The shingles and the token ranking are untimed
apart from the ranking's own row; numba kernels are compiled before timing.

    python -m bench.speed.joins --sample data/sample --sample /tmp/search-speed/source --before /work/main
    python -m bench.speed.joins --one data/sample [--calib-root /other/checkout]

CPU = ``time.process_time`` (every thread of the process): on a shared machine it moves far less than
wall seconds. Each join's pairs are hashed (rows and similarity to 12 digits) so that the two trees
are seen to find the same pairs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

from bench.record import checkout_arguments, fresh_run

REPS = ("word3", "word5", "char5")


def _digest(i, j, s) -> str:
    import numpy as np
    h = hashlib.sha256()
    for a in (i.astype(np.int64), j.astype(np.int64), np.round(s, 12)):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:12]


def one(sample_dir: str, floors=None, reps=REPS) -> list[dict]:
    import numpy as np
    from calib.reading.samples import load_sample
    from calib.search.screen import MAX_SCAN_PAIRS, SCAN_FLOORS
    from calib.search.workspace import Workspace
    from calib.sketches.represent import Representation
    from calib.sketches.shingles import ShingleSets
    from calib.verification import jaccard
    from calib.verification.measures import get_measure
    tiny = ShingleSets(np.array([0, 2, 4, 5]), np.array([1, 2, 1, 2, 2], np.uint32), True)
    for m in ("jaccard", "containment"):
        get_measure(m).all_pairs(tiny, 0.5)  # compiled (or loaded from the cache) before timing
    ws = Workspace(load_sample(Path(sample_dir)))
    rows = []
    for name in reps:
        rep = Representation(shingle=name.rstrip("0123456789"), k=int(name.lstrip("wordchar")))
        sets, canon = ws.sets(rep), ws.copies(rep).is_canonical
        c0 = time.process_time()
        jaccard._global_ranks(sets)
        rows.append({"rep": name, "measure": "ranking", "floor": None, "cpu": time.process_time() - c0,
                     "pairs": None, "digest": "", "shingles": int(len(sets.hashes))})
        for measure in ("jaccard", "containment"):
            for floor in floors or SCAN_FLOORS:
                c0 = time.process_time()
                try:
                    i, j, s = get_measure(measure).all_pairs(sets, floor, active=canon, max_pairs=MAX_SCAN_PAIRS)
                    pairs, digest = len(i), _digest(i, j, s)
                except jaccard.TooManyPairs as exc:
                    pairs, digest = None, f"over ({exc.found:,})"
                rows.append({"rep": name, "measure": measure, "floor": floor, "cpu": time.process_time() - c0,
                             "pairs": pairs, "digest": digest})
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)  # progress
                if pairs is None:
                    break  # the scan stops there
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    checkout_arguments(ap, "a second checkout timed first (the 'before' column)")
    ap.add_argument("--floors", help="floors to join at, e.g. 0.9,0.7 (default: SCAN_FLOORS)")
    ap.add_argument("--reps", default=",".join(REPS), help="representations, e.g. word3,char5")
    ap.add_argument("--out", default="bench/results/joins.md")
    a = ap.parse_args(argv)
    if a.calib_root:
        sys.path.insert(0, a.calib_root)
    if a.one:
        floors = [float(x) for x in a.floors.split(",")] if a.floors else None
        print(json.dumps(one(a.one, floors, a.reps.split(","))))
        return
    from bench.record import load_averages, machine, write_result
    lines = ["# The search's exact joins: CPU seconds per floor", "",
             f"`python -m bench.speed.joins {' '.join(argv or sys.argv[1:])}`: each tree in a fresh process, "
             f"{machine()}; load averages {{loads}} at the end. Canonical rows (exact copies collapsed) as the "
             "search joins them; `over (n)`: more than MAX_SCAN_PAIRS pairs, the scan stops there.", "",
             "| sample | representation | join | floor | pairs | CPU s before | CPU s after | same pairs |",
             "|---|---|---|---|---|---|---|---|"]
    totals, options = {}, (["--floors", a.floors] if a.floors else []) + ["--reps", a.reps]
    for sample in a.sample or ["data/sample"]:
        before = fresh_run("bench.speed.joins", sample, *options, calib_root=a.before) if a.before else None
        after = fresh_run("bench.speed.joins", sample, *options)
        for k, r in enumerate(after):
            b = before[k] if before else None
            same = "" if b is None or r["measure"] == "ranking" else ("yes" if b["digest"] == r["digest"] else "NO")
            pairs = f"{r['shingles']:,} shingles" if r["measure"] == "ranking" else (
                f"{r['pairs']:,}" if r["pairs"] is not None else r["digest"])
            lines.append(f"| {sample} | {r['rep']} | {r['measure']} | {r['floor'] or ''} | {pairs} | "
                         f"{'' if b is None else format(b['cpu'], '.2f')} | {r['cpu']:.2f} | {same} |")
            t = totals.setdefault((sample, r["measure"]), [0.0, 0.0])
            t[0] += 0.0 if b is None else b["cpu"]
            t[1] += r["cpu"]
        print("\n".join(lines[-len(after):]), file=sys.stderr)
    lines += ["", "| sample | join | CPU s before | CPU s after |", "|---|---|---|---|"]
    lines += [f"| {s} | {m} | {b:.1f} | {t:.1f} |" for (s, m), (b, t) in totals.items()]
    text = "\n".join(lines).replace("{loads}", ", ".join(f"{x:.2f}" for x in load_averages())) + "\n"
    write_result(a.out, text)
    print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
