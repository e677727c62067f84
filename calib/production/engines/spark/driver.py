"""The Spark job's graph steps on the driver, when the verified pairs fit in its memory.

One job: the whole-graph computations of :mod:`calib.production.engines.spark`
done with numpy and scipy on the driver instead of as Spark rounds, when the
verified pairs number at most :data:`DRIVER_EDGES` (32 bytes each: a few
hundred MB at most). Spark's connected components
(:mod:`calib.production.engines.spark.components`) take O(log^2 n) rounds of
several stages each, and every stage costs a task launch on every core, which
for a few thousand documents is most of the job's time.

- :func:`component_groups`: each node of the verified pairs with its component
  (:func:`scipy.sparse.csgraph.connected_components`, as the local engine) and
  the group of whole components it is clustered in (components dealt to groups
  in the order of their smallest node, so groups are even).
- :func:`cluster_ids`: the local engine's cluster ids, numbered over all n rows
  by each cluster's smallest member m: id(m) = m - #(rows < m that are not
  their cluster's smallest).
- :func:`manifest_table`: the members the executors clustered (one row per graph
  node: _row, _cmin, _removed and the manifest columns) -> the manifest rows,
  ordered by (cluster id, row) as locally, with the summary's counts.
"""

from __future__ import annotations

import numpy as np

DRIVER_EDGES = 5_000_000   # verified pairs up to which the graph steps run on the driver


def component_groups(i: np.ndarray, j: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """(nodes, group): the sorted nodes of the edges (i, j) and, for each, a group in [0, groups) holding its
    whole component. Components are dealt to groups in the order of their smallest node."""
    from scipy import sparse
    from scipy.sparse import csgraph
    nodes = np.unique(np.concatenate([np.asarray(i, np.int64), np.asarray(j, np.int64)]))
    m = len(nodes)
    if not m:
        return nodes, np.zeros(0, np.int64)
    a, b = np.searchsorted(nodes, i), np.searchsorted(nodes, j)
    _, label = csgraph.connected_components(sparse.coo_matrix((np.ones(len(a), np.int8), (a, b)), shape=(m, m)),
                                            directed=False)
    return nodes, (label % max(1, groups)).astype(np.int64)  # labels number components by their first node


def cluster_ids(rows: np.ndarray, cmin: np.ndarray) -> np.ndarray:
    """Each graph row's cluster id: its cluster's smallest row m less the graph rows below m (inclusive) that
    are not their own cluster's smallest. ``rows`` are all graph rows (any order), ``cmin`` each one's cluster's
    smallest row; the rows outside the graph are singletons, each its own smallest, and count nothing."""
    rows, cmin = np.asarray(rows, np.int64), np.asarray(cmin, np.int64)
    order = np.argsort(rows, kind="stable")
    cum = np.cumsum(rows[order] != cmin[order])
    return cmin - cum[np.searchsorted(rows[order], cmin)]


def manifest_table(members, columns: list[str]):
    """(manifest, clusters with removals, chained removals): the removed members as the local engine orders
    its manifest (cluster id, then row), with the columns ``columns`` (an Arrow table in, an Arrow table out)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    rows = members.column("_row").to_numpy()
    cid = cluster_ids(rows, members.column("_cmin").to_numpy())
    removed = np.asarray(members.column("_removed").to_numpy(zero_copy_only=False), bool)
    at = np.flatnonzero(removed)
    at = at[np.lexsort((rows[at], cid[at]))]
    out = members.take(pa.array(at))
    k = out.schema.get_field_index("cluster_id")
    out = out.set_column(k, out.schema.field(k), pa.array(cid[at], out.schema.field(k).type))
    chained = int(pc.sum(pc.cast(out.column("chained"), pa.int64())).as_py() or 0) if len(out) else 0
    return out.select(columns), int(len(np.unique(cid[at]))), chained
