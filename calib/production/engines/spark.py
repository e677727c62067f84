"""``calib apply`` as a PySpark job: the same exported config.json, the same manifest rows.

The work is split so that every step scales out and every per-record or
per-group computation is calib's own kernel, run on Arrow batches:

1. read: JSONL lines as raw bytes (strict UTF-8, like the local reader) or
   Parquet rows, each with its place in its file. Rows are numbered in file
   order (files by path), the local engine's row order.
2. per partition (``mapInArrow``): the local reader's id/text rules,
   :func:`calib.shingles.shingle_hashes`, :func:`calib.minhash.signatures`,
   :func:`calib.lsh.band_keys`.
3. candidates: bucket sizes by a counting aggregate on (band, key); the rows
   of colliding buckets paired by a self-join (i < j), distinct over bands.
   ``max_pairs`` bounds the distinct pairs, as :mod:`calib.lsh` does.
4. verification: pairs joined back to both documents' shingle sets and
   signatures; :func:`calib.jaccard.pairs_jaccard` (exact J) and
   :func:`calib.minhash.estimate_jaccard` (fraction of equal values).
5. connected components of the verified pairs by alternating large-star and
   small-star steps (Kiveris et al., "Connected Components in MapReduce and
   Beyond", SoCC 2014): O(log^2 n) rounds, stopped when every component is a
   star around its smallest row, at most ``MAX_ROUNDS``.
6. per group of whole components (``cogroup`` of members and edges):
   :func:`calib.clusters.cluster_pairs` (policy, representative rule,
   giant-component guard) and :func:`calib.manifest.manifest_frame` on the
   group's rows renumbered in order. Components do not interact in either, so
   this is the local result.
7. cluster ids: the local engine numbers clusters over all n rows by their
   smallest member m, so id(m) = m - #(rows < m that are not their cluster's
   smallest), a prefix count over the sorted graph rows.
8. ``manifest.parquet`` (ordered by cluster id, row), ``summary.json`` (last:
   its presence says the manifest beside it is complete), ``README.txt``.

Nothing is deleted. Also a script: ``spark-submit calib/spark_apply.py --config
... --corpus ... --out ...`` (see the README), hence absolute imports.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

if __name__ == "__main__" and sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # run as a script (spark-submit): calib's modules are not top-level ones

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from calib.candidates import lsh
from calib.production.engines.local import ApplyError, _as_id, _as_text, _kind, parse_jsonl_record
from calib.clusters.clustering import Representative, cluster_pairs
from calib.search.config import Config
from calib.verification.measures import get_measure
from calib.sketches.minhash import estimate_jaccard, signatures
from calib.reading.files import MISSING_VALUES, SampleError, json_message, parse_record
from calib.verification.copies import set_digests
from calib.sketches.shingles import ShingleSets, shingle_hashes
from calib.verification.short import short_mask, summary as short_summary, text_keys
from calib.sketches.weighted_minhash import weigh

GROUP_NODES = 50_000   # graph nodes clustered in one Python call (whole components; see apply_spark)
MAX_ROUNDS = 64        # large-star/small-star rounds; O(log^2 n) suffices for any real graph
_WHERE = "\x00where\x00"  # placeholder for "file:line" in messages made on executors


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
    code and environment).
    """
    check_environment()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    b = SparkSession.builder.appName(app_name)
    if master is None and "PYSPARK_GATEWAY_PORT" in os.environ:  # under spark-submit: its master and conf
        return b.getOrCreate()
    master = master or os.environ.get("CALIB_SPARK_MASTER") or "local[*]"
    b = b.master(master)
    if master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        root = str(Path(__file__).resolve().parents[3])  # the folder holding calib/
        b = (b.config("spark.executorEnv.PYTHONPATH", root)
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", str(2 * (os.cpu_count() or 2)))
             .config("spark.driver.memory", os.environ.get("CALIB_SPARK_DRIVER_MEMORY", "4g")))
    s = b.getOrCreate()
    s.sparkContext.setLogLevel("ERROR")
    return s


def _task_threads() -> None:
    """One compiled-kernel thread per task CPU: Spark already runs a task per core."""
    import numba
    from pyspark import TaskContext
    tc = TaskContext.get()
    numba.set_num_threads(max(1, min(numba.config.NUMBA_NUM_THREADS, int(tc.cpus()) if tc else 1)))


# ---------------------------------------------------------------------------
# Paths (local or any Hadoop file system: s3a://, gs://, abfss://, hdfs://)
# ---------------------------------------------------------------------------

def _is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file:")


def _local(path: str) -> Path:
    return Path(path[len("file://"):] if path.startswith("file://") else path[len("file:"):]
                if path.startswith("file:") else path)


def _is_glob(path: str) -> bool:
    return any(c in path for c in "*?[")


def _java_error(exc: Exception) -> str:
    """The Java exception's own line (e.g. ``UnsupportedFileSystemException: No FileSystem for scheme "s3a"``),
    not py4j's "An error occurred while calling o42.getFileSystem"."""
    java = getattr(exc, "java_exception", None)
    return str(java.toString()) if java is not None else (str(exc).splitlines() or [type(exc).__name__])[0]


