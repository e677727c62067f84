"""What the Spark job's tasks run: calib's own kernels on Arrow batches.

One job: the bodies the Spark job (:mod:`calib.production.engines.spark`) hands
to ``mapInArrow`` and ``cogroup().applyInArrow``, each a plain function of
Arrow batches. :func:`sign_batches` turns corpus rows into documents with the
local engine's id/text rules (:mod:`calib.reading.corpus`):
:func:`calib.sketches.shingles.shingle_hashes`,
:func:`calib.sketches.minhash.signatures`, :func:`calib.candidates.lsh.band_keys`,
the exact-copy digest; :func:`verify_batches` computes each candidate pair's
exact similarity (J, or J_w when weighted) and MinHash estimate (the fraction
of equal signature values) and keeps the pairs the config verifies;
:func:`cluster_components` clusters a group of whole connected components with
:func:`calib.clusters.clustering.cluster_pairs` and writes their manifest rows
with :func:`calib.production.manifest.manifest_frame`. Components do not
interact, so this is the local result.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calib.candidates import lsh
from calib.reading.corpus import ApplyError, _as_id, _as_text, parse_jsonl_record
from calib.clusters.clustering import Representative, cluster_pairs
from calib.search.config import Config
from calib.verification.measures import get_measure
from calib.sketches.minhash import estimate_jaccard, signatures
from calib.reading.files import MISSING_VALUES, SampleError, parse_record
from calib.verification.copies import set_digests
from calib.sketches.shingles import ShingleSets, shingle_hashes
from calib.verification.short import short_mask, text_keys
from calib.sketches.weighted_minhash import weigh

WHERE = "\x00where\x00"  # placeholder for "file:line" in messages made on executors


def _task_threads() -> None:
    """One compiled-kernel thread per task CPU: Spark already runs a task per core."""
    import numba
    from pyspark import TaskContext
    tc = TaskContext.get()
    numba.set_num_threads(max(1, min(numba.config.NUMBA_NUM_THREADS, int(tc.cpus()) if tc else 1)))


# ---------------------------------------------------------------------------
# Stage 2: records -> (id, size, signature, band keys, shingle set), per partition
# ---------------------------------------------------------------------------

def _record(raw, id_field: str, text_field: str, extra_fields: tuple[str, ...]):
    """One JSONL line -> (id, text, extras), or None for a blank line; the local reader's rules."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApplyError(f"{WHERE}: not UTF-8 text ({exc.reason} at byte {exc.start} of the line)")
    line = line.strip()
    if not line:
        return None
    try:  # the loaders' JSON rules (duplicate keys, lone surrogates, huge ints, deep nesting)
        rec = parse_record(line, WHERE, None)
    except SampleError as exc:
        raise ApplyError(f"{WHERE}: field {exc.field!r}: {exc.detail}" if exc.field else f"{WHERE}: {exc.detail}") from None
    return parse_jsonl_record(rec, WHERE, id_field, text_field, extra_fields)


def doc_schema(extra_fields) -> str:
    cols = ["f string", "bs long", "li long", "di long", "err string", "id string", "size long",
            "sig binary", "keys array<long>", "sh binary", "dg binary", "tk binary"]
    return ", ".join(cols + [f"`x{k}` string" for k in range(len(extra_fields))])


def parse_rows(d: dict, n: int, kind: str, id_field: str, text_field: str, extra_fields: tuple[str, ...],
               counters: dict):
    """The rows of one input batch (``d``: its columns) as the local reader reads them: ``out`` (columns f, bs,
    li (line, or row of a Parquet file), di (document number in its split, none for a blank line), err, id),
    the extra fields' values, and the documents' places in the batch and texts. ``counters`` ((file, split
    start) -> [lines, documents] seen) carries the numbering from batch to batch of a task."""
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
                where = f"{WHERE}{d['ri'][t]}"
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
    return out, extras, doc_pos, texts


