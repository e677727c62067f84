"""``calib apply`` as a PySpark job: the same exported config.json, the same manifest rows.

The work is split so that every step scales out and every per-record or
per-group computation is calib's own kernel, run on Arrow batches:

1. read: JSONL lines as raw bytes (strict UTF-8, like the local reader) or
   Parquet rows, each with its place in its file. Rows are numbered in file
   order (files by path), the local engine's row order.
2. per partition (``mapInArrow``): the local reader's id/text rules,
   :func:`calib.sketches.shingles.shingle_hashes`,
   :func:`calib.sketches.minhash.signatures`, :func:`calib.candidates.lsh.band_keys`
   (:mod:`calib.production.engines.spark.batches`).
3. candidates: bucket sizes by a counting aggregate on (band, key); the rows
   of colliding buckets paired by a self-join (i < j), distinct over bands.
   ``max_pairs`` bounds the distinct pairs, as :mod:`calib.candidates.lsh` does.
4. verification: pairs joined back to both documents' shingle sets and
   signatures; :func:`calib.verification.jaccard.pairs_jaccard` (exact J) and
   :func:`calib.sketches.minhash.estimate_jaccard` (fraction of equal values).
   The same job counts the candidates (a count row per verified batch).
5. connected components of the verified pairs: on the driver (scipy, as the
   local engine) when they number at most ``driver_edges``
   (:mod:`calib.production.engines.spark.driver`: collected in the verification
   job itself when the candidates' upper bound is that small); else by
   alternating large-star and small-star steps (Kiveris et al., "Connected
   Components in MapReduce and Beyond", SoCC 2014): O(log^2 n) rounds, stopped
   when every component is a star around its smallest row, at most
   ``MAX_ROUNDS`` (:mod:`calib.production.engines.spark.components`).
6. per group of whole components (``cogroup`` of members and edges):
   :func:`calib.clusters.clustering.cluster_pairs` (policy, representative rule,
   giant-component guard) and :func:`calib.production.manifest.manifest_frame` on the
   group's rows renumbered in order. Components do not interact in either, so
   this is the local result.
7. cluster ids: the local engine numbers clusters over all n rows by their
   smallest member m, so id(m) = m - #(rows < m that are not their cluster's
   smallest), a prefix count over the sorted graph rows (on the driver, or in
   Spark with the components).
8. ``manifest.parquet`` (ordered by cluster id, row), ``summary.json`` (last:
   its presence says the manifest beside it is complete), ``README.txt``.

Every Spark job costs a task launch per core and stage whatever its size, so
the job has few: on the shipped corpus 24 on a standalone cluster (about 145
before the graph steps moved to the driver); the progress's last line says
how many ran.

Nothing is deleted. The session, paths and reading are in
:mod:`calib.production.engines.spark.io`; the command line
(``calib apply --engine spark``, and ``spark-submit calib/cli/spark_submit.py
--config ... --corpus ... --out ...``, see the README) in
:mod:`calib.cli.apply_spark`.
"""

from __future__ import annotations

import numpy as np

from calib.candidates import lsh
from calib.clusters.clustering import Representative
from calib.base.jsondoc import dumps
from calib.reading.corpus import ApplyError, duplicate_id
from calib.production.engines.spark.batches import (WHERE, arrow_type, cluster_components, doc_schema,
                                                    manifest_template, sign_batches, verify_batches)
from calib.production.engines.spark.check import check_executors, checked, fingerprint
from calib.production.engines.spark.components import connected_components, prefix_sum
from calib.production.engines.spark.driver import DRIVER_EDGES, component_groups, manifest_table
from calib.production.engines.spark.io import (corpus_kind, delete, input_files, is_local, local_path, read_corpus,
                                               session, split_offsets, write_text)
from calib.production.engines.spark.plan import apply_size
from calib.production.manifest import NOTICE
from calib.reading.files import MISSING_VALUES
from calib.search.config import Config
from calib.verification.short import summary as short_summary

GROUP_NODES = 50_000   # graph nodes clustered in one Python call (whole components; see apply_spark)


