"""Representation: how a text becomes a set of hashed shingles.

A :class:`Representation` is a frozen, hashable config (normalization, shingle
type and size k, shingle hash function, number of hashes, seed, signature
scheme). Its :meth:`~Representation.fingerprint` is a short hash of its
canonical JSON, so two results computed under different representations can
always be told apart. A scheme's old name (``fast`` for ``prefix``) is
resolved on construction, so both spellings make equal representations; the
fingerprint hashes the first name (:data:`FIRST_NAMES`), so fingerprints did
not change with the rename.

Shingling rules (documented, deliberate):

* ``word`` shingles: the normalized text is split on Unicode whitespace
  (``str.split()``); a shingle is k consecutive tokens joined by one space.
  Scripts written without spaces (CJK) are therefore one token per run of
  text: use ``char`` shingles for them.
* ``char`` shingles: k consecutive Unicode code points of the normalized text.
* A text with at least one but fewer than k units is one shingle: the whole
  normalized text. A text with no unit at all (empty after normalization) has
  an empty shingle set; it never becomes an LSH candidate and its Jaccard
  similarity to anything is 0.
* A shingle's bytes are its UTF-8 encoding; its hash is a 32-bit integer:
  ``xxhash`` = ``xxhash.xxh32_intdigest(b, seed=0)``, ``mmh3`` =
  ``mmh3.hash(b, 0, signed=False)``, ``sha1`` = datasketch's ``sha1_hash32``.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import unicodedata
from functools import lru_cache
from dataclasses import asdict, dataclass, fields, replace
from typing import Literal

import numpy as np

from calib.base.fields import setting
from calib.sketches.schemes import canonical_scheme, get_scheme, scheme_names, weighted_scheme_names

SHINGLE_TYPES = ("word", "char")
WEIGHTINGS = ("none", "idf")  # shingle weights (calib.sketches.weighted_minhash)
HASH_FUNCTIONS = ("xxhash", "sha1", "mmh3")
# Current name -> first name of renamed schemes: what fingerprints hash.
FIRST_NAMES = {"prefix": "fast"}





@lru_cache(maxsize=1)
def punct_re() -> re.Pattern:
    """A character class of every code point in Unicode categories P* and S*.

    ``re`` has no \\p{P}; ``[^\\w\\s]`` would also take combining marks (Mn/Mc),
    format characters (Cf, e.g. ZWNJ inside Persian words) and controls. The runs are
    calib.sketches.punct_table's when calib is importable and of this Python's Unicode version
    (the scan's result, saved: the scan takes half a second), else scanned here.
    """
    try:
        from calib.sketches import punct_table
        ranges = punct_table.ranges() if punct_table.UNIDATA_VERSION == unicodedata.unidata_version else None
    except ImportError:  # a snippet (calib.production.targets) run without calib
        ranges = None
    if ranges is None:
        ranges, start, prev = [], None, None
        for cp in range(sys.maxunicode + 1):
            if unicodedata.category(chr(cp))[0] in "PS":
                if start is None:
                    start = cp
                elif cp != prev + 1:
                    ranges.append((start, prev))
                    start = cp
                prev = cp
        ranges.append((start, prev))
    cls = "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)
    return re.compile(f"[{cls}]")


@dataclass(frozen=True)
class Representation:
    """How documents are normalized, shingled, hashed and sketched.

    Parameters use the literature's names: ``k`` is the shingle size,
    ``num_perm`` the number of hash functions (signature length), ``seed``
    draws the permutations.
    """

    # Field order is the results table's column order; ``table=False``: the
    # Sweep page shows these through the ``representation`` label.
    shingle: Literal["word", "char"] = setting(
        "word", help="shingle type: word (whitespace tokens) or char (code points)", table=False)
    k: int = setting(5, help="shingle size: words or characters per shingle", table=False)
    lowercase: bool = setting(True, help="lowercase the text", table=False)
    nfkc: bool = setting(True, help="Unicode NFKC normalization", table=False)
    strip_punct: bool = setting(False, help="punctuation and symbols (Unicode P*, S*) become spaces", table=False)
    collapse_ws: bool = setting(True, help="collapse runs of whitespace to one space", table=False)
    hashfunc: Literal["xxhash", "sha1", "mmh3"] = setting(
        "xxhash", help="32-bit hash of a shingle's UTF-8 bytes", table=False)
    scheme: str = setting(  # a name registered in calib.sketches.schemes ("fast" is read as "prefix")
        "prefix", help="signature scheme: prefix (classic, prefix-stable; old name fast), datasketch (identical "
        "to datasketch.MinHash), oph (one-permutation hashing, O(n + k)); weighted: dart (O(n + k log k)), "
        "icws (O(n k))", table=False)
    seed: int = setting(1, help="seed of the MinHash permutations", table=False)
    num_perm: int = setting(128, help="hash functions per signature (signature length)")
    # Last and left out of documents, rows and fingerprints while "none": earlier results keep their bytes.
    weighting: str = setting("none", help="shingle weights: none (a set) or idf (ln(1 + N/df), sketched by "
                             "a weighted scheme, dart or icws, and verified by weighted_jaccard)", table=False,
                             doc_if_set=True)
    # Set-only too (boilerplate): left out while 0, so configs without it keep their fingerprint.
    strip_lines: float = setting(0.0, help="boilerplate: strip normalized lines held by more than this share of the "
                                 "documents (and by >= 2) before shingling; 0: off (calib.boilerplate)",
                                 doc_if_set=True, row_if_set=True)

    def __post_init__(self) -> None:
        for name in ("k", "num_perm", "seed"):  # numpy integers (from pandas rows) become int
            v = getattr(self, name)
            if isinstance(v, np.integer):
                object.__setattr__(self, name, int(v))
        s = self.strip_lines
        if isinstance(s, bool) or not isinstance(s, (int, float, np.integer, np.floating)) or not 0.0 <= s <= 1.0:
            raise ValueError(f"Representation.strip_lines must be a share in [0, 1], got {s!r}")
        object.__setattr__(self, "strip_lines", float(s))
        for name in ("lowercase", "nfkc", "strip_punct", "collapse_ws"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"Representation.{name} must be true or false, got {getattr(self, name)!r}")
        if self.shingle not in SHINGLE_TYPES:
            raise ValueError(f"Representation.shingle must be one of {SHINGLE_TYPES}, got {self.shingle!r}")
        if not isinstance(self.k, int) or isinstance(self.k, bool) or self.k < 1:
            raise ValueError(f"Representation.k (shingle size) must be an integer >= 1, got {self.k!r}")
        if self.hashfunc not in HASH_FUNCTIONS:
            raise ValueError(f"Representation.hashfunc must be one of {HASH_FUNCTIONS}, got {self.hashfunc!r}")
        if not isinstance(self.num_perm, int) or isinstance(self.num_perm, bool) or not 1 <= self.num_perm <= 8192:
            raise ValueError(f"Representation.num_perm must be an integer in [1, 8192], got {self.num_perm!r}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or not 0 <= self.seed < 2**32:
            raise ValueError(f"Representation.seed must be an integer in [0, 2**32), got {self.seed!r}")
        try:
            object.__setattr__(self, "scheme", canonical_scheme(self.scheme))
        except (ValueError, TypeError):
            raise ValueError(f"Representation.scheme must be one of {scheme_names()}, got {self.scheme!r}") from None
        if self.weighting not in WEIGHTINGS:
            raise ValueError(f"Representation.weighting must be one of {WEIGHTINGS}, got {self.weighting!r}")
        if self.weighting != "none":
            if not get_scheme(self.scheme).weighted:
                raise ValueError(f"Representation.weighting {self.weighting!r} needs a weighted signature scheme "
                                 f"{weighted_scheme_names()}, got scheme {self.scheme!r}")

    # -- identity -----------------------------------------------------------
    def to_dict(self) -> dict:
        """Every field, but a ``doc_if_set`` one only when it differs from its default."""
        d = asdict(self)
        for f in fields(self):
            if f.metadata["doc_if_set"] and d[f.name] == f.default:
                del d[f.name]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Representation":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown Representation field(s): {', '.join(unknown)}")
        return cls(**d)

    def canonical_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    def hashed_dict(self) -> dict:
        """The form fingerprints hash: :meth:`to_dict` with renamed values under
        their first names (scheme 'prefix' as 'fast'), so fingerprints computed
        before a rename (results, exports, manifests) stay valid."""
        d = self.to_dict()
        d["scheme"] = FIRST_NAMES.get(d["scheme"], d["scheme"])
        return d

    def fingerprint(self) -> str:
        """Short stable id: first 12 hex digits of sha256 of the sorted, compact
        JSON of :meth:`hashed_dict` (computed once per object: it is frozen, and a search asks thousands of times)."""
        fp = self.__dict__.get("_fingerprint")
        if fp is None:
            fp = hashlib.sha256(json.dumps(self.hashed_dict(), sort_keys=True, separators=(",", ":"))
                                .encode()).hexdigest()[:12]
            object.__setattr__(self, "_fingerprint", fp)
        return fp

    def shingling(self) -> "Representation":
        """The part that fixes the shingle hash sets (num_perm, seed, scheme reset)."""
        return replace(self, num_perm=1, seed=0, scheme="prefix", weighting="none")

    def shingling_fingerprint(self) -> str:
        fp = self.__dict__.get("_shingling_fingerprint")
        if fp is None:
            fp = self.shingling().fingerprint()
            object.__setattr__(self, "_shingling_fingerprint", fp)
        return fp

    def with_(self, **changes) -> "Representation":
        return replace(self, **changes)

    def normalization_label(self) -> str:
        parts = [n for n, on in (("lower", self.lowercase), ("nfkc", self.nfkc),
                                 ("nopunct", self.strip_punct), ("ws", self.collapse_ws)) if on]
        return "+".join(parts) or "raw"

    def normalization(self) -> "Representation":
        """The part that fixes :func:`normalize` (what a line stoplist is counted under)."""
        return Representation(shingle=self.shingle, lowercase=self.lowercase, nfkc=self.nfkc,
                              strip_punct=self.strip_punct, collapse_ws=self.collapse_ws)

    def shingle_label(self) -> str:
        return f"{self.shingle}{self.k}"

    def label(self) -> str:
        """Shingles and normalization, e.g. ``word5 [lower+nfkc+ws]`` (the results' ``representation``),
        with the weighting when there is one (``word5 [lower+nfkc+ws] idf``) and the boilerplate share."""
        weights = "" if self.weighting == "none" else f" {self.weighting}"
        strip = f" strip>{self.strip_lines:g}" if self.strip_lines else ""
        return f"{self.shingle_label()} [{self.normalization_label()}]{weights}{strip}"

    def __str__(self) -> str:
        return (f"{self.label()} {self.hashfunc} "
                f"{self.scheme}/{self.num_perm} seed={self.seed}")


def normalize(text: str, rep: Representation) -> str:
    """Apply the representation's normalization to one text.

    Order: NFKC, lowercase, punctuation -> space, whitespace collapse (and
    strip). Word shingling always splits on whitespace, so collapse only
    changes char shingles. Punctuation and symbols (Unicode P*, S*) become a
    space so that "end.Start" stays two words; they are removed before NFKC
    too, since NFKC turns some of them into a space plus a combining mark
    (U+FE49 DASHED OVERLINE -> " " + U+0305), which is no punctuation.
    """
    if rep.strip_punct:
        text = punct_re().sub(" ", text)
    if rep.nfkc and not text.isascii():  # NFKC leaves ASCII unchanged
        text = unicodedata.normalize("NFKC", text)
    if rep.lowercase:
        text = text.lower()
    if rep.strip_punct:
        text = punct_re().sub(" ", text)
    if rep.collapse_ws or rep.shingle == "word":
        # str.split() splits on exactly the characters re's \s matches
        # (str.isspace), 4x faster than a regex substitution.
        text = " ".join(text.split())
    return text


def shingle_strings(text: str, rep: Representation) -> list[str]:
    """Reference (slow, pure Python) shingles of one text, with repeats.

    The vectorized path in :mod:`calib.sketches.shingles` must produce exactly the
    hashes of these strings; tests hold it to that.
    """
    norm = normalize(text, rep)
    if rep.shingle == "word":
        units = norm.split(" ") if norm else []
        joiner = " "
    else:
        units = list(norm)
        joiner = ""
    if not units:
        return []
    if len(units) < rep.k:
        return [joiner.join(units)]
    return [joiner.join(units[i:i + rep.k]) for i in range(len(units) - rep.k + 1)]
