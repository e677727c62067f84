"""The shipped calibration sample: how ``data/sample`` is built.

``extract_base`` collects real prose once (docstrings of installed packages,
licence texts) into ``data/base/base_texts.jsonl.gz``; ``build_sample``
derives the labeled sample from that file only, deterministically (same base
and seed, same bytes): originals and planted near-duplicates per category,
and edit families (chains and trees of successive edits that chain at
J >= 0.8), written as docs.jsonl and pairs.csv. ``calib samples build|extract-base|summary``
runs :func:`main`. The Sample type and the loaders are in :mod:`calib.samples`.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd

from calib.sketches.represent import Representation, shingle_strings
from calib.reading.sample import NOT_JUDGED, REPO_ROOT, SAMPLE_DIR, Sample, from_frames, summary
from calib.reading.samples import SampleError, load_sample
from calib.reading.writing import pair_frame, write_frame as _write_frame


# ---------------------------------------------------------------------------
# Base text extraction (run once; output committed as data/base/base_texts.jsonl.gz)
# ---------------------------------------------------------------------------

BASE_FILE = REPO_ROOT / "data" / "base" / "base_texts.jsonl.gz"
_PKG_LICENCES = {"stdlib": "PSF-2.0", "numpy": "BSD-3-Clause", "pandas": "BSD-3-Clause", "scipy": "BSD-3-Clause"}
_LICENSE_FILES = ("Apache-2.0", "Artistic", "BSD", "CC0-1.0", "GFDL-1.3", "GPL-2", "GPL-3", "LGPL-2.1",
                  "LGPL-3", "MPL-2.0")
_SKIP_DIRS = {"test", "tests", "testing", "idle_test", "site-packages", "_vendor", "vendored", "_vendored",
              "__pycache__", "lib2to3", "turtledemo", "_build_utils", "tools"}
_SECTION_RE = re.compile(r"^\s*[-=~^]{3,}\s*$")
_CODEISH_RE = re.compile(r"(>>>|\.\.\.\s|[{}]|%\(|::|^\s*[:@#$]|\w+\(.*\)\s*$|=\s*\w+\()")
_MAX_WORDS = 1500


def _clean_paragraphs(doc: str) -> list[str]:
    """Prose paragraphs of a docstring: code, doctests, headings and
    reST/numpydoc markup dropped, lines joined with single spaces."""
    paras, cur = [], []
    lines = doc.splitlines() + [""]
    for k, line in enumerate(lines):
        nxt = lines[k + 1] if k + 1 < len(lines) else ""
        if not line.strip() or _SECTION_RE.match(line):
            if cur:
                paras.append(" ".join(cur))
            cur = []
            continue
        if _SECTION_RE.match(nxt):  # a numpydoc section heading
            continue
        cur.append(line.strip())
    out = []
    for p in paras:
        p = re.sub(r"\s+", " ", re.sub(r"[`*]+", "", re.sub(r":\w+:`~?([^`]+)`", r"\1", p))).strip()
        words = p.split()
        if len(words) < 6 or _CODEISH_RE.search(p):
            continue
        letters = sum(ch.isalpha() or ch.isspace() for ch in p)
        if letters / len(p) < 0.85 or not p[0].isupper() or p[-1] not in ".:;!?)":
            continue
        out.append(p)
    return out


def _limit_words(paras: list[str], limit: int = _MAX_WORDS) -> list[str]:
    out, n = [], 0
    for p in paras:
        w = len(p.split())
        if n + w > limit:
            break
        out.append(p)
        n += w
    return out


def _docstrings_of(path: Path) -> list[tuple[str, str]]:
    """(qualified object name, docstring) for the module, classes and functions
    of one source file, read with ast (nothing is imported or executed)."""
    import ast
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return []
    found = []
    mod = ast.get_docstring(tree)
    if mod:
        found.append(("", mod))
    for node in ast.walk(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            d = ast.get_docstring(node)
            if d:
                found.append((node.name, d))
    return found


def _package_sources() -> list[tuple[str, str, Path, Path]]:
    """(package, version, root, file) for stdlib and numpy/pandas/scipy sources, sorted."""
    import importlib.metadata as md
    import sysconfig
    roots = [("stdlib", ".".join(map(str, __import__("sys").version_info[:3])), Path(sysconfig.get_paths()["stdlib"]))]
    for pkg in ("numpy", "pandas", "scipy"):
        spec = __import__("importlib.util").util.find_spec(pkg)
        if spec and spec.origin:
            roots.append((pkg, md.version(pkg), Path(spec.origin).parent))
    out = []
    for pkg, ver, root in roots:
        base = root if pkg == "stdlib" else root.parent
        for f in sorted(root.rglob("*.py")):
            rel = f.relative_to(root)
            if _SKIP_DIRS & set(rel.parts[:-1]) or f.name.startswith("test_") or "config-3" in str(rel):
                continue
            out.append((pkg, ver, base, f))
    return out


def _code_records(seed: int = 7) -> list[dict]:
    """Documentation "pages": the docstrings of one source file, taken in order
    and joined until a length target (drawn log-uniformly, 30 to 1,500 words)
    is reached, so lengths vary like real documents."""
    import random
    rng = random.Random(seed)
    recs = []
    for pkg, ver, base, f in _package_sources():
        module = ".".join(f.relative_to(base).with_suffix("").parts).removesuffix(".__init__")
        page, names, target = [], [], _page_target(rng)
        for obj, doc in _docstrings_of(f) + [(None, None)]:
            if obj is not None:
                paras = _clean_paragraphs(doc)
                if paras:
                    page += paras
                    names.append(obj or "(module)")
            words = sum(len(p.split()) for p in page)
            if page and (obj is None or words >= target):
                page = _limit_words(page)
                if sum(len(p.split()) for p in page) >= 25:
                    recs.append({"domain": pkg, "package": pkg, "version": ver, "module": module,
                                 "object": ", ".join(names[:6]) + (", ..." if len(names) > 6 else ""),
                                 "licence": _PKG_LICENCES[pkg], "paragraphs": page})
                page, names, target = [], [], _page_target(rng)
    return recs


def _page_target(rng) -> int:
    return 25 if rng.random() < 0.45 else int(math.exp(rng.uniform(math.log(80), math.log(1500))))


def _license_records(root: Path = Path("/usr/share/common-licenses")) -> list[dict]:
    """Licence texts cut into chunks of whole paragraphs (about 150-900 words)."""
    recs = []
    for name in _LICENSE_FILES:
        f = root / name
        if not f.is_file():
            continue
        paras = [re.sub(r"\s+", " ", p).strip() for p in re.split(r"\n\s*\n", f.read_text(encoding="utf-8"))]
        paras = [p for p in paras if len(p.split()) >= 4]
        chunk, part, target = [], 0, 150 + (len(name) * 97) % 700
        for p in paras + [None]:
            if p is not None:
                chunk.append(p)
            words = sum(len(c.split()) for c in chunk)
            if chunk and (p is None or words >= target):
                if words >= 25:
                    part += 1
                    recs.append({"domain": "licenses", "package": "common-licenses", "version": "",
                                 "module": name, "object": f"part{part}", "licence": f"{name} (verbatim excerpt)",
                                 "paragraphs": chunk})
                chunk, target = [], 150 + (target * 7919) % 750
    return recs


def _shingles(text: str, k: int = 5) -> set[str]:
    w = re.sub(r"[^\w\s]", " ", text.lower()).split()
    return {" ".join(w[i:i + k]) for i in range(max(1, len(w) - k + 1))}


def _drop_overlapping(recs: list[dict], max_seen: float = 0.1) -> list[dict]:
    """Keep a record only if at most ``max_seen`` of its word 5-grams occur in
    records kept before it: the base has no near-duplicates or containments."""
    seen: set[str] = set()
    kept = []
    for r in recs:
        sh = _shingles("\n\n".join(r["paragraphs"]))
        if len(sh & seen) <= max_seen * len(sh):
            kept.append(r)
            seen |= sh
    return kept


def extract_base(out=BASE_FILE, *, per_domain: int = 1400) -> Path:
    """Extract real base text (docstrings, licence texts) with provenance into a
    gzipped JSONL file. Depends on the installed versions: run once, commit."""
    import gzip
    recs = _license_records() + _code_records()
    recs = _drop_overlapping(recs)
    chosen = []
    for dom in sorted({r["domain"] for r in recs}):
        rs = [r for r in recs if r["domain"] == dom]
        step = max(1.0, len(rs) / per_domain)
        chosen += [rs[int(k * step)] for k in range(min(per_domain, len(rs)))]
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for n, r in enumerate(chosen):
        rec = {"base_id": f"b{n:05d}", **r}
        lines.append(json.dumps(rec, ensure_ascii=False, sort_keys=True))
    with open(out, "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0, filename="") as gz:
        gz.write(("\n".join(lines) + "\n").encode("utf-8"))
    return out


def read_base(path=BASE_FILE) -> list[dict]:
    """The committed base records (sorted by base_id)."""
    import gzip
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        recs = [json.loads(line) for line in fh if line.strip()]
    return sorted(recs, key=lambda r: r["base_id"])


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

_NAV = ("Home", "Docs", "API Reference", "Tutorials", "Download", "Community", "Blog", "News",
        "Contribute", "Support", "About", "Search", "Changelog", "FAQ", "Release notes", "Forum")
_SITES = ("Acme Developer Network", "OpenDocs Hub", "Reference Mirror", "CodeWiki", "The Library Portal",
          "DevNotes Archive", "Manual Pages Online", "Tech Knowledge Base")
_FOOTERS = (
    "Was this page helpful? Send us your feedback. Found a typo or an error on this page? Report an issue "
    "on our tracker and help us improve the documentation for everyone.",
    "Copyright {year} {site}. All rights reserved. Content is mirrored from upstream documentation and may be "
    "out of date. Privacy policy. Terms of use. Cookie settings. Contact us.",
    "This site uses cookies to analyse traffic and to remember your preferences. By continuing to browse the "
    "site you agree to our use of cookies. Learn more in our privacy statement.",
    "Subscribe to our newsletter to receive monthly updates about new releases, tutorials and community "
    "events. We never share your address and you can unsubscribe at any time.",
)
_DE = dict(pair.split(":") for pair in (
    "the:die a:ein an:ein of:von to:zu and:und in:in is:ist are:sind be:sein for:für this:dieses "
    "that:dass with:mit not:nicht or:oder by:durch as:als if:wenn it:es on:auf from:aus at:bei "
    "which:welche can:kann will:wird all:alle each:jede one:eins two:zwei new:neue value:Wert "
    "values:Werte function:Funktion functions:Funktionen return:zurückgeben returns:gibt "
    "returned:zurückgegeben object:Objekt objects:Objekte file:Datei files:Dateien name:Name "
    "number:Zahl list:Liste string:Zeichenkette array:Feld arrays:Felder data:Daten default:Standard "
    "used:verwendet use:verwenden given:gegeben must:muss should:sollte may:darf only:nur also:auch "
    "other:andere first:erste last:letzte when:wenn then:dann than:als more:mehr no:kein "
    "true:wahr false:falsch error:Fehler type:Typ method:Methode class:Klasse module:Modul "
    "input:Eingabe output:Ausgabe time:Zeit size:Größe length:Länge key:Schlüssel keys:Schlüssel "
    "set:Menge sets:Mengen see:siehe example:Beispiel same:gleiche where:wo has:hat have:haben "
    "was:war been:gewesen into:in its:seine any:jeder there:dort these:diese such:solche "
    "but:aber how:wie what:was software:Software license:Lizenz program:Programm work:Werk "
    "copy:Kopie code:Code source:Quelle version:Version rights:Rechte terms:Bedingungen "
    "without:ohne under:unter you:Sie your:Ihr we:wir our:unser them:sie they:sie".split()))
_TRANSLIT = {"sh": "ш", "ch": "ч", "zh": "ж", "ts": "ц", "ya": "я", "yu": "ю", "a": "а", "b": "б",
             "c": "к", "d": "д", "e": "е", "f": "ф", "g": "г", "h": "х", "i": "и", "j": "дж", "k": "к",
             "l": "л", "m": "м", "n": "н", "o": "о", "p": "п", "q": "к", "r": "р", "s": "с", "t": "т",
             "u": "у", "v": "в", "w": "в", "x": "кс", "y": "ы", "z": "з"}
_TRANSLIT_RE = re.compile("|".join(sorted(_TRANSLIT, key=len, reverse=True)), re.IGNORECASE)
_SENT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_FILLER = ("In practice this is rarely needed.", "See the user guide for a longer discussion.",
           "This behaviour may change in a future release.", "Most users will not need to change this.",
           "The result is computed lazily when first requested.", "Thread safety is not guaranteed here.")


def _words(text: str) -> int:
    return len(text.split())


def _join(paras: list[str]) -> str:
    return "\n\n".join(paras)


def _sentences(paras: list[str]) -> list[list[str]]:
    return [_SENT_RE.split(p) for p in paras]


def _transliterate(text: str) -> str:
    """English written in Cyrillic letters (deterministic letter mapping)."""
    def sub(m):
        t = _TRANSLIT[m.group(0).lower()]
        return t.capitalize() if m.group(0)[0].isupper() else t
    return _TRANSLIT_RE.sub(sub, text)


def _dictionary_translate(text: str) -> str:
    """Word-by-word German for the words of a small dictionary; other words stay."""
    def sub(m):
        w = m.group(0)
        t = _DE.get(w.lower())
        return w if t is None else (t[0].upper() + t[1:] if w[0].isupper() else t)
    return re.sub(r"[A-Za-z]+", sub, text)


def _formatting_variant(paras: list[str], rng) -> str:
    """Same words, different surface: case, whitespace, punctuation, HTML or markdown."""
    kinds = rng.sample(["case", "whitespace", "punctuation", "html", "markdown"], rng.choice((1, 2)))
    if "punctuation" in kinds:
        paras = [re.sub(r"[,;:]", "", p).replace(". ", " . ") for p in paras]
    if "case" in kinds:
        paras = [p.upper() if rng.random() < 0.5 else p.lower() for p in paras]
    if "whitespace" in kinds:
        paras = [re.sub(r" ", lambda m: rng.choice(("  ", " ", "\n", " \t")), p) for p in paras]
    text = _join(paras)
    if "html" in kinds:
        text = "<html><body>\n" + "\n".join(f"<p>{p}</p>" for p in paras) + "\n</body></html>"
    elif "markdown" in kinds:
        head, *rest = paras
        text = _join([f"## {head}"] + [f"- **{p}**" if rng.random() < 0.3 else p for p in rest])
    return text


def _replace_words(paras: list[str], rng, fraction: float, vocab: list[str], at_least: int = 1) -> list[str]:
    toks = [p.split(" ") for p in paras]
    slots = [(a, b) for a, t in enumerate(toks) for b in range(len(t))]
    n = max(at_least, round(fraction * len(slots)))
    for a, b in rng.sample(slots, min(n, len(slots))):
        toks[a][b] = rng.choice(vocab)
    return [" ".join(t) for t in toks]


def _light_edit(paras: list[str], rng, vocab: list[str]) -> list[str]:
    """A few words replaced, or one or two sentences changed, dropped or added."""
    kind = rng.choice(("words", "sentence", "drop", "add"))
    if kind == "words":
        return _replace_words(paras, rng, 0.0, vocab, at_least=rng.randint(2, 4))
    sents = _sentences(paras)
    for _ in range(rng.choice((1, 2))):
        a = rng.randrange(len(sents))
        b = rng.randrange(len(sents[a]))
        if kind == "sentence":
            sents[a][b] = rng.choice(_FILLER)
        elif kind == "drop" and sum(map(len, sents)) > 2:
            if len(sents[a]) > 1:
                del sents[a][b]
        else:
            sents[a].insert(b, rng.choice(_FILLER))
    return [" ".join(s) for s in sents]


def _heavy_edit(paras: list[str], rng, vocab: list[str]) -> list[str]:
    """Near-threshold: about 8-15% of words replaced, a sentence added and one
    paragraph moved: still the same document, but hard to detect."""
    out = _replace_words(paras, rng, rng.uniform(0.08, 0.15), vocab)
    sents = _sentences(out)
    sents[rng.randrange(len(sents))].append(rng.choice(_FILLER))
    out = [" ".join(s) for s in sents]
    if len(out) >= 2:
        p = out.pop(rng.randrange(len(out)))
        out.insert(rng.randrange(len(out) + 1), p)
    return out


def _reorder(paras: list[str], rng) -> list[str]:
    units = paras if len(paras) >= 3 else [s for p in _sentences(paras) for s in p]
    order = list(range(len(units)))
    while order == sorted(order):
        rng.shuffle(order)
    return [units[k] for k in order] if len(paras) >= 3 else [" ".join(units[k] for k in order)]


def _excerpt(paras: list[str], rng) -> list[str]:
    """A contiguous section of 20-45% of the document's words."""
    units = paras if len(paras) >= 4 else [s for p in _sentences(paras) for s in p]
    total = sum(map(_words, units))
    want = rng.uniform(0.2, 0.45) * total
    start = rng.randrange(len(units))
    while start > 0 and sum(map(_words, units[start:])) < want:
        start -= 1
    out, n = [], 0
    for u in units[start:]:
        if n >= want:
            break
        out.append(u)
        n += _words(u)
    return out if len(paras) >= 4 else [" ".join(out)]


