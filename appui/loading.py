"""Loading samples: the shipped one, a typed path, or uploaded files.

Uploaded bytes go into a private ``tempfile.TemporaryDirectory()`` (never
next to the code) under their original file names, and the loader reads them
from there; the Sample is fully in memory, so the folder is removed at once.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from calib.reading.sample import SAMPLE_DIR, Sample
from calib.reading.files import SampleError
from calib.reading.samples import load_sample
from calib.reading.tables import DOC_EXTENSIONS

from .paths import resolve_allowed


@dataclass(frozen=True)
class Loaded:
    sample: Sample
    content_hash: str
    source: str


def _stamp(path: Path) -> tuple:
    """Sizes and mtimes of the files a load would read (for the cache key)."""
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    return tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files)


@st.cache_resource(show_spinner=False, max_entries=8)
def _load_cached(path: str, stamp: tuple) -> Loaded:
    s = load_sample(path)
    return Loaded(s, s.content_hash(), path)


def load_shipped() -> Loaded:
    loaded = _load_cached(str(SAMPLE_DIR), _stamp(SAMPLE_DIR))
    return Loaded(loaded.sample, loaded.content_hash, "shipped sample (data/sample)")


def load_path(text: str) -> Loaded:
    """A sample from a typed path inside the allowed folders
    (:class:`~appui.paths.PathNotAllowed` or :class:`SampleError` otherwise)."""
    path = resolve_allowed(text)
    loaded = _load_cached(str(path), _stamp(path))
    return Loaded(loaded.sample, loaded.content_hash, str(path))


def _safe_name(name: str, what: str) -> str:
    base = Path(str(name).replace("\\", "/")).name
    if not base or base.startswith(".") or base in ("..",):
        raise SampleError(f"the {what} file name {name!r} is not usable", file=str(name))
    if not base.lower().endswith(DOC_EXTENSIONS):
        raise SampleError(f"the {what} file must end in one of {', '.join(DOC_EXTENSIONS)}", file=base)
    return base


def load_upload(docs: tuple[str, bytes], pairs: tuple[str, bytes] | None = None) -> Loaded:
    """A sample from uploaded files: ``docs`` = (file name, bytes) of the
    documents (or an inline-pairs JSONL), ``pairs`` = optional pair labels."""
    docs_name = _safe_name(docs[0], "documents")
    pairs_name = _safe_name(pairs[0], "pair-label") if pairs is not None else None
    h = hashlib.sha256(docs[1])
    if pairs is not None:
        h.update(pairs[1])
    with tempfile.TemporaryDirectory(prefix="calib-upload-") as tmp:
        d = Path(tmp) / "docs"
        d.mkdir()
        (d / docs_name).write_bytes(docs[1])
        pairs_path = None
        if pairs is not None:
            p = Path(tmp) / "pairs"
            p.mkdir()
            pairs_path = p / pairs_name
            pairs_path.write_bytes(pairs[1])
        sample = load_sample(d / docs_name, pairs_path, name=Path(docs_name).stem)
    source = f"upload {docs_name}" + (f" + {pairs_name}" if pairs_name else "")
    return Loaded(sample, sample.content_hash(), source)
