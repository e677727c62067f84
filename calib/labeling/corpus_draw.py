"""A draw over the whole corpus (``calib draw --design corpus``): pairs from every document.

The document-sample draw (:mod:`calib.labeling.draw`) sees a corpus pair only
when both its documents are in the sample, a chance of (n/N)^2; at corpus
scale that is the whole estimate. This draw reaches every pair (the design:
:mod:`calib.reading.corpus_design`):

1. one pass (:func:`calib.labeling.loose_pass.stream`): band keys of a loose
   LSH split (default b=120, r=5: P(0.3) = 0.25, P(0.4) = 0.71, P(0.5) =
   0.98, P(0.6) = 1.00; a pair of unrelated documents at J = 0.03 collides with
   probability 3e-6) and 128 verify values per document;
2. candidates band by band, kept when their verify estimate Jv (agreements /
   128) reaches the cut; strata by Jv (no shingle set is built for them);
   SRS per band; ``m`` uniform pairs of two random documents;
3. the drawn pairs' documents (and, for ``later``, the earlier candidate
   neighbours of each pair's later document) are re-read: their exact J gives
   each drawn pair's inclusion probability (:mod:`calib.reading.corpus_design`:
   the loose pass's chance at the exact J, summed over the bands Jv can fall in).

Memory: ``4 (b + 128)`` bytes a document plus 26 a kept candidate pair
(checked before the work, :mod:`calib.base.budget`), then only the drawn
pairs' documents. Time: one read of the corpus for pass 1 plus a read that
keeps the drawn pairs' texts (the corpus is scanned again, little is built).
The drawn set is written as :mod:`calib.labeling.draw` writes it, plus
``candidates.npy`` (the kept candidates: document indices and Jv) for
``--more``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from calib.base.budget import check_memory
from calib.labeling.drawn import (CAND_DTYPE, CANDIDATES, DEFAULT_REP, MAX_PAIRS, DrawError, DrawnSet, allocate,
                                  check_options)
from calib.labeling.loose_pass import TooManyLoosePairs, candidates, stream
from calib.reading.corpus import ApplyError, corpus_digest, count_documents, iter_corpus
from calib.reading.corpus_design import DEFAULT_CORPUS_EDGES, CorpusDesign
from calib.reading.design import Design
from calib.sketches.represent import Representation
from calib.sketches.shingles import shingle_hashes
from calib.verification.jaccard import pairs_jaccard

DEFAULT_LOOSE = (120, 5)
VERIFY_HASHES = 128
VERIFY_MARGIN = 0.15   # the verify cut sits this far below the floor (3.7 sd of a 128-hash estimate at J = 0.3)


def _no_bar(desc, total):
    class _B:
        def update(self, n=1):
            pass

        def close(self):
            pass
    return _B()


def _uniform(n: int, m: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """``m`` distinct pairs (i < j) of two random documents out of ``n``, in draw order (any prefix is an SRS)."""
    m = min(m, n * (n - 1) // 2)
    codes = np.zeros(0, np.int64)
    while len(codes) < m:
        a = rng.integers(0, n, 2 * (m - len(codes)) + 16)
        c = rng.integers(0, n, len(a))
        ok = a != c
        new = np.minimum(a, c)[ok] * np.int64(n) + np.maximum(a, c)[ok]
        codes = np.concatenate([codes, new])
        _, first = np.unique(codes, return_index=True)
        codes = codes[np.sort(first)]
    codes = codes[:m]
    return codes // n, codes % n


def _read_rows(corpus, need: np.ndarray, *, batch_size, id_field, text_field, bar=_no_bar):
    """Ids and texts of the non-empty documents ``need`` (sorted indices among the non-empty)."""
    ids: list[str] = []
    texts: list[str] = []
    t = 0
    pb = bar("reading the drawn documents", int(len(need)))
    for b_ids, b_texts, _ in iter_corpus(corpus, batch_size=batch_size, id_field=id_field, text_field=text_field):
        keep = [k for k, x in enumerate(b_texts) if x.strip()]
        lo, hi = np.searchsorted(need, [t, t + len(keep)])
        got = [keep[k - t] for k in need[lo:hi]]
        ids.extend(b_ids[k] for k in got)
        texts.extend(b_texts[k] for k in got)
        pb.update(len(got))
        t += len(keep)
        if len(ids) == len(need):
            break
    pb.close()
    if len(ids) != len(need):
        raise ApplyError(f"{corpus}: the file changed since it was read")
    return ids, texts


def _later(ci: np.ndarray, cj: np.ndarray, cs: np.ndarray, i: np.ndarray, j: np.ndarray, s: np.ndarray) -> list:
    """Per pair (i < j): exact J of the links of j to earlier documents among the candidates (with its own)."""
    order = np.argsort(cj, kind="stable")
    sj, si, ss = cj[order], ci[order], cs[order]
    out = []
    for a, b, own in zip(i, j, s):
        lo, hi = np.searchsorted(sj, [b, b + 1])
        vals = [round(float(x), 6) for x in ss[lo:hi]]
        if a not in set(si[lo:hi].tolist()):
            vals.append(round(float(own), 6))
        out.append(sorted(vals, reverse=True))
    return out


@dataclass(frozen=True, eq=False)
class Scan:
    """What the pass over the corpus found: every non-empty document's id and the kept
    candidates (i < j, indices among the non-empty documents, sorted) with ``ce``, their J
    estimated on the 128 verify values (agreements / 128, >= ``cut``). No exact J: the draw
    computes it for the drawn pairs only."""

    corpus: str
    rep: Representation
    edges: tuple[float, ...]
    b: int
    r: int
    cut: float
    scheme: str
    ids: np.ndarray            # object[n]
    ci: np.ndarray
    cj: np.ndarray
    ce: np.ndarray             # float64: verify estimate of J, agreements / VERIFY_HASHES (the strata's key)
    n_cand: int                # loose candidates before the verify cut
    skipped_empty: int
    texts: dict                # document index -> text already at hand (the draw re-reads the others)
    corpus_sha256: str = ""    # the corpus file's sha256 ("" for object storage): --more refuses another file

    @property
    def n(self) -> int:
        return len(self.ids)


def check_scan_options(rep: Representation, edges, loose, scheme: str, max_pairs) -> tuple[int, int, float]:
    """The pass's options (both engines), refused in one line before any work: (b, r, the verify cut)."""
    b, r = (int(x) for x in loose)
    if b < 1 or r < 1 or b * r + VERIFY_HASHES > 8192:
        raise DrawError(f"--loose {b}x{r}: b, r >= 1 and b*r <= {8192 - VERIFY_HASHES} expected")
    if scheme not in ("prefix", "oph"):
        raise DrawError(f"loose scheme must be prefix or oph, got {scheme!r}")
    if max_pairs is not None and max_pairs < 1:
        raise DrawError(f"--max-pairs must be >= 1, got {max_pairs}")
    Design(rep.to_dict(), tuple(edges), 2, 2, (0,) * len(edges), (0,) * len(edges), 0)  # checks the edges first
    return b, r, max(float(edges[0]) - VERIFY_MARGIN, 0.0)


