"""The default grid on the shipped sample: how long `Grid()` takes (cold: a
fresh Workspace, as the first sweep in the app or `calib sweep`; warm: a second
sweep on the same Workspace, as the app's later runs) and which configuration
each representation would give within a 1% false-removal budget.

    python -m bench.speed.default_grid [--repeat 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from calib.search.config import config_from_row  # noqa: E402
from calib.reading.samples import load_sample  # noqa: E402
from calib.search.grid import Grid  # noqa: E402
from calib.search.recommend import recommend  # noqa: E402
from calib.search.sweep import sweep  # noqa: E402
from calib.search.workspace import Workspace  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    sample = load_sample(ROOT / "data" / "sample")
    grid = Grid()
    print(grid)
    sweep(Workspace(sample), Grid(num_perms=(16,), splits=((4, 4),), thresholds=(0.8,)))  # compile kernels
    for _ in range(a.repeat):
        ws = Workspace(sample)
        t0 = time.perf_counter()
        results = sweep(ws, grid)
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        sweep(ws, grid)
        warm = time.perf_counter() - t0
        print(f"{len(results)} configurations: cold {cold:.1f} s, warm {warm:.1f} s")
    for rep, part in results.groupby("representation", sort=True):
        best = recommend(part, max_false_removal_rate=0.01)
        print(f"  {rep}: " + ("none within 1%" if best is None else
                              f"pair recall {best['pair_recall']:.3f}, false-removal rate "
                              f"{best['false_removal_rate']:.4f} ({config_from_row(best).fingerprint()})"))
    best = recommend(results, max_false_removal_rate=0.01)
    print(f"recommended: {config_from_row(best)}")


if __name__ == "__main__":
    main()
