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
(xxh3), each document's distinct hashes concatenated, and ``np.unique`` counts
them; a 64-bit collision (about L^2 / 2^65 for L distinct lines) could merge
two lines' counts. Matching while stripping compares the normalized text
itself (a set of strings), so the exported stoplist means exactly its lines.

Shingle-level stripping (:func:`shingle_stoplist`, :func:`strip_shingles`)
removes hashed shingles held by more than a share of documents from the sets
instead; it is a library function measured in ``bench/boilerplate.py``, not a
swept setting.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import xxhash

from calib.sketches.represent import Representation, normalize, punct_re
from calib.sketches.shingles import ShingleSets

STOPLIST_FORMAT = 1


def _line_hash(line: str) -> int:
    return xxhash.xxh3_64_intdigest(line.encode("utf-8", "surrogatepass"))


@lru_cache(maxsize=1)
def _ascii_punct() -> dict:
    """str.translate's table of the ASCII characters :func:`calib.sketches.represent.punct_re` matches -> a space."""
    rx = punct_re()
    return str.maketrans({chr(c): " " for c in range(128) if rx.match(chr(c))})


@lru_cache(maxsize=64)
def _kept_punct(rep: Representation) -> Representation:
    return rep.normalization().with_(strip_punct=False)


def normalize_line(line: str, rep: Representation) -> str:
    """:func:`calib.sketches.represent.normalize` of one line, exactly. An ASCII line under
    ``strip_punct`` has its punctuation and symbols made spaces by a translation table (what the
    regex does to ASCII text, about 15 times faster) and is then normalized without the regex: NFKC
    leaves ASCII alone and lowercasing ASCII makes no punctuation, so the regex would find none."""
    if rep.strip_punct and line.isascii():
        return normalize(line.translate(_ascii_punct()), _kept_punct(rep))
    return normalize(line, rep)


def normalized_lines(text: str, rep: Representation, memo: dict | None = None) -> list[str]:
    """The normalized form of each line of ``text`` (empty ones included, in order). ``memo``: raw line ->
    normalized, shared across texts (a corpus repeats its lines: headers, footers, a file's releases)."""
    if memo is None:
        return [normalize_line(line, rep) for line in text.splitlines()]
    out = []
    for line in text.splitlines():
        done = memo.get(line)
        if done is None:
            done = memo[line] = normalize_line(line, rep)
        out.append(done)
    return out


@dataclass(frozen=True, eq=False)
class LineCounts:
    """Document frequencies of the normalized lines of a corpus (by 64-bit hash)."""

    n_docs: int
    hashes: np.ndarray   # uint64, sorted, distinct
    counts: np.ndarray   # int64: documents holding each line

    def limit(self, share: float) -> float:
        """A line is boilerplate when its count is above this (and at least 2)."""
        return share * self.n_docs


def count_lines(texts, rep: Representation, memo: dict | None = None) -> LineCounts:
    """Each normalized non-empty line's document frequency over ``texts`` (``memo``: as
    :func:`normalized_lines`'s, raw line -> normalized, for one normalization)."""
    per_doc, n, memo = [], 0, {} if memo is None else memo
    for text in texts:
        n += 1
        hs = {_line_hash(x) for x in normalized_lines(text, rep, memo) if x}
        if hs:
            per_doc.append(np.fromiter(hs, dtype=np.uint64, count=len(hs)))
    if not per_doc:
        return LineCounts(n, np.zeros(0, np.uint64), np.zeros(0, np.int64))
    hashes, counts = np.unique(np.concatenate(per_doc), return_counts=True)
    return LineCounts(n, hashes, counts.astype(np.int64))


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
        return self._strip(text, rep, None)

    def _strip(self, text: str, rep: Representation, memo: dict | None) -> str:
        stop, memo = self._set, {} if memo is None else memo
        kept = []
        for line in text.splitlines(keepends=True):
            norm = memo.get(line)
            if norm is None:
                norm = memo[line] = normalize_line(line, rep)
            if norm not in stop:
                kept.append(line)
        return "".join(kept)

    def strip_all(self, texts, rep: Representation, memo: dict | None = None) -> list[str]:
        """Every text stripped (``memo``: raw line -> normalized, as :func:`stoplist`'s, may be shared with it)."""
        if not self.lines:
            return list(texts)
        memo = {} if memo is None else memo
        return [self._strip(t, rep, memo) for t in texts]

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


def stoplist(texts, rep: Representation, share: float, memo: dict | None = None) -> Stoplist:
    """The lines held by more than ``share`` of the documents of ``texts`` (the
    counting corpus: the sample, or a corpus the user names) and by at least 2.
    ``memo``: raw line -> normalized under ``rep``'s normalization, shared by the counting, the
    search for the stoplist's lines and (passed to :meth:`Stoplist.strip_all`) the stripping."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"strip_lines must be a share in [0, 1], got {share!r}")
    texts = texts if isinstance(texts, (list, tuple)) else list(texts)
    memo = {} if memo is None else memo
    counts = count_lines(texts, rep, memo)
    if share == 0.0:
        return Stoplist(share, counts.n_docs, (), ())
    hot = counts.hashes[(counts.counts > counts.limit(share)) & (counts.counts >= 2)]
    if not len(hot):
        return Stoplist(share, counts.n_docs, (), ())
    hot_set, found = set(hot.tolist()), {}
    for text in texts:  # the text of each stoplist hash
        for x in normalized_lines(text, rep, memo):
            if x and x not in found and _line_hash(x) in hot_set:
                found[x] = _line_hash(x)
        if len(found) == len(hot_set):
            break
    lines = sorted(found)
    where = np.searchsorted(counts.hashes, np.asarray([found[x] for x in lines], dtype=np.uint64))
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
