"""One search in its own process, for tests/test_disk_cache.py: ``python tests/_disk_run.py SAMPLE_DIR OUT
[BUDGET] [IGNORE]`` runs calib's default search on a fresh Workspace with the disk store on (unless
CALIB_CACHE says off) and writes OUT.pkl (results table) and OUT.json (recommendation, counts)."""

from __future__ import annotations

import json
import sys

from calib.reading.samples import load_sample
from calib.search.from_sample import search
from calib.search.workspace import Workspace


def main(sample_dir: str, out: str, budget: str = "0.01", ignore: str = "") -> None:
    ws = Workspace(load_sample(sample_dir), disk=True, ignore_categories=tuple(c for c in ignore.split(",") if c))
    found = search(ws, max_false_removal_rate=float(budget), check_top=2, check_seeds=1)
    found.results.to_pickle(out + ".pkl")
    best = None if found.best is None else found.best["config_fingerprint"]
    with open(out + ".json", "w") as fh:
        json.dump({"best": best, "computed": dict(ws.computed), "loaded": dict(ws.loaded)}, fh)


if __name__ == "__main__":
    main(*sys.argv[1:])
