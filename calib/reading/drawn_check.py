"""A corpus draw's four files checked against each other before any estimate.

A drawn set of ``calib draw --design corpus`` is design.json
(:class:`calib.reading.corpus_design.CorpusDesign`), candidates.npy (the kept
candidates: document places ``i < j`` among the corpus's N and their J estimated on
``verify_hashes`` values), pairs.csv and documents.jsonl. Every estimate weights
pair k by ``1 / pi_k``, and ``pi_k`` comes from design.json (N_h, n_h, b, r,
verify_hashes, the representation): an edited field reweights every pair without a
word. So every reader runs :func:`check_corpus_set` (the sample loader behind
``calib sweep --sample`` and the app, ``calib draw --more`` and the Label page through
:func:`calib.labeling.draw.read_drawn`, and :func:`calib.labeling.draw.write_drawn`
on what either draw engine, local or Spark, drew), which refuses in one line
naming the file, line and field:

1. the parts against each other: ``population[h]`` equals the candidates whose
   estimate falls in band h, every band row of pairs.csv is a candidate whose
   estimate falls in the row's stratum, ``drawn[h]`` the rows of stratum h;
   ``doc_index`` one increasing place below N per document of documents.jsonl;
   candidates sorted, ``0 <= i < j < N``, estimates finite multiples of
   ``1 / verify_hashes`` at or above ``verify_cut``; ``later`` one entry per row,
   numbers in [0, 1] holding the row's own J;
2. the digests calib draw wrote in design.json's ``digests`` (sha256 of design.json's
   other fields, of the candidates array, of the drawn rows ``id_a, id_b, stratum,
   similarity`` in id order, and of documents.jsonl's ids and texts in file order).
   A field no check of 1 can see (``b``, ``r``, the representation), a row's
   similarity, or a document's text replaced is refused by the file it is in;
   labels are the one thing meant to change. A set without them (written before
   digests, or with them removed) is refused: nothing else would hold ``b`` and ``r``;
3. what the digests cannot hold, since whoever edits design.json can write them again:
   each row's J is recomputed from its documents' texts, and each row's place in the
   loose pass from its documents' signatures under design.json's ``b``, ``r``,
   ``verify_hashes`` and representation (:func:`_check_loose`: a kept candidate exactly
   when they collide in a band and agree on the verify cut, with that estimate). An edited
   ``b``, ``r`` or representation changes the signatures, the bands or the verify
   columns, and so what the drawn rows would be.

With both, an estimate's weights are the draw's own: the documents removed are then
clipped to the corpus's N (:mod:`calib.estimates.corpus_weighted`), never more.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict
from pathlib import Path

import numpy as np

CANDIDATES = "candidates.npy"  # beside design.json, documents.jsonl, pairs.csv in a corpus-scale draw
# J: the band key of a candidate (its verify estimate; its exact J in draws written before)
CAND_DTYPE = np.dtype([("i", "<i8"), ("j", "<i8"), ("J", "<f8")])
PARTS = ("design.json", CANDIDATES, "pairs.csv", "documents.jsonl")
_CHUNK = 1 << 22  # candidates checked this many at a time (a corpus draw may keep 50 million)


class DrawnSetError(ValueError):
    """A drawn set whose files disagree: ``file`` (and ``line``, ``field``) named in one line."""

    def __init__(self, detail: str, *, file: str, line: int | None = None, field: str | None = None):
        self.file, self.line, self.field, self.detail = file, line, field, detail
        where = file + (f":{line}" if line is not None else "") + (f": field {field!r}" if field else "")
        super().__init__(f"{where}: {detail}")


def read_candidates(path) -> np.ndarray:
    """candidates.npy as written by calib draw (no pickled objects; mapped, not read whole)."""
    from calib.base.inputs import InputError, check_path
    try:
        check_path(path, what="a candidates file")
        cand = np.load(path, allow_pickle=False, mmap_mode="r")
    except InputError as exc:
        raise DrawnSetError(exc.detail, file=str(path)) from None
    except (OSError, ValueError) as exc:
        raise DrawnSetError(f"not a candidates file written by calib draw ({exc})", file=str(path)) from None
    if cand.dtype != CAND_DTYPE or cand.ndim != 1:
        raise DrawnSetError(f"fields {cand.dtype.names} of {cand.ndim} dimension(s), expected a list of "
                            f"{CAND_DTYPE.names}", file=str(path))
    return cand


# -- digests --------------------------------------------------------------------------------

def _sha(chunks) -> str:
    h = hashlib.sha256()
    for c in chunks:
        h.update(c)
    return h.hexdigest()


def design_digest(design) -> str:
    """sha256 of design.json's fields other than ``digests`` (canonical JSON)."""
    d = asdict(design)
    d.pop("digests", None)
    return _sha([json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")])


def candidates_digest(cand) -> str:
    c = np.asarray(cand)
    return _sha(np.ascontiguousarray(c[k:k + _CHUNK]).tobytes() for k in range(0, len(c), _CHUNK))


def pairs_digest(id_a, id_b, stratum, similarity) -> str:
    """sha256 of the drawn rows, sorted by ids (labels and row order are free to change);
    similarity to 12 digits, as any CSV reader gives it back."""
    rows = sorted(json.dumps([str(a), str(b), str(s), f"{float(x):.12g}"], ensure_ascii=False)
                  for a, b, s, x in zip(id_a, id_b, stratum, similarity))
    return _sha(r.encode("utf-8") + b"\n" for r in rows)


def documents_digest(ids, texts) -> str:
    return _sha(json.dumps([str(d), str(t)], ensure_ascii=False).encode("utf-8") + b"\n" for d, t in zip(ids, texts))


def digests(design, ids, texts, pairs, cand) -> dict:
    """design.json's ``digests`` for a drawn set about to be written."""
    return {"design.json": design_digest(design), CANDIDATES: candidates_digest(cand),
            "pairs.csv": pairs_digest(pairs["id_a"], pairs["id_b"], pairs["stratum"], pairs["similarity"]),
            "documents.jsonl": documents_digest(ids, texts)}


# -- the check --------------------------------------------------------------------------------

def check_corpus_set(design, ids, texts, pairs, cand, *, folder="", lines=None, exact_j=None, loose=None) -> None:
    """Refuse (:class:`DrawnSetError`) a corpus draw whose files disagree (see the module docstring).

    ``ids``, ``texts``: documents.jsonl in file order; ``pairs``: pairs.csv's ``id_a, id_b,
    stratum, similarity`` (``lines``: each row's line, default the row's place + 2);
    ``cand``: candidates.npy's array, or None when the folder has none; ``exact_j(rep, texts, i,
    j)``: the exact J of pairs of ``texts`` (from the sketching stage, above this one), when given
    every row's similarity is recomputed from its documents' texts; ``loose(design, texts, i, j)``:
    (collides, agreements) of pairs of ``texts`` in the draw's loose pass, when given every row's
    place in candidates.npy is recomputed from its documents' signatures (:func:`_check_loose`)."""
    at = (lambda name: str(Path(folder) / name)) if folder else (lambda name: name)
    D = at("design.json")
    ids = [str(x) for x in ids]
    a, b = [str(x) for x in pairs["id_a"]], [str(x) for x in pairs["id_b"]]
    strata = [str(x) for x in pairs["stratum"]]
    lines = list(range(2, len(a) + 2)) if lines is None else list(lines)
    try:
        sim = np.asarray([float(x) for x in pairs["similarity"]], dtype=float)
    except (TypeError, ValueError):
        raise DrawnSetError("similarity must be a number on every row", file=at("pairs.csv"),
                            field="similarity") from None
    N, H = design.corpus_docs, len(design.strata) - 1
    if design.candidates > N * (N - 1) // 2:
        raise DrawnSetError(f"{design.candidates:,} loose candidates, more than the corpus's {N * (N - 1) // 2:,} "
                            "pairs", file=D, field="candidates")
    if sum(design.population[:-1]) > design.candidates:
        raise DrawnSetError(f"the bands hold {sum(design.population[:-1]):,} pairs, more than the "
                            f"{design.candidates:,} loose candidates", file=D, field="population")
    if design.sample_docs != len(ids) or len(design.doc_index) != len(ids):
        raise DrawnSetError(f"{len(design.doc_index):,} places for the {len(ids):,} documents of documents.jsonl "
                            f"(sample_docs {design.sample_docs:,})", file=D, field="doc_index")
    idx = np.asarray(design.doc_index, dtype=np.int64)
    if len(idx) and (idx[0] < 0 or idx[-1] >= N or np.any(np.diff(idx) <= 0)):
        raise DrawnSetError(f"places must increase within [0, corpus_docs {N:,})", file=D, field="doc_index")
    place = dict(zip(ids, idx.tolist()))
    for r, (x, y, s, v) in enumerate(zip(a, b, strata, sim)):
        for side, d in (("id_a", x), ("id_b", y)):
            if d not in place:
                raise DrawnSetError(f"id {d!r} is not in documents.jsonl", file=at("pairs.csv"), line=lines[r],
                                    field=side)
        if s not in design.strata:
            raise DrawnSetError(f"stratum {s!r} is not one of design.json's", file=at("pairs.csv"), line=lines[r],
                                field="stratum")
        if not 0.0 <= v <= 1.0:
            raise DrawnSetError(f"similarity {v!r} is not a J in [0, 1]", file=at("pairs.csv"), line=lines[r],
                                field="similarity")
    if cand is not None:
        _check_candidates(design, cand, at(CANDIDATES), D)
        _check_bands(design, cand, [place[x] for x in a], [place[y] for y in b], strata, lines, at)
    rows_per = np.bincount(np.asarray([design.strata.index(s) for s in strata], dtype=np.int64), minlength=H + 1)
    if tuple(int(x) for x in rows_per) != tuple(design.drawn):
        h = int(np.flatnonzero(rows_per != np.asarray(design.drawn))[0])
        raise DrawnSetError(f"stratum {design.strata[h]!r} has {int(rows_per[h]):,} rows in pairs.csv, "
                            f"design.json says {design.drawn[h]:,} drawn", file=D, field="drawn")
    _check_later(design, a, b, sim, D)
    if exact_j is not None and len(a):
        row_of = {d: k for k, d in enumerate(ids)}
        J = np.asarray(exact_j(design.rep, list(texts), [row_of[x] for x in a], [row_of[y] for y in b]), dtype=float)
        off = np.flatnonzero(np.abs(J - sim) > 1e-9)
        if len(off):
            r = int(off[0])
            raise DrawnSetError(f"pair ({a[r]!r}, {b[r]!r}): the documents.jsonl texts give J {J[r]:.6g}, not its drawn "
                                f"similarity {sim[r]:.6g}: a text (or design.json's rep) changed since the draw",
                                file=at("pairs.csv"), line=lines[r], field="similarity")
    _check_digests(design, ids, texts, a, b, strata, sim, cand, at)
    if loose is not None and cand is not None and len(a):
        _check_loose(design, cand, loose, texts, ids, place, a, b, lines, at)


def _check_later(design, a, b, sim, D) -> None:
    keys = {f"{x}\t{y}" for x, y in zip(a, b)}
    for key, vals in design.later.items():
        if key not in keys:
            raise DrawnSetError(f"an entry for {key!r}, which is no pair of pairs.csv", file=D, field="later")
        if not isinstance(vals, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                 and 0.0 <= v <= 1.0 for v in vals):
            raise DrawnSetError(f"entry {key!r} must be a list of J values in [0, 1]", file=D, field="later")
    for x, y, s in zip(a, b, sim):
        vals = design.later.get(f"{x}\t{y}")
        if vals is None or not any(abs(v - s) <= 1e-6 for v in vals):
            raise DrawnSetError(f"no entry holding the J {s:g} of pair ({x!r}, {y!r})", file=D, field="later")


def _check_candidates(design, cand, C, D) -> None:
    N, H, V = design.corpus_docs, len(design.strata) - 1, design.verify_hashes
    if len(cand) > design.candidates:
        raise DrawnSetError(f"{len(cand):,} candidates, design.json's candidates says {design.candidates:,} "
                            "before the verify cut", file=C)
    pop = np.zeros(H + 1, np.int64)
    last = (-1, -1)
    for k in range(0, len(cand), _CHUNK):
        c = np.asarray(cand[k:k + _CHUNK])
        i, j, J = c["i"], c["j"], c["J"]
        if np.any(i < 0) or np.any(j <= i) or np.any(j >= N):
            raise DrawnSetError(f"a candidate's documents are not 0 <= i < j < corpus_docs {N:,} "
                                f"(row {k + int(np.flatnonzero((i < 0) | (j <= i) | (j >= N))[0]):,})", file=C)
        if not np.all(np.isfinite(J)) or np.any(J < 0) or np.any(J > 1):
            raise DrawnSetError(f"a candidate's J is not a number in [0, 1] (row "
                                f"{k + int(np.flatnonzero(~(np.isfinite(J) & (J >= 0) & (J <= 1)))[0]):,})", file=C)
        if design.strata_by == "estimate":
            off = (np.abs(J * V - np.round(J * V)) > 1e-6) | (J < design.verify_cut - 1e-9)
            if off.any():
                raise DrawnSetError(f"candidate J {float(J[off][0])!r} is not agreements / verify_hashes {V} at or "
                                    f"above verify_cut {design.verify_cut:g} (row {k + int(np.flatnonzero(off)[0]):,})",
                                    file=C)
        key_i = np.concatenate([[last[0]], i])
        key_j = np.concatenate([[last[1]], j])
        if np.any((np.diff(key_i) < 0) | ((np.diff(key_i) == 0) & (np.diff(key_j) <= 0))):
            raise DrawnSetError("candidates are not sorted by (i, j) without repeats: not as calib draw wrote them",
                                file=C)
        last = (int(i[-1]), int(j[-1]))
        pop += np.bincount(design.stratum_index(J), minlength=H + 1)
    if tuple(int(x) for x in pop[:H]) != tuple(design.population[:H]):
        h = int(np.flatnonzero(pop[:H] != np.asarray(design.population[:H]))[0])
        raise DrawnSetError(f"stratum {design.strata[h]!r} holds {design.population[h]:,} pairs, but {C} has "
                            f"{int(pop[h]):,} candidates in it", file=D, field="population")


def _check_bands(design, cand, pa, pb, strata, lines, at) -> None:
    """Every band row is a candidate whose estimate falls in the row's stratum."""
    H = len(design.strata) - 1
    ci = cand["i"]
    for r, (x, y, s) in enumerate(zip(pa, pb, strata)):
        if s == design.strata[-1]:
            continue
        lo_, hi_ = min(x, y), max(x, y)
        lo, hi = np.searchsorted(ci, [lo_, lo_ + 1])
        js = np.asarray(cand["j"][lo:hi])
        k = int(np.searchsorted(js, hi_))
        if k >= len(js) or js[k] != hi_:
            raise DrawnSetError(f"a pair of stratum {s!r} that is no candidate of {CANDIDATES}",
                                file=at("pairs.csv"), line=lines[r], field="stratum")
        J = float(cand["J"][lo + k])
        h = int(design.stratum_index(J))
        if h >= H or design.strata[h] != s:
            raise DrawnSetError(f"stratum {s!r}, but the pair's estimated J {J:g} puts it in "
                                f"{design.strata[h]!r}", file=at("pairs.csv"), line=lines[r], field="stratum")


def _check_loose(design, cand, loose, texts, ids, place, a, b, lines, at) -> None:
    """Every drawn row is a kept candidate of candidates.npy exactly when its documents' signatures under
    design.json's loose pass (``b`` bands of ``r`` rows, ``verify_hashes`` columns after them, the
    representation, seed and scheme) make it one: they collide in a band and agree on at least
    ``verify_cut`` of the verify columns; and a kept one's estimate is those agreements / verify_hashes.
    ``b``, ``r`` and the representation decide every pair's weight, so they are checked by recomputing
    what they decided, not only by a digest the set holds."""
    row_of = {d: k for k, d in enumerate(ids)}
    collide, agree = loose(design, list(texts), [row_of[x] for x in a], [row_of[y] for y in b])
    V = design.verify_hashes
    need = math.ceil(V * design.verify_cut - 1e-9)
    ci = cand["i"]
    for r, (x, y) in enumerate(zip(a, b)):
        lo_, hi_ = sorted((place[x], place[y]))
        lo, hi = np.searchsorted(ci, [lo_, lo_ + 1])
        k = lo + int(np.searchsorted(np.asarray(cand["j"][lo:hi]), hi_))
        listed = k < hi and int(cand["j"][k]) == hi_
        kept = bool(collide[r]) and int(agree[r]) >= need
        off = listed != kept or (listed and design.strata_by == "estimate"
                                 and abs(float(cand["J"][k]) - int(agree[r]) / V) > 1e-9)
        if off:
            said = (f"a kept candidate with J {int(agree[r]) / V:.6g}" if kept else "no kept candidate")
            raise DrawnSetError(f"pair ({x!r}, {y!r}) of pairs.csv line {lines[r]}: its documents' signatures under "
                                f"design.json's loose pass (b={design.b}, r={design.r}, verify_hashes {V}, rep) make "
                                f"it {said}, but {CANDIDATES} {'lists' if listed else 'does not list'} it "
                                f"{'with J ' + format(float(cand['J'][k]), '.6g') if listed else ''}: design.json's b, "
                                f"r or representation is not the draw's", file=at("design.json"))


_REDRAW = "draw the set again (calib draw --design corpus --corpus CORPUS --out NEW_FOLDER)"


def _check_digests(design, ids, texts, a, b, strata, sim, cand, at) -> None:
    got = design.digests
    if not got:
        raise DrawnSetError(f"no 'digests' (a set written before calib sealed its files, or with them removed): "
                            f"its b, r and representation, on which every pair's weight rests, cannot be checked; "
                            f"{_REDRAW}", file=at("design.json"), field="digests")
    gone = [name for name in PARTS if name not in got and (name != CANDIDATES or cand is not None)]
    if gone:
        raise DrawnSetError(f"no digest of {gone[0]} under 'digests': that file cannot be checked; {_REDRAW}",
                            file=at("design.json"), field="digests")
    why = {"design.json": "its fields are not those calib draw wrote (an edited design reweights every pair)",
           CANDIDATES: "not the candidates calib draw wrote with this design.json",
           "pairs.csv": "the drawn pairs (id_a, id_b, stratum, similarity) are not those calib draw wrote "
                        "(only label may change)",
           "documents.jsonl": "the documents' ids or texts are not those calib draw wrote"}
    now = {"design.json": lambda: design_digest(design),
           CANDIDATES: lambda: candidates_digest(cand) if cand is not None else None,
           "pairs.csv": lambda: pairs_digest(a, b, strata, sim),
           "documents.jsonl": lambda: documents_digest(ids, texts)}
    for name in PARTS:
        want = got.get(name)
        if want is None:
            continue
        have = now[name]()
        if have is None:
            raise DrawnSetError(f"no such file, but design.json's digests name it", file=at(name))
        if have != want:
            raise DrawnSetError(f"{why[name]} (sha256 {have[:12]}..., design.json's digests say {want[:12]}...)",
                                file=at(name))