def _boilerplate(rng) -> tuple[str, str]:
    """A site header (title, navigation, notice) and footer shared by a pair."""
    site = rng.choice(_SITES)
    nav = " | ".join(rng.sample(_NAV, rng.randint(6, 11)))
    header = (f"{site}\n{nav}\nSkip to main content. You are reading the documentation mirror. "
              f"Select language: English. Version: stable. Sign in. Search the docs.")
    footer = "\n\n".join(f.format(year=rng.randint(2012, 2024), site=site)
                         for f in rng.sample(_FOOTERS, rng.randint(2, 4)))
    return header, footer


def _truncate_words(paras: list[str], limit: int) -> list[str]:
    out, n = [], 0
    for p in paras:
        w = p.split(" ")
        if n + len(w) > limit:
            if not out:
                out.append(" ".join(w[:limit]))
            break
        out.append(p)
        n += len(w)
    return out


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
        self.rng.shuffle(self.pool)
        self.docs: list[dict] = []
        self.pairs: list[tuple[int, int, bool, str]] = []
        self.vocab = sorted({w for r in base[:400] for p in r["paragraphs"] for w in p.split()
                             if w.isalpha() and w.islower() and len(w) > 3})

    def take(self, ok) -> dict:
        for k, r in enumerate(self.pool):
            if ok(r):
                return self.pool.pop(k)
        raise ValueError("base file too small for the requested sample")

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


