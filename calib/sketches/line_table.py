"""The distinct lines of a set of texts, split once: what boilerplate counting and stripping run on.

A corpus repeats its lines massively (a file's releases, blank lines, ``return``, ``}``), so the
work of :mod:`calib.sketches.boilerplate` is done per **distinct** line, not per line:

* :class:`LineTable` (once per set of texts, whatever the normalization): every text split by
  ``str.splitlines(keepends=True)``; ``lines`` the distinct raw lines (with their breaks), ``codes``
  one int per line in text order, ``offsets`` each text's span of ``codes``;
* :class:`NormalizedLines` (once per normalization, whatever the share): each distinct line
  normalized without its break (:func:`normalize_line`, what counting compares), the distinct
  normalized strings, their 64-bit hashes (xxh3) and an id per distinct hash (-1: empty after
  normalization, never counted nor stripped).

A line's document frequency is then the number of distinct (document, hash id) pairs holding it
(``np.unique`` over ``doc * H + id``), exactly the per-document hash sets of the line-by-line count:
two normalized strings of the same 64-bit hash are counted as one line, as before.

Stripping compares a line normalized *with* its break (``splitlines(keepends=True)``). Under a
whitespace collapse (``collapse_ws`` or word shingles) that is the line normalized without it: every
break (``\\n \\r \\v \\f \\x1c-\\x1e \\x85 \\u2028 \\u2029``) is whitespace (``str.split`` drops it), none
is punctuation or a symbol, NFKC leaves it alone and composes nothing across it, and lowercasing
(its one context rule, a final sigma, reads a break as it reads the end of the text) changes nothing
beside it; so the counting ids are reused. Without a collapse the break stays in the normalized
text, and each distinct raw line is normalized once more with its break.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np
import pandas as pd
import xxhash

from calib.sketches.represent import Representation, normalize, punct_re


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


def line_normalizer(rep: Representation) -> Callable[[str], str]:
    """:func:`calib.sketches.represent.normalize` under ``rep``, exactly, for one line at a time. An
    ASCII line under ``strip_punct`` has its punctuation and symbols made spaces by a translation table
    (what the regex does to ASCII text, about 15 times faster) and is then normalized without the regex:
    NFKC leaves ASCII alone and lowercasing ASCII makes no punctuation, so the regex would find none."""
    if not rep.strip_punct:
        return lambda line: normalize(line, rep)
    kept, table = _kept_punct(rep), _ascii_punct()

    def norm(line: str) -> str:
        return normalize(line.translate(table), kept) if line.isascii() else normalize(line, rep)
    return norm


def normalize_line(line: str, rep: Representation) -> str:
    """One line normalized as :func:`line_normalizer` does it."""
    return line_normalizer(rep)(line)


def normalization_key(rep: Representation) -> tuple[bool, bool, bool, bool]:
    """What :func:`calib.sketches.represent.normalize` depends on (word shingles collapse whitespace)."""
    return rep.lowercase, rep.nfkc, rep.strip_punct, bool(rep.collapse_ws or rep.shingle == "word")


def factorize(items: list[str]) -> tuple[list[str], np.ndarray]:
    """(the distinct strings in first-seen order, each item's index among them): a C hash table
    (pandas'), about half the time of a dict built and then looked up from Python."""
    array = np.empty(len(items), dtype=object)
    array[:] = items
    codes, uniques = pd.factorize(array)
    return uniques.tolist(), codes.astype(np.int64, copy=False)


def _index(strings: list[str]) -> dict[str, int]:
    return dict(zip(strings, itertools.count()))


@dataclass(frozen=True, eq=False)
class NormalizedLines:
    """A :class:`LineTable`'s distinct lines under one normalization."""

    norm_id: np.ndarray      # int64 per distinct raw line: its normalized string (without the break) in ``strings``
    strings: list[str]       # the distinct normalized strings
    index: dict              # normalized string -> its id
    hash_id: np.ndarray      # int64 per normalized string: its hash's index in ``hashes``, -1 when empty
    hashes: np.ndarray       # uint64, sorted, distinct: the non-empty normalized strings' hashes
    strip_id: np.ndarray     # int64 per distinct raw line: its normalized string *with* the break in ``strip_index``
    strip_index: dict        # normalized string (with break) -> id


class LineTable:
    """Texts split into lines once: distinct raw lines, a code per line, each text's span of codes."""

    def __init__(self, texts):
        self.texts = texts if isinstance(texts, (list, tuple)) else list(texts)
        self.n = len(self.texts)
        every: list[str] = []
        sizes = np.zeros(self.n, np.int64)
        for d, text in enumerate(self.texts):
            split = text.splitlines(keepends=True)
            sizes[d] = len(split)
            every += split
        self.lines, self.codes = factorize(every)
        self.offsets = np.zeros(self.n + 1, np.int64)
        np.cumsum(sizes, out=self.offsets[1:])
        self._bare: tuple[list[str], np.ndarray] | None = None
        self._norm: dict[tuple, NormalizedLines] = {}

    def doc_of_line(self) -> np.ndarray:
        return np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self.offsets))

    def bare(self) -> tuple[list[str], np.ndarray]:
        """(the distinct lines without their breaks, each distinct raw line's index among them)."""
        if self._bare is None:  # a raw line is never empty: it has text or a break, so splitlines gives one line
            self._bare = factorize([x.splitlines()[0] for x in self.lines])
        return self._bare

    def normalized(self, rep: Representation) -> NormalizedLines:
        """The distinct lines under ``rep``'s normalization (computed once per normalization)."""
        key = normalization_key(rep)
        if key not in self._norm:
            norm = line_normalizer(rep)
            bare, bare_id = self.bare()
            strings, of_bare = factorize(list(map(norm, bare)))
            index = _index(strings)
            h = np.fromiter(map(_line_hash, strings), dtype=np.uint64, count=len(strings))
            full = np.ones(len(strings), bool)
            if "" in index:
                full[index[""]] = False
            hashes, inverse = np.unique(h[full], return_inverse=True)
            hash_id = np.full(len(strings), -1, np.int64)
            hash_id[full] = inverse.reshape(-1)
            norm_id = of_bare[bare_id]
            if key[3]:  # a collapse: the line with its break normalizes as the line without (module docstring)
                strip_id, strip_index = norm_id, index
            else:
                stripped, strip_id = factorize(list(map(norm, self.lines)))
                strip_index = _index(stripped)
            self._norm[key] = NormalizedLines(norm_id, strings, index, hash_id, hashes, strip_id, strip_index)
        return self._norm[key]

    def document_frequencies(self, rep: Representation) -> tuple[np.ndarray, np.ndarray]:
        """(hashes, counts): each distinct non-empty normalized line's hash (sorted) and the number
        of texts holding it, counted once per text."""
        nl = self.normalized(rep)
        hid = nl.hash_id[nl.norm_id][self.codes]
        full = hid >= 0
        width = max(len(nl.hashes), 1)
        pairs = np.sort(self.doc_of_line()[full] * width + hid[full])
        first = np.ones(len(pairs), bool)  # the first of each run of equal (document, line) pairs
        np.not_equal(pairs[1:], pairs[:-1], out=first[1:])
        return nl.hashes, np.bincount(pairs[first] % width, minlength=len(nl.hashes)).astype(np.int64)

    def first_documents(self, rep: Representation, norm_ids: np.ndarray) -> np.ndarray:
        """The first text holding each of ``norm_ids`` (normalized strings of this table)."""
        nl = self.normalized(rep)
        at = np.full(len(nl.strings), -1, np.int64)
        at[np.asarray(norm_ids, np.int64)] = np.arange(len(norm_ids))
        which = at[nl.norm_id][self.codes]
        seen = np.nonzero(which >= 0)[0]
        ids, first = np.unique(which[seen], return_index=True)
        out = np.empty(len(norm_ids), np.int64)
        out[ids] = np.searchsorted(self.offsets, seen[first], side="right") - 1
        return out

    def strip(self, stop: frozenset, rep: Representation) -> list[str]:
        """Every text without the lines whose normalized form (with the break) is in ``stop``; a text
        losing no line is returned as the same object, the others rebuilt from their kept lines."""
        nl = self.normalized(rep)
        hit = [nl.strip_index[s] for s in stop if s in nl.strip_index]
        if not hit:
            return list(self.texts)
        dropped_id = np.zeros(len(nl.strip_index), bool)
        dropped_id[hit] = True
        dropped = dropped_id[nl.strip_id][self.codes]
        before = np.zeros(len(dropped) + 1, np.int64)
        np.cumsum(dropped, out=before[1:])
        lost = before[self.offsets[1:]] - before[self.offsets[:-1]]
        out = list(self.texts)
        lines = self.lines
        for d in np.nonzero(lost)[0].tolist():
            a, b = self.offsets[d], self.offsets[d + 1]
            kept = self.codes[a:b][~dropped[a:b]].tolist()
            out[d] = "".join([lines[c] for c in kept])
        return out
