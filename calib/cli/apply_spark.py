"""``calib apply --engine spark``: the apply subcommand's options, handed to the Spark job.

One job: check what can be checked before the JVM starts (local paths, the
review store, the --out folder, the config and its fields, with the local
engine's rules), load the config document and the files beside it from a
local path or an object-storage URI, run :func:`calib.production.engines.spark.apply.apply_spark`
and print its one-line summary. A failed Spark job becomes one line naming
its root cause. The spark-submit script is :mod:`calib.cli.spark_submit`.
"""

from __future__ import annotations

import sys

from calib.cli._common import say_applied
from calib.reading.corpus import ApplyError
from calib.production.engines.spark.apply import apply_spark, check_supported
from calib.production.engines.spark.check import SHIP_HINT
from calib.production.engines.spark.io import (check_environment, check_out, is_glob, is_local, load_config_any,
                                               load_frequencies_any, local_path, read_text, root_cause, session)
from calib.base.inputs import CONFIG_MAX_BYTES, STOPLIST_MAX_BYTES
from calib.production.engines.spark.progress import Progress
from calib.reading.files import MISSING_VALUES


def cli_apply(a) -> int:
    """``calib apply --engine spark`` (``a``: the apply subcommand's parsed options, every one honoured).

    Local paths (and file: URIs) get the local engine's checks before the JVM starts; other URIs (s3a://,
    gs://, abfss://, hdfs://) go to Spark's file systems, whose own error names a missing connector."""
    from calib.base.errors import check_input
    from calib.cli._common import _review_store, check_reviews
    from calib.production.document import load_stoplist
    from calib.review.postgres import is_postgres_url
    check_environment()
    for path, flag in ((a.config, "--config"), (a.corpus, "--corpus")):
        if is_local(path) and not is_glob(path):
            check_input(str(local_path(path)), flag, **({"folder": False, "max_bytes": CONFIG_MAX_BYTES,
                                                         "kind": "a config"} if flag == "--config" else {}))
    shared_reviews = is_postgres_url(a.reviews)
    if a.reviews and not is_local(a.reviews) and not shared_reviews:
        raise ApplyError(f"--reviews {a.reviews}: a review store is a local SQLite file or a postgresql:// URL")
    reviews = a.reviews if shared_reviews or not a.reviews else str(local_path(a.reviews))
    check_reviews(reviews)
    if is_local(a.out):
        check_out(None, a.out, a.overwrite)
    if is_local(a.config):  # a bad or unsupported config fails before the JVM starts
        config, doc = load_config_any(a.config)
        check_supported(config)
        frequencies = load_frequencies_any(doc, a.config)
        stop = load_stoplist(doc, lambda name: read_text(None, str(local_path(a.config).parent / name),
                                                         STOPLIST_MAX_BYTES), a.config)
    slices = tuple(f.strip() for f in (getattr(a, "keep_fields", "") or "").split(",") if f.strip())
    if is_local(a.corpus) and local_path(a.corpus).is_file():  # the local engine's check, before any work
        from calib.reading.corpus import check_fields
        check_fields(local_path(a.corpus), slices, id_field=a.id_field, text_field=a.text_field)
    spark = session()
    spark.sparkContext.setLogLevel("OFF")  # a failed task's Java stack is not logged: its cause is reported
    if not is_local(a.out):
        check_out(spark, a.out, a.overwrite)
    if not is_local(a.config):
        config, doc = load_config_any(a.config, spark)
        frequencies = load_frequencies_any(doc, a.config, spark)
        stop = load_stoplist(doc, lambda name: read_text(spark, f"{a.config.rsplit('/', 1)[0]}/{name}",
                                                         STOPLIST_MAX_BYTES), a.config)
    store = _review_store(reviews)
    try:
        with Progress(spark) as progress:
            s = apply_spark(config, a.corpus, a.out, spark=spark, id_field=a.id_field, text_field=a.text_field,
                            slice_fields=slices, review_store=store, batch_size=a.batch_size, max_pairs=a.max_pairs,
                            frequencies=frequencies, stoplist=stop, progress=progress,
                            missing_values=MISSING_VALUES if a.missing_values is None else a.missing_values)
    except Exception as exc:  # a failed Spark job (truncated .gz, unreadable file): its root cause, one line
        if not type(exc).__module__.startswith(("py4j", "pyspark")):
            raise
        why = root_cause(exc)
        hint = f"; {SHIP_HINT}" if "No module named" in why else ""
        raise ApplyError(f"{a.corpus}: the Spark job failed: {why}{hint}") from None
    finally:
        if store is not None:
            store.close()
    say_applied(s, f"{a.out.rstrip('/')}/manifest.parquet", doc.get("evidence"), engine=" with spark")
    return 0
