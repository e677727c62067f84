"""The pass of ``calib draw --design corpus --engine spark``: what the local pass computes, on Spark.

The local corpus draw (:mod:`calib.labeling.corpus_draw`) streams the corpus
for band keys and verify values of a loose LSH split, builds the candidate
pairs band by band and keeps those whose verify estimate reaches the cut,
with their agreements. Here the same values come from a Spark job, each
computed by the same kernel on the same input:

1. read (:func:`calib.production.engines.spark.io.read_corpus`) and, per
   partition (``mapInArrow``, :func:`sign_batches`), the local reader's id and
   text rules (:func:`calib.production.engines.spark.batches.parse_rows`); for
   each document whose text is not blank, ``b*r + verify`` values of
   :func:`calib.sketches.minhash.signatures_from_texts` (the loose scheme), the
   band keys of the first ``b*r`` (:func:`calib.candidates.lsh.band_keys`,
   their low 32 bits, as the local pass keeps them) and the ``verify`` others;
2. the documents numbered in file order
   (:func:`calib.production.engines.spark.io.split_offsets`), the non-blank
   ones' ids collected to the driver in that order (unique, as locally);
3. candidates: a counting aggregate on (band, key), the rows of colliding
   buckets paired by a self-join (i < j), distinct over bands: the pairs the
   local pass emits, counted before the cut and bounded by ``max_pairs``;
4. per partition of candidates joined to both documents' verify values
   (:func:`verify_batches`): their agreements; those reaching the cut are
   collected with them, sorted by (i, j) as locally;
5. :class:`SparkScan` ``fetch``: the texts of given documents, one more read of
   the corpus (as the local draw re-reads the drawn pairs' documents).

The sampling is not here: :mod:`calib.labeling.corpus_draw_spark` puts these
into the local draw's ``Scan`` and calls its ``draw_scan``, so the same seed
draws the same pairs. On a cluster the executors are checked first
(:func:`calib.production.engines.spark.check.check_executors`: the driver's
calib, and the corpus files readable there), and everything the driver keeps
is collected to it: nothing is read from or written to a driver-only path by
a task.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from calib.candidates import lsh
from calib.reading.corpus import ApplyError, duplicate_id
from calib.production.engines.spark.batches import _blob_rows, _task_threads, parse_rows
from calib.sketches.minhash import signatures_from_texts

STAGES = ("signatures", "document ids", "candidates", "verification", "texts")  # in order, for the progress lines
_LOW32 = np.uint64(0xFFFFFFFF)
_NO_MIN = np.uint32(0xFFFFFFFF)  # every value of a document without a shingle (as in calib.labeling.loose_pass)


# ---------------------------------------------------------------------------
# Task bodies
# ---------------------------------------------------------------------------

def sign_batches(batches, *, rep, kind: str, id_field: str, text_field: str, b: int, r: int, verify: int,
                 scheme: str):
    """mapInArrow body: one row per input line; a document carries ``blank`` (its text is blank: skipped, as
    locally), its band keys (none when it has no shingle) and verify values."""
    import pyarrow as pa
    _task_threads()
    counters: dict = {}
    for batch in batches:
        n = batch.num_rows
        out, _, doc_pos, texts = parse_rows(batch.to_pydict(), n, kind, id_field, text_field, (), counters)
        blank, keys, vs = [None] * n, [None] * n, [None] * n
        keep = [q for q, x in enumerate(texts) if x.strip()]
        for t in doc_pos:
            blank[t] = True
        if keep:
            sig = signatures_from_texts([texts[q] for q in keep], replace(rep, num_perm=b * r + verify, scheme=scheme))
            kt = (lsh.band_keys(sig[:, :b * r], b, r) & _LOW32).astype(np.int64).T
            active = (sig != _NO_MIN).any(axis=1)  # a document without a shingle has no minimum: no banding
            tail = np.ascontiguousarray(sig[:, b * r:])
            for q, k in enumerate(keep):
                t = doc_pos[k]
                blank[t] = False
                keys[t] = kt[q] if active[q] else None
                vs[t] = tail[q].tobytes()
        cols = [pa.array(out["f"], pa.string()), pa.array(out["bs"], pa.int64()), pa.array(out["li"], pa.int64()),
                pa.array(out["di"], pa.int64()), pa.array(out["err"], pa.string()), pa.array(out["id"], pa.string()),
                pa.array(blank, pa.bool_()), pa.array(keys, pa.list_(pa.int64())), pa.array(vs, pa.binary())]
        yield pa.RecordBatch.from_arrays(cols, names=["f", "bs", "li", "di", "err", "id", "blank", "keys", "vs"])


SIGN_SCHEMA = ("f string, bs long, li long, di long, err string, id string, blank boolean, keys array<long>, "
               "vs binary")


def verify_batches(batches, *, verify: int, need: int):
    """mapInArrow body: the candidate pairs with >= ``need`` equal verify values, and that number."""
    import pyarrow as pa
    _task_threads()
    for batch in batches:
        k = batch.num_rows
        if not k:
            continue
        col = batch.column
        _, vs = _blob_rows(col("vs_i"), col("vs_j"))  # read from the Arrow buffers
        vs = vs.reshape(2 * k, verify)
        agree = (vs[:k] == vs[k:]).sum(axis=1).astype(np.int32)
        ok = agree >= need
        i = col("i").to_numpy(zero_copy_only=False).astype(np.int64)
        j = col("j").to_numpy(zero_copy_only=False).astype(np.int64)
        yield pa.RecordBatch.from_arrays([pa.array(i[ok]), pa.array(j[ok]), pa.array(agree[ok])],
                                         names=["i", "j", "agree"])


def text_batches(batches, *, wanted: frozenset, kind: str, id_field: str, text_field: str):
    """mapInArrow body: (f, bs, di, text) of the documents ``wanted`` names by (file, split start, number)."""
    import pyarrow as pa
    counters: dict = {}
    for batch in batches:
        n = batch.num_rows
        out, _, doc_pos, texts = parse_rows(batch.to_pydict(), n, kind, id_field, text_field, (), counters)
        got = [(t, x) for t, x in zip(doc_pos, texts) if (out["f"][t], out["bs"][t], out["di"][t]) in wanted]
        yield pa.RecordBatch.from_arrays([pa.array([out["f"][t] for t, _ in got], pa.string()),
                                          pa.array([out["bs"][t] for t, _ in got], pa.int64()),
                                          pa.array([out["di"][t] for t, _ in got], pa.int64()),
                                          pa.array([x for _, x in got], pa.string())],
                                         names=["f", "bs", "di", "text"])


# ---------------------------------------------------------------------------
# The driver's job
# ---------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class SparkScan:
    """What the local pass finds, from Spark: the non-blank documents' ids in corpus order, the kept
    candidates (indices among them, i < j, sorted) with their verify agreements, and how to read texts."""

    ids: np.ndarray               # object[n]
    ci: np.ndarray
    cj: np.ndarray
    agree: np.ndarray             # int16: equal verify values (>= the cut's)
    n_cand: int                   # loose candidates before the verify cut
    skipped_empty: int            # documents with blank text
    fetch: Callable[[np.ndarray], list]   # sorted document indices -> their texts (one more read)


def loose_scan(corpus: str, *, rep, b: int, r: int, verify: int, cut: float,
               max_pairs: int | None, batch_size: int = 10_000, id_field: str = "id", text_field: str = "text",
               scheme: str = "prefix", spark=None, progress=None) -> SparkScan:
    """Steps 1-4 of the module docstring on ``corpus`` (file, folder or glob; local or object storage);
    ``progress``: a :class:`calib.production.engines.spark.progress.Progress`, told each stage's end."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from calib.production.engines.spark.apply import _error_line
    from calib.production.engines.spark.check import check_executors, checked, fingerprint
    from calib.production.engines.spark.io import (corpus_kind, input_files, is_local, local_path, read_corpus,
                                                   session, split_offsets)
    from calib.production.engines.spark.plan import apply_size
    if batch_size < 1:
        raise ApplyError(f"batch size must be >= 1, got {batch_size}")
    spark = spark or session(app_name="calib draw")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(batch_size))
    files = input_files(spark, corpus)
    kind = corpus_kind(files)
    size = apply_size(spark, files)
    if progress is not None:
        progress.note(f"job size: {size.describe()}")
    if not spark.sparkContext.master.startswith("local"):
        check_executors(spark, rep, paths=[local_path(f).resolve() for f in files if is_local(f)])
    expected = fingerprint()
    read = dict(kind=kind, id_field=id_field, text_field=text_field)
    persisted, t0 = [], [time.perf_counter()]

    def done(stage: str, rows: int | None = None) -> None:
        now = time.perf_counter()
        if progress is not None:
            progress.log(stage, now - t0[0], rows)
        t0[0] = now

    def keep(df):
        persisted.append(df.persist(StorageLevel.MEMORY_AND_DISK))
        return df

    try:
        src = read_corpus(spark, corpus, files, kind, id_field, text_field, ())
        body = lambda it: sign_batches(it, rep=rep, b=b, r=r, verify=verify, scheme=scheme, **read)  # noqa: E731
        raw = keep(src.mapInArrow(checked(body, expected), SIGN_SCHEMA))
        counts = raw.groupBy("f", "bs").agg(F.count(F.lit(1)).alias("lines"), F.count("di").alias("docs"),
                                            F.sum(F.col("blank").cast("long")).alias("blank"),
                                            F.count("err").alias("errors")).collect()
        offsets, total = split_offsets(counts)
        done("signatures", total)
        if any(r["errors"] for r in counts):  # the details only when needed: the first bad line in file order
            bad = raw.where(F.col("err").isNotNull()).orderBy("f", "bs", "li").select("f", "bs", "li", "err").first()
            raise ApplyError(_error_line(corpus, files, kind, offsets, bad["f"], bad["bs"], bad["li"], bad["err"]))
        off_df = spark.createDataFrame([(f, bs, o[0]) for (f, bs), o in offsets.items()] or [("", 0, 0)],
                                       "f string, bs long, doff long")
        docs = (raw.where(F.col("di").isNotNull() & ~F.col("blank")).join(F.broadcast(off_df), ["f", "bs"])
                .select((F.col("doff") + F.col("di")).alias("row"), "id", "keys", "vs"))
        got = docs.select("row", "id").toArrow()  # sorted here: no sampling job for a range partition
        order = np.argsort(np.asarray(got.column("row").to_numpy(), np.int64), kind="stable")
        rows = np.asarray(got.column("row").to_numpy(), np.int64)[order]
        ids = np.asarray(got.column("id").to_pylist(), dtype=object)[order]
        _check_unique(corpus, ids, rows)
        done("document ids", len(ids))

        bands = docs.where(F.col("keys").isNotNull()).select("row", F.posexplode("keys").alias("band", "key"))
        hot = keep(bands.groupBy("band", "key").count().where(F.col("count") > 1))
        most = (hot.groupBy("band").agg(F.sum(F.col("count") * (F.col("count") - 1) / 2).cast("long").alias("p"))
                .agg(F.max("p").alias("most")).first()["most"] or 0)
        if max_pairs is not None and most > max_pairs:  # one band's pairs are distinct: refused before any exists
            raise ApplyError(_too_many(corpus, max_pairs, int(most)))
        collide = bands.join(hot.select("band", "key"), ["band", "key"], "left_semi")
        x, y = collide.alias("x"), collide.alias("y")
        pairs = keep(x.join(y, (F.col("x.band") == F.col("y.band")) & (F.col("x.key") == F.col("y.key"))
                            & (F.col("x.row") < F.col("y.row")))
                     .select(F.col("x.row").alias("i"), F.col("y.row").alias("j")).distinct())
        n_cand = pairs.count()
        if max_pairs is not None and n_cand > max_pairs:
            raise ApplyError(_too_many(corpus, max_pairs, n_cand))
        done("candidates", n_cand)

        side = lambda s: docs.select(F.col("row").alias(s), F.col("vs").alias(f"vs_{s}"))  # noqa: E731
        joined = pairs.join(side("i"), "i").join(side("j"), "j").select("i", "j", "vs_i", "vs_j")
        need = int(np.ceil(verify * cut - 1e-9))  # as calib.labeling.loose_pass.candidates
        body = lambda it: verify_batches(it, verify=verify, need=need)  # noqa: E731
        kept = joined.mapInArrow(checked(body, expected), "i long, j long, agree int").toArrow()
        ci = np.searchsorted(rows, np.asarray(kept.column("i").to_numpy(), np.int64))
        cj = np.searchsorted(rows, np.asarray(kept.column("j").to_numpy(), np.int64))
        agree = np.asarray(kept.column("agree").to_numpy(), np.int16)
        srt = np.lexsort((cj, ci))
        done("verification", len(srt))
    finally:
        for df in persisted:
            df.unpersist()
    skipped = int(sum(r["blank"] or 0 for r in counts))
    starts = sorted((offsets[(r["f"], r["bs"])][0], r["f"], r["bs"]) for r in counts if r["docs"])

    def fetch(idx: np.ndarray) -> list[str]:
        return _fetch(src, corpus, starts, rows[np.asarray(idx, np.int64)], expected, read, done)

    return SparkScan(ids, ci[srt], cj[srt], agree[srt], int(n_cand), skipped, fetch)