def _root_cause(exc: Exception) -> str:
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


def _input_files(spark, path: str) -> list[str]:
    """Data files a path (file, folder or glob) names, sorted; an error when there are none."""
    if _is_local(path) and not _is_glob(path):
        p = _local(path)
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


def _corpus_kind(files: list[str]) -> str:
    kinds = {_kind(Path(f.rsplit("/", 1)[-1])) for f in files}
    if len(kinds) > 1:
        raise ApplyError(f"{files[0]}: a corpus folder mixes JSONL and Parquet files")
    return kinds.pop()


def _read_text(spark, path: str) -> str:
    if _is_local(path):
        return _local(path).read_text(encoding="utf-8")
    fs, p = _fs(spark, path)
    if not fs.exists(p):
        raise FileNotFoundError(path)
    return "\n".join(r.value for r in spark.read.text(path, wholetext=True).collect())


def _read_bytes(spark, path: str) -> bytes:
    if _is_local(path):
        return _local(path).read_bytes()
    fs, p = _fs(spark, path)
    if not fs.exists(p):
        raise FileNotFoundError(path)
    return bytes(spark.read.format("binaryFile").load(path).first()["content"])


def _frequencies(doc: dict, config_path: str, spark=None):
    """A weighted config's document-frequency table, beside the config (local or object storage)."""
    from calib.production.export import load_frequencies
    if _is_local(config_path):
        return load_frequencies(doc, _local(config_path))
    return load_frequencies(doc, config_path, read_bytes=lambda p: _read_bytes(spark or session(), p))


def _write_text(spark, path: str, text: str) -> None:
    if _is_local(path):
        from calib.base.atomic import write_text_atomic
        write_text_atomic(_local(path), text)
        return
    fs, p = _fs(spark, path)
    out = fs.create(p, True)
    try:
        out.write(bytearray(text.encode("utf-8")))
    finally:
        out.close()


def _delete(spark, path: str) -> None:
    if _is_local(path):
        _local(path).unlink(missing_ok=True)
    else:
        fs, p = _fs(spark, path)
        fs.delete(p, False)


OUT_NAMES = ("manifest.parquet", "summary.json", "README.txt")  # the output set (a previous run may be replaced)


def check_out(spark, out: str, overwrite: bool) -> None:
    """``calib apply``'s --out rules on any file system, before any work: a folder (or nothing yet), empty
    unless ``overwrite``, holding nothing but a previous run's files (nothing the user put there is deleted)."""
    from calib.base.atomic import check_replaceable
    from calib.base.errors import check_out_dir
    if _is_local(out):
        check_out_dir(str(_local(out)), overwrite)
        check_replaceable(_local(out), OUT_NAMES)
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
    """:func:`calib.export.load_config` for a local path or an object-storage URI."""
    from calib.production.export import ExportError, config_from_doc, load_config, validate_doc
    if _is_local(path):
        return load_config(_local(path))
    try:
        text = _read_text(spark or session(), path)
    except FileNotFoundError:
        raise ExportError("no such file", None, path)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ExportError(f"not valid JSON (line {exc.lineno}, column {exc.colno}: {json_message(exc)})", None, path)
    validate_doc(doc, path=path)
    return config_from_doc(doc), doc


# ---------------------------------------------------------------------------
# Stage 1-2: records -> (id, size, signature, band keys, shingle set), per partition
# ---------------------------------------------------------------------------

