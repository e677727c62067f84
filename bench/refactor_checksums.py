"""Recompute the checksums tests/test_refactor_checksums.py records (its procedure, its
rounding): the sweep table of its GRID on data/sample, and config.json / manifest.csv of
each export in its EXPORTS. Paste the printed values into the test after a deliberate change.

    PYTHONPATH=. python -m bench.refactor_checksums
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import test_refactor_checksums as T  # noqa: E402
from calib.production.export import write_export  # noqa: E402
from calib.reading.samples import load_sample  # noqa: E402
from calib.search.recommend import recommend  # noqa: E402
from calib.search.config import config_from_row
from calib.search.sweep import evaluate, sweep  # noqa: E402
from calib.search.workspace import Workspace  # noqa: E402


def main() -> None:
    ws = Workspace(load_sample(T.REPO / "data" / "sample"))
    results = sweep(ws, T.GRID)
    print(f'SWEEP_CSV_SHA256 = "{T.table_checksum(results)}"')
    for name in sorted(T.RECORDED):
        config = T.EXPORTS[name] or config_from_row(recommend(results, max_false_removal_rate=0.01))
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            write_export(out, config, evaluation=evaluate(ws, config), sample=ws.sample, selection={"method": "given"})
            print(f'"{name}": ("{T.config_checksum(out / "config.json")}",\n'
                  f'    "{T._sha((out / "manifest.csv").read_bytes())}"),')


if __name__ == "__main__":
    main()