def scan(corpus, *, rep: Representation = DEFAULT_REP, edges=DEFAULT_CORPUS_EDGES,
         loose: tuple[int, int] = DEFAULT_LOOSE, max_pairs: int | None = 50_000_000, batch_size: int = 10_000,
         id_field: str = "id", text_field: str = "text", bar=None, scheme: str = "oph") -> Scan:
    """The pass over the corpus and the candidates (see the module docstring): the expensive
    part, independent of the seed."""
    bar = bar or _no_bar
    b, r, cut = check_scan_options(rep, edges, loose, scheme, max_pairs)
    try:
        corpus, sha = corpus_identity(corpus)
        n_total = count_documents(corpus)
        check_memory(n_total * (4 * (b + VERIFY_HASHES) + 120) + (max_pairs or 0) * 26,
                     f"the corpus draw of {corpus} ({n_total:,} documents, b={b}, up to {max_pairs or 0:,} pairs)",
                     "lower --max-pairs or take fewer bands (--loose)")
        pb = bar("pass 1 signatures", n_total)
        try:
            lp = stream(corpus, rep, b, r, VERIFY_HASHES, batch_size=batch_size, id_field=id_field,
                        text_field=text_field, n_hint=n_total, update=pb.update, scheme=scheme)
        finally:
            pb.close()
        if lp.n < 2:
            raise DrawError(f"{corpus}: {lp.n} non-empty document{'s' if lp.n != 1 else ''}; a draw needs 2")
        pb = bar("banding", b)
        try:
            ci, cj, agree, n_cand = candidates(lp, cut, max_pairs, update=pb.update)
        except TooManyLoosePairs as exc:
            raise DrawError(f"{corpus}: {exc}") from None
        finally:
            pb.close()
    except (ApplyError, ValueError) as exc:
        if isinstance(exc, DrawError):
            raise
        raise DrawError(str(exc)) from None
    ids = np.asarray(lp.ids, dtype=object)
    return Scan(str(corpus), rep, tuple(float(e) for e in edges), b, r, cut, scheme, ids, ci, cj,
                agree / float(VERIFY_HASHES), int(n_cand), lp.skipped_empty, {}, sha)