def _record(raw, id_field: str, text_field: str, extra_fields: tuple[str, ...]):
    """One JSONL line -> (id, text, extras), or None for a blank line; the local reader's rules."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApplyError(f"{_WHERE}: not UTF-8 text ({exc.reason} at byte {exc.start} of the line)")
    line = line.strip()
    if not line:
        return None
    try:  # the loaders' JSON rules (duplicate keys, lone surrogates, huge ints, deep nesting)
        rec = parse_record(line, _WHERE, None)
    except SampleError as exc:
        raise ApplyError(f"{_WHERE}: field {exc.field!r}: {exc.detail}" if exc.field else f"{_WHERE}: {exc.detail}") from None
    return parse_jsonl_record(rec, _WHERE, id_field, text_field, extra_fields)


def _doc_schema(extra_fields) -> str:
    cols = ["f string", "bs long", "li long", "di long", "err string", "id string", "size long",
            "sig binary", "keys array<long>", "sh binary", "dg binary", "tk binary"]
    return ", ".join(cols + [f"`x{k}` string" for k in range(len(extra_fields))])


def _sign_batches(batches, *, config: Config, kind: str, id_field: str, text_field: str,
                  extra_fields: tuple[str, ...], frequencies=None, stoplist=None):
    """mapInArrow body: one output row per input line (blank lines and bad records included,
    so lines can be numbered), documents carrying size, signature, band keys and shingle set."""
    import pyarrow as pa
    _task_threads()
    rep = config.rep
    counters: dict = {}  # (file, split start) -> [lines seen, documents seen]
    for batch in batches:
        d = batch.to_pydict()
        n = batch.num_rows
        out = {k: [None] * n for k in ("f", "bs", "li", "di", "err", "id")}
        extras = [[None] * n for _ in extra_fields]
        doc_pos, texts = [], []
        for t in range(n):
            f, bs = d["f"][t], d["bs"][t]
            c = counters.setdefault((f, bs), [0, 0])
            out["f"][t], out["bs"][t] = f, bs
            out["li"][t] = d["ri"][t] if kind == "parquet" else c[0]
            c[0] += 1
            try:
                if kind == "parquet":
                    where = f"{_WHERE}{d['ri'][t]}"
                    rec = (_as_id(d["id"][t], where, id_field), _as_text(d["text"][t], where, text_field),
                           [None if d.get(f"x{k}") is None or d[f"x{k}"][t] is None else str(d[f"x{k}"][t])
                            for k in range(len(extra_fields))])
                else:
                    rec = _record(d["v"][t], id_field, text_field, extra_fields)
            except ApplyError as exc:
                out["err"][t] = str(exc)
                continue
            if rec is None:
                continue
            out["di"][t] = d["ri"][t] if kind == "parquet" else c[1]
            c[1] += 1
            out["id"][t] = rec[0]
            for k, v in enumerate(rec[2]):
                extras[k][t] = v
            doc_pos.append(t)
            texts.append(rec[1])
        size = [None] * n
        sig_b, sh_b, dg_b, tk_b = [None] * n, [None] * n, [None] * n, [None] * n
        keys = [None] * n
        if texts:
            if rep.strip_lines:  # the exported stoplist, as the local engine strips it
                texts = stoplist.strip_all(texts, rep)
            sets = weigh(shingle_hashes(texts, rep, unique=True), rep, frequencies)
            sig = signatures(sets, rep.num_perm, rep.seed, rep.scheme)
            kt = np.ascontiguousarray(lsh.band_keys(sig, config.b, config.r).T).view(np.int64)
            sizes = sets.sizes()
            dg = set_digests(sets)  # the local engine's exact-copy key (calib.copies)
            if config.min_shingles and config.short_docs == "exact":  # short documents' normalized-text key
                for q in np.flatnonzero(short_mask(sizes, config.min_shingles)):
                    tk_b[doc_pos[q]] = text_keys([texts[q]], rep)[0].tobytes()
            for q, t in enumerate(doc_pos):
                size[t] = int(sizes[q])
                sig_b[t] = sig[q].tobytes()
                sh_b[t] = sets.of(q).tobytes()
                dg_b[t] = dg[q].tobytes()
                keys[t] = kt[q]
        cols = [pa.array(out["f"], pa.string()), pa.array(out["bs"], pa.int64()), pa.array(out["li"], pa.int64()),
                pa.array(out["di"], pa.int64()), pa.array(out["err"], pa.string()), pa.array(out["id"], pa.string()),
                pa.array(size, pa.int64()), pa.array(sig_b, pa.binary()),
                pa.array(keys, pa.list_(pa.int64())), pa.array(sh_b, pa.binary()), pa.array(dg_b, pa.binary()),
                pa.array(tk_b, pa.binary())]
        cols += [pa.array(e, pa.string()) for e in extras]
        names = ["f", "bs", "li", "di", "err", "id", "size", "sig", "keys", "sh", "dg", "tk"] + [f"x{k}" for k in range(len(extras))]
        yield pa.RecordBatch.from_arrays(cols, names=names)


def _read_corpus(spark, corpus: str, files: list[str], kind: str, id_field: str, text_field: str,
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


# ---------------------------------------------------------------------------
# Stage 4: verification, per partition of joined pairs
# ---------------------------------------------------------------------------

def _blob_rows(blobs, dtype=np.uint32):
    """Concatenated byte strings -> (offsets int64[k+1], values)."""
    lens = np.fromiter((len(x) for x in blobs), dtype=np.int64, count=len(blobs)) // np.dtype(dtype).itemsize
    off = np.zeros(len(blobs) + 1, np.int64)
    np.cumsum(lens, out=off[1:])
    return off, np.frombuffer(b"".join(blobs), dtype=dtype)


def _verify_batches(batches, *, config: Config, frequencies=None):
    """The candidate pairs this config verifies, with their exact J (J_w when weighted) and MinHash estimate."""
    import pyarrow as pa
    _task_threads()
    for batch in batches:
        d = batch.to_pydict()
        k = batch.num_rows
        if not k:
            continue
        a, b = np.arange(k), np.arange(k, 2 * k)
        _, sig = _blob_rows(d["sig_i"] + d["sig_j"])
        est = estimate_jaccard(sig.reshape(2 * k, config.rep.num_perm), a, b)
        off, hs = _blob_rows(d["sh_i"] + d["sh_j"])
        exact = get_measure(config.measure).exact(weigh(ShingleSets(off, hs, True), config.rep, frequencies), a, b)
        keep = config.passes(config.similarity(exact, est))
        yield pa.RecordBatch.from_arrays([pa.array(np.asarray(d["i"], np.int64)[keep]),
                                          pa.array(np.asarray(d["j"], np.int64)[keep]),
                                          pa.array(exact[keep]), pa.array(est[keep])], names=["i", "j", "exact", "est"])


# ---------------------------------------------------------------------------
# Stage 5: connected components, large-star / small-star
# ---------------------------------------------------------------------------

def connected_components(edges, *, max_rounds: int = MAX_ROUNDS):
    """(node, comp) for every node of an undirected edge list (columns i, j; i != j).

    comp is the component's smallest node. Each round is a large-star step
    (every node links its larger neighbours to its smallest neighbour-or-self)
    and a small-star step (every node links itself and its smaller neighbours
    to the smallest of them); both keep the components, and the edges
    converge to one star per component around its smallest node.
    """
    from pyspark.sql import functions as F
    e = edges.select(F.greatest("i", "j").alias("hi"), F.least("i", "j").alias("lo")).distinct().localCheckpoint()
    for _ in range(max_rounds):
        # large star: for u, m = min(N(u) + u); each neighbour v > u -> (v, m)
        both = e.select(F.col("hi").alias("u"), F.col("lo").alias("v")).unionByName(
            e.select(F.col("lo").alias("u"), F.col("hi").alias("v")))
        m = both.groupBy("u").agg(F.least(F.min("v"), F.col("u")).alias("m"))
        e = (both.where(F.col("v") > F.col("u")).join(m, "u")
             .select(F.col("v").alias("hi"), F.col("m").alias("lo")).distinct())
        # small star: for u, m = min(smaller neighbours + u); u and each smaller neighbour v -> (., m)
        m = e.groupBy(F.col("hi").alias("u")).agg(F.min("lo").alias("m"))
        e = (e.join(m, e.hi == m.u).select(F.col("lo").alias("a"), F.col("m"))
             .unionByName(m.select(F.col("u").alias("a"), F.col("m")))
             .where(F.col("a") != F.col("m"))
             .select(F.col("a").alias("hi"), F.col("m").alias("lo")).distinct()).localCheckpoint()
        # converged: every edge child -> root, one parent per child, no root is a child
        stats = e.agg(F.count(F.lit(1)).alias("edges"), F.countDistinct("hi").alias("children")).first()
        roots_as_children = e.select(F.col("lo").alias("x")).distinct().join(
            e.select(F.col("hi").alias("x")), "x", "left_semi").limit(1).count()
        if stats["edges"] == stats["children"] and roots_as_children == 0:
            roots = e.select(F.col("lo").alias("node"), F.col("lo").alias("comp")).distinct()
            return e.select(F.col("hi").alias("node"), F.col("lo").alias("comp")).unionByName(roots)
    raise RuntimeError(f"connected components did not converge in {max_rounds} rounds")


# ---------------------------------------------------------------------------
# Stage 6: one component -> its clustering and manifest rows
# ---------------------------------------------------------------------------

def _manifest_template(slice_fields: tuple[str, ...]) -> pd.DataFrame:
    """An empty manifest with the local engine's columns and dtypes."""
    from calib.production.manifest import manifest_frame
    empty = cluster_pairs(0, np.zeros(0, np.int64), np.zeros(0, np.int64))
    slices = pd.DataFrame({f: np.zeros(0, object) for f in slice_fields}) if slice_fields else None
    z = lambda *_: np.zeros(0)  # noqa: E731
    return manifest_frame(np.zeros(0, object), empty, [], [], [], [], z, z, config_fingerprint="", slices=slices)


