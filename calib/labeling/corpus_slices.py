"""Slice fields of a corpus draw (``calib draw --design corpus --slice-fields F,G``).

Per-slice answers (:mod:`calib.estimates.corpus_slices`) need two things the
draw itself does not keep: how many of the corpus's N non-empty documents
hold each value of a slice field (the denominators, recorded in design.json's
``slice_docs``), and the value of each drawn document (a column of
documents.jsonl). :func:`count_slices` reads both in one streaming pass of the
slice fields (no shingles: a JSON parse per line), before the draw's own
passes, so a field the corpus lacks or with too many values to be a slice
stops the run first; :func:`with_slices` puts them on a drawn set, and after
``--more`` :func:`with_slice_values` re-reads the values of the new documents.

Values are text (the apply reader's ``str``); a document without a value, or
with one of the missing spellings of :data:`calib.reading.files.MISSING_VALUES`,
is ``(missing)`` in the counts and null in documents.jsonl, as the sample
loader reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from calib.estimates.slices import MISSING
from calib.labeling.drawn import DrawError, DrawnSet
from calib.reading.corpus import ApplyError, check_fields, iter_corpus
from calib.reading.files import is_missing

PEEK = 1000  # documents read for the field check before the pass
MAX_VALUES = 1000  # distinct values of one slice field (design.json keeps a count per value)


@dataclass(frozen=True, eq=False)
class SliceCounts:
    """Per field: the distinct values (``values[f]``, text; ``None`` for missing) and each
    non-empty document's code into them (``codes[f]``, corpus order)."""

    values: dict
    codes: dict

    def docs(self) -> dict:
        """design.json's ``slice_docs``: documents per value (``(missing)`` for None)."""
        out = {}
        for f, vals in self.values.items():
            n = np.bincount(self.codes[f], minlength=len(vals))
            out[f] = {MISSING if v is None else v: int(c) for v, c in sorted(zip(vals, n), key=_order)}
        return out

    def of(self, doc_index) -> dict:
        """Each field's values (None for missing) of the documents at ``doc_index`` (their places among the N)."""
        idx = np.asarray(doc_index, dtype=np.int64)
        return {f: [self.values[f][c] for c in self.codes[f][idx].tolist()] for f in self.values}


def _order(item):
    v = item[0]
    return (v is None, str(v))


def parse_fields(text: str | None, *, id_field: str = "id", text_field: str = "text") -> tuple[str, ...]:
    """``--slice-fields a,b`` -> ("a", "b"), refused in one line when a name repeats or is the id or text field."""
    fields = tuple(f.strip() for f in (text or "").split(",") if f.strip())
    for f in fields:
        if fields.count(f) > 1:
            raise DrawError(f"--slice-fields: {f!r} is named twice")
        if f in (id_field, text_field):
            raise DrawError(f"--slice-fields: {f!r} is the {'id' if f == id_field else 'text'} field, not a slice")
    return fields


def count_slices(corpus, fields: tuple[str, ...], *, batch_size: int = 10_000, id_field: str = "id",
                 text_field: str = "text") -> SliceCounts:
    """One pass over ``corpus``: every non-empty document's value of each of ``fields`` (a field
    none of the first :data:`PEEK` documents has is refused before the pass: a typo, most likely)."""
    _peek(corpus, fields, id_field=id_field, text_field=text_field)
    lookup: dict = {f: {} for f in fields}
    codes: dict = {f: [] for f in fields}
    seen: dict = {f: False for f in fields}
    try:
        for _, texts, extras in iter_corpus(corpus, batch_size=batch_size, id_field=id_field, text_field=text_field,
                                            extra_fields=tuple(fields), drawing=True):
            keep = [k for k, x in enumerate(texts) if x.strip()]
            for f in fields:
                col = extras[f]
                seen[f] = seen[f] or any(v is not None for v in col)
                table = lookup[f]
                batch = np.empty(len(keep), np.int32)  # 4 bytes a document and field, not a Python int
                for t, k in enumerate(keep):
                    v = None if is_missing(col[k]) else col[k]
                    c = table.get(v)
                    if c is None:
                        if len(table) >= MAX_VALUES:
                            raise DrawError(f"{corpus}: --slice-fields {f!r} has more than {MAX_VALUES:,} distinct "
                                            "values: not a slice (name a field like a source, language or domain)")
                        c = table[v] = len(table)
                    batch[t] = c
                codes[f].append(batch)
    except ApplyError as exc:
        raise DrawError(str(exc)) from None
    absent = [f for f in fields if not seen[f]]
    if absent:
        raise DrawError(f"{corpus}: --slice-fields: no document has a field {absent[0]!r}")
    return SliceCounts({f: list(lookup[f]) for f in fields},
                       {f: np.concatenate(codes[f]) if codes[f] else np.zeros(0, np.int32) for f in fields})


