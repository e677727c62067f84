"""The Spark engine's session and files: local paths or any Hadoop file system.

One job: everything the Spark job (:mod:`calib.production.engines.spark`)
reads or writes outside its DataFrames' computation. :func:`session` starts
(or joins) a SparkSession after :func:`check_environment` has found pyspark
and a Java runtime; the path helpers take a local path, a ``file:`` URI or
any Hadoop URI (``s3a://``, ``gs://``, ``abfss://``, ``hdfs://``) and turn
Hadoop's and py4j's exceptions into one readable line. :func:`input_files`
lists a corpus (file, folder or glob, sorted by path) and :func:`read_corpus`
reads it as rows numbered in file order; :func:`load_config_any` and
:func:`load_frequencies_any` are the config document's loaders
(:mod:`calib.production.document`) for local or object-storage paths;
:func:`check_out` applies ``calib apply``'s ``--out`` rules on any file system.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from calib.reading.corpus import ApplyError, _kind
from calib.reading.files import json_message
from calib.search.config import Config


class SparkApplyError(ApplyError):
    """Spark engine unavailable or misused: one readable line."""


# ---------------------------------------------------------------------------
# Environment
# ---------------------------------------------------------------------------

def check_environment() -> None:
    """Raise :class:`SparkApplyError` when pyspark or a Java runtime is missing."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise SparkApplyError("the spark engine needs pyspark, which is not installed: pip install 'calib[spark]'")
    home = os.environ.get("JAVA_HOME")
    java = (Path(home) / "bin" / "java") if home else None
    if not (java and java.is_file()) and shutil.which("java") is None:
        raise SparkApplyError("the spark engine needs a Java runtime (17 or 21), and none was found on PATH or in "
                              "JAVA_HOME: on Debian, apt-get install default-jre-headless")


def session(master: str | None = None, *, app_name: str = "calib apply"):
    """The active SparkSession, or a new one.

    The master comes from ``master``, else from spark-submit, else
    ``CALIB_SPARK_MASTER``, else ``local[*]``. A local master runs Python
    workers with this interpreter and this calib (so they use the driver's
    code and environment). Any other master gets this environment shipped
    (:mod:`calib.production.engines.spark.ship`: ``spark.archives``, the nodes'
    ``python3.X`` with ``PYTHONPATH=./env/lib``) unless ``CALIB_SPARK_SHIP=0`` says
    the nodes have it; the session then waits (at most
    ``CALIB_SPARK_EXECUTOR_WAIT`` seconds, default 30) for its executors, whose
    cores size the job. Spark's console progress bars are off (the CLI prints
    its own progress) and its log level is ERROR.
    """
    check_environment()
    import warnings
    from pyspark.sql import SparkSession

    # pyspark 4.3 warns, whenever an Arrow or pandas function is defined, that it does not fully support pandas 3.
    # calib's tasks exchange Arrow batches (mapInArrow, applyInArrow) and use none of pyspark's pandas
    # conversions; their manifests equal the local engine's under pandas 3 (tests/test_spark_apply.py).
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    b = SparkSession.builder.appName(app_name).config("spark.ui.showConsoleProgress", "false")
    if master is None and "PYSPARK_GATEWAY_PORT" in os.environ:  # under spark-submit: its master and conf
        s = _started(b)
        s.sparkContext.setLogLevel("ERROR")
        return s
    master = master or os.environ.get("CALIB_SPARK_MASTER") or "local[*]"
    b = b.master(master)
    if master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        root = str(Path(__file__).resolve().parents[4])  # the folder holding calib/ (spark/, engines/, production/, calib/)
        b = (b.config("spark.executorEnv.PYTHONPATH", root)
             .config("spark.ui.enabled", "false")
             .config("spark.driver.memory", os.environ.get("CALIB_SPARK_DRIVER_MEMORY", "4g")))
    elif os.environ.get("CALIB_SPARK_SHIP", "1") != "0":
        from calib.production.engines.spark.ship import archive, conf, node_python
        for key, value in conf(archive(log=lambda m: print(f"calib spark: {m}", file=sys.stderr))).items():
            b = b.config(key, value)
        os.environ["PYSPARK_PYTHON"] = node_python()  # SparkContext reads the executors' Python from here
    s = _started(b)
    s.sparkContext.setLogLevel("ERROR")
    if not master.startswith("local"):
        wait_for_executors(s, float(os.environ.get("CALIB_SPARK_EXECUTOR_WAIT", "30")))
    return s