def _check_unique(corpus: str, ids: np.ndarray, rows: np.ndarray) -> None:
    """The local pass's rule and line: the first document whose id an earlier one has."""
    import pandas as pd
    dup = pd.Index(ids).duplicated()
    if dup.any():
        k = int(np.argmax(dup))
        first = int(rows[np.flatnonzero(ids == ids[k])[0]])
        raise duplicate_id(corpus, ids[k], first, int(rows[k]))


def _too_many(corpus: str, max_pairs: int, found: int) -> str:
    return (f"{corpus}: the loose pass collides more than {max_pairs:,} pairs (at least {found:,}): the corpus "
            "holds many near-identical documents; raise --max-pairs or take a stricter loose split (--loose)")


def _fetch(src, corpus: str, starts: list, rows: np.ndarray, expected: dict, read: dict, done) -> list[str]:
    """Texts of the documents numbered ``rows`` (in that order), by one more read of the corpus; ``starts``:
    (first document number, file, split start) of each split holding documents, sorted."""
    from calib.production.engines.spark.check import checked
    at = np.searchsorted(np.asarray([s[0] for s in starts], np.int64), rows, side="right") - 1
    keys = [(starts[k][1], starts[k][2], int(row - starts[k][0])) for k, row in zip(at.tolist(), rows.tolist())]
    wanted = frozenset(keys)
    body = lambda it: text_batches(it, wanted=wanted, **read)  # noqa: E731
    got = src.mapInArrow(checked(body, expected), "f string, bs long, di long, text string").toArrow().to_pydict()
    texts = {(f, bs, di): x for f, bs, di, x in zip(got["f"], got["bs"], got["di"], got["text"])}
    if len(texts) != len(wanted):
        raise ApplyError(f"{corpus}: the file changed since it was read")
    done("texts", len(keys))
    return [texts[k] for k in keys]
