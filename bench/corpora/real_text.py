"""Deterministic benchmark corpora built from real text shipped in the repository.

Source: ``data/base/base_texts.jsonl.gz`` (committed; 1,920 records, 18,790
paragraphs, 2.5 MB of Python stdlib / numpy / pandas / scipy docstring prose and
Debian licence texts). Nothing is read from installed packages, so the same
repository gives byte-identical documents on any machine.

A document is a random draw (without replacement inside the document) of
whole paragraphs, joined by blank lines, until a length target drawn
uniformly from [min_bytes, max_bytes] UTF-8 bytes is reached. Paragraphs are
reused across documents (45 MB of documents from 2.5 MB of text), so two
unrelated documents share on average ~0.1 paragraph: low but non-zero
similarity, as in a real corpus with some shared boilerplate.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

BASE = Path(__file__).resolve().parents[2] / "data" / "base" / "base_texts.jsonl.gz"


def paragraphs(path: Path = BASE) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        recs = [json.loads(line) for line in f]
    recs.sort(key=lambda r: r["base_id"])
    return [p for r in recs for p in r["paragraphs"] if p.strip()]


LICENCES = Path("/usr/share/common-licenses")


def licence_paragraphs(folder: Path = LICENCES) -> list[str]:
    """Paragraphs (blank-line separated) of the licence texts a Debian system
    ships in /usr/share/common-licenses (files only, sorted by name)."""
    out = []
    for f in sorted(p for p in folder.iterdir() if p.is_file()):
        text = f.read_text(encoding="utf-8", errors="replace")
        out += [p.strip("\n") for p in text.split("\n\n") if p.strip()]
    return out


def documents(n: int = 10_000, *, seed: int = 20240611, min_bytes: int = 3000,
              max_bytes: int = 6000, paras: list[str] | None = None) -> list[str]:
    paras = paragraphs() if paras is None else paras
    rng = random.Random(seed)
    docs = []
    for _ in range(n):
        target = rng.randint(min_bytes, max_bytes)
        parts, size, used = [], 0, set()
        while size < target:
            i = rng.randrange(len(paras))
            if i in used:
                continue
            used.add(i)
            parts.append(paras[i])
            size += len(paras[i].encode("utf-8")) + 2
        docs.append("\n\n".join(parts))
    return docs


def light_edit(text: str, rng: random.Random, vocab: list[str]) -> tuple[str, str]:
    """A near-duplicate of ``text`` and the kind of edit made.

    Kinds: ``words`` (1-5 % of words replaced by random vocabulary words),
    ``drop`` (one paragraph removed), ``swap`` (two paragraphs exchanged plus
    a few word replacements), ``format`` (case and whitespace changes, which
    the default normalization removes: an exact duplicate after normalizing).
    """
    kind = rng.choice(("words", "words", "drop", "swap", "format"))
    if kind == "format":
        return text.upper().replace("\n\n", "\n \n\t"), kind
    paras = text.split("\n\n")
    if kind == "drop" and len(paras) > 2:
        del paras[rng.randrange(len(paras))]
    elif kind == "swap" and len(paras) > 2:
        i, j = rng.sample(range(len(paras)), 2)
        paras[i], paras[j] = paras[j], paras[i]
    out = "\n\n".join(paras)
    frac = rng.uniform(0.01, 0.05) if kind == "words" else 0.01
    words = out.split(" ")
    for _ in range(max(1, int(frac * len(words)))):
        words[rng.randrange(len(words))] = rng.choice(vocab)
    return " ".join(words), kind


def documents_with_near_duplicates(n: int = 10_000, *, dup_fraction: float = 0.10,
                                   seed: int = 20240611) -> tuple[list[str], list[tuple[int, int, str]]]:
    """n documents of which ``dup_fraction`` are light edits of others.

    Returns (docs, planted) where planted lists (source index, copy index,
    edit kind). Copies are placed at random positions.
    """
    n_dup = int(round(n * dup_fraction))
    base = documents(n - n_dup, seed=seed)
    rng = random.Random(seed + 1)
    vocab = sorted({w for d in base[:200] for w in d.split() if w.isalpha()})
    sources = rng.sample(range(len(base)), n_dup)
    edits = [light_edit(base[s], rng, vocab) for s in sources]
    items = [(t, ("orig", i)) for i, t in enumerate(base)] + \
            [(t, ("dup", k)) for k, (t, _) in enumerate(edits)]
    rng.shuffle(items)
    docs = [t for t, _ in items]
    pos_orig = {}
    pos_dup = {}
    for p, (_, (tag, i)) in enumerate(items):
        (pos_orig if tag == "orig" else pos_dup)[i] = p
    planted = [(pos_orig[s], pos_dup[k], edits[k][1]) for k, s in enumerate(sources)]
    return docs, planted