def _started(builder):
    """``builder.getOrCreate()``; a JVM that exits before Spark's gateway answers is one line saying why."""
    try:
        return builder.getOrCreate()
    except Exception as exc:
        condition = getattr(exc, "getCondition", getattr(exc, "getErrorClass", lambda: None))()
        if condition != "JAVA_GATEWAY_EXITED" and "[JAVA_GATEWAY_EXITED]" not in str(exc):
            raise
        raise SparkApplyError(f"Java could not start (the JVM exited before Spark's gateway answered): "
                              f"{java_start_cause()}") from None


def java_start_cause() -> str:
    """The likely reason a JVM would not start here: an address-space limit, a JAVA_HOME without Java, else
    the JVM's own message (printed above by Java)."""
    import resource
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        return (f"this process may use {soft / 2 ** 30:.1f} GiB of address space (ulimit -v), less than the JVM "
                "reserves at start (its heap, 1 GiB of class space, its code cache); lift the limit (ulimit -v "
                "unlimited) or give Java less: CALIB_SPARK_DRIVER_MEMORY=2g "
                "JAVA_TOOL_OPTIONS=-XX:CompressedClassSpaceSize=256m")
    home = os.environ.get("JAVA_HOME")
    if home and not (Path(home) / "bin" / "java").is_file():
        return f"JAVA_HOME={home} holds no bin/java: set it to a Java 17 or 21 runtime, or unset it"
    return ("see Java's own message above (a Java runtime other than 17 or 21, JAVA_HOME, too little free memory "
            "for CALIB_SPARK_DRIVER_MEMORY?)")


def executors(spark) -> int:
    """Executors registered now (the driver not counted)."""
    return max(0, len(spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()) - 1)


def wait_for_executors(spark, timeout: float, settle: float = 2.0) -> int:
    """Wait until executors have registered and their number has not changed for ``settle`` seconds (at most
    ``timeout`` seconds: with dynamic allocation they may come only with work). Returns their number."""
    import time
    start = last_change = time.monotonic()
    seen = executors(spark)
    while time.monotonic() - start < timeout:
        time.sleep(0.25)
        now = executors(spark)
        if now != seen:
            seen, last_change = now, time.monotonic()
        elif seen and time.monotonic() - last_change >= settle:
            break
    return seen


# ---------------------------------------------------------------------------
# Paths (local or any Hadoop file system: s3a://, gs://, abfss://, hdfs://)
# ---------------------------------------------------------------------------

def is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file:")


def local_path(path: str) -> Path:
    return Path(path[len("file://"):] if path.startswith("file://") else path[len("file:"):]
                if path.startswith("file:") else path)


def is_glob(path: str) -> bool:
    return any(c in path for c in "*?[")


def _java_error(exc: Exception) -> str:
    """The Java exception's own line (e.g. ``UnsupportedFileSystemException: No FileSystem for scheme "s3a"``),
    not py4j's "An error occurred while calling o42.getFileSystem"."""
    java = getattr(exc, "java_exception", None)
    return str(java.toString()) if java is not None else (str(exc).splitlines() or [type(exc).__name__])[0]


def root_cause(exc: Exception) -> str:
    """The innermost Java cause of a failed job (e.g. ``java.io.EOFException: Unexpected end of input
    stream`` for a truncated .gz), else the first line of the Python error."""
    java = getattr(exc, "java_exception", None)
    while java is not None and java.getCause() is not None:
        java = java.getCause()
    if java is not None:
        return str(java.toString())
    lines = [ln.strip() for ln in str(exc).splitlines() if "Exception:" in ln or "Error:" in ln]
    return lines[-1] if lines else _java_error(exc)


def _fs(spark, path: str):
    """(Hadoop FileSystem, Path) of ``path``; an unknown scheme or missing connector is an ApplyError."""
    jvm = spark.sparkContext._jvm
    try:
        p = jvm.org.apache.hadoop.fs.Path(path)
        return p.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), p
    except Exception as exc:  # py4j wraps the Hadoop exception
        why = _java_error(exc)
        if "No FileSystem for scheme" in why or "FileSystem not found" in why:  # a connector not on the classpath
            why += (f"; add the {path.split(':', 1)[0]}:// connector to the job (s3a: spark-submit --packages "
                    f"org.apache.hadoop:hadoop-aws:{jvm.org.apache.hadoop.util.VersionInfo.getVersion()})")
        raise ApplyError(f"{path}: {why}") from None


