"""Boilerplate stripping: lines (or shingles) that recur across many documents.

The setting :attr:`calib.sketches.represent.Representation.strip_lines` is a share s of
documents (0: off). It means **lines**: a line is a piece of the raw text
between line breaks (``str.splitlines``), compared after the representation's
normalization (:func:`calib.sketches.represent.normalize` of the line alone); a line
empty after normalization is never counted nor stripped. A line's document
frequency is the number of documents holding it, counted once per document.
The stoplist is every line held by more than ``s * n`` of the n documents of
the counting corpus (the sample, or a corpus the user names) and by at least
2 of them (one document's own line is never boilerplate, whatever s).

Stripping removes a document's stoplist lines (with their line breaks) and
keeps the rest of its text byte for byte; shingling then runs as usual. A
document whose every line is boilerplate becomes empty: its shingle set is
empty, so (as any empty document) it is never an LSH candidate, is counted in
``empty_docs`` of the results row and ``empty_documents`` of the apply summary,
and is kept (never removed, never dropped).

Counting is vectorized over hashes: each normalized line is hashed to 64 bits
(xxh3) and ``np.unique`` counts the distinct (document, hash) pairs; a 64-bit
collision (about L^2 / 2^65 for L distinct lines) could merge two lines' counts.
Matching while stripping compares the normalized text itself (a set of
strings), so the exported stoplist means exactly its lines. Both run on the
distinct lines of a :class:`calib.sketches.line_table.LineTable` (split once,
normalized once per normalization), not line by line.

Shingle-level stripping (:func:`shingle_stoplist`, :func:`strip_shingles`)
removes hashed shingles held by more than a share of documents from the sets
instead; it is a library function measured in ``bench/boilerplate.py``, not a
swept setting.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np

from calib.sketches.line_table import LineTable, line_normalizer
from calib.sketches.represent import Representation
from calib.sketches.shingles import ShingleSets

STOPLIST_FORMAT = 1


@dataclass(frozen=True, eq=False)
class LineCounts:
    """Document frequencies of the normalized lines of a corpus (by 64-bit hash)."""

    n_docs: int
    hashes: np.ndarray   # uint64, sorted, distinct
    counts: np.ndarray   # int64: documents holding each line

    def limit(self, share: float) -> float:
        """A line is boilerplate when its count is above this (and at least 2)."""
        return share * self.n_docs


def _table(texts) -> LineTable:
    return texts if isinstance(texts, LineTable) else LineTable(texts)


def count_lines(texts, rep: Representation) -> LineCounts:
    """Each normalized non-empty line's document frequency over ``texts`` (a list, or a
    :class:`calib.sketches.line_table.LineTable` already split)."""
    table = _table(texts)
    hashes, counts = table.document_frequencies(rep)
    return LineCounts(table.n, hashes, counts)


@dataclass(frozen=True, eq=False)
class Stoplist:
    """Normalized lines to strip, with the document frequency each was chosen on."""

    share: float
    n_docs: int                    # documents of the counting corpus
    lines: tuple[str, ...]         # sorted
    documents: tuple[int, ...]     # documents holding each line

    def __post_init__(self) -> None:
        object.__setattr__(self, "_set", frozenset(self.lines))

    def __len__(self) -> int:
        return len(self.lines)

    def strip(self, text: str, rep: Representation) -> str:
        """``text`` without its stoplist lines (the other lines byte for byte)."""
        if not self.lines:
            return text
        stop, norm = self._set, line_normalizer(rep)
        return "".join(x for x in text.splitlines(keepends=True) if norm(x) not in stop)

    def strip_all(self, texts, rep: Representation) -> list[str]:
        """Every text stripped (``texts``: a list, or a :class:`calib.sketches.line_table.LineTable`):
        each distinct line normalized once; a text losing no line is returned unchanged."""
        if not self.lines:
            return list(texts.texts if isinstance(texts, LineTable) else texts)
        return _table(texts).strip(self._set, rep)

    def to_doc(self, rep: Representation) -> dict:
        """The exported stoplist file's content (``stoplist.json``)."""
        return {"format": STOPLIST_FORMAT, "what": "normalized lines removed before shingling",
                "share": self.share, "n_docs": self.n_docs, "normalization": rep.normalization_label(),
                "lines": [{"text": t, "documents": d} for t, d in zip(self.lines, self.documents)]}

    def to_json(self, rep: Representation) -> str:
        return json.dumps(self.to_doc(rep), ensure_ascii=False, indent=1, sort_keys=True) + "\n"

    def sha256(self, rep: Representation) -> str:
        return hashlib.sha256(self.to_json(rep).encode("utf-8")).hexdigest()

    @classmethod
    def from_doc(cls, doc: dict, where: str = "stoplist") -> "Stoplist":
        """Inverse of :meth:`to_doc`; a malformed document is a one-line ValueError naming the field."""
        if not isinstance(doc, dict) or doc.get("format") != STOPLIST_FORMAT:
            raise ValueError(f"{where}: field 'format': expected {STOPLIST_FORMAT}")
        lines = doc.get("lines")
        if not isinstance(lines, list):
            raise ValueError(f"{where}: field 'lines': expected a list")
        for k, e in enumerate(lines):
            if not (isinstance(e, dict) and isinstance(e.get("text"), str) and isinstance(e.get("documents"), int)):
                raise ValueError(f"{where}: field 'lines[{k}]': expected {{'text': str, 'documents': int}}")
        return cls(float(doc["share"]), int(doc["n_docs"]), tuple(e["text"] for e in lines),
                   tuple(e["documents"] for e in lines))


