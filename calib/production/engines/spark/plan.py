"""A Spark job sized to its input: read splits and shuffle partitions from the corpus's bytes and the cores.

One job: Spark's defaults (200 shuffle partitions, 128 MB read splits) suit
neither a few thousand documents (200 tasks per shuffle, each a fixed cost,
for a few rows) nor a corpus much larger than the cluster. With C cores
(``defaultParallelism``: the executors' cores) and B input bytes (an estimate
of U = 4 B uncompressed bytes for a compressed file)::

    shuffle partitions  P = C * ceil(max(1, U / SHUFFLE_BYTES) / C)   (a multiple of C, at least C)
    read split bytes    S = clamp(ceil(B / (SPLITS_PER_CORE * C)), 1 MB, 128 MB)

so a shuffle moves about SHUFFLE_BYTES of corpus per partition in whole waves
of tasks, and a splittable file is read in at least SPLITS_PER_CORE tasks per
core (a compressed file is one split, whatever S). Adaptive query execution
stays on, coalescing small shuffle partitions further and splitting skewed
join partitions (a hot band bucket), with its advisory size SHUFFLE_BYTES.
A setting given when the session was launched (``--conf`` or the builder)
is the user's and is left as it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

SHUFFLE_BYTES = 32 << 20
SPLITS_PER_CORE = 3
COMPRESSION = 4  # assumed ratio of a .gz/.bz2/.zst corpus's text to its bytes
_COMPRESSED = (".gz", ".bz2", ".zst", ".xz", ".deflate", ".lz4", ".snappy")


@dataclass(frozen=True)
class JobSize:
    cores: int
    input_bytes: int
    compressed: bool
    shuffle_partitions: int
    split_bytes: int

    def describe(self) -> str:
        return (f"{self.input_bytes / 2**20:,.1f} MB of input{' (compressed)' if self.compressed else ''} on "
                f"{self.cores} cores: {self.shuffle_partitions} shuffle partitions, read splits of "
                f"{self.split_bytes / 2**20:,.0f} MB")


def size_job(input_bytes: int, compressed: bool, cores: int) -> JobSize:
    """The partition counts for ``input_bytes`` of corpus on ``cores`` cores (the module's formulas)."""
    cores = max(1, int(cores))
    text = input_bytes * (COMPRESSION if compressed else 1)
    partitions = cores * math.ceil(max(1.0, text / SHUFFLE_BYTES) / cores)
    split = min(128 << 20, max(1 << 20, math.ceil(input_bytes / (SPLITS_PER_CORE * cores))))
    return JobSize(cores, int(input_bytes), compressed, int(partitions), int(split))


def input_size(spark, files: list[str]) -> tuple[int, bool]:
    """(total bytes, any compressed) of the corpus files: os.stat for local paths, Hadoop's for URIs."""
    from calib.production.engines.spark.io import is_local, local_path
    total, compressed = 0, False
    for f in files:
        compressed |= f.lower().endswith(_COMPRESSED)
        if is_local(f):
            total += Path(local_path(f)).stat().st_size
        else:
            jvm = spark.sparkContext._jvm
            p = jvm.org.apache.hadoop.fs.Path(f)
            total += p.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).getFileStatus(p).getLen()
    return total, compressed


def apply_size(spark, files: list[str]) -> JobSize:
    """Size the session's SQL settings for ``files`` (the user's launch settings are kept) and return the size."""
    size = size_job(*input_size(spark, files), spark.sparkContext.defaultParallelism)
    launched = spark.sparkContext.getConf()
    for key, value in (("spark.sql.shuffle.partitions", size.shuffle_partitions),
                       ("spark.sql.files.maxPartitionBytes", size.split_bytes),
                       ("spark.sql.adaptive.enabled", "true"),
                       ("spark.sql.adaptive.coalescePartitions.enabled", "true"),
                       ("spark.sql.adaptive.skewJoin.enabled", "true"),
                       ("spark.sql.adaptive.advisoryPartitionSizeInBytes", SHUFFLE_BYTES)):
        if not launched.contains(key):
            spark.conf.set(key, str(value))
    return size
