"""``calib draw --design corpus --engine spark``: the corpus draw's options, handed to the Spark job.

One job: start (or join) the session, run
:func:`calib.labeling.corpus_draw_spark.draw_corpus_spark` under the driver's
progress lines (:mod:`calib.production.engines.spark.progress`) and turn a failed
Spark job into one line naming its root cause. The drawn set is written by
the driver (:func:`calib.labeling.draw.write_drawn`), as locally.
"""

from __future__ import annotations

from calib.labeling.corpus_draw_spark import draw_corpus_spark
from calib.labeling.drawn import DrawError, DrawnSet
from calib.production.engines.spark.check import SHIP_HINT
from calib.production.engines.spark.draw import STAGES
from calib.reading.corpus import ApplyError
from calib.production.engines.spark.io import check_environment, root_cause, session
from calib.production.engines.spark.progress import Progress


def spark_draw(corpus: str, **options) -> DrawnSet:
    """The draw of ``corpus`` on Spark (``options``: :func:`draw_corpus_spark`'s); a failed job is a DrawError."""
    try:
        check_environment()
        spark = session(app_name="calib draw")
    except ApplyError as exc:  # SparkApplyError, the environment archive's ArchiveError
        raise DrawError(str(exc)) from None
    spark.sparkContext.setLogLevel("OFF")  # a failed task's Java stack is not logged: its cause is reported
    try:
        with Progress(spark, stages=STAGES) as progress:
            return draw_corpus_spark(corpus, spark=spark, progress=progress, **options)
    except Exception as exc:  # a failed Spark job (truncated .gz, unreadable file): its root cause, one line
        if not type(exc).__module__.startswith(("py4j", "pyspark")):
            raise
        why = root_cause(exc)
        hint = f"; {SHIP_HINT}" if "No module named" in why else ""
        raise DrawError(f"{corpus}: the Spark job failed: {why}{hint}") from None
