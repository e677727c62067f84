"""Short person records with generated typos, swapped and missing fields: short records, where the default search must still pick well.

``person_records(entities, seed)`` builds ~70-character records (name, street
address, city, birth date, phone) over real words: names, streets and cities
are capitalized words of the base texts in ``data/base`` (months from the
stdlib's ``calendar``). Each entity has 1-3 records; a record after the first
is a copy with 1-2 typos (substitution, deletion, transposition, doubled
letter), and some have two fields swapped, the first and last name swapped or
one field missing. The ``group`` column is the oracle (same entity =
duplicate, every other pair labeled not a duplicate). Different entities
share names and cities now and then (drawn from finite lists), as real
records do. Deterministic for a given seed. Timed in ``bench/search/default_search.py``.
"""

from __future__ import annotations

import calendar
import gzip
import json
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from calib.reading.sample import Sample, from_frames

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "data" / "base" / "base_texts.jsonl.gz"
MONTHS = [m for m in calendar.month_name if m]
_WORD = re.compile(r"^[A-Z][a-z]{3,11}$")


@lru_cache(maxsize=1)
def _capitalized_words() -> tuple[str, ...]:
    """Distinct capitalized words of the base texts (sorted: the same list every run)."""
    words = set()
    with gzip.open(BASE, "rt", encoding="utf-8") as f:
        for line in f:
            for p in json.loads(line)["paragraphs"]:
                words.update(w for w in p.split() if _WORD.match(w))
    return tuple(sorted(words - set(MONTHS)))


def _typo(text: str, rng: np.random.Generator) -> str:
    """One keyboard-style error at a random letter position."""
    letters = [k for k, c in enumerate(text) if c.isalpha()]
    k = letters[rng.integers(len(letters))]
    kind = rng.integers(4)
    if kind == 0:  # substitution
        return text[:k] + "abcdefghijklmnopqrstuvwxyz"[rng.integers(26)] + text[k + 1:]
    if kind == 1:  # deletion
        return text[:k] + text[k + 1:]
    if kind == 2 and k + 1 < len(text):  # transposition
        return text[:k] + text[k + 1] + text[k] + text[k + 2:]
    return text[:k] + text[k] + text[k:]  # doubled letter


def _fields(words: tuple[str, ...], rng: np.random.Generator) -> list[str]:
    pick = lambda lo, hi: words[lo + rng.integers(hi - lo)]  # noqa: E731 - slices of the word list per field
    n = len(words)
    first, last = pick(0, n // 4), pick(n // 4, n // 2)
    street, city = pick(n // 2, 3 * n // 4), pick(3 * n // 4, 3 * n // 4 + 300)  # few cities: shared often
    return [f"{first} {last}", f"{rng.integers(1, 200)} {street} {('Street', 'Road', 'Lane', 'Avenue')[rng.integers(4)]}",
            city, f"born {rng.integers(1, 29)} {MONTHS[rng.integers(12)]} {rng.integers(1930, 2005)}",
            f"tel {rng.integers(100, 999)} {rng.integers(1000, 9999)}"]


def _variant(fields: list[str], rng: np.random.Generator) -> str:
    f = list(fields)
    if rng.random() < 0.3:  # first and last name swapped
        a, b = f[0].split(" ", 1)
        f[0] = f"{b}, {a}"
    if rng.random() < 0.2:  # one field missing (never the name)
        del f[1 + rng.integers(len(f) - 1)]
    if rng.random() < 0.2:  # two fields swapped
        a, b = 1 + rng.choice(len(f) - 1, 2, replace=False)
        f[a], f[b] = f[b], f[a]
    text = ", ".join(f)
    for _ in range(1 + rng.integers(2)):
        text = _typo(text, rng)
    return text


def person_records(entities: int = 1000, seed: int = 0, *, family_share: float = 0.4) -> Sample:
    """A labeled sample of short person records: ``entities`` people, ``family_share`` of them
    with 2-3 records (the first verbatim, the others variants), the rest with one."""
    rng = np.random.default_rng(seed)
    words = _capitalized_words()
    if len(words) < 2000:
        raise ValueError(f"{BASE}: {len(words)} capitalized words, 2000 needed")
    ids, texts, groups = [], [], []
    for e in range(entities):
        fields = _fields(words, rng)
        copies = 1 + (rng.integers(1, 3) if rng.random() < family_share else 0)
        for c in range(copies):
            ids.append(f"p{e}-{c}")
            texts.append(", ".join(fields) if c == 0 else _variant(fields, rng))
            groups.append(f"e{e}")
    order = rng.permutation(len(ids))
    docs = pd.DataFrame({"id": np.array(ids)[order], "text": np.array(texts, dtype=object)[order],
                         "group": np.array(groups)[order]})
    return from_frames(docs, name=f"person_records_{entities}_{seed}", slice_columns=())