def _arrow_type(dtype):
    import pyarrow as pa
    if pd.api.types.is_bool_dtype(dtype):
        return pa.bool_()
    if pd.api.types.is_integer_dtype(dtype):
        return pa.int64()
    if pd.api.types.is_float_dtype(dtype):
        return pa.float64()
    return pa.string()


def _component(nodes, edges, *, config: Config, fingerprint: str, slice_fields: tuple[str, ...],
               reviews, columns: list[tuple[str, object]], missing_values=MISSING_VALUES, frequencies=None):
    """cogroup body: cluster a group of whole components (their members and edges) and write their manifest
    rows (one output row per member: _row, _cmin (smallest row of its cluster), _removed, then the manifest
    columns, null when kept). Components do not interact, so clustering their union is clustering each."""
    import pyarrow as pa
    from calib.production.manifest import manifest_frame
    _task_threads()
    nodes = nodes.sort_by("row")
    rows = np.asarray(nodes.column("row").to_numpy(), np.int64)
    m = len(rows)
    gi = np.searchsorted(rows, np.asarray(edges.column("i").to_numpy(), np.int64))
    gj = np.searchsorted(rows, np.asarray(edges.column("j").to_numpy(), np.int64))
    order = np.lexsort((gj, gi))  # the local engine's pair order: by (i, j)
    vi, vj = gi[order], gj[order]
    v_exact = np.asarray(edges.column("exact").to_numpy(), np.float64)[order]
    v_est = np.asarray(edges.column("est").to_numpy(), np.float64)[order]
    sizes = np.asarray(nodes.column("size").to_numpy(), np.int64)
    c = cluster_pairs(m, vi, vj, config.similarity(v_exact, v_est), policy=config.policy,
                      representative=config.representative,
                      lengths=sizes if config.representative is Representative.LONGEST else None,
                      max_component=config.max_component)
    _, sig = _blob_rows(nodes.column("sig").to_pylist())
    sig = sig.reshape(m, config.rep.num_perm)
    off, hs = _blob_rows(nodes.column("sh").to_pylist())
    sets = weigh(ShingleSets(off, hs, True), config.rep, frequencies)
    exact_of = get_measure(config.measure).exact

    def sim_est(a, b):
        return estimate_jaccard(sig, a, b) if len(a) else np.zeros(0)

    def sim_exact(a, b):
        return exact_of(sets, a, b) if len(a) else np.zeros(0)

    slices = pd.DataFrame({f: np.asarray(nodes.column(f"x{k}").to_pylist(), dtype=object)
                           for k, f in enumerate(slice_fields)}) if slice_fields else None
    ids = np.asarray(nodes.column("id").to_pylist(), dtype=object)
    frame = manifest_frame(ids, c, vi, vj, v_exact, v_est, sim_est, sim_exact, config_fingerprint=fingerprint,
                           slices=slices, review_store=reviews, missing_values=missing_values)
    removed = np.flatnonzero(c.removed)
    at = removed[np.lexsort((removed, c.cluster[removed]))]  # manifest_frame's row order
    cmin = np.full(c.n_clusters, m, np.int64)
    np.minimum.at(cmin, c.cluster, np.arange(m))
    arrays = [pa.array(rows), pa.array(rows[cmin[c.cluster]]), pa.array(c.removed)]
    for name, typ in columns:
        col = frame[name].to_numpy()
        if typ == pa.float64():
            full = np.full(m, np.nan)
            full[at] = col.astype(np.float64)
            arrays.append(pa.array(full))  # NaN stays NaN (a pair that is not verified), as locally
        else:
            full = np.full(m, None, dtype=object)
            full[at] = [None if pd.isna(v) else v for v in col] if typ == pa.string() else col
            arrays.append(pa.array(full.tolist(), typ))
    return pa.Table.from_arrays(arrays, names=["_row", "_cmin", "_removed"] + [n for n, _ in columns])


