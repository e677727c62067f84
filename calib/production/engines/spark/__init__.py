"""The Spark engine: ``calib apply --engine spark`` and ``calib draw --engine spark`` as PySpark jobs.

It offers :func:`apply_spark` (the same exported config, the same manifest rows as the local
engine, :mod:`calib.production.engines.local`), :func:`check_supported` (the configurations it
runs), :func:`loose_scan` (the corpus draw's pass), and :func:`session` after
:func:`check_environment` (pyspark and a Java runtime, or one line saying what is missing).
Its parts, one job each:

- ``apply``: the apply job's steps, from the corpus to the manifest;
- ``draw``: the corpus draw's loose pass (band keys, verify values, the drawn texts);
- ``batches``: what the tasks run, calib's own kernels on Arrow batches;
- ``components`` and ``driver``: the whole-graph steps, as Spark rounds or on the driver;
- ``io``: the session and the files (local paths or any Hadoop file system);
- ``plan``: read splits and shuffle partitions sized to the input and the cores;
- ``progress``: the driver's progress lines while a job runs;
- ``check``: executors run the driver's calib and libraries, or one line saying not;
- ``ship`` and ``cache``: the driver's environment packed once for a cluster's executors.

The job script that ``spark-submit`` runs is ``calib/cli/spark_submit.py``.
"""

from calib.production.engines.spark.apply import apply_spark, check_supported
from calib.production.engines.spark.draw import loose_scan
from calib.production.engines.spark.io import SparkApplyError, check_environment, session

__all__ = ["apply_spark", "check_supported", "loose_scan", "session", "check_environment", "SparkApplyError"]
