"""Draw pairs to label from an unlabeled corpus (``calib draw``).

Labeling random pairs is useless (near-duplicates are one pair in a
million) and labeling what one LSH configuration proposes hides what it
misses. So the draw is stratified by similarity (the design:
:mod:`calib.reading.design`):

1. one pass over the corpus (the ``apply`` readers, :func:`calib.reading.corpus.iter_corpus`)
   keeps a seeded uniform sample of n documents (reservoir sampling,
   Algorithm R: item t >= n replaces slot U(0, t) when that slot is < n); only
   the sample's texts are held;
2. every pair of the sample with exact J >= floor is found by
   :func:`calib.verification.jaccard.all_pairs_above` (no LSH: pairs far below any LSH
   threshold are in), within a pair budget;
3. those pairs are cut into similarity bands, the rest form the ``uniform``
   stratum, and M pairs are drawn by simple random sampling in each stratum
   (allocation: ``uniform_share`` of M to the uniform stratum, the rest equally
   over the bands, what a small band cannot take going to the others).

The output folder holds ``documents.jsonl`` (id, text), ``pairs.csv``
(``id_a,id_b,stratum,inclusion_probability,similarity,label``, label empty,
rows in a seeded random order so that labeling them in file order labels a
random subset of every stratum) and ``design.json``; the sample loader reads
it, and once labels are filled ``calib sweep --sample DIR`` gives weighted
estimates (:mod:`calib.labeling.weighted`). ``more`` adds pairs to a drawn set.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from calib.reading.corpus import ApplyError, iter_corpus
from calib.base.atomic import atomic_folder, claim_output, csv_quoting, csv_safe, csv_values, write_bytes_atomic
from calib.base.budget import check_pair_budget
from calib.labeling.drawn import (CANDIDATES, DEFAULT_REP, DrawError, DrawnSet, allocate,  # noqa: F401 (public)
                                  check_options, exact_similarity, loose_pairs)
from calib.reading.corpus_design import load_design
from calib.reading.design import DEFAULT_EDGES, UNIFORM, Design
from calib.reading.drawn_check import DrawnSetError, check_corpus_set, digests, read_candidates
from calib.verification.jaccard import TooManyPairs, all_pairs_above, pairs_jaccard
from calib.sketches.represent import Representation
from calib.sketches.shingles import shingle_hashes

PAIR_COLUMNS = ("id_a", "id_b", "stratum", "inclusion_probability", "similarity", "label")
FILES = ("design.json", "documents.jsonl", "pairs.csv")
_ENUMERATE = 4_000_000  # at most this many sample pairs: the uniform stratum is enumerated, not rejection-sampled


# ---------------------------------------------------------------------------
# Stage 1: documents
# ---------------------------------------------------------------------------

def reservoir(corpus, n: int, seed: int, *, batch_size: int = 10_000, id_field: str = "id",
              text_field: str = "text") -> tuple[list[str], list[str], int, int]:
    """A uniform sample of ``n`` non-empty documents in one pass (Algorithm R):
    ``(ids, texts, N, skipped_empty)``, the sample in corpus order. Memory: the
    sample's texts only. Same corpus + seed = same sample."""
    rng = np.random.default_rng([seed, 0])
    ids: list[str] = []
    texts: list[str] = []
    pos: list[int] = []
    t = skipped = 0
    for b_ids, b_texts, _ in iter_corpus(corpus, batch_size=batch_size, id_field=id_field, text_field=text_field,
                                         drawing=True):
        keep = [k for k, x in enumerate(b_texts) if x.strip()]
        skipped += len(b_texts) - len(keep)
        if not keep:
            continue
        ts = t + np.arange(len(keep))
        # slot for item t: U{0..t}; drawn for every item (fill phase included) so batching never changes the stream
        slot = np.floor(rng.random(len(keep)) * (ts + 1)).astype(np.int64)
        for k, tt, s in zip(keep, ts, slot):
            if tt < n:
                ids.append(b_ids[k]); texts.append(b_texts[k]); pos.append(int(tt))
            elif s < n:
                ids[s], texts[s], pos[s] = b_ids[k], b_texts[k], int(tt)
        t += len(keep)
    order = np.argsort(pos, kind="stable")
    ids = [ids[k] for k in order]
    seen: dict[str, int] = {}
    for k, d in enumerate(ids):
        if d in seen:
            raise DrawError(f"{corpus}: duplicate document id {d!r} in the corpus (field {id_field!r}); ids must be unique")
        seen[d] = k
    return ids, [texts[k] for k in order], t, skipped