def _error_line(corpus: str, files: list[str], kind: str, offsets: dict, f: str, bs: int, li: int, err: str) -> str:
    """An executor's message with its "file:line" (or "file: row N") filled in."""
    shown = corpus if len(files) == 1 else f
    if kind == "parquet":
        return err.replace(WHERE, f"{shown}: row ")
    return err.replace(WHERE, f"{shown}:{offsets[(f, bs)][1] + li + 1}")


def _write_on_driver(table, folder) -> None:
    """The manifest as Spark would write it (a folder with one part file), from rows on the driver (Arrow)."""
    import pyarrow.parquet as pq
    folder.mkdir()
    pq.write_table(table, folder / "part-00000.parquet")


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
                stoplist=None, progress=None, driver_edges: int = DRIVER_EDGES) -> dict:
    """Run ``config`` on ``corpus`` (file, folder or glob; local or object storage) with Spark and write
    ``out``/manifest.parquet, summary.json and README.txt. Returns the summary (as ``calib apply``'s).
    ``log(stage, seconds)`` is called after each stage. ``frequencies``: a weighted config's exported
    document-frequency table (:func:`calib.production.document.load_frequencies`), shipped to the tasks with their code.
    ``progress``: a :class:`calib.production.engines.spark.progress.Progress` told the job's size and each stage's
    end with its row count. ``driver_edges``: up to this many verified pairs, connected components and cluster
    ids are computed on the driver (:mod:`calib.production.engines.spark.driver`), else in Spark.

    On a cluster (a master other than local), the executors are first checked to run the driver's calib and
    libraries and to see the corpus's local files (:func:`calib.production.engines.spark.check.check_executors`),
    and every task checks again; a local ``out`` is then written by the driver (the manifest is collected to
    it), as the executors' disks are not the driver's."""
    import time
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

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
    files = input_files(spark, corpus)
    kind = corpus_kind(files)
    size = apply_size(spark, files)
    cluster = not spark.sparkContext.master.startswith("local")
    if progress is not None:
        progress.note(f"job size: {size.describe()}")
    if cluster:
        check_executors(spark, config.rep, paths=[local_path(f).resolve() for f in files if is_local(f)])
    expected = fingerprint()
    out = out.rstrip("/")
    fp = config.fingerprint()
    slice_fields = tuple(slice_fields)
    reviews = review_store.latest() if review_store is not None and hasattr(review_store, "latest") else review_store
    persisted = []
    t0 = [time.perf_counter()]

    def done(stage: str, rows: int | None = None) -> None:
        now = time.perf_counter()
        if log is not None:
            log(stage, now - t0[0])
        if progress is not None:
            progress.log(stage, now - t0[0], rows)
        t0[0] = now

    def keep(df, level=StorageLevel.MEMORY_AND_DISK):
        persisted.append(df.persist(level))
        return df

    try:
        # 1-2: records -> documents with signatures, band keys, shingle sets
        src = read_corpus(spark, corpus, files, kind, id_field, text_field, slice_fields)
        fn = lambda it: sign_batches(it, config=config, kind=kind, id_field=id_field,  # noqa: E731
                                     text_field=text_field, extra_fields=slice_fields, frequencies=frequencies,
                                     stoplist=stoplist)
        raw = keep(src.mapInArrow(checked(fn, expected), doc_schema(slice_fields)))
        # one job, two aggregations of three kinds of keys: each read split's lines, documents, empty and short
        # documents and first bad line (k = 0); ids seen more than once (k = 1); exact copies (k = 2) as
        # calib.verification.copies counts them: non-empty documents whose (set digest, size) equals an earlier
        # one's (the local engine also compares signatures, which differ only on a 128-bit collision)
        null = lambda t: F.lit(None).cast(t)  # noqa: E731
        one = lambda c: c.cast("long")  # noqa: E731
        doc = F.col("di").isNotNull()
        zero = [F.lit(0).cast("long").alias(c) for c in ("lines", "docs", "empty", "short")] + [
            null("struct<li:bigint,err:string>").alias("e")]
        keyed = raw.select(F.lit(0).alias("k"), "f", "bs", null("string").alias("id"), null("binary").alias("dg"),
                           null("long").alias("sz"), F.lit(1).cast("long").alias("lines"), one(doc).alias("docs"),
                           one(F.col("size") == 0).alias("empty"),
                           one((F.col("size") > 0) & (F.col("size") < config.min_shingles)).alias("short"),
                           F.when(F.col("err").isNotNull(), F.struct("li", "err")).alias("e")).unionByName(
            raw.where(doc).select(F.lit(1).alias("k"), null("string").alias("f"), null("long").alias("bs"), "id",
                                  null("binary").alias("dg"), null("long").alias("sz"), *zero)).unionByName(
            raw.where(doc & (F.col("size") > 0)).select(F.lit(2).alias("k"), null("string").alias("f"),
                                                        null("long").alias("bs"), null("string").alias("id"), "dg",
                                                        F.col("size").alias("sz"), *zero))
        sums = [F.sum(c).alias(c) for c in ("lines", "docs", "empty", "short")]
        rows = (keyed.groupBy("k", "f", "bs", "id", "dg", "sz").agg(F.count(F.lit(1)).alias("c"), *sums,
                                                                    F.min("e").alias("e"))
                .groupBy("k", "f", "bs").agg(*sums, F.min("e").alias("e"), F.sum(F.col("c") - 1).alias("extra"),
                                             F.max("c").alias("most")).collect())
        counts = [r for r in rows if r["k"] == 0]
        tally = {r["k"]: r for r in rows if r["k"]}
        offsets, doc_off = split_offsets(counts)
        done("signatures", sum(r["docs"] for r in counts))
        bad = sorted((r["f"], r["bs"], r["e"]["li"], r["e"]["err"]) for r in counts if r["e"] is not None)
        if bad:
            raise ApplyError(_error_line(corpus, files, kind, offsets, *bad[0]))
        n = doc_off
        # the rows' numbers: each split's first document's number, by a map literal when the splits are few (no
        # join, so no broadcast job in each query that reads the documents), else by a broadcast join
        docs = raw.where(doc)
        if not offsets:
            docs = docs.withColumn("doff", F.lit(0).cast("long"))
        elif len(offsets) <= 512:
            at = F.create_map(*[F.lit(x) for (f, bs), o in sorted(offsets.items()) for x in (f"{bs}\0{f}", o[0])])
            docs = docs.withColumn("doff", at[F.concat_ws("\0", F.col("bs").cast("string"), "f")])
        else:
            docs = docs.join(F.broadcast(spark.createDataFrame([(f, bs, o[0]) for (f, bs), o in offsets.items()],
                                                               "f string, bs long, doff long")), ["f", "bs"])
        docs = docs.select((F.col("doff") + F.col("di")).alias("row"), "id", "size", "sig", "keys", "sh", "tk",
                           *[f"x{k}" for k in range(len(slice_fields))])
        if 1 in tally and tally[1]["most"] > 1:  # the details only when needed
            dup = (docs.groupBy("id").agg(F.count(F.lit(1)).alias("c"), F.sort_array(F.collect_list("row")).alias("rs"))
                   .where(F.col("c") > 1).select("id", F.col("rs")[0].alias("first"), F.col("rs")[1].alias("second"))
                   .orderBy("second").first())
            raise duplicate_id(corpus, dup["id"], int(dup["first"]), int(dup["second"]))
        empty = sum(r["empty"] or 0 for r in counts)
        copies = int(tally[2]["extra"] or 0) if 2 in tally else 0
        done("ids and exact copies")

        # 3: candidates by a shuffle on (band, key): bucket sizes first (a counting aggregate), then the rows
        # of the buckets that collide, paired by a self-join in the JVM (no per-bucket Python, no row lists)
        # short documents (calib.verification.short) are left out of banding, as locally
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
        pairs = (a.join(b, (F.col("a.band") == F.col("b.band")) & (F.col("a.key") == F.col("b.key"))
                        & (F.col("a.row") < F.col("b.row")))
                 .select(F.col("a.row").alias("i"), F.col("b.row").alias("j")).distinct())
        n_candidates = None
        if max_pairs is not None and upper > max_pairs:  # else the distinct pairs, at most upper, pass
            n_candidates = keep(pairs).count()
            if n_candidates > max_pairs:
                raise ApplyError(f"{corpus}: {lsh.TooManyCandidates(config.b, config.r, upper, max_pairs, n_candidates)}"
                                 " (--max-pairs)")
        done("candidates", n_candidates)

        # 4: verification against both documents' shingle sets and signatures; each batch also says how many
        # candidates it verified, in a row (i = -1, j = that count): the candidates are counted in the same job
        side = lambda s: docs.select(F.col("row").alias(s), F.col("sig").alias(f"sig_{s}"),  # noqa: E731
                                     F.col("sh").alias(f"sh_{s}"))
        joined = pairs.join(side("i"), "i").join(side("j"), "j").select("i", "j", "sig_i", "sig_j", "sh_i", "sh_j")
        verified = joined.mapInArrow(checked(lambda it: verify_batches(it, config=config, frequencies=frequencies,
                                                                       tally=True), expected),
                                     "i long, j long, exact double, est double")
        if config.min_shingles and config.short_docs == "exact":  # short documents: equal normalized text, J = 1
            ta, tb = docs.where(F.col("tk").isNotNull()).select("row", "tk").alias("a"), docs.select("row", "tk").alias("b")
            verified = verified.unionByName(
                ta.join(tb, (F.col("a.tk") == F.col("b.tk")) & (F.col("a.row") < F.col("b.row")))
                .select(F.col("a.row").alias("i"), F.col("b.row").alias("j"), F.lit(1.0).alias("exact"),
                        F.lit(1.0).alias("est")))
        tallied = keep(verified)
        verified = tallied.where(F.col("i") >= 0)
        edges = None
        if upper <= driver_edges:  # the verified pairs (at most upper) fit on the driver: collected at once
            edges = tallied.toArrow()
            told = edges.filter(pc.less(edges.column("i"), 0))
            n_tallied = int(pc.sum(told.column("j")).as_py() or 0)
            edges = edges.filter(pc.greater_equal(edges.column("i"), 0))
            n_verified = len(edges)
        else:
            t = tallied.agg(F.sum(F.when(F.col("i") < 0, F.col("j"))).alias("c"),
                            F.count(F.when(F.col("i") >= 0, F.lit(1))).alias("v")).first()
            n_tallied, n_verified = int(t["c"] or 0), int(t["v"])
            if n_verified <= driver_edges:
                edges = verified.toArrow()
        n_candidates = n_tallied if n_candidates is None else n_candidates
        done("verification", n_verified)

        # 5-6: components, then each component's clustering and manifest rows
        template = manifest_template(slice_fields)
        columns = [(c, arrow_type(template[c].dtype)) for c in template.columns]
        schema = ", ".join(["_row long", "_cmin long", "_removed boolean"] +
                           [f"`{c}` {t}" for c, t in ((c, {"string": "string", "int64": "long", "double": "double",
                                                            "bool": "boolean"}[str(t)]) for c, t in columns)])
        fn = lambda a, b: cluster_components(a, b, config=config, fingerprint=fp,  # noqa: E731
                                             slice_fields=slice_fields, reviews=reviews, columns=columns,
                                             missing_values=missing_values, frequencies=frequencies)
        node_cols = ["grp", "row", "id", "size", "sig", "sh", *[f"x{k}" for k in range(len(slice_fields))]]
        # Whole components are clustered together, many per call: components do not interact, and one Python
        # call per component (thousands of tiny pandas frames) was the stage's cost. Groups of ~GROUP_NODES
        # graph nodes bound a task's memory; at least one group per shuffle partition keeps every core busy.
        least = int(spark.conf.get("spark.sql.shuffle.partitions"))
        if edges is not None:  # on the driver (driver.py): components, groups, then the cluster ids
            vi, vj = edges.column("i").to_numpy(), edges.column("j").to_numpy()
            nodes, grp = component_groups(vi, vj, 0)
            groups = max(least, -(-len(nodes) // GROUP_NODES))
            grp %= groups
            done("connected components", len(nodes))
            comp = spark.createDataFrame(pa.table({"row": nodes, "grp": grp}))
            graph = edges.append_column("egrp", pa.array(grp[np.searchsorted(nodes, vi)]))
            members = (docs.join(comp, "row").select(*node_cols).groupBy("grp")
                       .cogroup(spark.createDataFrame(graph).groupBy("egrp"))
                       .applyInArrow(checked(fn, expected, 2), schema).toArrow())
            done("clustering", len(members))
            table, n_clusters, n_chained = manifest_table(members, [c for c, _ in columns])
            manifest = None
            done("cluster ids")
        else:  # in Spark (components.py): rounds of large-star and small-star steps, then a prefix count
            comp = connected_components(verified).localCheckpoint()
            done("connected components")
            groups = max(least, -(-comp.count() // GROUP_NODES))
            comp = comp.withColumn("grp", F.pmod(F.xxhash64("comp"), F.lit(groups)))
            nodes = docs.join(comp.withColumnRenamed("node", "row"), "row").select(*node_cols)
            graph = verified.join(comp.select(F.col("node").alias("i"), F.col("grp").alias("egrp")), "i")
            members = keep(nodes.groupBy("grp").cogroup(graph.groupBy("egrp")).applyInArrow(checked(fn, expected, 2),
                                                                                          schema))
            done("clustering", members.count())
            # 7: cluster ids over all n rows
            below = prefix_sum(members.select("_row", (F.col("_row") != F.col("_cmin")).cast("long").alias("nm")),
                               "_row", "nm")
            manifest = (members.where("_removed").drop("cluster_id")
                        .join(below.select(F.col("_row").alias("_cmin"), F.col("cum")), "_cmin")
                        .withColumn("cluster_id", F.col("_cmin") - F.col("cum")))
            manifest = keep(manifest.orderBy("cluster_id", "_row").select(*[f"`{c}`" for c, _ in columns]))
            agg = manifest.agg(F.count(F.lit(1)).alias("n"), F.countDistinct("cluster_id").alias("clusters"),
                               F.sum(F.col("chained").cast("long")).alias("chained")).first()
            table, n_clusters, n_chained = None, int(agg["clusters"]), int(agg["chained"] or 0)
            done("cluster ids")

        # 8: outputs. A local folder is replaced as a set (calib.base.atomic, as the local engine does); on object
        # storage (no atomic rename) summary.json goes first and comes back last, as the set's completion record
        n_removed = len(table) if table is not None else int(agg["n"])
        summary = {"config_fingerprint": fp, "documents": int(n), "empty_documents": int(empty),
                   "exact_copies": int(copies), "candidate_pairs": int(n_candidates), "verified_pairs": int(n_verified),
                   "clusters_with_removals": n_clusters, "proposed_removals": n_removed,
                   "chained_removals": n_chained}
        if config.min_shingles:  # calib.verification.short.summary's account, from the counts
            summary.update(short_summary(np.zeros(0), config.min_shingles, config.short_docs),
                           short_documents=int(sum(r["short"] or 0 for r in counts)))
        readme = (f"calib apply (spark engine)\n==========================\n\n{NOTICE}\n\nmanifest.parquet: one row "
                  f"per document the configuration {fp} would remove from {corpus}, next to the representative it "
                  f"would keep. summary.json: counts, written last.\n")
        text = dumps(dict(summary, corpus=str(corpus), engine="spark", notice=NOTICE))
        if is_local(out):
            from calib.base.atomic import atomic_folder
            try:
                with atomic_folder(local_path(out)) as tmp:
                    if table is not None or cluster:  # the driver's folder: written by the driver
                        _write_on_driver(table if table is not None else manifest.toArrow(), tmp / "manifest.parquet")
                    else:
                        manifest.write.parquet((tmp / "manifest.parquet").resolve().as_uri())
                    write_text(spark, str(tmp / "README.txt"), readme)
                    write_text(spark, str(tmp / "summary.json"), text)
            except ValueError as exc:  # a folder holding files this output does not write
                raise ApplyError(str(exc)) from None
        else:
            delete(spark, f"{out}/summary.json")
            (spark.createDataFrame(table) if manifest is None else manifest).write.mode("overwrite").parquet(
                f"{out}/manifest.parquet")
            write_text(spark, f"{out}/README.txt", readme)
            write_text(spark, f"{out}/summary.json", text)
        done("write", summary["proposed_removals"])
        return summary
    finally:
        for df in persisted:
            df.unpersist()
