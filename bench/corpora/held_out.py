"""Labeled samples of kinds the default search was not built on, made from files downloaded here.

The search is judged on corpora it never saw; these are built to check it the same way, never read by
the tests. Each builder writes a sample folder (``docs.jsonl`` with ``id``, ``text``, ``group`` and
slice columns, ``pairs.csv`` for pairs that the groups do not say) into ``--out``.

* ``source``: the Python files of several releases of several packages (wheels from PyPI, fetched
  with ``pip download`` into ``--downloads``). Two files of one module path (in one package) whose
  character 5-gram Jaccard is at least 0.5 are duplicates (groups: the connected components of those
  pairs); files of different modules are not; two files of one module below 0.5 (rewritten) are listed
  with category ``rewritten`` (sweep with ``--ignore-categories rewritten`` to leave them unjudged).
* ``manpages``: the manual pages installed on this machine (every language under /usr/share/man),
  each rendered by groff at two or three widths, and as ASCII: renderings of one page (and its
  aliases, ``.so`` links) are duplicates; different pages are not, however alike (template
  siblings, shared footers).

    python -m bench.corpora.held_out source --downloads /work/corpora/dl --out /work/corpora/source
    python -m bench.corpora.held_out manpages --out /work/corpora/manpages --pages 900
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import random
import re
import subprocess
import tarfile
import zipfile
from collections import defaultdict
from pathlib import Path


def _char5(text: str) -> set[str]:
    t = " ".join(text.lower().split())
    return {t[i:i + 5] for i in range(max(1, len(t) - 4))}


def _jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def _components(n: int, edges) -> list[int]:
    """Connected component of each of n nodes (scipy's, over the edge list)."""
    import numpy as np
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    a = np.array([e[0] for e in edges], dtype=np.int64)
    b = np.array([e[1] for e in edges], dtype=np.int64)
    graph = coo_matrix((np.ones(len(a)), (a, b)), shape=(n, n))
    return connected_components(graph, directed=False)[1].tolist()


def _write(out: Path, docs: list[dict], pairs: list[tuple]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "docs.jsonl", "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
    with open(out / "pairs.csv", "w", encoding="utf-8") as f:
        f.write("id_a,id_b,label,category\n")
        for a, b, label, cat in pairs:
            f.write(f"{a},{b},{label},{cat}\n")


def _grouped(docs: list[dict], key: str, dup_j: float, sets: list[set]) -> list[tuple]:
    """Set each doc's group from its ``key`` and pairwise J >= dup_j; return the rewritten pairs."""
    by_key = defaultdict(list)
    for i, d in enumerate(docs):
        by_key[d[key]].append(i)
    edges, rewritten = [], []
    for members in by_key.values():
        for x in range(len(members)):
            for y in range(x + 1, len(members)):
                a, b = members[x], members[y]
                if _jaccard(sets[a], sets[b]) >= dup_j:
                    edges.append((a, b))
                else:
                    rewritten.append((a, b))
    comp = _components(len(docs), edges)
    size = defaultdict(int)
    for c in comp:
        size[c] += 1
    for i, d in enumerate(docs):
        d["group"] = f"g{comp[i]}" if size[comp[i]] > 1 else None
    return [(docs[a]["id"], docs[b]["id"], "not_duplicate", "rewritten") for a, b in rewritten
            if comp[a] != comp[b]]


def source(downloads: Path, out: Path, max_docs: int, seed: int = 0) -> None:
    docs = []
    for archive in sorted(downloads.rglob("*.whl")):
        package, version = archive.parent.parent.name, archive.parent.name
        with zipfile.ZipFile(archive) as z:
            for name in sorted(z.namelist()):
                if not name.endswith(".py") or ".dist-info" in name:
                    continue
                text = z.read(name).decode("utf-8", "replace")
                if len(text.split()) < 20:
                    continue
                docs.append({"id": f"{package}-{version}/{name}", "text": text, "module": f"{package}:{name}",
                             "package": package, "release": f"{package}-{version}"})
    random.Random(seed).shuffle(docs)
    docs = sorted(docs[:max_docs], key=lambda d: d["id"])
    sets = [_char5(d["text"]) for d in docs]
    pairs = _grouped(docs, "module", 0.5, sets)
    for d in docs:
        del d["module"]
    _write(out, docs, pairs)
    print(f"{len(docs)} files, {sum(1 for d in docs if d['group'])} in duplicate groups, {len(pairs)} rewritten pairs")


def _render(path: Path, width: int, device: str) -> str:
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    env = {"MANWIDTH": str(width), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    proc = subprocess.run(["man", "-l", "-E", "UTF-8" if device == "utf8" else "ascii", "-"], input=raw,
                          capture_output=True, env={**env, "MAN_KEEP_FORMATTING": "0"}, timeout=30)
    text = proc.stdout.decode("utf-8", "replace")
    return re.sub(r".\x08", "", text)  # overstrike bold / underline


def manpages(out: Path, pages: int, seed: int = 0) -> None:
    root = Path("/usr/share/man")
    files = sorted(p for p in root.rglob("*") if p.is_file() and re.search(r"/man\d", str(p)))
    rng = random.Random(seed)
    rng.shuffle(files)
    english = [p for p in files if p.relative_to(root).parts[0].startswith("man")]
    others = [p for p in files if not p.relative_to(root).parts[0].startswith("man")]
    files = [p for pair in zip(english, others) for p in pair]  # half in other languages
    docs, n_pages = [], 0
    for path in files:
        if n_pages >= pages:
            break
        lang = path.relative_to(root).parts[0]
        lang = "en" if lang.startswith("man") else lang
        raw = path.read_bytes()
        head = (gzip.decompress(raw) if path.suffix == ".gz" else raw)[:200]
        if head.startswith(b".so "):  # an alias: its target rendered under the alias's name
            continue
        # aliases (links, copies) are the same page: keyed by the page source's bytes
        page = hashlib.sha1(gzip.decompress(raw) if path.suffix == ".gz" else raw).hexdigest()
        widths = rng.sample([60, 72, 80, 100], k=rng.choice([1, 2, 3]))
        made = 0
        for w in widths:
            for device in (("utf8", "ascii") if w == widths[0] else ("utf8",)):
                try:
                    text = _render(path, w, device)
                except Exception:
                    continue
                if len(text.split()) < 30:
                    continue
                docs.append({"id": f"{lang}:{path.name.split('.gz')[0]}@{w}{'a' if device == 'ascii' else ''}", "text": text, "page": page,
                             "language": lang, "section": path.parent.name})
                made += 1
        n_pages += made > 0
    sets = [_char5(d["text"]) for d in docs]
    _grouped(docs, "page", 0.0, sets)  # every rendering of a page is a duplicate of the others
    for d in docs:
        del d["page"]
    _write(out, docs, [])
    print(f"{len(docs)} renderings of {n_pages} pages, {sum(1 for d in docs if d['group'])} in duplicate groups")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=("source", "manpages"))
    ap.add_argument("--downloads", type=Path, default=Path("/work/corpora/dl"))
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--docs", type=int, default=3000)
    ap.add_argument("--pages", type=int, default=900)
    a = ap.parse_args(argv)
    if a.kind == "source":
        source(a.downloads, a.out, a.docs)
    else:
        manpages(a.out, a.pages)


if __name__ == "__main__":
    main()
