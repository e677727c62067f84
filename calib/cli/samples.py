"""``calib samples``: build the shipped sample, its base text and its unlabeled
corpus (all deterministic), or summarize a sample as JSON.

Argument handling over :mod:`calib.shipped.base_texts` (``extract_base``),
:mod:`calib.shipped.sample` (``build_sample``), :mod:`calib.shipped.corpus`
(``build_corpus``) and :mod:`calib.reading.sample` (``summary``).
"""

from __future__ import annotations

import argparse
import json
import sys

from calib.base.atomic import OutputBusy, claim_output
from calib.base.errors import CliError, check_out_file
from calib.reading.sample import SAMPLE_DIR, summary
from calib.reading.files import SampleError
from calib.reading.samples import load_sample
from calib.shipped.base_texts import BASE_FILE, BaseError, extract_base
from calib.shipped.corpus import CORPUS_FILE, CORPUS_SEED, build_corpus
from calib.shipped.sample import BUILD_SEED, build_sample


def add_parser(sub) -> None:
    """``calib samples SUBCOMMAND ...``: its own parser (:func:`main`) reads the rest of the line."""
    sm = sub.add_parser("samples", help="build or summarize labeled samples (see calib samples -h)",
                        description="subcommands: build (rebuild data/sample from data/base, deterministic), "
                                    "extract-base (collect the base text, run once), corpus (rebuild the unlabeled corpus "
                                    "data/corpus/docs.jsonl.gz, deterministic), summary PATH [PAIRS] "
                                    "(a sample's counts as JSON); calib samples SUBCOMMAND -h for its options")
    sm.add_argument("args", nargs=argparse.REMAINDER, metavar="{build,extract-base,corpus,summary} ...")
    sm.set_defaults(func=lambda a: main(a.args))


def samples_parser() -> argparse.ArgumentParser:
    """The parser of ``calib samples SUBCOMMAND ...`` (the documentation's CLI reference reads it too)."""
    ap = argparse.ArgumentParser(prog="calib samples", description="Build the shipped sample or summarize a sample.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("extract-base", help="extract real base text from installed sources (run once)")
    e.add_argument("--out", default=str(BASE_FILE))
    bld = sub.add_parser("build", help="build the calibration sample from the committed base file")
    bld.add_argument("--out", default=str(SAMPLE_DIR))
    bld.add_argument("--base", default=str(BASE_FILE))
    bld.add_argument("--seed", type=int, default=BUILD_SEED)
    co = sub.add_parser("corpus", help="build the shipped unlabeled corpus data/corpus/docs.jsonl.gz from the base file")
    co.add_argument("--out", default=None, help="output .jsonl.gz (default data/corpus/docs.jsonl.gz)")
    co.add_argument("--base", default=str(BASE_FILE))
    co.add_argument("--seed", type=int, default=None)
    co.add_argument("--overwrite", action="store_true", help="replace an existing --out (default: refuse)")
    sm = sub.add_parser("summary", help="load a sample and print its summary as JSON")
    sm.add_argument("path")
    sm.add_argument("pairs", nargs="?")
    return ap


def main(argv=None) -> int:
    """``calib samples extract-base|build|corpus|summary`` (also ``python -m calib samples ...``)."""
    args = samples_parser().parse_args(argv)
    try:
        if args.cmd == "extract-base":
            with claim_output(args.out):  # one writer at a time (calib.base.atomic)
                print(f"wrote {extract_base(args.out)}")
        elif args.cmd == "build":
            with claim_output(args.out):
                s = build_sample(args.out, base=args.base, seed=args.seed)
            print(s)
        elif args.cmd == "corpus":
            out = check_out_file(str(args.out or CORPUS_FILE), (".gz",), args.overwrite)
            counts = build_corpus(out, base=args.base,
                                  seed=CORPUS_SEED if args.seed is None else args.seed)
            print(json.dumps(counts))
        else:
            print(json.dumps(summary(load_sample(args.path, args.pairs)), indent=2, ensure_ascii=False))
    except BaseError as err:  # empty, not gzip, not base records, too few for the sample
        print(f"error: --base {args.base}: {err}", file=sys.stderr)
        return 2
    except OutputBusy as err:
        print(f"error: --out {err.strerror}", file=sys.stderr)
        return 2
    except (SampleError, CliError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0
