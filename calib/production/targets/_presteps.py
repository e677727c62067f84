"""calib's steps that run before a tool's MinHash: boilerplate stripping and the minimum length.

A step is *portable* to a target when its snippet can run it at the tool's own extension point (a
datatrove pipeline step, a function over the documents before NeMo Curator's or text-dedup's
MinHash, a filter in the datasketch and Milvus scripts) and the result is the same sets calib
evaluates:

* **stripping** (``Representation.strip_lines``): each line of the raw text whose normalized form
  (``normalize(line, REP)``) is in the exported ``stoplist.json`` is dropped with its line break,
  the other lines kept byte for byte (:meth:`calib.sketches.boilerplate.Stoplist.strip`). The file
  is checked against the sha256 that ``config.json`` beside it holds. Portable when the target is
  evaluated under the config's own normalization: the stoplist's lines are normalized that way.
* **minimum length** (``Config.min_shingles`` = m, rule ``exclude``): a document whose stripped text
  has 1 <= |distinct shingles| < m is left out of the dedup input and kept
  (:mod:`calib.verification.short`). The rule ``exact`` (an exact-text dedup of the short ones) is
  not shipped: it stays in the target's ``unsupported`` list.

:func:`prestep_source` is the snippet text: it needs :func:`calib.production.targets._source.shingling_source`
of the representation the target is evaluated under above it (``normalize``, ``shingles``, ``REP``).
"""

from __future__ import annotations

STRIP, SHORT = "strip_lines", "min_shingles"
PRE_STEPS = (STRIP, SHORT)  # what a snippet that ships prestep_source runs before the tool (a tool's pre_steps)


def hostable(config, projected):
    """``projected`` (a tool's projection of ``config``, pre-steps kept) without those its snippet cannot
    run as calib does: stripping when ``projected`` normalizes lines otherwise than ``config`` (the
    stoplist's lines are normalized as ``config``), the minimum length under the rule ``exact``."""
    from dataclasses import replace
    if projected is None:
        return None
    kw: dict = {}
    if projected.rep.strip_lines and _normalizes(projected.rep) != _normalizes(config.rep):
        kw["rep"] = projected.rep.with_(strip_lines=0.0)
    if projected.min_shingles and projected.short_docs != "exclude":
        kw["min_shingles"] = 0
    return replace(projected, **kw) if kw else projected


def kept(config, engine) -> tuple[str, ...]:
    """Which of ``config``'s pre-steps the tool's projection ``engine`` keeps: those its snippet runs."""
    if engine is None:
        return ()
    return tuple(k for k, on in ((STRIP, config.rep.strip_lines and engine.rep.strip_lines),
                                 (SHORT, config.min_shingles and engine.min_shingles)) if on)


def _normalizes(rep) -> tuple:
    """What :func:`calib.sketches.represent.normalize` reads of ``rep`` (word shingles always collapse
    whitespace): equal tuples normalize every line alike, so count and strip the same stoplist."""
    return rep.lowercase, rep.nfkc, rep.strip_punct, rep.collapse_ws or rep.shingle == "word"


def prestep_source(config, keep: tuple[str, ...]) -> str:
    """Python source defining ``prepare(text) -> (text, short)``: ``text`` stripped of the stoplist's
    lines when ``STRIP``, ``short`` true when it has 1 <= |shingles| < ``MIN_SHINGLES`` (0: off)."""
    strip = STRIP in keep
    m = config.min_shingles if SHORT in keep else 0
    return f'''# --- calib's pre-steps (calib.production.targets._presteps): boilerplate stripping, minimum length ---
import hashlib
import json
import os

STRIP = {strip!r}  # strip the lines of stoplist.json (normalized as REP) before shingling
MIN_SHINGLES = {m!r}  # documents with 1 <= distinct shingles < this are left out of the dedup input, kept (0: off)
# the export folder holding config.json and stoplist.json (default: this file's folder, else the current one)
EXPORT_DIR = os.environ.get("CALIB_EXPORT_DIR") or (
    os.path.dirname(os.path.abspath(__file__)) if os.path.isfile(globals().get("__file__") or "") else os.getcwd())
_STOPLIST = None


def stoplist():
    """The stoplist's normalized lines, read once; the file must have the sha256 config.json records."""
    global _STOPLIST
    if _STOPLIST is None:
        with open(os.path.join(EXPORT_DIR, "config.json"), encoding="utf-8") as fh:
            entry = json.load(fh)["stoplist"]
        path = os.path.join(EXPORT_DIR, entry["file"])
        with open(path, "rb") as fh:
            data = fh.read()
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise ValueError(f"{{path}}: sha256 differs from config.json's stoplist.sha256: not this export's stoplist")
        _STOPLIST = frozenset(line["text"] for line in json.loads(data)["lines"])
    return _STOPLIST


def strip_boilerplate(text):
    """text without its stoplist lines (each compared normalized); the other lines byte for byte."""
    if not STRIP:
        return text
    stop = stoplist()
    return "".join(line for line in text.splitlines(keepends=True) if normalize(line, REP) not in stop)


def prepare(text):
    """(the text the tool shingles, whether it is short: left out of the dedup input and kept)."""
    text = strip_boilerplate(text)
    if not MIN_SHINGLES:
        return text, False
    n = len(shingles(text))
    return text, 0 < n < MIN_SHINGLES
# --- end of calib's pre-steps ---
'''


def pre_steps(config, keep: tuple[str, ...]) -> dict:
    """The pre-steps a snippet runs, for targets.json's parameters."""
    return {"strip_boilerplate": None if "strip_lines" not in keep else
            f"lines of stoplist.json (sha256 in config.json), share {config.rep.strip_lines:g}",
            "min_shingles": config.min_shingles if "min_shingles" in keep else None}


def pre_steps_note(keep: tuple[str, ...]) -> str:
    words = [w for k, w in (("strip_lines", "boilerplate stripping"), ("min_shingles", "minimum length")) if k in keep]
    return f"; with calib's {' and '.join(words)} run before MinHash by the snippet" if words else ""