def corpus_identity(corpus) -> tuple[str, str]:
    """(absolute path, sha256) of a local corpus file, as design.json keeps it: ``--more`` re-reads
    it from any folder and refuses a file whose bytes changed. Object storage: (the URL, "")."""
    if "://" in str(corpus):
        return str(corpus), ""
    path = os.path.abspath(corpus)
    return path, corpus_digest(path)


def check_same_corpus(design: CorpusDesign, corpus=None) -> str:
    """The corpus ``--more`` reads (``corpus``, default design.json's): the file drawn from, by its
    sha256 when design.json keeps one. Returns its path."""
    path = str(corpus or design.corpus)
    try:
        if design.corpus_sha256 and corpus_digest(path) != design.corpus_sha256:
            raise DrawError(f"{path}: not the corpus this set was drawn from (its sha256 differs from design.json's "
                            "corpus_sha256): the drawn documents' places would point at other documents")
    except ApplyError as exc:
        raise DrawError(f"{exc} (the corpus this set was drawn from; --corpus names where it is now)") from None
    return path


def exact_pairs(ci: np.ndarray, cj: np.ndarray, i: np.ndarray, j: np.ndarray, texts_of, rep: Representation,
                floor: float) -> tuple[np.ndarray, list, np.ndarray, list]:
    """Exact J of the pairs (i, j) and their ``later`` lists (exact J of each j's earlier candidate
    links with J >= ``floor``, and the pair's own), from the texts of only these documents:
    ``texts_of(sorted indices)`` -> texts. Returns (J, later, the documents read, their texts)."""
    links = np.flatnonzero(np.isin(cj, j))
    li, lj = ci[links], cj[links]
    need = np.unique(np.concatenate([i, j, li]).astype(np.int64))
    texts = list(texts_of(need))
    sets = shingle_hashes(texts, rep, unique=True)
    at = lambda x: np.searchsorted(need, x)  # noqa: E731
    s = pairs_jaccard(sets, at(i), at(j)) if len(i) else np.zeros(0)
    ls = pairs_jaccard(sets, at(li), at(lj)) if len(li) else np.zeros(0)
    ok = ls >= floor
    return s, _later(li[ok], lj[ok], ls[ok], i, j, s), need, texts


def draw_scan(sc: Scan, *, pairs: int = 500, seed: int = 0, uniform_share: float = 0.1, fetch=None,
              batch_size: int = 10_000, id_field: str = "id", text_field: str = "text", bar=None) -> DrawnSet:
    """The seeded part: strata by Jv, SRS per band, uniform pairs, then the exact J of the drawn
    pairs. ``fetch(indices)`` -> texts of documents (sorted non-empty indices): those of the drawn
    pairs and the earlier candidate neighbours of their later documents (default: one more corpus pass)."""
    check_options(pairs, uniform_share, seed, MAX_PAIRS)
    n, edges = sc.n, sc.edges
    rng = np.random.default_rng([seed, 1])
    total_pairs = n * (n - 1) // 2
    ua, ub = _uniform(n, pairs, rng)  # enough for any allocation; the first alloc[-1] are used
    probe = CorpusDesign(sc.rep.to_dict(), edges, n, 0, (0,) * (len(edges) - 1) + (total_pairs,),
                         (0,) * len(edges), seed, sc.b, sc.r, VERIFY_HASHES, sc.cut, scheme=sc.scheme,
                         strata_by="estimate", corpus_sha256=sc.corpus_sha256)
    h = probe.stratum_index(sc.ce)
    H = len(edges) - 1
    population = np.append(np.bincount(h, minlength=H)[:H], total_pairs).astype(np.int64)
    alloc = allocate(pairs, population, uniform_share)
    pick = [np.sort(rng.choice(np.flatnonzero(h == g), size=int(m), replace=False)) for g, m in enumerate(alloc[:-1])]
    pick = np.concatenate(pick) if pick else np.zeros(0, np.int64)
    li, lj = sc.ci[pick], sc.cj[pick]
    ua, ub = ua[:alloc[-1]], ub[:alloc[-1]]
    also = np.isin(ua * np.int64(n) + ub, li * np.int64(n) + lj)  # drawn both ways: listed once, in its band
    ua, ub = ua[~also], ub[~also]
    alloc[-1] -= int(also.sum())
    i, j = np.concatenate([li, ua]), np.concatenate([lj, ub])
    read = dict(batch_size=batch_size, id_field=id_field, text_field=text_field)
    s, later_v, need, need_texts = exact_pairs(sc.ci, sc.cj, i, j,
                                               lambda idx: _texts(sc, idx, fetch, bar=bar or _no_bar, **read),
                                               sc.rep, float(edges[0]))
    docs_idx = np.unique(np.concatenate([i, j]))
    texts = [need_texts[k] for k in np.searchsorted(need, docs_idx)]
    strata = np.concatenate([h[pick], np.full(len(ua), H)])
    later = {f"{sc.ids[a]}\t{sc.ids[c]}": v for a, c, v in zip(i, j, later_v)}
    design = replace(probe, sample_docs=len(docs_idx), population=tuple(int(x) for x in population),
                     drawn=tuple(int(x) for x in alloc), corpus=sc.corpus, skipped_empty=sc.skipped_empty,
                     candidates=sc.n_cand, later=later, doc_index=tuple(int(x) for x in docs_idx))
    rows = _rows(design, sc.ids, i, j, s, strata)
    rows = rows.iloc[rng.permutation(len(rows))].reset_index(drop=True)
    docs = pd.DataFrame({"id": sc.ids[docs_idx], "text": texts})
    cand = np.zeros(len(sc.ci), CAND_DTYPE)
    cand["i"], cand["j"], cand["J"] = sc.ci, sc.cj, sc.ce
    return DrawnSet(docs, rows, design, candidates=cand)


