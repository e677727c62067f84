"""Run an exported configuration on an unlabeled corpus, in bounded memory.

Two passes over the corpus (JSONL read line by line, or Parquet read with
``ParquetFile.iter_batches``: :mod:`calib.reading.corpus`):

1. batch by batch: shingle sets -> MinHash signatures; only ids, shingle-set
   sizes, a 128-bit digest of each set and the (n, num_perm) uint32
   signature matrix are kept (no text). Exact copies (equal digest, size and
   signature, :mod:`calib.verification.copies`) collapse to their first document;
   candidate pairs of these canonical documents come from
   :func:`calib.candidates.lsh.candidate_pairs`, and their number expanded by
   multiplicity (the document pairs) is checked against ``max_pairs`` before
   any document pair is built.
2. re-read only the documents involved (every canonical candidate pair's
   documents for exact verification, the verified pairs' otherwise) and
   compute their shingle sets, for exact Jaccard and the manifest's
   similarities. Verified pairs are then expanded to every document pair.

Then the pairs are clustered with the config's policy and representative
rule, and the same report-only manifest as an export is produced (without
label columns). Nothing is deleted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from calib.base import verbs as _api
from calib.candidates import lsh
from calib.base.budget import check_banding, check_pair_budget
from calib.clusters.clustering import Clustering, Representative, cluster_pairs
from calib.search.config import Config, Verify
from calib.verification.copies import Copies, copies_from_digests, set_digests, spread
from calib.verification.measures import get_measure
from calib.sketches.minhash import signatures
from calib.reading.files import MISSING_VALUES
# the corpus reader's names are also calib.apply.X (the public API's apply module is this one)
from calib.reading.corpus import (ApplyError, check_fields, count_documents, duplicate_id,  # noqa: F401
                                  iter_corpus, parse_jsonl_record)
from calib.sketches.shingles import ShingleSets, shingle_hashes
from calib.verification.short import apply_rule, exact_pairs, short_mask, summary as short_summary, text_keys
from calib.sketches.weighted_minhash import weigh


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


BarFactory = Callable[[str, "int | None"], object]


def _no_bar(desc: str, total: int | None):
    return _NoBar()


# ---------------------------------------------------------------------------
# The two passes
# ---------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class ApplyResult:
    config: Config
    ids: np.ndarray          # object[n]
    sizes: np.ndarray        # int64[n] shingle-set sizes
    n_candidates: int
    vi: np.ndarray
    vj: np.ndarray
    v_exact: np.ndarray
    v_estimated: np.ndarray
    clustering: Clustering
    manifest: pd.DataFrame
    n_copies: int = 0        # documents whose shingle set equals an earlier document's

    @property
    def n(self) -> int:
        return len(self.ids)

    def summary(self) -> dict:
        return {"config_fingerprint": self.config.fingerprint(), "documents": int(self.n),
                "empty_documents": int((self.sizes == 0).sum()), "exact_copies": int(self.n_copies),
                "candidate_pairs": int(self.n_candidates),
                "verified_pairs": int(len(self.vi)), "clusters_with_removals": int(self.manifest["cluster_id"].nunique()),
                "proposed_removals": int(len(self.manifest)),
                "chained_removals": int(self.manifest["chained"].sum()) if len(self.manifest) else 0,
                **short_summary(self.sizes, self.config.min_shingles, self.config.short_docs)}


def _copies(digests: np.ndarray, sizes: np.ndarray, sig: np.ndarray) -> Copies:
    """Documents with equal set digest, size and signature; a 128-bit digest
    collision (~n^2 / 2^129) would also need equal signatures to merge two sets."""
    cp = copies_from_digests(digests, sizes)
    x = np.flatnonzero(~cp.is_canonical)
    same = np.ones(len(x), dtype=bool)
    for lo in range(0, len(x), 65536):  # row blocks: no (copies x num_perm) temporary
        blk = x[lo:lo + 65536]
        same[lo:lo + len(blk)] = (sig[blk] == sig[cp.canonical[blk]]).all(axis=1)
    if same.all():
        return cp
    canonical = cp.canonical.copy()
    canonical[x[~same]] = x[~same]
    return Copies(canonical)


def _concat_sets(parts: list[ShingleSets]) -> ShingleSets:
    if not parts:
        return ShingleSets(np.zeros(1, np.int64), np.zeros(0, np.uint32), True)
    offs, hs, base = [np.zeros(1, np.int64)], [], 0
    for p in parts:
        offs.append(p.offsets[1:] + base)
        hs.append(p.hashes)
        base += int(p.offsets[-1])
    return ShingleSets(np.concatenate(offs), np.concatenate(hs), True)


def corpus_frequencies(path, rep, *, batch_size: int = 10_000, id_field: str = "id",
                       text_field: str = "text"):
    """Document frequencies of ``rep``'s shingles over a corpus file (weighting idf from a
    corpus the user names instead of the sample), one batch of documents at a time."""
    from calib.sketches.weighted_minhash import frequencies_from_sets, merge_frequencies
    tables = [frequencies_from_sets(shingle_hashes(texts, rep, unique=True))
              for _, texts, _ in iter_corpus(path, batch_size=batch_size, id_field=id_field, text_field=text_field)]
    if not tables:
        raise ApplyError(f"{path}: no document to count shingle frequencies on")
    return merge_frequencies(tables)


def apply_config(config: Config, corpus, *, batch_size: int = 10_000, id_field: str = "id",
                 text_field: str = "text", slice_fields: tuple[str, ...] = (), bar: BarFactory | None = None,
                 max_pairs: int | None = 50_000_000, review_store=None, collapse: bool = True,
                 missing_values=MISSING_VALUES, frequencies=None, stoplist=None) -> ApplyResult:
    """Run ``config`` on an unlabeled corpus; see the module docstring.
    ``frequencies``: the exported document-frequency table of a weighted
    representation (:func:`calib.production.document.load_frequencies`): the weights are the
    calibration's, not re-counted on this corpus.

    Memory: the signature matrix and ~100 bytes per document, plus ~110 bytes
    per document pair up to ``max_pairs`` (``collapse=False`` bands every
    copy on its own: the reference the tests compare with). ``stoplist``: the
    config's boilerplate lines (:func:`calib.production.document.load_stoplist`), stripped
    before shingling in both passes; short documents (``config.min_shingles``)
    are left out of banding and follow ``config.short_docs`` (:mod:`calib.verification.short`)."""
    from calib.production.manifest import manifest_frame

    rep = config.rep
    if rep.strip_lines and stoplist is None:
        raise ApplyError(f"the config strips boilerplate lines (strip_lines={rep.strip_lines:g}) but no stoplist "
                         "was given (it is the stoplist.json beside config.json)")
    strip = (lambda texts: stoplist.strip_all(texts, rep)) if rep.strip_lines else (lambda texts: texts)
    short_keys: list[np.ndarray] = []  # digests of the short documents' normalized texts, in row order
    bar = bar or _no_bar
    if rep.weighting != "none" and frequencies is None:
        raise ApplyError(f"weighting {rep.weighting!r} needs the exported document-frequency table")
    if config.representative is Representative.PRIORITY:
        raise ApplyError("representative rule 'priority' needs a priority per document, which apply does not read; "
                         "export a config with first, longest or medoid")
    n_total = count_documents(corpus)
    check_pair_budget(max_pairs, "apply", most_pairs=n_total * (n_total - 1) // 2)
    check_banding(n_total, rep.num_perm, config.b, f"{corpus}")

    # pass 1: signatures, ids, sizes
    sig = np.empty((n_total, rep.num_perm), dtype=np.uint32)
    sizes = np.empty(n_total, dtype=np.int64)
    digests = np.zeros((n_total, 2), dtype=np.uint64)
    ids: list[str] = []
    seen: set[str] = set()
    pb = bar("pass 1/2 signatures", n_total)
    row = 0
    for bids, btexts, _ in iter_corpus(corpus, batch_size=batch_size, id_field=id_field, text_field=text_field):
        for k, d in enumerate(bids):
            if d in seen:  # the first one's place found by reading again: a set of ids, not a dict, is held
                raise duplicate_id(corpus, d, None, row + k, id_field=id_field, text_field=text_field)
            seen.add(d)
        m = len(bids)
        if row + m > n_total:
            raise ApplyError(f"{corpus}: the file changed while it was read")
        btexts = strip(btexts)
        sets = weigh(shingle_hashes(btexts, rep, unique=True), rep, frequencies)
        sizes[row:row + m] = sets.sizes()
        if config.min_shingles and config.short_docs == "exact":
            short_keys.append(text_keys([btexts[t] for t in np.flatnonzero(short_mask(sets.sizes(),
                                                                                        config.min_shingles))], rep))
        if collapse:
            digests[row:row + m] = set_digests(sets)
        sig[row:row + m] = signatures(sets, rep.num_perm, rep.seed, rep.scheme)
        ids.extend(bids)
        row += m
        pb.update(m)
    pb.close()
    del seen
    if row != n_total:
        raise ApplyError(f"{corpus}: the file changed while it was read")
    n = row
    ids_arr = np.asarray(ids, dtype=object)
    del ids

    cp = _copies(digests, sizes, sig) if collapse else Copies(np.arange(n))
    del digests
    n_copies = cp.n_copies  # of the whole corpus, short documents included
    short = short_mask(sizes, config.min_shingles)
    if short.any():  # short documents take no part in copies either (as in the Spark engine's banding)
        canonical = cp.canonical.copy()
        canonical[short] = np.flatnonzero(short)
        cp = Copies(canonical)
    keys = np.concatenate(short_keys) if short_keys else np.zeros((0, 2), np.uint64)
    if n >= 2:
        try:
            ci, cj = lsh.candidate_pairs(sig, config.b, config.r, active=(sizes > 0) & ~short & cp.is_canonical,
                                         max_pairs=max_pairs)
            n_candidates = cp.pair_count(ci, cj)
            if max_pairs is not None and n_candidates > max_pairs:
                raise lsh.TooManyCandidates(config.b, config.r, n_candidates, max_pairs, n_candidates)
        except lsh.TooManyCandidates as exc:
            raise ApplyError(f"{corpus}: {exc} (--max-pairs)")
    else:
        ci = cj = np.zeros(0, np.int64)
        n_candidates = 0
    measure = get_measure(config.measure)  # J, or C = |A & B| / min(|A|, |B|) from the same sets and signatures
    est = measure.estimate(sig, sizes, ci, cj) if len(ci) else np.zeros(0)
    groups = np.flatnonzero(cp.multiplicity > 1)  # their inner pairs are verified (J = 1)
    if config.short_docs == "exact":  # short documents matched by text: their sets are read in pass 2 too
        groups = np.union1d(groups, np.concatenate(exact_pairs(np.flatnonzero(short), keys)))

    def pass2(rows: np.ndarray, slice_rows: np.ndarray):
        """Shingle sets of ``rows`` and slice values of ``slice_rows`` only, re-read from the corpus."""
        parts: list[ShingleSets] = []
        sl = {f: [] for f in slice_fields}
        pb2 = bar("pass 2/2 verification", int(len(rows)))
        pos = 0
        for bids, btexts, extras in iter_corpus(corpus, batch_size=batch_size, id_field=id_field,
                                                text_field=text_field, extra_fields=slice_fields):
            m = len(bids)
            take = (rows[np.searchsorted(rows, pos):np.searchsorted(rows, pos + m)] - pos).tolist()
            if take:
                parts.append(shingle_hashes(strip([btexts[t] for t in take]), rep, unique=True))
                pb2.update(len(take))
            take = (slice_rows[np.searchsorted(slice_rows, pos):np.searchsorted(slice_rows, pos + m)] - pos).tolist()
            for f in slice_fields:
                sl[f].extend(extras[f][t] for t in take)
            pos += m
        pb2.close()
        return weigh(_concat_sets(parts), rep, frequencies), sl

    def exact_of(sub, need, i, j):
        return measure.exact(sub, np.searchsorted(need, i), np.searchsorted(need, j)) if len(i) else np.zeros(0)

    # verified pairs of canonical documents (ui, uj), then expanded to every document pair
    if config.verify is Verify.EXACT:
        need = np.unique(np.r_[ci, cj, groups]).astype(np.int64)
        keep = None
    else:
        keep = config.passes(est)
        need = np.unique(np.r_[ci[keep], cj[keep], groups]).astype(np.int64)
    # slice values: every copy of a document re-read (a superset of the verified pairs' documents)
    in_need = np.zeros(n, dtype=bool)
    in_need[need] = True
    slice_rows = np.flatnonzero(in_need[cp.canonical]) if slice_fields else np.zeros(0, np.int64)
    del in_need
    sub, sub_slices = pass2(need, slice_rows)
    if keep is None:
        exact_c = exact_of(sub, need, ci, cj)
        keep = config.passes(exact_c)
        ue = exact_c[keep]
    else:
        ue = exact_of(sub, need, ci[keep], cj[keep])
    ui, uj, u_est = ci[keep], cj[keep], est[keep]
    del ci, cj, est
    vi, vj, src = cp.expand(ui, uj)
    v_exact, v_est = spread(ue, src, 1.0), spread(u_est, src, 1.0)
    del src
    if config.min_shingles:
        vi, vj, (v_exact, v_est) = apply_rule(vi, vj, [v_exact, v_est], short, config.short_docs, keys)

    sim = config.similarity(v_exact, v_est)
    clustering = cluster_pairs(n, vi, vj, sim, policy=config.policy, representative=config.representative,
                               lengths=sizes if config.representative is Representative.LONGEST else None,
                               max_component=config.max_component)

    def sim_est(rows, reps):
        return measure.estimate(sig, sizes, rows, reps) if len(rows) else np.zeros(0)

    def sim_exact(rows, reps):  # a copy's set is its canonical document's
        return exact_of(sub, need, cp.canonical[rows], cp.canonical[reps])

    slices = None
    if slice_fields:
        # slice values are known for the re-read rows only (every removed row is one of them)
        full = {f: np.full(n, None, dtype=object) for f in slice_fields}
        for f in slice_fields:
            if len(slice_rows):
                full[f][slice_rows] = np.asarray(sub_slices[f], dtype=object)
        slices = pd.DataFrame(full)
    frame = manifest_frame(ids_arr, clustering, vi, vj, v_exact, v_est, sim_est, sim_exact,
                           config_fingerprint=config.fingerprint(), slices=slices, review_store=review_store,
                           missing_values=missing_values)
    return ApplyResult(config, ids_arr, sizes, n_candidates, vi, vj, v_exact, v_est, clustering, frame,
                       n_copies)


def write_apply(out_dir, result: ApplyResult, *, corpus: str) -> dict[str, Path]:
    """manifest.csv, manifest.parquet, summary.json and README.txt as one set
    (a temp sibling folder that replaces ``out_dir`` whole: :func:`calib.base.atomic.atomic_folder`)."""
    from calib.base.atomic import atomic_folder, write_frame_atomic, write_text_atomic
    from calib.base.jsondoc import dumps
    from calib.production.manifest import NOTICE

    out = Path(out_dir)
    try:
        with atomic_folder(out) as tmp:
            paths = {"manifest.csv": write_frame_atomic(result.manifest, tmp / "manifest.csv"),
                     "manifest.parquet": write_frame_atomic(result.manifest, tmp / "manifest.parquet")}
            summary = dict(result.summary(), corpus=str(corpus), notice=NOTICE)
            paths["summary.json"] = write_text_atomic(tmp / "summary.json", dumps(summary))
            paths["README.txt"] = write_text_atomic(tmp / "README.txt", (
                f"calib apply\n===========\n\n{NOTICE}\n\nmanifest.csv / manifest.parquet: one row per document "
                f"the configuration {result.config.fingerprint()} would remove from {corpus}, next to the "
                f"representative it would keep. summary.json: counts.\n"))
    except ValueError as exc:  # an --out folder holding files apply does not write
        raise ApplyError(str(exc)) from None
    return {k: out / p.name for k, p in paths.items()}


# calib.apply(...) is apply_config(...) (the public API, see calib/__init__.py)
_api.callable_module(__name__, apply_config)
