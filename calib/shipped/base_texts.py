"""The shipped base text, ``data/base/base_texts.jsonl.gz``: real prose with its provenance.

:func:`extract_base` collects it once (docstrings of the installed stdlib,
numpy, pandas and scipy read with ``ast``, nothing imported; licence texts
from ``/usr/share/common-licenses``), cut into "pages" of whole paragraphs
whose lengths vary like real documents, a page kept only when at most 10% of
its word 5-grams occur in pages kept before it (the base holds no
near-duplicates); the output is committed. :func:`read_base` reads it back:
the shipped sample (:mod:`calib.shipped.sample`) and the shipped corpus
(:mod:`calib.shipped.corpus`) are derived from this file only.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from calib.reading.sample import REPO_ROOT


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


class BaseError(ValueError):
    """A base file that cannot build the sample or the corpus: one line (the caller names the file)."""


_BASE_FIELDS = (("base_id", "a text", lambda v: isinstance(v, str)), ("domain", "a text", lambda v: isinstance(v, str)),
                ("paragraphs", "a list of texts", lambda v: isinstance(v, list) and all(isinstance(p, str) for p in v)))


def _check_base_record(rec: dict, line: int, ids: set) -> None:
    for field, kind, ok in _BASE_FIELDS:
        if not ok(rec.get(field)):
            raise BaseError(f"line {line}, field {field!r}: {'missing' if field not in rec else 'not ' + kind} "
                            "(a base record holds base_id, domain and paragraphs)")
    if rec["base_id"] in ids:
        raise BaseError(f"line {line}, field 'base_id': {rec['base_id'][:80]!r} is there twice")
    ids.add(rec["base_id"])


def read_base(path=BASE_FILE) -> list[dict]:
    """The committed base records (sorted by base_id), read through the loaders' reader (regular
    files only, strict UTF-8 and JSON, bounded lines): each holds a text ``base_id``, a text
    ``domain`` and ``paragraphs``, a list of texts; anything else is a :class:`BaseError` naming
    the line and field."""
    import gzip
    import zlib

    from calib.reading.files import SampleError, iter_records, open_input
    recs, ids = [], set()
    try:
        with open_input(path, single_link=False) as raw, gzip.GzipFile(fileobj=raw, mode="rb") as fh:
            for line, rec in iter_records(fh, None):
                _check_base_record(rec, line, ids)
                recs.append(rec)
    except SampleError as exc:
        raise BaseError(exc.detail if exc.line is None and exc.field is None else str(exc)) from None
    except (OSError, EOFError, zlib.error) as exc:  # not gzip, truncated, corrupt
        raise BaseError(f"not a readable gzipped JSONL base file ({exc})") from None
    return sorted(recs, key=lambda r: r["base_id"])