def input_files(spark, path: str) -> list[str]:
    """Data files a path (file, folder or glob) names, sorted; an error when there are none."""
    if is_local(path) and not is_glob(path):
        p = local_path(path)
        if p.is_file():
            return [str(p)]
        if not p.is_dir():
            raise ApplyError(f"{path}: no such file")
        files = sorted(str(f) for f in p.rglob("*") if f.is_file() and not f.name.startswith(("_", ".")))
    else:
        fs, p = _fs(spark, path)
        try:
            stats = fs.globStatus(p)
        except Exception as exc:  # py4j wraps the Hadoop IOException
            raise ApplyError(f"{path}: cannot list ({_java_error(exc)})") from None
        files = []
        for st in stats or []:
            if st.isDirectory():
                it = fs.listFiles(st.getPath(), True)
                while it.hasNext():
                    files.append(it.next().getPath().toString())
            else:
                files.append(st.getPath().toString())
        files = sorted(f for f in files if not f.rsplit("/", 1)[-1].startswith(("_", ".")))
    if not files:
        raise ApplyError(f"{path}: no such file")
    return files


def corpus_kind(files: list[str]) -> str:
    kinds = {_kind(Path(f.rsplit("/", 1)[-1])) for f in files}
    if len(kinds) > 1:
        raise ApplyError(f"{files[0]}: a corpus folder mixes JSONL and Parquet files")
    return kinds.pop()


def _bounded(fs, p, path: str, max_bytes: int, what: str) -> None:
    """Object storage's side of :mod:`calib.base.inputs`: a file, of at most ``max_bytes``, before it is read."""
    from calib.base.inputs import InputError
    if not fs.exists(p):
        raise FileNotFoundError(path)
    status = fs.getFileStatus(p)
    if not status.isFile():
        raise InputError(f"is not a file; {what} must be a regular file", path)
    if status.getLen() > max_bytes:
        raise InputError(f"is {status.getLen():,} bytes, more than the {max_bytes:,} {what} may be; nothing was "
                         "read", path)


def read_text(spark, path: str, max_bytes: int | None = None) -> str:
    """A text file, local (:func:`calib.base.inputs.read_regular_text`) or on Spark's file systems, of at most
    ``max_bytes`` (default: a config's bound)."""
    from calib.base.inputs import CONFIG_MAX_BYTES, InputError, read_regular_text
    max_bytes = CONFIG_MAX_BYTES if max_bytes is None else max_bytes
    if is_local(path):
        try:
            return read_regular_text(local_path(path), max_bytes=max_bytes, name=path)
        except InputError as exc:
            if exc.detail == "file not found":
                raise FileNotFoundError(path) from None
            raise
    fs, p = _fs(spark, path)
    _bounded(fs, p, path, max_bytes, "it")
    return "\n".join(r.value for r in spark.read.text(path, wholetext=True).collect())


def _read_bytes(spark, path: str) -> bytes:
    """A document-frequency table on Spark's file systems, within a share of memory, before it is read."""
    from calib.base.inputs import memory_share_bound, read_regular
    if is_local(path):
        return read_regular(local_path(path), max_bytes=memory_share_bound(), name=path)
    fs, p = _fs(spark, path)
    _bounded(fs, p, path, memory_share_bound(), "a document-frequency table")
    return bytes(spark.read.format("binaryFile").load(path).first()["content"])


def load_frequencies_any(doc: dict, config_path: str, spark=None):
    """A weighted config's document-frequency table, beside the config (local or object storage)."""
    from calib.production.document import load_frequencies
    if is_local(config_path):
        return load_frequencies(doc, local_path(config_path))
    return load_frequencies(doc, config_path, read_bytes=lambda p: _read_bytes(spark or session(), p))


def write_text(spark, path: str, text: str) -> None:
    if is_local(path):
        from calib.base.atomic import write_text_atomic
        write_text_atomic(local_path(path), text)
        return
    fs, p = _fs(spark, path)
    out = fs.create(p, True)
    try:
        out.write(bytearray(text.encode("utf-8")))
    finally:
        out.close()


