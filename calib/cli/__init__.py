"""Command line: ``calib sweep | export | apply | draw | reviews | samples ...``.

One module per subcommand (:mod:`calib.cli.sweep`, :mod:`calib.cli.export`,
:mod:`calib.cli.apply`, :mod:`calib.cli.draw`, :mod:`calib.cli.reviews`,
:mod:`calib.cli.samples`), each with its ``add_parser(sub)``; what several share
is in :mod:`calib.cli._common`. Errors a user can fix (bad file, bad option)
print one readable line on stderr and exit with status 2; nothing prints a
traceback for them.
"""

from __future__ import annotations

import argparse
import sys

from calib.base.budget import MemoryBudgetError
from calib.base.errors import CliError, _claims
from calib.cli import apply, draw, export, reviews, samples, sweep

SUBCOMMANDS = (sweep, export, apply, draw, reviews, samples)  # in the order calib -h lists them


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="calib", description="MinHash-LSH calibration workbench (report-only: nothing is ever deleted)")
    sub = p.add_subparsers(dest="command", required=True)
    for command in SUBCOMMANDS:
        command.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    a = parser.parse_args(argv)
    try:
        with _claims:
            return int(a.func(a) or 0)
    except (CliError, MemoryBudgetError) as exc:
        print(f"calib {a.command}: error: {exc}", file=sys.stderr)
        return getattr(exc, "status", 2)
    except OSError as exc:  # disk full, permission lost mid-run: one line, not a traceback
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"calib {a.command}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"calib {a.command}: interrupted; files written so far are complete", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
