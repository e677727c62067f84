"""The report-only removal manifest, shared by ``calib export`` and ``calib apply``.

One row per document a configuration WOULD remove, next to the representative
it would keep, the verified pair that links it to its cluster, and whether
only chaining justifies it. Nothing is deleted: the manifest is a proposal.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calib.reading.files import MISSING_VALUES, is_missing, missing_set

NOTICE = ("Report only: this project never deletes, moves or rewrites a document. The manifest lists "
          "documents this configuration WOULD remove, each next to the representative it would keep, "
          "for human review; acting on it is a separate, deliberate step outside calib.")

MANIFEST_COLUMNS = (
    "doc_id", "cluster_id", "representative_id", "sim_to_representative_estimated",
    "sim_to_representative_exact", "via_id", "via_exact", "via_estimated", "chained", "flagged_giant",
)
# then: label (export only), slice or corpus columns, review_status, config_fingerprint


def _via(n: int, clustering, vi: np.ndarray, vj: np.ndarray) -> np.ndarray:
    """For each row, a verified neighbour one step closer to its representative
    (within its cluster); -1 for kept rows."""
    rep = clustering.representative
    removed = clustering.removed
    via = np.full(n, -1, dtype=np.int64)
    direct = removed & ~clustering.chained
    via[direct] = rep[direct]
    chained = np.flatnonzero(clustering.chained)
    if len(chained):
        from scipy import sparse
        from scipy.sparse import csgraph
        cl = clustering.cluster
        same = cl[vi] == cl[vj]
        ei, ej = vi[same], vj[same]
        heads = np.unique(rep[removed])
        src = np.r_[ei, ej, np.full(len(heads), n)]
        dst = np.r_[ej, ei, heads]
        g = sparse.csr_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(n + 1, n + 1))
        _, pred = csgraph.breadth_first_order(g, n, directed=True, return_predecessors=True)
        via[chained] = pred[chained]
    return via


def _pair_lookup(n: int, vi, vj, values, qi, qj) -> np.ndarray:
    code = np.minimum(vi, vj) * n + np.maximum(vi, vj)
    order = np.argsort(code, kind="stable")
    code, values = code[order], np.asarray(values, dtype=np.float64)[order]
    q = np.minimum(qi, qj) * n + np.maximum(qi, qj)
    pos = np.clip(np.searchsorted(code, q), 0, max(len(code) - 1, 0))
    out = np.full(len(q), np.nan)
    if len(code):
        hit = code[pos] == q
        out[hit] = values[pos[hit]]
    return out


def _review_status(doc_ids, rep_ids, review_store) -> np.ndarray:
    status = np.full(len(doc_ids), "unreviewed", dtype=object)
    if review_store is None or not len(doc_ids):
        return status
    latest = review_store.latest() if hasattr(review_store, "latest") else review_store
    latest = latest[latest["id_b"].notna()]
    if latest.empty:
        return status
    lut = {(a, b): d for a, b, d in zip(latest["id_a"], latest["id_b"], latest["decision"])}
    for k, (a, b) in enumerate(zip(doc_ids, rep_ids)):
        status[k] = lut.get((min(a, b), max(a, b)), "unreviewed")
    return status


def manifest_frame(ids, clustering, vi, vj, v_exact, v_est, sim_est, sim_exact, *, config_fingerprint: str,
                   labels=None, slices: pd.DataFrame | None = None, review_store=None,
                   missing_values=MISSING_VALUES) -> pd.DataFrame:
    """Core of the manifest, shared by :func:`manifest` and ``calib apply``.

    ``sim_est``/``sim_exact`` are callables ``(rows, reps) -> float array``.
    Slice cells spelled as one of ``missing_values`` (NA, nan, NULL, ...: the
    loaders' rule) are written as missing.
    """
    ids = np.asarray(ids, dtype=object)
    n = len(ids)
    vi = np.asarray(vi, np.int64)
    vj = np.asarray(vj, np.int64)
    rows = np.flatnonzero(clustering.removed)
    rep = clustering.representative[rows]
    via = _via(n, clustering, vi, vj)[rows]
    data = {
        "doc_id": ids[rows].astype(str) if len(rows) else np.array([], dtype=object),
        "cluster_id": clustering.cluster[rows].astype(np.int64),
        "representative_id": ids[rep].astype(str) if len(rows) else np.array([], dtype=object),
        "sim_to_representative_estimated": np.asarray(sim_est(rows, rep), dtype=np.float64),
        "sim_to_representative_exact": np.asarray(sim_exact(rows, rep), dtype=np.float64),
        "via_id": ids[via].astype(str) if len(rows) else np.array([], dtype=object),
        "via_exact": _pair_lookup(n, vi, vj, v_exact, rows, via),
        "via_estimated": _pair_lookup(n, vi, vj, v_est, rows, via),
        "chained": clustering.chained[rows].astype(bool),
        "flagged_giant": clustering.flagged_giant[rows].astype(bool),
    }
    if labels is not None:
        lab = np.asarray(labels(rows, rep), dtype=np.int8)
        data["label"] = np.where(lab == 1, "duplicate", np.where(lab == 0, "not_duplicate", "unlabeled"))
    frame = pd.DataFrame(data)
    if slices is not None:
        missing = missing_set(missing_values)
        for c in slices.columns:
            name = c if c not in frame.columns else f"slice_{c}"
            cells = slices[c].to_numpy(dtype=object)[rows] if len(rows) else np.array([], dtype=object)
            frame[name] = np.array([None if is_missing(v, missing) else v for v in cells], dtype=object)
    frame["review_status"] = _review_status(frame["doc_id"].tolist(), frame["representative_id"].tolist(),
                                            review_store)
    frame["config_fingerprint"] = config_fingerprint
    frame["_row"] = rows
    frame = frame.sort_values(["cluster_id", "_row"], kind="stable").drop(columns="_row").reset_index(drop=True)
    for c in frame.columns:
        if frame[c].dtype == object:
            frame[c] = frame[c].astype("string")
    return frame


def manifest(evaluation, sample, *, review_store=None) -> pd.DataFrame:
    """One row per proposed removal of ``evaluation`` on ``sample`` (report only).

    Columns: doc_id, cluster_id, representative_id, similarity to the
    representative (estimated and exact), the verified pair connecting the
    document to its cluster (via_id and that pair's exact/estimated J),
    chained (only the transitive closure justifies the removal),
    flagged_giant, label (the sample's label of (doc, representative)), the
    sample's slice columns, review_status ('unreviewed', or the latest
    decision for (doc, representative) when a ReviewStore is given), and
    config_fingerprint. Sorted by cluster then row.
    """
    from calib.verification.measures import get_measure
    from calib.sketches.minhash import signatures
    from calib.sketches.shingles import shingle_hashes
    from calib.clusters.truth import truth_from_sample

    cfg = evaluation.config
    measure = get_measure(cfg.measure)  # similarities to the representative in the config's measure (J or C)
    if evaluation.clustering is None:
        raise ValueError("this configuration produced no clustering (too many candidates): no manifest")
    rep = cfg.rep
    clustering = evaluation.clustering
    texts = sample.texts

    def _subset(rows, reps):
        need = np.unique(np.r_[rows, reps]).astype(np.int64)
        sets = shingle_hashes([texts[k] for k in need], rep, unique=True)
        return need, sets

    cache: dict = {}

    def _prep(rows, reps):
        if "need" not in cache:
            cache["need"], cache["sets"] = _subset(rows, reps)
            cache["sig"] = signatures(cache["sets"], rep.num_perm, rep.seed, rep.scheme)
        need = cache["need"]
        return np.searchsorted(need, rows), np.searchsorted(need, reps)

    def sim_est(rows, reps):
        if not len(rows):
            return np.zeros(0)
        a, b = _prep(rows, reps)
        return measure.estimate(cache["sig"], cache["sets"].sizes(), a, b)

    def sim_exact(rows, reps):
        if not len(rows):
            return np.zeros(0)
        a, b = _prep(rows, reps)
        return measure.exact(cache["sets"], a, b)

    truth = truth_from_sample(sample)
    v = evaluation.verified
    slices = sample.docs[list(sample.slice_columns)] if sample.slice_columns else None
    return manifest_frame(sample.ids, clustering, v.i, v.j, v.exact, v.estimated, sim_est, sim_exact,
                          config_fingerprint=cfg.fingerprint(), labels=truth.label, slices=slices,
                          review_store=review_store)