# ---------------------------------------------------------------------------
# The job
# ---------------------------------------------------------------------------

def _prefix_sum(df, key: str, value: str):
    """(key, cum): inclusive running sum of ``value`` in ``key`` order, without a single-partition window:
    range-partitioned, summed within each partition, offset by the totals of the partitions before it."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    s = df.repartitionByRange(key).withColumn("_p", F.spark_partition_id()).localCheckpoint()
    totals = {r["_p"]: r["t"] for r in s.groupBy("_p").agg(F.sum(value).alias("t")).collect()}
    offs, acc = [], 0
    for p in sorted(totals):
        offs.append((p, acc))
        acc += totals[p]
    spark = df.sparkSession
    o = spark.createDataFrame(offs or [(0, 0)], "_p int, _o long")
    w = Window.partitionBy("_p").orderBy(key).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    return s.join(F.broadcast(o), "_p").select(key, (F.col("_o") + F.sum(value).over(w)).alias("cum"))


def _first_error(spark, raw, corpus: str, files: list[str], kind: str, offsets: dict) -> str | None:
    from pyspark.sql import functions as F
    row = raw.where(F.col("err").isNotNull()).orderBy("f", "bs", "li").select("f", "bs", "li", "err").first()
    if row is None:
        return None
    shown = corpus if len(files) == 1 else row["f"]
    if kind == "parquet":
        return row["err"].replace(_WHERE, f"{shown}: row ")
    return row["err"].replace(_WHERE, f"{shown}:{offsets[(row['f'], row['bs'])][1] + row['li'] + 1}")


def check_supported(config: Config) -> None:
    """Refuse, in one line, a config this engine cannot run as the local engine would."""
    if config.representative is Representative.PRIORITY:
        raise ApplyError("representative rule 'priority' needs a priority per document, which apply does not read; "
                         "export a config with first, longest or medoid")
    if config.measure not in ("jaccard", "weighted_jaccard"):  # its UDFs compute J or J_w: refuse the others
        raise ApplyError(f"measure {config.measure!r}: the Spark engine verifies (weighted) Jaccard only; "
                         "use `calib apply`")


def apply_spark(config: Config, corpus: str, out: str, *, spark=None, id_field: str = "id", text_field: str = "text",
                slice_fields: tuple[str, ...] = (), max_pairs: int | None = 50_000_000, review_store=None,
                batch_size: int = 10_000, log=None, missing_values=MISSING_VALUES, frequencies=None,
                stoplist=None) -> dict:
    """Run ``config`` on ``corpus`` (file, folder or glob; local or object storage) with Spark and write
    ``out``/manifest.parquet, summary.json and README.txt. Returns the summary (as ``calib apply``'s).
    ``log(stage, seconds)`` is called after each stage. ``frequencies``: a weighted config's exported
    document-frequency table (:func:`calib.export.load_frequencies`), shipped to the tasks with their code."""
    import time
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    from calib.production.export import NOTICE, dumps

    check_supported(config)
    if config.rep.weighting != "none" and frequencies is None:
        raise ApplyError(f"weighting {config.rep.weighting!r} needs the exported document-frequency table")
    if config.rep.strip_lines and stoplist is None:
        raise ApplyError(f"the config strips boilerplate lines (strip_lines={config.rep.strip_lines:g}) but no "
                         "stoplist was given (it is the stoplist.json beside config.json)")
    if batch_size < 1:
        raise ApplyError(f"batch size must be >= 1, got {batch_size}")
    spark = spark or session()
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(batch_size))
    files = _input_files(spark, corpus)
    kind = _corpus_kind(files)
    out = out.rstrip("/")
    fp = config.fingerprint()
    slice_fields = tuple(slice_fields)
    reviews = review_store.latest() if review_store is not None and hasattr(review_store, "latest") else review_store
    persisted = []
    t0 = [time.perf_counter()]

    def done(stage: str) -> None:
        if log is not None:
            now = time.perf_counter()
            log(stage, now - t0[0])
            t0[0] = now

    def keep(df, level=StorageLevel.MEMORY_AND_DISK):
        persisted.append(df.persist(level))
        return df

    try:
        # 1-2: records -> documents with signatures, band keys, shingle sets
        src = _read_corpus(spark, corpus, files, kind, id_field, text_field, slice_fields)
        fn = lambda it: _sign_batches(it, config=config, kind=kind, id_field=id_field,  # noqa: E731
                                      text_field=text_field, extra_fields=slice_fields, frequencies=frequencies,
                                      stoplist=stoplist)
        raw = keep(src.mapInArrow(fn, _doc_schema(slice_fields)))
        counts = raw.groupBy("f", "bs").agg(F.count(F.lit(1)).alias("lines"), F.count("di").alias("docs"),
                                            F.sum((F.col("size") == 0).cast("long")).alias("empty"),
                                            F.sum(((F.col("size") > 0) & (F.col("size") < config.min_shingles))
                                                  .cast("long")).alias("short")).collect()
        offsets, doc_off, line_off, last_f = {}, 0, 0, None
        for r in sorted(counts, key=lambda r: (r["f"], r["bs"])):
            line_off = 0 if r["f"] != last_f else line_off
            offsets[(r["f"], r["bs"])] = (doc_off, line_off)
            doc_off, line_off, last_f = doc_off + r["docs"], line_off + r["lines"], r["f"]
        done("signatures")
        err = _first_error(spark, raw, corpus, files, kind, offsets)
        if err:
            raise ApplyError(err)
        n = doc_off
        off_df = spark.createDataFrame([(f, bs, o[0]) for (f, bs), o in offsets.items()] or [("", 0, 0)],
                                       "f string, bs long, doff long")
        # not persisted: a broadcast join on the persisted (columnar) raw rows, each use reading only its columns
        docs = (raw.where(F.col("di").isNotNull()).join(F.broadcast(off_df), ["f", "bs"])
                .select((F.col("doff") + F.col("di")).alias("row"), "id", "size", "sig", "keys", "sh", "tk",
                        *[f"x{k}" for k in range(len(slice_fields))]))
        if docs.groupBy("id").count().where(F.col("count") > 1).limit(1).count():  # the details only when needed
            dup = (docs.groupBy("id").agg(F.count(F.lit(1)).alias("c"), F.sort_array(F.collect_list("row")).alias("rs"))
                   .where(F.col("c") > 1).select("id", F.col("rs")[1].alias("second")).orderBy("second").first())
            raise ApplyError(f"{corpus}: duplicate document id {dup['id']!r} (document {dup['second']})")
        empty = sum(r["empty"] or 0 for r in counts)
        # exact copies as calib.copies counts them: non-empty documents whose (set digest, size) equals an
        # earlier one's (the local engine also compares signatures, which differ only on a 128-bit collision)
        copies = (raw.where(F.col("di").isNotNull() & (F.col("size") > 0)).groupBy("dg", "size").count()
                  .agg(F.sum(F.col("count") - 1).alias("c")).first()["c"] or 0)
        done("ids and exact copies")

        # 3: candidates by a shuffle on (band, key): bucket sizes first (a counting aggregate), then the rows
        # of the buckets that collide, paired by a self-join in the JVM (no per-bucket Python, no row lists)
        # short documents (calib.short) are left out of banding, as locally
        bands = docs.where((F.col("size") > 0) & (F.col("size") >= config.min_shingles)).select(
            "row", F.posexplode("keys").alias("band", "key"))
        hot = keep(bands.groupBy("band", "key").count().where(F.col("count") > 1))
        # --max-pairs bounds the distinct candidate pairs, as locally. The pairs of one band are distinct, so the
        # largest band's count is a lower bound (refused before any pair exists), and the sum over bands an
        # upper one (when it exceeds the limit, at most b x max_pairs pairs are made to count the distinct ones)
        per_band = (hot.groupBy("band").agg(F.sum(F.col("count") * (F.col("count") - 1) / 2).cast("long").alias("p"))
                    .agg(F.sum("p").alias("upper"), F.max("p").alias("most")).first())
        upper, most = int(per_band["upper"] or 0), int(per_band["most"] or 0)
        if max_pairs is not None and most > max_pairs:
            raise ApplyError(f"{corpus}: {lsh.TooManyCandidates(config.b, config.r, upper, max_pairs, most)} "
                             "(--max-pairs)")
        collide = bands.join(hot.select("band", "key"), ["band", "key"], "left_semi")
        a, b = collide.alias("a"), collide.alias("b")
        pairs = keep(a.join(b, (F.col("a.band") == F.col("b.band")) & (F.col("a.key") == F.col("b.key"))
                            & (F.col("a.row") < F.col("b.row")))
                     .select(F.col("a.row").alias("i"), F.col("b.row").alias("j")).distinct())
        n_candidates = pairs.count()
        if max_pairs is not None and n_candidates > max_pairs:
            raise ApplyError(f"{corpus}: {lsh.TooManyCandidates(config.b, config.r, upper, max_pairs, n_candidates)} "
                             "(--max-pairs)")
        done("candidates")

        # 4: verification against both documents' shingle sets and signatures
        side = lambda s: docs.select(F.col("row").alias(s), F.col("sig").alias(f"sig_{s}"),  # noqa: E731
                                     F.col("sh").alias(f"sh_{s}"))
        joined = pairs.join(side("i"), "i").join(side("j"), "j").select("i", "j", "sig_i", "sig_j", "sh_i", "sh_j")
        verified = joined.mapInArrow(lambda it: _verify_batches(it, config=config, frequencies=frequencies),
                                     "i long, j long, exact double, est double")
        if config.min_shingles and config.short_docs == "exact":  # short documents: equal normalized text, J = 1
            ta, tb = docs.where(F.col("tk").isNotNull()).select("row", "tk").alias("a"), docs.select("row", "tk").alias("b")
            verified = verified.unionByName(
                ta.join(tb, (F.col("a.tk") == F.col("b.tk")) & (F.col("a.row") < F.col("b.row")))
                .select(F.col("a.row").alias("i"), F.col("b.row").alias("j"), F.lit(1.0).alias("exact"),
                        F.lit(1.0).alias("est")))
        verified = keep(verified)
        n_verified = verified.count()
        done("verification")

        # 5-6: components, then each component's clustering and manifest rows
        template = _manifest_template(slice_fields)
        columns = [(c, _arrow_type(template[c].dtype)) for c in template.columns]
        comp = connected_components(verified).localCheckpoint()
        done("connected components")
        # Whole components are clustered together, many per call: components do not interact, and one Python
        # call per component (thousands of tiny pandas frames) was the stage's cost. Groups of ~GROUP_NODES
        # graph nodes bound a task's memory; at least one group per shuffle partition keeps every core busy.
        groups = max(int(spark.conf.get("spark.sql.shuffle.partitions")), -(-comp.count() // GROUP_NODES))
        comp = comp.withColumn("grp", F.pmod(F.xxhash64("comp"), F.lit(groups)))
        nodes = docs.join(comp.withColumnRenamed("node", "row"), "row").select(
            "grp", "row", "id", "size", "sig", "sh", *[f"x{k}" for k in range(len(slice_fields))])
        edges = verified.join(comp.select(F.col("node").alias("i"), F.col("grp").alias("egrp")), "i")
        schema = ", ".join(["_row long", "_cmin long", "_removed boolean"] +
                           [f"`{c}` {t}" for c, t in ((c, {"string": "string", "int64": "long", "double": "double",
                                                            "bool": "boolean"}[str(t)]) for c, t in columns)])
        fn = lambda a, b: _component(a, b, config=config, fingerprint=fp, slice_fields=slice_fields,  # noqa: E731
                                     reviews=reviews, columns=columns, missing_values=missing_values,
                                     frequencies=frequencies)
        members = keep(nodes.groupBy("grp").cogroup(edges.groupBy("egrp")).applyInArrow(fn, schema))

        members.count()
        done("clustering")
        # 7: cluster ids over all n rows
        below = _prefix_sum(members.select("_row", (F.col("_row") != F.col("_cmin")).cast("long").alias("nm")),
                            "_row", "nm")
        manifest = (members.where("_removed").drop("cluster_id")
                    .join(below.select(F.col("_row").alias("_cmin"), F.col("cum")), "_cmin")
                    .withColumn("cluster_id", F.col("_cmin") - F.col("cum")))
        manifest = keep(manifest.orderBy("cluster_id", "_row").select(*[f"`{c}`" for c, _ in columns]))

        done("cluster ids")
        # 8: outputs. A local folder is replaced as a set (calib.atomic, as the local engine does); on object
        # storage (no atomic rename) summary.json goes first and comes back last, as the set's completion record
        agg = manifest.agg(F.count(F.lit(1)).alias("n"), F.countDistinct("cluster_id").alias("clusters"),
                           F.sum(F.col("chained").cast("long")).alias("chained")).first()
        summary = {"config_fingerprint": fp, "documents": int(n), "empty_documents": int(empty),
                   "exact_copies": int(copies), "candidate_pairs": int(n_candidates), "verified_pairs": int(n_verified),
                   "clusters_with_removals": int(agg["clusters"]), "proposed_removals": int(agg["n"]),
                   "chained_removals": int(agg["chained"] or 0)}
        if config.min_shingles:  # calib.short.summary's account, from the counts
            summary.update(short_summary(np.zeros(0), config.min_shingles, config.short_docs),
                           short_documents=int(sum(r["short"] or 0 for r in counts)))
        readme = (f"calib apply (spark engine)\n==========================\n\n{NOTICE}\n\nmanifest.parquet: one row "
                  f"per document the configuration {fp} would remove from {corpus}, next to the representative it "
                  f"would keep. summary.json: counts, written last.\n")
        text = dumps(dict(summary, corpus=str(corpus), engine="spark", notice=NOTICE))
        if _is_local(out):
            from calib.base.atomic import atomic_folder
            try:
                with atomic_folder(_local(out)) as tmp:
                    manifest.write.parquet((tmp / "manifest.parquet").resolve().as_uri())
                    _write_text(spark, str(tmp / "README.txt"), readme)
                    _write_text(spark, str(tmp / "summary.json"), text)
            except ValueError as exc:  # a folder holding files this output does not write
                raise ApplyError(str(exc)) from None
        else:
            _delete(spark, f"{out}/summary.json")
            manifest.write.mode("overwrite").parquet(f"{out}/manifest.parquet")
            _write_text(spark, f"{out}/README.txt", readme)
            _write_text(spark, f"{out}/summary.json", text)
        done("write")
        return summary
    finally:
        for df in persisted:
            df.unpersist()


# ---------------------------------------------------------------------------
# Entry points: `calib apply --engine spark` and `spark-submit calib/spark_apply.py`
# ---------------------------------------------------------------------------

def cli_apply(a) -> int:
    """``calib apply --engine spark`` (``a``: the apply subcommand's parsed options, every one honoured).

    Local paths (and file: URIs) get the local engine's checks before the JVM starts; other URIs (s3a://,
    gs://, abfss://, hdfs://) go to Spark's file systems, whose own error names a missing connector."""
    from calib.cli import _review_store, check_input, check_reviews
    from calib.review.postgres import is_postgres_url
    check_environment()
    for path, flag in ((a.config, "--config"), (a.corpus, "--corpus")):
        if _is_local(path) and not _is_glob(path):
            check_input(str(_local(path)), flag)
    shared_reviews = is_postgres_url(a.reviews)
    if a.reviews and not _is_local(a.reviews) and not shared_reviews:
        raise ApplyError(f"--reviews {a.reviews}: a review store is a local SQLite file or a postgresql:// URL")
    reviews = a.reviews if shared_reviews or not a.reviews else str(_local(a.reviews))
    check_reviews(reviews)
    if _is_local(a.out):
        check_out(None, a.out, a.overwrite)
    if _is_local(a.config):  # a bad or unsupported config fails before the JVM starts
        config, doc = load_config_any(a.config)
        check_supported(config)
        frequencies = _frequencies(doc, a.config)
    slices = tuple(f.strip() for f in (getattr(a, "keep_fields", "") or "").split(",") if f.strip())
    if _is_local(a.corpus) and _local(a.corpus).is_file():  # the local engine's check, before any work
        from calib.production.engines.local import check_fields
        check_fields(_local(a.corpus), slices, id_field=a.id_field, text_field=a.text_field)
    spark = session()
    if spark.sparkContext.master.startswith("local"):  # a failed task's Java stack is not logged: its cause is reported
        spark.sparkContext.setLogLevel("OFF")
    if not _is_local(a.out):
        check_out(spark, a.out, a.overwrite)
    if not _is_local(a.config):
        config, doc = load_config_any(a.config, spark)
        frequencies = _frequencies(doc, a.config, spark)
    from calib.production.export import load_stoplist
    beside = ((lambda name: (_local(a.config).parent / name).read_text(encoding="utf-8")) if _is_local(a.config)
              else (lambda name: _read_text(spark, f"{a.config.rsplit('/', 1)[0]}/{name}")))
    stop = load_stoplist(doc, beside, a.config)
    store = _review_store(reviews)
    try:
        s = apply_spark(config, a.corpus, a.out, spark=spark, id_field=a.id_field, text_field=a.text_field,
                        slice_fields=slices, review_store=store, batch_size=a.batch_size, max_pairs=a.max_pairs,
                        frequencies=frequencies, stoplist=stop,
                        missing_values=MISSING_VALUES if a.missing_values is None else a.missing_values)
    except Exception as exc:  # a failed Spark job (truncated .gz, unreadable file): its root cause, one line
        if not type(exc).__module__.startswith(("py4j", "pyspark")):
            raise
        raise ApplyError(f"{a.corpus}: the Spark job failed: {_root_cause(exc)}") from None
    finally:
        if store is not None:
            store.close()
    print(f"applied {config.fingerprint()} to {s['documents']} documents with spark: {s['candidate_pairs']} "
          f"candidate pairs, {s['verified_pairs']} verified, {s['proposed_removals']} proposed removals (report "
          f"only) -> {a.out.rstrip('/')}/manifest.parquet", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """spark-submit entry point: ``calib apply --engine spark`` with the same options."""
    from calib.cli import main as calib_main
    return calib_main(["apply", *(sys.argv[1:] if argv is None else argv), "--engine", "spark"])


if __name__ == "__main__":
    sys.exit(main())