def stoplist(texts, rep: Representation, share: float) -> Stoplist:
    """The lines held by more than ``share`` of the documents of ``texts`` (the
    counting corpus: the sample, or a corpus the user names) and by at least 2.
    ``texts``: a list, or a :class:`calib.sketches.line_table.LineTable` (split once, its
    normalizations kept: another share under the same normalization normalizes nothing again).

    The stoplist's texts are the distinct non-empty normalized lines whose hash is hot, as a scan
    of the texts in order finds them: it stops after the first text where it has found as many
    lines as hot hashes (only a 64-bit collision, two lines of one hash, makes that stop early)."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"strip_lines must be a share in [0, 1], got {share!r}")
    table = _table(texts)
    counts = count_lines(table, rep)
    if share == 0.0:
        return Stoplist(share, counts.n_docs, (), ())
    hot = (counts.counts > counts.limit(share)) & (counts.counts >= 2)
    if not hot.any():
        return Stoplist(share, counts.n_docs, (), ())
    nl = table.normalized(rep)
    found = np.nonzero((nl.hash_id >= 0) & hot[np.maximum(nl.hash_id, 0)])[0]
    n_hot = int(hot.sum())
    if len(found) > n_hot:  # a collision: keep what the scan had found when it stopped
        first = table.first_documents(rep, found)
        done = np.sort(first)
        stops = np.nonzero(np.searchsorted(done, done, side="right") == n_hot)[0]
        if len(stops):
            found = found[first <= done[stops[0]]]
    lines = sorted(nl.strings[i] for i in found.tolist())
    where = nl.hash_id[[nl.index[x] for x in lines]]
    return Stoplist(share, counts.n_docs, tuple(lines), tuple(int(c) for c in counts.counts[where]))


def shingle_stoplist(sets: ShingleSets, share: float) -> np.ndarray:
    """Shingle hashes held by more than ``share`` of the documents (and by at least 2), sorted."""
    if not sets.unique:
        raise ValueError("shingle_stoplist needs sets (unique=True)")
    h, c = np.unique(sets.hashes, return_counts=True)
    return h[(c > share * sets.n) & (c >= 2)]


def strip_shingles(sets: ShingleSets, stop: np.ndarray) -> ShingleSets:
    """``sets`` without the hashes of ``stop`` (a document may become empty)."""
    keep = ~np.isin(sets.hashes, stop)
    doc = np.repeat(np.arange(sets.n), sets.sizes())
    offsets = np.zeros(sets.n + 1, np.int64)
    np.cumsum(np.bincount(doc[keep], minlength=sets.n), out=offsets[1:])
    return ShingleSets(offsets, sets.hashes[keep], sets.unique)
