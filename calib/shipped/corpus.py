"""The shipped unlabeled corpus, ``data/corpus/docs.jsonl.gz``: how it is built.

A corpus to try ``calib apply`` and ``calib draw`` on without bringing one:
real documentation prose cut from the committed base file
(``data/base/base_texts.jsonl.gz``, docstrings only: licence texts may not be
changed, see data/README.md) into documents of a few paragraphs, plus a few
near-duplicates made by the sample builder's own edits (:mod:`calib.shipped.edits`: exact
copies, reformatting, light edits) and chains of successive small word edits whose
neighbours are near-duplicates while their ends are not. No labels and no
column says which document is which: it is meant to be calibrated on.
Deterministic: the same base file and seed give the same bytes.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import random
from pathlib import Path

from calib.base.atomic import write_bytes_atomic
from calib.reading.sample import REPO_ROOT
from calib.shipped.base_texts import BASE_FILE, BaseError, read_base
from calib.shipped.edits import _formatting_variant, _join, _light_edit, _replace_words

CORPUS_FILE = REPO_ROOT / "data" / "corpus" / "docs.jsonl.gz"
CORPUS_SEED = 20261203
FIELDS = ("id", "text", "source", "module")
_MIN_WORDS, _MAX_TARGET = 25, 400


def _words(paras: list[str]) -> int:
    return sum(len(p.split()) for p in paras)


def chunk_record(rec: dict, rng: random.Random) -> list[list[str]]:
    """A base record's paragraphs cut into consecutive documents, each grown
    to a length drawn log-uniform in 40-400 words; a short tail joins the
    document before it."""
    chunks: list[list[str]] = []
    current: list[str] = []
    target = math.exp(rng.uniform(math.log(40), math.log(_MAX_TARGET)))
    for p in rec["paragraphs"]:
        current.append(p)
        if _words(current) >= target:
            chunks.append(current)
            current = []
            target = math.exp(rng.uniform(math.log(40), math.log(_MAX_TARGET)))
    if current:
        if chunks and _words(current) < _MIN_WORDS:
            chunks[-1] = chunks[-1] + current
        else:
            chunks.append(current)
    return [c for c in chunks if _words(c) >= _MIN_WORDS]


def build_corpus(out=CORPUS_FILE, *, base=BASE_FILE, seed: int = CORPUS_SEED, originals: int = 2750,
                 exact: int = 60, formatting: int = 60, light: int = 60, chains: int = 25,
                 chain_length: int = 4, chain_step: float = 0.04) -> dict:
    """Write the corpus as gzipped JSONL (``id``, ``text``, ``source``,
    ``module``) and return its counts. ``chains`` chains of ``chain_length``
    documents, each a copy of the one before with ``chain_step`` of its words
    replaced: char 5-gram J median 0.87 between neighbours, 0.74 two or three
    steps apart (data/README.md)."""
    rng = random.Random(seed)
    records = [r for r in read_base(base) if r["domain"] != "licenses"]  # licences: verbatim only
    chunks = [(r, c) for r in records for c in chunk_record(r, rng)]
    if len(chunks) < originals:
        raise BaseError(f"the base file gives {len(chunks)} documents, fewer than originals={originals}")
    kept = rng.sample(chunks, originals)
    vocab = sorted({w for _, c in kept for p in c for w in p.split() if w.isalpha() and w.islower() and len(w) > 3})
    docs = [(r, _join(c)) for r, c in kept]
    long_enough = [k for k, (_, c) in enumerate(kept) if _words(c) >= 60]
    need = exact + formatting + light + chains
    if len(long_enough) < need:
        raise BaseError(f"only {len(long_enough)} documents of 60+ words for {need} near-duplicate families")
    sources = rng.sample(long_enough, need)
    for n, k in enumerate(sources):
        rec, paras = kept[k]
        if n < exact:
            docs.append((rec, _join(paras)))
        elif n < exact + formatting:
            docs.append((rec, _formatting_variant(paras, rng)))
        elif n < exact + formatting + light:
            docs.append((rec, _join(_light_edit(paras, rng, vocab))))
        else:
            for _ in range(chain_length - 1):
                paras = _replace_words(paras, rng, chain_step, vocab)
                docs.append((rec, _join(paras)))
    rng.shuffle(docs)
    lines = [json.dumps({"id": f"c{n:05d}", "text": text, "source": rec["domain"], "module": rec["module"]},
                        ensure_ascii=False) for n, (rec, text) in enumerate(docs)]
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="") as gz:
        gz.write(("\n".join(lines) + "\n").encode("utf-8"))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(out, buf.getvalue())
    return {"path": str(out), "documents": len(docs), "originals": originals, "exact_copies": exact,
            "formatting": formatting, "light_edits": light, "chains": chains,
            "chained_documents": chains * (chain_length - 1), "bytes": len(buf.getvalue())}