def delete(spark, path: str) -> None:
    if is_local(path):
        local_path(path).unlink(missing_ok=True)
    else:
        fs, p = _fs(spark, path)
        fs.delete(p, False)


OUT_NAMES = ("manifest.parquet", "summary.json", "README.txt")  # the output set (a previous run may be replaced)


def check_out(spark, out: str, overwrite: bool) -> None:
    """``calib apply``'s --out rules on any file system, before any work: a folder (or nothing yet), empty
    unless ``overwrite``, holding nothing but a previous run's files (nothing the user put there is deleted)."""
    from calib.base.atomic import check_replaceable
    from calib.base.errors import check_out_dir
    if is_local(out):
        check_out_dir(str(local_path(out)), overwrite)
        check_replaceable(local_path(out), OUT_NAMES)
        return
    fs, p = _fs(spark, out)
    try:
        if not fs.exists(p):
            return
        if not fs.getFileStatus(p).isDirectory():
            raise ApplyError(f"--out {out}: is a file, not a folder")
        names = sorted(str(st.getPath().getName()) for st in fs.listStatus(p))
    except ApplyError:
        raise
    except Exception as exc:
        raise ApplyError(f"--out {out}: {_java_error(exc)}") from None
    if names and not overwrite:
        raise ApplyError(f"--out {out}: folder exists and is not empty (pass --overwrite to write into it)")
    foreign = [x for x in names if x not in OUT_NAMES]
    if foreign:
        raise ApplyError(f"{out}: holds {foreign[0]!r}, which this output does not write; refusing to replace the "
                         "folder (choose an empty or new --out)")


def load_config_any(path: str, spark=None) -> tuple[Config, dict]:
    """:func:`calib.production.document.load_config` for a local path or an object-storage URI."""
    from calib.production.document import ExportError, config_from_doc, load_config, validate_doc
    if is_local(path):
        return load_config(local_path(path))
    try:
        text = read_text(spark or session(), path)
    except FileNotFoundError:
        raise ExportError("no such file", None, path)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ExportError(f"not valid JSON (line {exc.lineno}, column {exc.colno}: {json_message(exc)})", None, path)
    validate_doc(doc, path=path)
    return config_from_doc(doc), doc


# ---------------------------------------------------------------------------
# Stage 1: the corpus as rows numbered in file order
# ---------------------------------------------------------------------------

def read_corpus(spark, corpus: str, files: list[str], kind: str, id_field: str, text_field: str,
                extra_fields: tuple[str, ...]):
    """Input rows with columns f (file), bs (split start), ri (row in file, Parquet), v or id/text/x*."""
    from pyspark.sql import functions as F
    if kind == "jsonl":
        df = spark.read.text(files)
        return df.select(F.col("value").cast("binary").alias("v"), F.col("_metadata.file_path").alias("f"),
                         F.col("_metadata.file_block_start").alias("bs"), F.lit(None).cast("long").alias("ri"))
    try:
        df = spark.read.parquet(*files)
        names = df.columns
    except Exception as exc:
        raise ApplyError(f"{corpus}: not a readable Parquet file ({str(exc).splitlines()[0]})")
    for f in (id_field, text_field):
        if f not in names:
            raise ApplyError(f"{corpus}: missing column {f!r} (columns: {', '.join(names)})")
    cols = [F.col(f"`{id_field}`").alias("id"), F.col(f"`{text_field}`").alias("text")]
    cols += [F.col(f"`{f}`").alias(f"x{k}") for k, f in enumerate(extra_fields) if f in names]
    return df.select(*cols, F.col("_metadata.file_path").alias("f"), F.lit(0).cast("long").alias("bs"),
                     F.col("_metadata.row_index").alias("ri"))


def split_offsets(counts) -> tuple[dict, int]:
    """Rows of ``(f, bs, lines, docs)`` per read split -> ({(f, bs): (documents before it, lines before it in its
    file)}, documents in all): a document's number is its split's offset plus its ``di``, in file order."""
    offsets, doc_off, line_off, last_f = {}, 0, 0, None
    for r in sorted(counts, key=lambda r: (r["f"], r["bs"])):
        line_off = 0 if r["f"] != last_f else line_off
        offsets[(r["f"], r["bs"])] = (doc_off, line_off)
        doc_off, line_off, last_f = doc_off + r["docs"], line_off + r["lines"], r["f"]
    return offsets, doc_off
