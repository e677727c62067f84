"""A multilingual benchmark corpus: Debian's manual pages in 16 languages (English and 15 translations), as plain text.

The pages are downloaded as Debian packages (``apt-get download manpages manpages-de ...``,
the machine's own package sources), unpacked with ``dpkg-deb -x`` and stripped of their
roff markup (requests and font escapes dropped, the text of headings kept); one page is one
document. Everything is built on demand into a cache folder (``$CALIB_CACHE_DIR`` or
``~/.cache/calib``, then ``bench/manpages``), never into the repository: the corpus is
whatever version of the packages the package sources serve.

    PYTHONPATH=. python -m bench.corpora.manpages    # builds it and prints a summary
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
from pathlib import Path

LANGUAGES = ("en", "de", "fr", "es", "it", "pl", "ru", "el", "ja", "zh", "vi", "uk", "cs", "nl", "pt-br", "tr")


def cache_folder() -> Path:
    return Path(os.environ.get("CALIB_CACHE_DIR") or Path.home() / ".cache" / "calib") / "bench" / "manpages"


def packages() -> list[str]:
    """The Debian packages of the pages: English (user and developer pages) and the translations."""
    return ["manpages", "manpages-dev"] + [f"manpages-{lang}" for lang in LANGUAGES if lang != "en"]


_REQUEST = re.compile(r"^[.'][ \t]*(\S+)[ \t]*(.*)$")
_TEXT_REQUESTS = {"SH", "SS", "B", "I", "BI", "BR", "IB", "IR", "RB", "RI", "SM", "SB", "TP", "IP", "Nm",
                  "Nd", "Sh", "Ss", "Ar", "Fl", "Cm", "Op", "Pa", "Xr", "Dq", "Sq", "Ql", "Em", "It"}
_ESCAPE = re.compile(r"\\(?:f(?:\[[^\]]*\]|\(..|.)|s[+-]?\d|\*(?:\[[^\]]*\]|\(..|.)|\((..)|\[([^\]]*)\]|(.))")
_NAMED = {"em": "\u2014", "en": "\u2013", "aq": "'", "dq": '"', "lq": "\u201c", "rq": "\u201d", "oq": "\u2018",
          "cq": "\u2019", "hy": "-", "bu": "\u2022", "co": "\u00a9", "rg": "\u00ae", "mi": "-", "ti": "~",
          "ha": "^", "ga": "`", "dg": "\u2020", "tm": "\u2122", "Fo": "\u00ab", "Fc": "\u00bb"}


def _unescape(m: re.Match) -> str:
    two, bracket, one = m.group(1), m.group(2), m.group(3)
    if two is not None:
        return _NAMED.get(two, "")
    if bracket is not None:
        return _NAMED.get(bracket, "")
    if one is not None:
        return {"-": "-", "e": "\\", "&": "", " ": " ", "~": " ", "0": " ", "|": "", "^": "", "c": "",
                "%": "", ".": "."}.get(one, one if one.isalnum() else "")
    return ""  # a font or size change


def strip_roff(source: str) -> str:
    """The running text of a roff page: comments and requests dropped (the arguments of
    headings and font requests kept), escapes turned into their characters or dropped."""
    out = []
    for line in source.splitlines():
        if line.startswith((".\\\"", "'\\\"", '\\"')):
            continue
        m = _REQUEST.match(line)
        if m:
            if m.group(1) not in _TEXT_REQUESTS:
                continue
            line = m.group(2).replace('"', "")
        text = _ESCAPE.sub(_unescape, line).strip()
        if text:
            out.append(text)
    return "\n".join(out)


def build(folder: Path | None = None) -> Path:
    """The corpus as ``corpus.jsonl`` (records {lang, page, text}) in ``folder``, built once."""
    folder = folder or cache_folder()
    target = folder / "corpus.jsonl"
    if target.exists():
        return target
    debs, tree = folder / "debs", folder / "tree"
    debs.mkdir(parents=True, exist_ok=True)
    tree.mkdir(parents=True, exist_ok=True)
    missing = [p for p in packages() if not list(debs.glob(f"{p}_*.deb"))]
    if missing:
        subprocess.run(["apt-get", "download", *missing], cwd=debs, check=True)
    for deb in sorted(debs.glob("*.deb")):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(tree)], check=True)
    man = tree / "usr" / "share" / "man"
    tmp = target.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for lang in LANGUAGES:
            sub = man if lang == "en" else man / {"pt-br": "pt_BR", "zh": "zh_CN"}.get(lang, lang)
            pages = sorted(p for p in sub.glob("man*/*.gz") if p.is_file())
            for page in pages:
                raw = gzip.decompress(page.read_bytes()).decode("utf-8", errors="replace")
                if raw.startswith(".so "):
                    continue  # a link to another page
                text = strip_roff(raw)
                if text:
                    f.write(json.dumps({"lang": lang, "page": str(page.relative_to(man)), "text": text},
                                       ensure_ascii=False) + "\n")
    os.replace(tmp, target)
    return target


def load(folder: Path | None = None) -> list[dict]:
    with open(build(folder), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


if __name__ == "__main__":
    from collections import Counter
    recs = load()
    langs = Counter(r["lang"] for r in recs)
    ascii_ = sum(r["text"].isascii() for r in recs)
    size = sum(len(r["text"].encode("utf-8")) for r in recs)
    print(f"{len(recs):,} pages, {size / 1e6:.1f} MB, {ascii_:,} all ASCII; by language: {dict(langs)}")