def _peek(corpus, fields, **read) -> None:
    try:
        first = next(iter(iter_corpus(corpus, batch_size=PEEK, extra_fields=tuple(fields), **read)), None)
    except ApplyError as exc:
        raise DrawError(str(exc)) from None
    if first is None:
        return
    for f in fields:
        if all(v is None for v in first[2][f]):
            try:  # the first record's fields, named as the apply command names them
                check_fields(corpus, (f,), option="--slice-fields", **read)
            except ApplyError as exc:
                raise DrawError(str(exc)) from None
            raise DrawError(f"{corpus}: --slice-fields: none of the first {len(first[0]):,} documents has a value "
                            f"for {f!r}")


def with_slices(drawn: DrawnSet, counts: SliceCounts) -> DrawnSet:
    """``drawn`` (a corpus draw) with its documents' slice columns and design.json's ``slice_docs``."""
    design = drawn.design
    if counts.codes and len(next(iter(counts.codes.values()))) != design.corpus_docs:
        raise DrawError(f"{design.corpus}: the file changed since its slice fields were read")
    docs = _with_columns(drawn.docs, counts.of(design.doc_index))
    return replace(drawn, docs=docs, design=replace(design, slice_docs=counts.docs()))


def _with_columns(docs: pd.DataFrame, values: dict) -> pd.DataFrame:
    docs = docs[["id", "text"]].copy()
    for f, vals in values.items():
        docs[f] = pd.Series(vals, dtype=object, index=docs.index)
    return docs


def with_slice_values(drawn: DrawnSet, *, batch_size: int = 10_000, id_field: str = "id",
                      text_field: str = "text", corpus=None) -> DrawnSet:
    """A corpus draw whose documents lack some slice values (after ``--more``): the slice fields of
    design.json's ``slice_docs`` re-read from the corpus for every document of the set."""
    design = drawn.design
    fields = tuple(getattr(design, "slice_docs", {}) or ())
    if not fields:
        return drawn
    idx = np.asarray(design.doc_index, dtype=np.int64)
    got: dict = {f: [] for f in fields}
    t = 0
    try:
        for _, texts, extras in iter_corpus(corpus or design.corpus, batch_size=batch_size, id_field=id_field,
                                            text_field=text_field, extra_fields=fields):
            keep = [k for k, x in enumerate(texts) if x.strip()]
            lo, hi = np.searchsorted(idx, [t, t + len(keep)])
            for f in fields:
                got[f].extend(None if is_missing(extras[f][keep[k - t]]) else extras[f][keep[k - t]]
                              for k in idx[lo:hi].tolist())
            t += len(keep)
    except ApplyError as exc:
        raise DrawError(str(exc)) from None
    if t != design.corpus_docs or any(len(v) != len(idx) for v in got.values()):
        raise DrawError(f"{design.corpus}: the file changed since it was drawn from")
    return replace(drawn, docs=_with_columns(drawn.docs, got))
