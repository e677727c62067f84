"""The workspace's steps kept on disk across runs: a re-run of a search on the same sample loads what it
computed before and computes only what changed.

Each entry lives under ``cache_dir()/workspace/<sample digest>/`` (:mod:`calib.base.diskstore`: atomic
writes, the cache trust rule, a size cap with the least recently used files removed first). Its key is

* the sample's digest: sha256 of its documents (ids and texts), of the boilerplate line corpus, of where
  the idf frequencies and stoplist come from as named, and of whether exact copies are collapsed;
* calib's code digest: sha256 of every ``calib/**/*.py`` (computed once per process), so a change of
  the code never reads what older code computed;
* the step's own key, the one the workspace caches by in memory (shingling fingerprint, signature key,
  join floor and measure, b, r, the pair budget where it stops a step);
* for a step that reads labels (a ceiling, a scored row): the labels' digest (every labeled pair,
  group and sampled duplicate, the ignored categories, a drawn set's design), and the budget of a
  ceiling (its scan stops by it).

A workspace whose idf frequencies come from a named corpus keeps nothing on disk (the corpus is not
read here to digest it). A step loaded is not counted in ``ws.computed``; ``ws.loaded`` counts it.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

import numpy as np

from calib.base.cache import cache_dir
from calib.base.diskstore import ArrayStore, cap_bytes, enabled
from calib.candidates.lsh import TooManyCandidates
from calib.verification.jaccard import TooManyPairs


@lru_cache(maxsize=1)
def code_digest() -> str:
    """sha256 of every ``calib/**/*.py`` (relative path and bytes), in path order."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).as_posix().encode()
        data = p.read_bytes()
        h.update(len(rel).to_bytes(8, "little") + rel + len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def _texts_digest(h, texts) -> None:
    for t in texts:
        b = str(t).encode("utf-8", "surrogatepass")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)


def sample_digest(ws) -> str:
    """What every label-free step of ``ws`` depends on beyond its own key (module docstring)."""
    h = hashlib.sha256(b"calib workspace 1\0")
    _texts_digest(h, ws.sample.ids)
    _texts_digest(h, ws.sample.texts)
    h.update(b"\0lines\0")
    if ws.line_corpus is not None:
        _texts_digest(h, ws.line_corpus)
    h.update(json.dumps([ws.collapse, sorted(ws.sources.items())]).encode())
    return h.hexdigest()


def labels_digest(ws) -> str:
    """sha256 of ``ws``'s labels (its truth, ignored categories and design); kept per truth object."""
    have = ws.__dict__.get("_labels_digest")
    if have is not None and have[0] is ws.truth:
        return have[1]
    t = ws.truth
    h = hashlib.sha256(b"calib labels 1\0")
    for a in (t.codes, t.labels, t.groups, t.pos_i, t.pos_j, t.ignored):
        h.update(b"-" if a is None else np.ascontiguousarray(a).tobytes() + f"{a.dtype.str}{a.shape}".encode())
    h.update(json.dumps([t.n, int(t.total_positive), list(t.ignored_categories), repr(ws.sample.design)]).encode())
    ws.__dict__["_labels_digest"] = (t, h.hexdigest())
    return ws.__dict__["_labels_digest"][1]


class Stored:
    """One workspace's entries on disk (:func:`of`)."""

    def __init__(self, ws):
        cap_bytes()  # a bad CALIB_CACHE_MAX is refused here, before any work
        self.store = ArrayStore(cache_dir() / "workspace", sample_digest(ws))

    @classmethod
    def of(cls, ws, disk: bool | None) -> "Stored | None":
        """The store of ``ws``: ``disk`` True (unless ``CALIB_CACHE=off``), None (only with
        ``CALIB_CACHE=on``) or False; never for idf frequencies of a named corpus."""
        on = enabled(default=False) if disk is None else bool(disk) and enabled()
        return cls(ws) if on and ws._frequencies_of is None else None

    def _name(self, kind: str, key: str) -> tuple[str, str]:
        full = f"{kind}\0{code_digest()}\0{key}"
        return f"{kind}-{hashlib.sha256(full.encode()).hexdigest()[:40]}.npz", full

    def get(self, kind: str, key) -> dict[str, np.ndarray] | None:
        name, full = self._name(kind, _text(key))
        return self.store.get(name, full)

    def put(self, kind: str, key, arrays: dict[str, np.ndarray]) -> None:
        name, full = self._name(kind, _text(key))
        self.store.put(name, full, arrays)


def kept(ws, kind: str, key, compute, to_arrays, from_arrays):
    """``compute()``, or what an earlier run stored for (kind, key); a computation is counted in
    ``ws.computed[kind]`` and stored, a load in ``ws.loaded[kind]``."""
    disk = ws._disk
    if disk is not None:
        arrays = disk.get(kind, key)
        if arrays is not None:
            try:
                value = from_arrays(arrays)
            except (KeyError, ValueError, TypeError):  # written by calib, yet not this step's arrays: recompute
                value = None
            if value is not None:
                ws.loaded[kind] += 1
                return value
    value = compute()
    ws.computed[kind] += 1
    if disk is not None:
        disk.put(kind, key, to_arrays(value))
    return value


