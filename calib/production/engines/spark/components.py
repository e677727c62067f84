"""Graph steps of the Spark job on DataFrames: connected components and a running count.

One job: the two whole-graph computations of the Spark job
(:mod:`calib.production.engines.spark`) that no single task can do.
:func:`connected_components` labels every node of the verified pairs with its
component's smallest node by alternating large-star and small-star steps
(Kiveris et al., "Connected Components in MapReduce and Beyond", SoCC 2014):
both keep the components, and the edges converge to one star per component
around its smallest node in O(log^2 n) rounds, at most :data:`MAX_ROUNDS`.
:func:`prefix_sum` is an inclusive running sum in key order without a
single-partition window (each range partition summed, then offset by the
totals of the partitions before it); the job numbers clusters with it.
"""

from __future__ import annotations

MAX_ROUNDS = 64        # large-star/small-star rounds; O(log^2 n) suffices for any real graph


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


def prefix_sum(df, key: str, value: str):
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
