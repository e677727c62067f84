"""The shipped calibration sample: how ``data/sample`` is built.

:func:`calib.shipped.base_texts.extract_base` collects real prose once (docstrings of
installed packages, licence texts) into ``data/base/base_texts.jsonl.gz``; ``build_sample``
derives the labeled sample from that file only, deterministically (same base
and seed, same bytes): originals and planted near-duplicates per category,
and edit families (chains and trees of successive edits that chain at
J >= 0.8), written as docs.jsonl and pairs.csv. ``calib samples build|extract-base|summary``
runs :func:`calib.cli.samples.main`. The Sample type is :mod:`calib.reading.sample`, the loader :mod:`calib.reading.samples`;
the edits that plant near-duplicates are :mod:`calib.shipped.edits`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from calib.sketches.represent import Representation, shingle_strings
from calib.reading.sample import NOT_JUDGED, SAMPLE_DIR, Sample, from_frames
from calib.reading.writing import pair_frame, write_frame
from calib.shipped.base_texts import BASE_FILE, BaseError, read_base
from calib.shipped.edits import (_boilerplate, _dictionary_translate, _excerpt, _formatting_variant, _heavy_edit,
    _join, _light_edit, _reorder, _sentences, _transliterate, _truncate_words, _words)


# ---------------------------------------------------------------------------
# Building the shipped calibration sample from the committed base file
# ---------------------------------------------------------------------------

CATEGORIES = ("exact", "formatting", "boilerplate", "partial", "light_edit", "reordered",
              "translation", "same_topic", "near_threshold", "chain", "edit_tree")
FAMILY_CATEGORIES = ("chain", "edit_tree")
DUPLICATE_CATEGORIES = ("exact", "formatting", "light_edit", "reordered", "near_threshold") + FAMILY_CATEGORIES
# Families made by successive edits chain at exact Jaccard >= 0.8 under both the recommended
# representation (char 5-grams) and the default one (word 5-grams, what the app starts with): each
# edit stays at or above EDGE_JACCARD[0] to its parent (below [1], so it is a real change) and every
# other pair of the family lies below FAMILY_MAX_OTHER, so only chaining joins them. Edits replace
# whole sentences, which moves both representations alike (a replaced word costs five word 5-grams).
FAMILY_REPS = (Representation(shingle="char", k=5), Representation(shingle="word", k=5))
EDGE_JACCARD = (0.85, 0.92)
FAMILY_MAX_OTHER = 0.8
BUILD_SEED = 20240611

def _length_bucket(text: str) -> str:
    n = _words(text)
    return "short" if n < 100 else "medium" if n < 500 else "long"


def _topic(rec: dict) -> str:
    parts = rec["module"].split(".")
    return parts[0] if rec["domain"] in ("stdlib", "licenses") else ".".join(parts[:2])


class _Builder:
    """Draws base records without replacement and collects documents and pairs."""

    def __init__(self, base: list[dict], seed: int) -> None:
        import random
        self.rng = random.Random(seed)
        self.pool = list(base)
        self.records = len(base)
        self.rng.shuffle(self.pool)
        self.docs: list[dict] = []
        self.pairs: list[tuple[int, int, bool, str]] = []
        self.vocab = sorted({w for r in base[:400] for p in r["paragraphs"] for w in p.split()
                             if w.isalpha() and w.islower() and len(w) > 3})

    def take(self, ok) -> dict:
        for k, r in enumerate(self.pool):
            if ok(r):
                return self.pool.pop(k)
        raise BaseError(f"base file too small for the requested sample ({self.records:,} records)")

    def doc(self, rec: dict, text: str, variant: str, language: str = "en") -> int:
        self.docs.append({"text": text, "domain": rec["domain"], "language": language, "variant": variant})
        return len(self.docs) - 1

    def pair(self, a: int, b: int, dup: bool, category: str) -> None:
        self.pairs.append((a, b, dup, category))

    def family(self, rec: dict, donor: dict, parents: list[int | None], category: str) -> bool:
        """Documents made from ``rec`` by successive edits: member k is an edit
        of member ``parents[k]`` (None: the original); the new sentences come
        from ``donor`` (no document). Every (parent, child) is a labeled
        duplicate pair; all members share one group (assigned in _finish from
        the labeled pairs' components). False, and nothing added, when some
        edit cannot be made within the bounds (a text of repeated sentences)."""
        fresh = list(dict.fromkeys(x for p in _sentences(donor["paragraphs"]) for x in p if 8 <= _words(x) <= 30))
        texts: list[list[list[str]]] = []
        sets: list[list[set[str]]] = []
        for parent in parents:
            if parent is None:
                sents = _sentences(rec["paragraphs"])
            else:
                others = [s_ for m, s_ in enumerate(sets) if m != parent]
                sents = self._edit_of(texts[parent], sets[parent], others, fresh)
                if sents is None:
                    return False
            texts.append(sents)
            sets.append(_family_sets(sents))
        first = len(self.docs)
        for sents, parent in zip(texts, parents):
            self.doc(rec, _join([" ".join(p) for p in sents]), "original" if parent is None else "chain_edit")
        for k, parent in enumerate(parents):
            if parent is not None:
                self.pair(first + parent, first + k, True, category)
        return True

    def _edit_of(self, sents: list[list[str]], parent: list[set[str]], others: list[list[set[str]]],
                 fresh: list[str]) -> list[list[str]] | None:
        """``sents`` with a run of 1-3 sentences of one paragraph replaced by as many
        sentences of ``fresh`` (one run: word 5-grams across its two ends change too,
        so few ends keep the word and char measures close), within EDGE_JACCARD of
        its parent and below FAMILY_MAX_OTHER to every other member so far, under
        each of FAMILY_REPS; None after 200 tries."""
        slots = [(a, b) for a, p in enumerate(sents) for b in range(len(p))]
        for _ in range(200):
            out = [list(p) for p in sents]
            a, b = self.rng.choice(slots)
            n = min(self.rng.randint(1, 3), len(out[a]) - b, len(fresh))
            start = self.rng.randrange(len(fresh) - n + 1)
            out[a][b:b + n] = fresh[start:start + n]
            got = _family_sets(out)
            if all(EDGE_JACCARD[0] <= _jaccard(g, p) < EDGE_JACCARD[1] for g, p in zip(got, parent)) and \
                    all(_jaccard(g, o) < FAMILY_MAX_OTHER for other in others for g, o in zip(got, other)):
                del fresh[start:start + n]
                return out
        return None

    def derived(self, category: str, ok, make, variant: str, dup: bool, language: str = "en") -> None:
        rec = self.take(ok)
        a = self.doc(rec, _join(rec["paragraphs"]), "original")
        text = make(rec["paragraphs"])
        b = self.doc(rec, text, variant, language)
        self.pair(a, b, dup, category)


def _jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def _family_sets(sents: list[list[str]]) -> list[set[str]]:
    """The text's shingle set under each of FAMILY_REPS (the reference rules)."""
    text = _join([" ".join(p) for p in sents])
    return [set(shingle_strings(text, rep)) for rep in FAMILY_REPS]


def _add_families(b: _Builder, chains: int, trees: int) -> None:
    """Chains A->B->C->... (4-6 documents, only neighbours above the threshold)
    and edit trees (an original, 2-3 edits of it, 1-2 edits of each edit). A
    base text on which a family cannot be built is set aside (not in the sample)."""
    ok = lambda r: _is_code(r) and 200 <= _n_words(r) <= 800 and _n_sentences(r) >= 12  # noqa: E731 - small steps
    donor = lambda r: _is_code(r) and _n_sentences(r) >= 30  # noqa: E731 - enough new sentences for a family
    shapes: list[tuple[list[int | None], str]] = []
    for _ in range(chains):
        shapes.append(([None] + list(range(b.rng.randint(4, 6) - 1)), "chain"))
    for _ in range(trees):
        parents: list[int | None] = [None]
        for _ in range(b.rng.randint(2, 3)):
            child = len(parents)
            parents.append(0)
            parents += [child] * b.rng.randint(1, 2)
        shapes.append((parents, "edit_tree"))
    for parents, category in shapes:
        while not b.family(b.take(ok), b.take(donor), parents, category):
            pass


def _n_sentences(r: dict) -> int:
    return sum(map(len, _sentences(r["paragraphs"])))


def _is_code(r: dict) -> bool:
    return r["domain"] != "licenses"


def _n_words(r: dict) -> int:
    return sum(map(_words, r["paragraphs"]))


def _add_category_pairs(b: _Builder, n: int, n_near: int) -> None:
    rng, vocab = b.rng, b.vocab
    for _ in range(n):  # constrained categories first
        b.derived("partial", lambda r: _is_code(r) and _n_words(r) >= 250,
                  lambda p: _join(_excerpt(p, rng)), "excerpt", False)
        b.derived("reordered", lambda r: _is_code(r) and len(r["paragraphs"]) >= 3 and _n_words(r) >= 60,
                  lambda p: _join(_reorder(p, rng)), "reordered", True)
        _same_topic_pair(b)
    for _ in range(n):
        b.derived("exact", lambda r: True, _join, "exact_copy", True)
        b.derived("formatting", _is_code, lambda p: _formatting_variant(p, rng), "formatting", True)
        b.derived("light_edit", lambda r: _is_code(r) and _n_words(r) >= 60,
                  lambda p: _join(_light_edit(p, rng, vocab)), "light_edit", True)
        if rng.random() < 0.5:
            b.derived("translation", _is_code, lambda p: _transliterate(_join(p)), "transliterated", False,
                      "en-Cyrl")
        else:
            b.derived("translation", _is_code, lambda p: _dictionary_translate(_join(p)), "dictionary_translation",
                      False, "de")
        _boilerplate_pair(b)
    for _ in range(n_near):
        b.derived("near_threshold", lambda r: _is_code(r) and _n_words(r) >= 80,
                  lambda p: _join(_heavy_edit(p, rng, vocab)), "heavy_edit", True)


def _same_topic_pair(b: _Builder) -> None:
    first = b.take(lambda r: sum(_topic(o) == _topic(r) for o in b.pool) >= 2)
    second = b.take(lambda r: _topic(r) == _topic(first))
    b.pair(b.doc(first, _join(first["paragraphs"]), "original"),
           b.doc(second, _join(second["paragraphs"]), "original"), False, "same_topic")


def _boilerplate_pair(b: _Builder) -> None:
    header, footer = _boilerplate(b.rng)
    ids = []
    for _ in range(2):
        rec = b.take(_is_code)
        body = _join(_truncate_words(rec["paragraphs"], b.rng.randint(30, 110)))
        ids.append(b.doc(rec, f"{header}\n\n{body}\n\n{footer}", "boilerplate"))
    b.pair(ids[0], ids[1], False, "boilerplate")


def build_sample(out=SAMPLE_DIR, *, base=BASE_FILE, seed: int = BUILD_SEED, per_category: int = 64,
                 near_threshold: int = 32, chains: int = 8, trees: int = 3,
                 singletons: int | None = None) -> Sample:
    """Derive the calibration sample from the base file only (deterministic:
    same base and seed, same bytes) and write docs.jsonl and pairs.csv."""
    b = _Builder(read_base(base), seed)
    _add_category_pairs(b, per_category, near_threshold)
    _add_families(b, chains, trees)
    rest = b.pool if singletons is None else b.pool[:singletons]
    for rec in rest:
        b.doc(rec, _join(rec["paragraphs"]), "original")
    docs, pairs = _finish(b)
    sample = from_frames(_with_not_judged(docs, b.vocab, seed), pairs, name="calib-sample")
    write_docs_pairs(sample, out)
    return sample


# A batch nobody has judged (group "?", calib.reading.sample.NOT_JUDGED): copies of judged singletons
# made by the category edits, appended after the labeled sample, so that the recommended configuration proposes
# removals without a sample label (the Review page's queue) as on a partly labeled real sample.
NOT_JUDGED_COPIES = (("exact_copy", 8), ("formatting", 8), ("light_edit", 8), ("heavy_edit", 6), ("excerpt", 6))


def _with_not_judged(docs: pd.DataFrame, vocab: list[str], seed: int) -> pd.DataFrame:
    """``docs`` with NOT_JUDGED_COPIES appended (ids continue the numbering): each an
    edit of a different document without a duplicate (group NA, not a licence, 60+
    words; 250+ for an excerpt), drawn with its own seeded stream so that the
    labeled documents and pairs are exactly those built without it."""
    import random
    rng = random.Random(f"{seed}-not-judged")
    words = docs["text"].map(_words)
    alone = docs["group"].isna() & (docs["variant"] == "original") & (docs["domain"] != "licenses") & (words >= 60)
    make = {"exact_copy": _join, "formatting": lambda p: _formatting_variant(p, rng),
            "light_edit": lambda p: _join(_light_edit(p, rng, vocab)),
            "heavy_edit": lambda p: _join(_heavy_edit(p, rng, vocab)), "excerpt": lambda p: _join(_excerpt(p, rng))}
    rows, used = [], set()
    for variant, count in NOT_JUDGED_COPIES:
        pool = [k for k in docs.index[alone & (words >= (250 if variant == "excerpt" else 60))] if k not in used]
        for k in rng.sample(pool, count):
            used.add(k)
            src = docs.loc[k]
            text = make[variant](src["text"].split("\n\n"))
            rows.append({"id": f"doc{len(docs) + len(rows):05d}", "text": text, "group": NOT_JUDGED,
                         "domain": src["domain"], "language": src["language"], "variant": variant,
                         "length": _length_bucket(text)})
    out = pd.concat([docs, pd.DataFrame(rows, columns=docs.columns)], ignore_index=True).astype("str")
    out["group"] = pd.concat([docs["group"], pd.Series([NOT_JUDGED] * len(rows))], ignore_index=True).astype("str")
    return out


def _finish(b: _Builder) -> tuple[pd.DataFrame, pd.DataFrame]:
    order = list(range(len(b.docs)))
    b.rng.shuffle(order)
    rank = {old: new for new, old in enumerate(order)}
    docs = pd.DataFrame([b.docs[k] for k in order])
    docs.insert(0, "id", [f"doc{k:05d}" for k in range(len(docs))])
    pairs = sorted((min(rank[a], rank[c]), max(rank[a], rank[c]), d, cat) for a, c, d, cat in b.pairs)
    group = _duplicate_components(len(docs), pairs)
    docs.insert(2, "group", pd.Series(group, dtype="str"))
    docs["length"] = docs["text"].map(_length_bucket)
    docs = docs.astype("str")
    docs["group"] = pd.Series(group, dtype="str")
    ids = docs["id"].tolist()
    pf = pd.DataFrame({"id_a": [ids[p[0]] for p in pairs], "id_b": [ids[p[1]] for p in pairs],
                       "label": ["duplicate" if p[2] else "not_duplicate" for p in pairs],
                       "category": [p[3] for p in pairs]}).sort_values(["category", "id_a", "id_b"], kind="stable")
    return docs, pf


def _duplicate_components(n: int, pairs: list[tuple]) -> list:
    """Group per document: the connected component of the duplicate pairs, named
    after its first row (``g00042``); NA for a document without a duplicate."""
    import numpy as np
    from scipy import sparse
    from scipy.sparse import csgraph
    dup = [(i, j) for i, j, is_dup, _ in pairs if is_dup]
    i, j = (np.array(c, dtype=np.int64) for c in zip(*dup))
    comp = csgraph.connected_components(sparse.coo_matrix((np.ones(len(i)), (i, j)), shape=(n, n)),
                                        directed=False)[1]
    first = np.full(comp.max() + 1, n)
    np.minimum.at(first, comp, np.arange(n))
    linked = np.zeros(n, dtype=bool)
    linked[i] = linked[j] = True
    return [f"g{first[comp[k]]:05d}" if linked[k] else pd.NA for k in range(n)]


def write_docs_pairs(sample: Sample, out) -> None:
    """The shipped layout: docs.jsonl and pairs.csv."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_frame(sample.docs, out / "docs.jsonl", "jsonl")
    write_frame(pair_frame(sample), out / "pairs.csv", "csv")