# ---------------------------------------------------------------------------
# Stage 2: pairs
# ---------------------------------------------------------------------------

def _uniform_pairs(n: int, m: int, above_codes: np.ndarray, taken: np.ndarray, rng) -> np.ndarray:
    """``m`` distinct pair codes i*n+j (i < j) uniformly among the pairs that are
    neither above the floor (``above_codes``, sorted) nor already ``taken``."""
    if m <= 0:
        return np.zeros(0, np.int64)
    blocked = np.union1d(above_codes, taken)
    if n * (n - 1) // 2 <= _ENUMERATE:  # small sample: choose among the enumerated pairs
        i, j = np.triu_indices(n, 1)
        codes = np.setdiff1d(i.astype(np.int64) * n + j, blocked, assume_unique=True)
        return np.sort(rng.choice(codes, size=m, replace=False))
    out = np.zeros(0, np.int64)
    while len(out) < m:  # rejection: random (i, j), drop blocked and repeated codes, in draw order
        a = rng.integers(0, n, 2 * (m - len(out)) + 64)
        c = rng.integers(0, n, len(a))
        ok = a != c
        codes = np.minimum(a, c)[ok] * np.int64(n) + np.maximum(a, c)[ok]
        codes = codes[~np.isin(codes, blocked)]
        codes = np.concatenate([out, codes])
        _, first = np.unique(codes, return_index=True)
        out = codes[np.sort(first)][:m]
    return np.sort(out)