def sign_batches(batches, *, config: Config, kind: str, id_field: str, text_field: str,
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
        out, extras, doc_pos, texts = parse_rows(d, n, kind, id_field, text_field, extra_fields, counters)
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
            dg = set_digests(sets)  # the local engine's exact-copy key (calib.verification.copies)
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


# ---------------------------------------------------------------------------
# Stage 4: verification, per partition of joined pairs
# ---------------------------------------------------------------------------

def _blob_rows(*columns, dtype=np.uint32):
    """Binary Arrow columns (arrays or chunked arrays, no nulls), concatenated -> (offsets int64[k+1], values),
    read from the Arrow buffers (no Python object per row)."""
    import pyarrow as pa
    chunks = [c for col in columns for c in (col.chunks if isinstance(col, pa.ChunkedArray) else [col])]
    size = np.dtype(dtype).itemsize
    offs, vals, at = [np.zeros(1, np.int64)], [], 0
    for c in chunks:
        if not len(c):
            continue
        wide = pa.types.is_large_binary(c.type)
        o = np.frombuffer(c.buffers()[1], np.int64 if wide else np.int32)[c.offset:c.offset + len(c) + 1]
        o = o.astype(np.int64)
        if o[-1] > o[0]:
            vals.append(np.frombuffer(c.buffers()[2], np.uint8)[o[0]:o[-1]])
        offs.append((o[1:] - o[0]) // size + at)
        at += (o[-1] - o[0]) // size
    data = np.concatenate(vals) if vals else np.zeros(0, np.uint8)
    return np.concatenate(offs), data.view(dtype)


def verify_batches(batches, *, config: Config, frequencies=None, tally: bool = False):
    """The candidate pairs this config verifies, with their exact J (J_w when weighted) and MinHash estimate.
    ``tally``: each batch is followed by a row (i = -1, j = the batch's candidate pairs, NaN, NaN), so that the
    job counts the candidates while it verifies them."""
    import pyarrow as pa
    _task_threads()
    for batch in batches:
        k = batch.num_rows
        if not k:
            continue
        col = batch.column
        if tally:
            yield pa.RecordBatch.from_arrays([pa.array([-1], pa.int64()), pa.array([k], pa.int64()),
                                              pa.array([np.nan]), pa.array([np.nan])], names=["i", "j", "exact", "est"])
        a, b = np.arange(k), np.arange(k, 2 * k)
        _, sig = _blob_rows(col("sig_i"), col("sig_j"))
        est = estimate_jaccard(sig.reshape(2 * k, config.rep.num_perm), a, b)
        off, hs = _blob_rows(col("sh_i"), col("sh_j"))
        exact = get_measure(config.measure).exact(weigh(ShingleSets(off, hs, True), config.rep, frequencies), a, b)
        keep = config.passes(config.similarity(exact, est))
        yield pa.RecordBatch.from_arrays([pa.array(np.asarray(col("i").to_numpy(), np.int64)[keep]),
                                          pa.array(np.asarray(col("j").to_numpy(), np.int64)[keep]),
                                          pa.array(exact[keep]), pa.array(est[keep])], names=["i", "j", "exact", "est"])


# ---------------------------------------------------------------------------
# Stage 6: a group of whole components -> their clustering and manifest rows
# ---------------------------------------------------------------------------

def manifest_template(slice_fields: tuple[str, ...]) -> pd.DataFrame:
    """An empty manifest with the local engine's columns and dtypes."""
    from calib.production.manifest import manifest_frame
    empty = cluster_pairs(0, np.zeros(0, np.int64), np.zeros(0, np.int64))
    slices = pd.DataFrame({f: np.zeros(0, object) for f in slice_fields}) if slice_fields else None
    z = lambda *_: np.zeros(0)  # noqa: E731
    return manifest_frame(np.zeros(0, object), empty, [], [], [], [], z, z, config_fingerprint="", slices=slices)


def arrow_type(dtype):
    import pyarrow as pa
    if pd.api.types.is_bool_dtype(dtype):
        return pa.bool_()
    if pd.api.types.is_integer_dtype(dtype):
        return pa.int64()
    if pd.api.types.is_float_dtype(dtype):
        return pa.float64()
    return pa.string()


def cluster_components(nodes, edges, *, config: Config, fingerprint: str, slice_fields: tuple[str, ...],
                       reviews, columns: list[tuple[str, object]], missing_values=MISSING_VALUES,
                       frequencies=None):
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
    _, sig = _blob_rows(nodes.column("sig"))
    sig = sig.reshape(m, config.rep.num_perm)
    off, hs = _blob_rows(nodes.column("sh"))
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