def text_array(s: str) -> dict:
    return {"text": np.frombuffer(s.encode("utf-8"), dtype=np.uint8)}


def array_text(arrays: dict) -> str:
    return arrays["text"].tobytes().decode("utf-8")


def _plain(v):
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    raise TypeError(f"a results row holds {type(v).__name__}")


def row_arrays(row: dict) -> dict:
    """A scored row (scalars, text) as JSON bytes: floats round-trip exactly, NaN included."""
    return text_array(json.dumps(row, default=_plain))


def array_row(arrays: dict) -> dict:
    row = json.loads(array_text(arrays))
    if not isinstance(row, dict):
        raise ValueError("not a results row")
    return row


def _text(key) -> str:
    """A key as text: numpy scalars as the Python numbers they equal (an int64 b and an int b are one key)."""
    return json.dumps(key, sort_keys=True, default=lambda v: _plain(v) if isinstance(v, np.generic) else str(v))


def config_key(cfg) -> str:
    return _text(cfg.to_dict())


def row_key(ws, cfg, floors, max_pairs) -> tuple:
    """The key of ``cfg``'s row as :func:`calib.search.sweep.sweep_configs` scores it: the row reads the
    reference join from the lowest of ``floors`` that fits ``max_pairs``, and the labels (None: no store)."""
    if ws._disk is None:
        return None
    return (config_key(cfg), tuple(float(f) for f in floors), max_pairs, labels_digest(ws))


def load_signatures(ws, key: tuple, num_perm: int) -> np.ndarray | None:
    """The widest signature matrix stored for ``key`` (one file per key), when it has ``num_perm`` columns."""
    have = None if ws._disk is None else (ws._disk.get("signatures", key) or {}).get("sig")
    if have is None or have.ndim != 2 or len(have) != ws.sample.n or have.shape[1] < num_perm:
        return None
    ws.loaded["signatures"] += 1
    return have


def save_signatures(ws, key: tuple, sig: np.ndarray) -> None:
    """Count a signature matrix just computed and store it."""
    ws.computed["signatures"] += 1
    if ws._disk is not None:
        ws._disk.put("signatures", key, {"sig": sig})


# -- reference joins: one entry per (key, floor), an index of the floors stored, the joins stopped by the budget
def load_join(ws, key: tuple, floor: float) -> tuple[float, tuple] | None:
    """The stored join of ``key`` at the highest floor <= ``floor`` (its pairs hold every pair at ``floor``)."""
    if ws._disk is None:
        return None
    idx = ws._disk.get("join_floors", key)
    floors = [] if idx is None else sorted((float(f) for f in idx.get("floors", ()) if f <= floor), reverse=True)
    for f in floors:
        a = ws._disk.get("joins", key + (f,))
        if a is not None and {"i", "j", "s"} <= set(a) and len(a["i"]) == len(a["j"]) == len(a["s"]):
            ws.loaded["joins"] += 1
            return f, (a["i"], a["j"], a["s"])
    return None


def save_join(ws, key: tuple, floor: float, pairs: tuple) -> None:
    if ws._disk is None:
        return
    i, j, s = pairs
    ws._disk.put("joins", key + (float(floor),), {"i": i, "j": j, "s": s})
    idx = ws._disk.get("join_floors", key)
    floors = set() if idx is None else {float(f) for f in idx.get("floors", ())}
    ws._disk.put("join_floors", key, {"floors": np.array(sorted(floors | {float(floor)}))})


def load_over(ws, key: tuple) -> None:
    """Add the joins an earlier run found over its pair budget (TooManyPairs) to ``ws``'s, once per key."""
    seen = ws.__dict__.setdefault("_over_read", set())
    if ws._disk is None or key in seen:
        return
    seen.add(key)
    a = ws._disk.get("join_over", key)
    if a is None or not {"threshold", "found", "limit"} <= set(a):
        return
    have = ws._ref_over.setdefault(key, [])
    known = {(e.threshold, e.found, e.limit) for e in have}
    for t, found, limit in zip(a["threshold"].tolist(), a["found"].tolist(), a["limit"].tolist()):
        if (t, found, limit) not in known:
            have.append(TooManyPairs(t, found, limit))


def save_over(ws, key: tuple) -> None:
    if ws._disk is None:
        return
    have = ws._ref_over.get(key, [])
    ws._disk.put("join_over", key, {"threshold": np.array([float(e.threshold) for e in have]),
                                    "found": np.array([int(e.found) for e in have], np.int64),
                                    "limit": np.array([int(e.limit) for e in have], np.int64)})


def candidates_arrays(c) -> dict:
    """Candidate pairs (i, j), or the TooManyCandidates that stopped them, as arrays."""
    if isinstance(c, tuple):
        return {"i": c[0], "j": c[1]}
    return {"over": np.array([c.b, c.r, c.upper_bound, c.limit, c.distinct], np.int64)}


def arrays_candidates(a: dict):
    if "over" in a:
        b, r, upper, limit, distinct = (int(x) for x in a["over"])
        return TooManyCandidates(b, r, upper, limit, distinct)
    return a["i"], a["j"]


__all__ = ["Stored", "array_row", "code_digest", "config_key", "kept", "labels_digest", "row_arrays", "row_key",
           "sample_digest"]