def _texts(sc: Scan, idx: np.ndarray, fetch, bar=_no_bar, **read) -> list[str]:
    """Texts of documents ``idx`` (sorted): the scan's, the rest fetched (or re-read from the corpus)."""
    missing = np.asarray([k for k in idx.tolist() if k not in sc.texts], dtype=np.int64)
    got: dict = {}
    if len(missing):
        if fetch is not None:
            more_texts = list(fetch(missing))
        else:
            try:
                more_texts = _read_rows(sc.corpus, missing, bar=bar, **read)[1]
            except ApplyError as exc:
                raise DrawError(str(exc)) from None
        got = dict(zip(missing.tolist(), more_texts))
    return [sc.texts[k] if k in sc.texts else got[k] for k in idx.tolist()]


def draw_corpus(corpus, *, pairs: int = 500, seed: int = 0, rep: Representation = DEFAULT_REP,
                edges=DEFAULT_CORPUS_EDGES, uniform_share: float = 0.1, loose: tuple[int, int] = DEFAULT_LOOSE,
                max_pairs: int | None = 50_000_000, batch_size: int = 10_000, id_field: str = "id",
                text_field: str = "text", bar=None, scheme: str = "oph") -> DrawnSet:
    """A draw of ``pairs`` pairs from every document of ``corpus`` (see the module docstring)."""
    check_options(pairs, uniform_share, seed, MAX_PAIRS)  # before the passes
    read = dict(batch_size=batch_size, id_field=id_field, text_field=text_field)
    sc = scan(corpus, rep=rep, edges=edges, loose=loose, max_pairs=max_pairs, bar=bar, scheme=scheme, **read)
    return draw_scan(sc, pairs=pairs, seed=seed, uniform_share=uniform_share, bar=bar, **read)


def _rows(design: CorpusDesign, ids_arr, i, j, s, strata) -> pd.DataFrame:
    return pd.DataFrame({"id_a": ids_arr[i], "id_b": ids_arr[j],
                         "stratum": np.asarray(design.strata, dtype=object)[strata],
                         "inclusion_probability": design.pair_probability(s), "similarity": s, "label": ""})