# A batch nobody has judged (group "?", samples.NOT_JUDGED): copies of judged singletons made by the
# category edits, appended after the labeled sample, so that the recommended configuration proposes
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
    _write_frame(sample.docs, out / "docs.jsonl", "jsonl")
    _write_frame(pair_frame(sample), out / "pairs.csv", "csv")


def main(argv=None) -> int:
    """``calib samples extract-base|build|corpus|summary`` (also ``python -m calib.sample_build``)."""
    import argparse
    ap = argparse.ArgumentParser(prog="calib samples", description="Build the shipped sample or summarize a sample.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("extract-base", help="extract real base text from installed sources (run once)")
    e.add_argument("--out", default=str(BASE_FILE))
    bld = sub.add_parser("build", help="build the calibration sample from the committed base file")
    bld.add_argument("--out", default=str(SAMPLE_DIR))
    bld.add_argument("--base", default=str(BASE_FILE))
    bld.add_argument("--seed", type=int, default=BUILD_SEED)
    co = sub.add_parser("corpus", help="build the shipped unlabeled corpus data/corpus/docs.jsonl.gz from the base file")
    co.add_argument("--out", default=None, help="output .jsonl.gz (default data/corpus/docs.jsonl.gz)")
    co.add_argument("--base", default=str(BASE_FILE))
    co.add_argument("--seed", type=int, default=None)
    sm = sub.add_parser("summary", help="load a sample and print its summary as JSON")
    sm.add_argument("path")
    sm.add_argument("pairs", nargs="?")
    args = ap.parse_args(argv)
    from calib.base.atomic import OutputBusy, claim_output
    try:
        if args.cmd == "extract-base":
            with claim_output(args.out):  # one writer at a time (calib.atomic)
                print(f"wrote {extract_base(args.out)}")
        elif args.cmd == "build":
            with claim_output(args.out):
                s = build_sample(args.out, base=args.base, seed=args.seed)
            print(s)
        elif args.cmd == "corpus":
            from calib.shipped.corpus import CORPUS_FILE, CORPUS_SEED, build_corpus
            counts = build_corpus(args.out or CORPUS_FILE, base=args.base,
                                  seed=CORPUS_SEED if args.seed is None else args.seed)
            print(json.dumps(counts))
        else:
            print(json.dumps(summary(load_sample(args.path, args.pairs)), indent=2, ensure_ascii=False))
    except OutputBusy as err:
        print(f"error: --out {err.strerror}", file=__import__("sys").stderr)
        return 2
    except SampleError as err:
        print(f"error: {err}", file=__import__("sys").stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
