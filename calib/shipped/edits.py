"""The text edits that make planted near-duplicates, shared by the shipped sample and corpus builders.

Each edit takes a document as its paragraphs and a seeded ``random.Random``
(same seed, same edit): surface changes that keep the words
(:func:`_formatting_variant`: case, whitespace, punctuation, HTML, markdown),
word and sentence replacements (:func:`_replace_words`, :func:`_light_edit`,
:func:`_heavy_edit`), reordering, excerpts, transliteration and word-by-word
translation, and a site's boilerplate header and footer.
"""

from __future__ import annotations

import re

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
