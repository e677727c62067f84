"""``calib apply``: run an exported configuration on an unlabeled corpus (report only).

Locally in batches (:func:`calib.production.engines.local.apply_config`), or on
Spark with ``--engine spark``; writes the manifest of proposed removals.
"""

from __future__ import annotations

import sys
from pathlib import Path

from calib.base.errors import CliError, check_input, check_out_dir
from calib.base.inputs import CONFIG_MAX_BYTES, STOPLIST_MAX_BYTES, read_regular_text
from calib.cli._common import (_load_exported, _review_store, add_missing_option, check_reviews, fit_default_pairs,
                               say_applied)


APPLY_MAX_PAIRS = 50_000_000  # calib apply's default pair budget (lowered to fit memory when it does not)


def tqdm_bar(desc: str, total):
    from tqdm import tqdm
    return tqdm(total=total, desc=desc, unit="doc", disable=None, file=sys.stderr)


def _load_stoplist(doc: dict, config_path: str):
    """The boilerplate stoplist beside an exported config (None when it strips nothing)."""
    from calib.production.document import ExportError, load_stoplist
    try:
        return load_stoplist(doc, lambda name: read_regular_text(Path(config_path).parent / name,
                                                                 max_bytes=STOPLIST_MAX_BYTES, what="a stoplist"),
                             config_path)
    except ExportError as exc:
        raise CliError(str(exc))


def _load_frequencies(doc: dict, path: str):
    """A weighted config's document-frequency table (None when unweighted), one line if unusable."""
    from calib.production.document import ExportError, load_frequencies
    try:
        return load_frequencies(doc, path)
    except ExportError as exc:
        raise CliError(str(exc))


def cmd_apply(a) -> int:
    from calib.reading.corpus import ApplyError, check_fields
    from calib.production.engines.local import apply_config, write_apply
    from calib.reading.files import MISSING_VALUES
    if a.batch_size < 1:
        raise CliError(f"--batch-size must be >= 1, got {a.batch_size}")
    if a.max_pairs < 0:
        raise CliError(f"--max-pairs must be >= 0, got {a.max_pairs}")
    a.max_pairs = fit_default_pairs(a.max_pairs, APPLY_MAX_PAIRS, "apply")
    if a.engine == "spark":  # its own input/output checks: paths may be object-storage URIs
        from calib.cli.apply_spark import cli_apply
        try:
            return cli_apply(a)
        except ValueError as exc:  # ApplyError, ExportError: one line
            raise CliError(str(exc))
    check_input(a.config, "--config", folder=False, max_bytes=CONFIG_MAX_BYTES, kind="a config")
    check_input(a.corpus, "--corpus")
    check_reviews(a.reviews)
    check_out_dir(a.out, a.overwrite)
    config, doc = _load_exported(a.config)
    stop = _load_stoplist(doc, a.config)
    frequencies = _load_frequencies(doc, a.config)
    keep = tuple(f.strip() for f in (a.keep_fields or "").split(",") if f.strip())
    try:
        check_fields(a.corpus, keep, id_field=a.id_field, text_field=a.text_field)
    except ApplyError as exc:
        raise CliError(str(exc))
    store = _review_store(a.reviews)
    try:
        result = apply_config(config, a.corpus, batch_size=a.batch_size, id_field=a.id_field,
                              text_field=a.text_field, slice_fields=keep, bar=tqdm_bar, review_store=store,
                              max_pairs=a.max_pairs, stoplist=stop, frequencies=frequencies,
                              missing_values=MISSING_VALUES if a.missing_values is None else a.missing_values)
        paths = write_apply(a.out, result, corpus=a.corpus)
    except ApplyError as exc:
        raise CliError(str(exc))
    finally:
        if store is not None:
            store.close()
    say_applied(result.summary(), paths["manifest.csv"], doc.get("evidence"))
    return 0


def add_parser(sub) -> None:
    """``calib apply``: its options and handler."""
    ap = sub.add_parser("apply", help="run an exported config on an unlabeled corpus (report only)")
    ap.add_argument("--config", required=True, help="exported config JSON")
    ap.add_argument("--corpus", required=True, help="corpus: .jsonl[.gz] or .parquet with id and text fields")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--overwrite", action="store_true", help="replace existing output (default: refuse, before any work)")
    ap.add_argument("--batch-size", type=int, default=10_000, help="documents per batch (default 10000)")
    ap.add_argument("--id-field", default="id", help="id field/column (default: id)")
    ap.add_argument("--text-field", default="text", help="text field/column (default: text)")
    ap.add_argument("--reviews", help="review store (a .sqlite file or a postgresql:// URL) whose latest decisions fill review_status")
    ap.add_argument("--keep-fields", metavar="F1,F2", default="",
                    help="corpus fields/columns to carry into the manifest (comma-separated, e.g. source,url); "
                         "default: none")
    ap.add_argument("--max-pairs", type=int, default=APPLY_MAX_PAIRS,
                    help="distinct candidate pairs above which the corpus is refused before any pair is materialized "
                         "(memory: ~40 bytes a pair; default 50000000)")
    add_missing_option(ap)
    ap.add_argument("--engine", choices=("local", "spark"), default="local",
                    help="local (default), or spark: the same job on Spark (calib.production.engines.spark; pip install "
                         "'calib[spark]' and a Java runtime; master from spark-submit, CALIB_SPARK_MASTER or local[*])")
    ap.set_defaults(func=cmd_apply)