class _Strata:
    """The document sample's pairs by stratum: above-floor pairs listed, the rest counted."""

    def __init__(self, texts: list[str], rep: Representation, edges, max_pairs: int | None):
        self.n = len(texts)
        self.sets = shingle_hashes(texts, rep, unique=True)
        try:
            i, j, s = all_pairs_above(self.sets, float(edges[0]), max_pairs=max_pairs)
        except TooManyPairs as exc:
            raise DrawError(f"{exc.found:,}+ pairs of the document sample have J >= {edges[0]:g}, more than the pair "
                            f"budget {exc.limit:,}: raise the floor (the first of --edges), draw fewer documents "
                            "(--docs) or raise --max-pairs") from None
        self.codes = i * np.int64(self.n) + j
        self.sim = s
        self.design_probe = Design(rep.to_dict(), tuple(edges), self.n, self.n, (0,) * len(edges), (0,) * len(edges),
                                   0)
        self.h = self.design_probe.stratum_index(s)
        H = len(edges) - 1
        counts = np.bincount(self.h, minlength=H + 1)[:H]
        self.population = np.append(counts, self.n * (self.n - 1) // 2 - len(s)).astype(np.int64)

    def draw(self, alloc: np.ndarray, rng, taken: np.ndarray = np.zeros(0, np.int64)) -> np.ndarray:
        """Codes of ``alloc[h]`` new pairs from each stratum h (SRS among the not yet ``taken``)."""
        out = []
        for h, m in enumerate(alloc[:-1]):
            codes = self.codes[self.h == h]
            codes = codes[~np.isin(codes, taken)]
            if m:
                out.append(np.sort(rng.choice(codes, size=int(m), replace=False)))
        out.append(_uniform_pairs(self.n, int(alloc[-1]), self.codes, taken, rng))
        return np.concatenate(out) if out else np.zeros(0, np.int64)


def _pair_rows(st: _Strata, codes: np.ndarray, ids: list[str], design: Design) -> pd.DataFrame:
    i, j = codes // st.n, codes % st.n
    sim = pairs_jaccard(st.sets, i, j)
    h = design.stratum_index(sim)
    ids = np.asarray(ids, dtype=object)
    return pd.DataFrame({"id_a": ids[i], "id_b": ids[j], "stratum": np.asarray(design.strata, dtype=object)[h],
                         "inclusion_probability": design.inclusion_probability()[h], "similarity": sim,
                         "label": ""})


def draw(corpus, *, docs: int = 2000, pairs: int = 500, seed: int = 0, rep: Representation = DEFAULT_REP,
         edges=DEFAULT_EDGES, uniform_share: float = 0.2, max_pairs: int | None = 5_000_000,
         batch_size: int = 10_000, id_field: str = "id", text_field: str = "text") -> DrawnSet:
    """A stratified draw of ``pairs`` pairs from a uniform sample of ``docs`` documents of ``corpus``."""
    if docs < 2:
        raise DrawError(f"--docs must be >= 2, got {docs}")
    check_options(pairs, uniform_share, seed)
    if max_pairs is not None and max_pairs < 0:
        raise DrawError(f"--max-pairs must be >= 0, got {max_pairs}")
    Design(rep.to_dict(), tuple(edges), 2, 2, (0,) * len(edges), (0,) * len(edges), 0)  # checks the edges first
    try:
        ids, texts, N, skipped = reservoir(corpus, docs, seed, batch_size=batch_size, id_field=id_field,
                                           text_field=text_field)
    except ApplyError as exc:
        raise DrawError(str(exc)) from None
    if len(ids) < 2:
        raise DrawError(f"{corpus}: {len(ids)} non-empty document{'s' if len(ids) != 1 else ''}; a draw needs 2")
    check_pair_budget(max_pairs, "draw", most_pairs=len(ids) * (len(ids) - 1) // 2)
    st = _Strata(texts, rep, edges, max_pairs)
    alloc = allocate(pairs, st.population, uniform_share)
    rng = np.random.default_rng([seed, 1])
    codes = st.draw(alloc, rng)
    design = Design(rep.to_dict(), tuple(float(e) for e in edges), N, len(ids),
                    tuple(int(x) for x in st.population), tuple(int(x) for x in alloc), seed, corpus=str(corpus),
                    skipped_empty=skipped)
    rows = _pair_rows(st, codes, ids, design)
    rows = rows.iloc[rng.permutation(len(rows))].reset_index(drop=True)
    return DrawnSet(pd.DataFrame({"id": ids, "text": texts}), rows, design)


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------

def _docs_bytes(docs: pd.DataFrame) -> bytes:
    """documents.jsonl: id, text and a corpus draw's slice columns (text, null when missing)."""
    extra = [c for c in docs.columns if c not in ("id", "text")]
    if not extra:
        return "".join(json.dumps({"id": d, "text": t}, ensure_ascii=False) + "\n"
                       for d, t in zip(docs["id"], docs["text"])).encode("utf-8")
    cols = [docs["id"], docs["text"]] + [docs[c].astype(object).where(docs[c].notna(), None) for c in extra]
    return "".join(json.dumps(dict(zip(["id", "text", *extra], row)), ensure_ascii=False) + "\n"
                   for row in zip(*cols)).encode("utf-8")


def pairs_bytes(pairs: pd.DataFrame) -> bytes:
    """pairs.csv as written: the columns of PAIR_COLUMNS (plus any others after them), floats in full
    precision, text cells a spreadsheet would run as formulas behind a ``'``
    (:func:`calib.base.atomic.csv_safe_cell`)."""
    cols = list(PAIR_COLUMNS) + [c for c in pairs.columns if c not in PAIR_COLUMNS]
    return csv_safe(pairs[cols]).to_csv(index=False, lineterminator="\n", float_format="%.17g",
                                        quoting=csv_quoting(pairs[cols])).encode("utf-8")


def write_drawn(out_dir, drawn: DrawnSet) -> dict[str, Path]:
    """documents.jsonl, pairs.csv and design.json, replacing ``out_dir`` as a set."""
    out = Path(out_dir)
    design = drawn.design
    if getattr(design, "kind", "") == "corpus":  # sealed with its parts' digests, checked as every reader checks it
        design = replace(design, digests=digests(design, drawn.docs["id"], drawn.docs["text"], drawn.pairs,
                                                 drawn.candidates))
        try:
            check_corpus_set(design, drawn.docs["id"], drawn.docs["text"], drawn.pairs, drawn.candidates,
                             exact_j=exact_similarity,
                             loose=loose_pairs)
        except DrawnSetError as exc:
            raise DrawError(f"{out}: the drawn set does not hold together ({exc}): not written") from None
    with atomic_folder(out) as tmp:
        write_bytes_atomic(tmp / "documents.jsonl", _docs_bytes(drawn.docs))
        write_bytes_atomic(tmp / "pairs.csv", pairs_bytes(drawn.pairs))
        write_bytes_atomic(tmp / "design.json", design.to_json().encode("utf-8"))
        if drawn.candidates is not None:
            from calib.labeling.drawn import candidates_bytes
            write_bytes_atomic(tmp / CANDIDATES, candidates_bytes(drawn.candidates))
    return {name: out / name for name in FILES + ((CANDIDATES,) if drawn.candidates is not None else ())}


def representation(design: Design) -> Representation:
    """The Representation the design's strata are computed under (design.json keeps its document)."""
    return Representation.from_dict(design.rep)


def read_drawn(directory) -> DrawnSet:
    """A drawn set as written (labels as text; empty = unlabeled); a corpus draw's files checked
    against each other (:func:`calib.reading.drawn_check.check_corpus_set`)."""
    from calib.reading.files import read_input
    d = Path(directory)
    for name in FILES:
        if not (d / name).is_file():
            raise DrawError(f"{d}: no {name}: not a folder written by calib draw")
    try:
        design = load_design(read_input(d / "design.json", root=d).decode("utf-8"))
        representation(design)  # checked
    except (ValueError, KeyError, TypeError) as exc:
        raise DrawError(f"{d / 'design.json'}: not a calib draw design ({exc})") from None
    try:
        with open(d / "documents.jsonl", encoding="utf-8") as fh:  # as written: no type guessed (slice values text)
            docs = pd.DataFrame([json.loads(line) for line in fh if line.strip()], dtype=object)
        if not {"id", "text"} <= set(docs.columns):
            raise ValueError("no id and text fields")
    except (ValueError, UnicodeDecodeError) as exc:
        raise DrawError(f"{d / 'documents.jsonl'}: not the documents calib draw wrote ({exc})") from None
    docs = docs.assign(id=docs["id"].astype(str), text=docs["text"].astype(str))
    pairs = csv_values(pd.read_csv(d / "pairs.csv", dtype={"id_a": str, "id_b": str, "stratum": str, "label": str},
                                   keep_default_na=False))
    missing = [c for c in PAIR_COLUMNS if c not in pairs.columns]
    if missing:
        raise DrawError(f"{d / 'pairs.csv'}: line 1: missing column {missing[0]!r}")
    cand = None
    if getattr(design, "kind", "") == "corpus":
        try:
            cand = read_candidates(d / CANDIDATES) if (d / CANDIDATES).is_file() else None
            check_corpus_set(design, docs["id"], docs["text"], pairs, cand, folder=d, exact_j=exact_similarity,
                             loose=loose_pairs)
        except DrawnSetError as exc:
            raise DrawError(str(exc)) from None
        cand = None if cand is None else np.array(cand)  # read whole: --more draws from it
    design = replace(design, rep=representation(design).to_dict())  # as draw writes it
    return DrawnSet(docs, pairs, design, cand)


def more(drawn: DrawnSet, alloc, *, seed: int | None = None, corpus=None) -> DrawnSet:
    """``drawn`` plus ``alloc[h]`` new pairs from each stratum h, every
    stratum still a simple random sample (of its old and new pairs together),
    inclusion probabilities updated; existing rows and labels are kept first.
    ``corpus``: where a corpus draw's corpus is now (default design.json's path)."""
    d = drawn.design
    if getattr(d, "kind", "") == "corpus":
        from calib.labeling.corpus_draw import more_corpus
        from calib.labeling.corpus_slices import with_slice_values
        read = dict(id_field=d.id_field, text_field=d.text_field)  # the fields the corpus was drawn by
        grown = more_corpus(drawn, alloc, seed=seed, corpus=corpus, **read)
        return with_slice_values(grown, corpus=corpus, **read)
    st = _Strata(drawn.docs["text"].tolist(), representation(d), d.edges, None)
    pos = {x: k for k, x in enumerate(drawn.docs["id"])}
    a = np.array([pos[x] for x in drawn.pairs["id_a"]], dtype=np.int64)
    b = np.array([pos[x] for x in drawn.pairs["id_b"]], dtype=np.int64)
    taken = np.sort(np.minimum(a, b) * st.n + np.maximum(a, b))
    room = np.asarray(d.population) - np.asarray(d.drawn)
    alloc = np.minimum(np.asarray(alloc, dtype=np.int64), room)
    rng = np.random.default_rng([d.seed if seed is None else seed, 2, d.draws])
    codes = st.draw(alloc, rng, taken)
    design = d.with_drawn(np.asarray(d.drawn) + alloc)
    new = _pair_rows(st, codes, drawn.docs["id"].tolist(), design)
    new = new.iloc[rng.permutation(len(new))]
    old = drawn.pairs.copy()
    old["inclusion_probability"] = design.inclusion_probability()[
        pd.Series(range(len(design.strata)), index=design.strata)[old["stratum"]].to_numpy()]
    return DrawnSet(drawn.docs, pd.concat([old, new], ignore_index=True), design)


def with_decisions(pairs: pd.DataFrame, latest: pd.DataFrame) -> pd.DataFrame:
    """``pairs`` (a drawn set's rows) with ``label`` filled from the review
    store's latest decisions (:meth:`calib.review.schema.DecisionStore.latest`):
    duplicate / not_duplicate; ``unsure`` (skipped) and undecided keep the
    file's label. A ``decision`` column says what the store holds (or "")."""
    out = pairs.copy()
    if latest is None or latest.empty:
        out["decision"] = ""
        return out
    a, b = latest["id_a"].astype(str), latest["id_b"].fillna("").astype(str)
    key = pd.Series(latest["decision"].to_numpy(), index=pd.MultiIndex.from_arrays(
        [np.where(a < b, a, b), np.where(a < b, b, a)]))
    key = key[~key.index.duplicated(keep="last")]
    pa, pb = out["id_a"].astype(str), out["id_b"].astype(str)
    idx = pd.MultiIndex.from_arrays([np.where(pa < pb, pa, pb), np.where(pa < pb, pb, pa)])
    dec = pd.Series(key.reindex(idx).to_numpy(), index=out.index).fillna("").astype(str)
    out["decision"] = dec
    decided = dec.isin(["duplicate", "not_duplicate"])
    out.loc[decided, "label"] = dec[decided]
    return out


def write_labels(directory, latest: pd.DataFrame | None) -> DrawnSet:
    """Fill the drawn set's labels from the review store's latest decisions
    (:func:`with_decisions`) and write it back, read and written under the
    folder's claim (:func:`calib.base.atomic.claim_output`): rows another writer
    (``calib draw --more``) added since the caller last read the set are kept."""
    with claim_output(directory):
        drawn = read_drawn(directory)
        filled = replace(drawn, pairs=with_decisions(drawn.pairs, latest).drop(columns=["decision"]))
        write_drawn(directory, filled)
    return filled


def progress(pairs: pd.DataFrame, design: Design) -> pd.DataFrame:
    """Per stratum: drawn pairs, labeled (duplicate / not duplicate), skipped, left."""
    lab = pairs["label"].fillna("").astype(str).str.strip()
    dec = pairs["decision"] if "decision" in pairs else pd.Series("", index=pairs.index)
    t = pd.DataFrame({"stratum": pairs["stratum"], "duplicate": lab == "duplicate",
                      "not_duplicate": lab == "not_duplicate", "skipped": (lab == "") & (dec == "unsure"),
                      "left": (lab == "") & (dec != "unsure")})
    g = t.groupby("stratum").sum().reindex(list(design.strata)).fillna(0).astype(int)
    g.insert(0, "drawn", g.sum(axis=1))
    g.insert(1, "pairs_in_sample", list(design.population))
    g["labeled"] = g["duplicate"] + g["not_duplicate"]
    return g.reset_index()


__all__ = ["DrawError", "DrawnSet", "UNIFORM", "allocate", "draw", "more", "read_drawn", "reservoir", "write_drawn",
           "write_labels"]


def inclusion_note(design: Design) -> str:
    """What a printed inclusion probability is made of (a stratum drawn whole
    still has one below 1: its pairs first had to be in the document sample)."""
    return (f"inclusion probability = drawn share (drawn / pairs of the stratum in the document sample) x "
            f"document-sample factor {design.pi1:.4g} (the chance that both documents of a corpus pair are among "
            f"the {design.sample_docs:,} of {design.corpus_docs:,} documents sampled: n(n-1)/(N(N-1)))")


def strata_table(design: Design, labeled: pd.Series | None = None) -> pd.DataFrame:
    """One row per stratum: pairs in the document sample, drawn, the drawn
    share, the document-sample factor and their product, the inclusion
    probability (and labeled, when ``labeled`` counts them by stratum name)."""
    pop = np.asarray(design.population, dtype=float)
    t = pd.DataFrame({"stratum": design.strata, "pairs": design.population, "drawn": design.drawn,
                      "drawn_share": np.where(pop > 0, np.asarray(design.drawn) / np.maximum(pop, 1), 0.0),
                      "x_document_factor": design.pi1, "inclusion_probability": design.inclusion_probability()})
    if labeled is not None:
        t["labeled"] = labeled.reindex(design.strata).fillna(0).astype(int).to_numpy()
    return t
