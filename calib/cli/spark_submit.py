"""The spark-submit script: ``calib apply --engine spark`` as a job script.

    spark-submit [spark options] calib/cli/spark_submit.py --config ... --corpus ... --out ...

takes ``calib apply``'s options (every one, same meaning) and runs the Spark
engine with them (:mod:`calib.cli.apply_spark`). Submitted as a file, its own
folder would come first on ``sys.path`` and shadow top-level modules with
calib/cli's, so it takes itself off; calib itself comes from the environment
the job ships (see the README's "Apply on Spark").
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__" and sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # run as a script (spark-submit): calib/cli's modules are not top-level ones

from calib.cli import main as calib_main  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """spark-submit entry point: ``calib apply --engine spark`` with the same options."""
    return calib_main(["apply", *(sys.argv[1:] if argv is None else argv), "--engine", "spark"])


if __name__ == "__main__":
    sys.exit(main())