def more_corpus(drawn: DrawnSet, alloc, *, seed: int | None = None, batch_size: int = 10_000,
                id_field: str = "id", text_field: str = "text", corpus=None) -> DrawnSet:
    """``drawn`` plus ``alloc[h]`` new pairs per stratum of a corpus design: bands from the kept
    candidates (``candidates.npy``), the uniform stratum from new random pairs; the corpus
    (design.json's ``corpus``, or ``corpus`` where it is now: the same bytes, by its sha256) is
    re-read once for the new documents' texts, and every drawn document must still be the one
    at its place (its id and text), so no place points at another document."""
    d: CorpusDesign = drawn.design
    if drawn.candidates is None:
        raise DrawError(f"the drawn set has no {CANDIDATES}: it is needed to draw more from a corpus design")
    corpus = check_same_corpus(d, corpus)
    cand = drawn.candidates
    n = d.corpus_docs
    pos = {x: k for k, x in zip(d.doc_index, drawn.docs["id"])}
    a = np.array([pos[x] for x in drawn.pairs["id_a"]], dtype=np.int64)
    c = np.array([pos[x] for x in drawn.pairs["id_b"]], dtype=np.int64)
    taken = np.minimum(a, c) * np.int64(n) + np.maximum(a, c)
    room = np.asarray(d.population) - np.asarray(d.drawn)
    alloc = np.minimum(np.asarray(alloc, dtype=np.int64), room)
    rng = np.random.default_rng([d.seed if seed is None else seed, 2, d.draws])
    h = d.stratum_index(cand["J"])
    free = ~np.isin(cand["i"] * np.int64(n) + cand["j"], taken)
    pick = [np.sort(rng.choice(np.flatnonzero((h == g) & free), size=int(min(m, ((h == g) & free).sum())),
                               replace=False)) for g, m in enumerate(alloc[:-1])]
    pick = np.concatenate(pick) if pick else np.zeros(0, np.int64)
    alloc[:-1] = np.bincount(h[pick], minlength=len(alloc) - 1)
    ua, ub = _uniform(n, int(alloc[-1]) + len(taken), rng)
    fresh = ~np.isin(ua * np.int64(n) + ub, np.concatenate([taken, cand["i"][pick] * np.int64(n) + cand["j"][pick]]))
    ua, ub = ua[fresh][:alloc[-1]], ub[fresh][:alloc[-1]]
    alloc[-1] = len(ua)
    i = np.concatenate([cand["i"][pick], ua])
    j = np.concatenate([cand["j"][pick], ub])
    old_idx = np.asarray(d.doc_index, dtype=np.int64)
    old_texts = dict(zip(old_idx.tolist(), drawn.docs["text"]))
    rep = Representation.from_dict(d.rep)
    read_ids: dict = {}

    old_ids = dict(zip(old_idx.tolist(), drawn.docs["id"]))

    def texts_of(idx: np.ndarray) -> list:
        new = np.asarray([k for k in idx.tolist() if k not in old_texts], dtype=np.int64)
        both = np.union1d(new, old_idx)  # the drawn documents too: each must still be at its place
        try:
            ids, texts = _read_rows(corpus, both, batch_size=batch_size, id_field=id_field, text_field=text_field)
        except ApplyError as exc:
            raise DrawError(str(exc)) from None
        for k, x, t in zip(both.tolist(), ids, texts):
            if k in old_ids and (x != old_ids[k] or t != old_texts[k]):
                raise DrawError(f"{corpus}: non-empty document {k + 1:,} is {x!r}, the drawn set's document there is "
                                f"{old_ids[k]!r}{'' if x != old_ids[k] else ' with another text'}: the corpus "
                                "changed since the draw")
        read_ids.update(zip(both.tolist(), ids))
        got = dict(zip(both.tolist(), texts))
        return [old_texts[k] if k in old_texts else got[k] for k in idx.tolist()]

    s, later_v, need, need_texts = exact_pairs(cand["i"], cand["j"], i, j, texts_of, rep, d.floor)
    new_idx = np.setdiff1d(np.unique(np.concatenate([i, j])), old_idx)
    all_idx = np.concatenate([old_idx, new_idx])
    order = np.argsort(all_idx)
    all_idx = all_idx[order]
    all_ids = np.concatenate([drawn.docs["id"].to_numpy(object),
                              np.asarray([read_ids[k] for k in new_idx.tolist()], dtype=object)])[order]
    by_idx = {**dict(zip(need.tolist(), need_texts)), **old_texts}
    all_texts = np.asarray([by_idx[k] for k in all_idx.tolist()], dtype=object)
    at = lambda x: np.searchsorted(all_idx, x)  # noqa: E731
    strata = np.concatenate([h[pick], np.full(len(ua), len(d.strata) - 1)])
    later = dict(d.later)
    later.update({f"{all_ids[at(x)]}\t{all_ids[at(y)]}": v for x, y, v in zip(i, j, later_v)})
    design = replace(d.with_drawn(np.asarray(d.drawn) + alloc), sample_docs=len(all_idx), later=later,
                     doc_index=tuple(int(x) for x in all_idx))
    new = _rows(design, all_ids, at(i), at(j), s, strata)
    new = new.iloc[rng.permutation(len(new))]
    old = drawn.pairs.copy()
    old["inclusion_probability"] = design.pair_probability(old["similarity"].to_numpy(float))
    docs = pd.DataFrame({"id": all_ids, "text": all_texts})
    return DrawnSet(docs, pd.concat([old, new], ignore_index=True), design, candidates=cand)

