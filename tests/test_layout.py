"""The layout of ``calib/``: stage folders whose imports only run downward.

Read from the code's own import statements (every one, including those inside
functions and ``TYPE_CHECKING`` blocks: a deferred import is still a
dependency), for ``calib/``, ``appui/`` and ``bench/``:

- no import cycle anywhere;
- a module of ``calib/`` imports only its own folder and the folders below it
  in :data:`STAGES`, so the library never imports the CLI, the app or Streamlit;
- nothing imports a module that is not there (the old flat paths such as
  ``calib.lsh`` are gone, with no forwarder left behind);
- corpora are read in ``reading/`` (nothing reads one through ``production/``), the
  Spark engine is one package (``production/engines/spark/``), ``bench/`` holds its
  benchmarks in folders by what they measure, and no comment cites an issue number.

The checker itself is tested on a planted tree, so a cycle or an upward import
cannot pass unnoticed.
"""

from __future__ import annotations

import ast
import importlib
import io
import re
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# calib's stages, lowest first: a module may import its own stage and those before it
STAGES = ("base", "reading", "sketches", "candidates", "verification", "clusters", "estimates", "review", "search",
          "production", "labeling", "shipped", "warmup", "cli", "__main__")
MAX_LINES = 450  # a file longer than this holds more than one job (~400 lines of code and its docstrings)


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path, packages=("calib", "appui", "bench")) -> dict[str, Path]:
    return {module_name(p, root): p for pkg in packages if (root / pkg).is_dir()
            for p in sorted((root / pkg).rglob("*.py"))}


def imports(path: Path, name: str, known: dict[str, Path]):
    """(imported module, line) for each import statement of the module ``name``:
    ``from a import b`` counts ``a.b`` where that is a module, else ``a``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield (sub if sub in known else target), node.lineno


def import_graph(root: Path, packages=("calib", "appui", "bench")):
    """{module: [(imported module of the tree, line)]}, and imports of ``calib.*`` names that are no module."""
    known = modules(root, packages)
    graph, unknown = {}, []
    for name, path in known.items():
        edges = []
        for target, line in imports(path, name, known):
            if target in known:
                if target != name:
                    edges.append((target, line))
            elif target.split(".")[0] in packages:
                unknown.append(f"{path.relative_to(root)}:{line}: imports {target}, which is no module here")
        graph[name] = edges
    return graph, unknown, known


def cycles(graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w, _ in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def stage(module: str) -> int:
    """The rank of a calib module's stage; the package ``calib`` itself (the public API) is above all."""
    parts = module.split(".")
    if len(parts) == 1:
        return len(STAGES)
    return STAGES.index(parts[1])


def upward_imports(graph, known, root: Path) -> list[str]:
    bad = []
    for src, edges in graph.items():
        if not src.startswith("calib"):
            continue
        for dst, line in edges:
            if dst.startswith("calib") and stage(dst) > stage(src):
                bad.append(f"{known[src].relative_to(root)}:{line}: imports {dst} "
                           f"({STAGES[stage(dst)] if stage(dst) < len(STAGES) else 'calib'} is above "
                           f"{STAGES[stage(src)]})")
            elif dst.split(".")[0] in ("appui", "bench"):
                bad.append(f"{known[src].relative_to(root)}:{line}: library code imports {dst}")
    return bad


def check(root: Path, packages=("calib", "appui", "bench")) -> list[str]:
    """Every layout problem of the tree at ``root``, one line each."""
    graph, unknown, known = import_graph(root, packages)
    problems = list(unknown)
    problems += [f"import cycle: {' <-> '.join(c)}" for c in cycles(graph)]
    problems += upward_imports(graph, known, root)
    for name, path in known.items():
        if name.startswith("calib") and name.split(".")[1:2] and name.split(".")[1] not in STAGES:
            problems.append(f"{path.relative_to(root)}: {name.split('.')[1]} is no stage of STAGES")
        source = path.read_text(encoding="utf-8")
        if name.startswith("calib") and any(isinstance(n, (ast.Import, ast.ImportFrom)) and
                                            any((getattr(n, "module", None) or a.name).split(".")[0] == "streamlit"
                                                for a in n.names) for n in ast.walk(ast.parse(source))):
            problems.append(f"{path.relative_to(root)}: the library imports streamlit")
    return problems


# -- the checker on planted trees ---------------------------------------------

def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def test_checker_accepts_a_tree_that_imports_downward(tmp_path):
    root = _tree(tmp_path, {"calib/__init__.py": "", "calib/base/__init__.py": "", "calib/base/a.py": "import os\n",
                            "calib/sketches/__init__.py": "", "calib/sketches/b.py": "from calib.base import a\n",
                            "calib/search/__init__.py": "",
                            "calib/search/c.py": "from ..sketches.b import x\nfrom . import d\n",
                            "calib/search/d.py": "def f():\n    from calib.base.a import y\n"})
    assert check(root) == []


def test_checker_finds_a_cycle_even_through_a_deferred_import(tmp_path):
    root = _tree(tmp_path, {"calib/__init__.py": "", "calib/search/__init__.py": "",
                            "calib/search/a.py": "from calib.search.b import f\n",
                            "calib/search/b.py": "def f():\n    from . import a\n"})
    assert check(root) == ["import cycle: calib.search.a <-> calib.search.b"]


def test_checker_finds_an_upward_import_and_the_cli_in_the_library(tmp_path):
    root = _tree(tmp_path, {"calib/__init__.py": "", "calib/cli/__init__.py": "def main(): ...\n",
                            "calib/sketches/__init__.py": "", "calib/search/__init__.py": "",
                            "calib/search/config.py": "X = 1\n",
                            "calib/sketches/m.py": "from calib.search.config import X\nfrom calib.cli import main\n"})
    assert check(root) == ["calib/sketches/m.py:1: imports calib.search.config (search is above sketches)",
                           "calib/sketches/m.py:2: imports calib.cli (cli is above sketches)"]


def test_checker_finds_an_old_path_streamlit_and_an_app_import(tmp_path):
    root = _tree(tmp_path, {"calib/__init__.py": "", "calib/base/__init__.py": "",
                            "calib/base/a.py": "import calib.lsh\nimport streamlit as st\nfrom appui import paths\n",
                            "appui/__init__.py": "", "appui/paths.py": "import calib.base.a\n"})
    assert check(root) == ["calib/base/a.py:1: imports calib.lsh, which is no module here",
                           "import cycle: appui.paths <-> calib.base.a",
                           "calib/base/a.py:3: library code imports appui.paths",
                           "calib/base/a.py: the library imports streamlit"]


# -- the real tree -------------------------------------------------------------

def test_calib_appui_and_bench_import_only_downward_without_cycles():
    assert check(ROOT) == []


def test_no_file_of_calib_holds_more_than_one_job_by_length():
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "calib").rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_every_stage_folder_says_what_it_does():
    for folder in (ROOT / "calib").iterdir():
        if folder.is_dir() and (folder / "__init__.py").exists():
            doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text()))
            assert doc and len(doc) > 30, f"calib/{folder.name}/__init__.py has no docstring saying what it holds"


# -- each job in its own room ---------------------------------------------------

ENGINES = ROOT / "calib" / "production" / "engines"
BENCH_TOP = 12  # files directly in bench/: its README, the shared record module, a tool or two; the rest in folders


def reads_through_production(root: Path) -> list[str]:
    """``from calib.production.X import name`` (in calib/, appui/, bench/, pages/) where X itself
    imports ``name`` from ``calib.reading``: a reader's name reached through production."""
    from_reading = {}  # production module -> the names it imports from reading
    for name, path in modules(root, ("calib",)).items():
        if name.startswith("calib.production"):
            from_reading[name] = {a.asname or a.name for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                                  if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("calib.reading")
                                  for a in n.names}
    bad = []
    files = [p for pkg in ("calib", "appui", "bench", "pages") if (root / pkg).is_dir() for p in (root / pkg).rglob("*.py")]
    for path in sorted(files):
        for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(n, ast.ImportFrom) and n.module in from_reading:
                bad += [f"{path.relative_to(root)}:{n.lineno}: {a.name} through {n.module}"
                        for a in n.names if a.name in from_reading[n.module]]
    return bad


ISSUE = re.compile(r"\bissues?\s+#?\d+\b|\bissue\s+#\d+", re.IGNORECASE)


def issue_numbers(path: Path, root: Path) -> list[str]:
    """Comments and docstrings of a .py file that cite an issue by number (they should say why)."""
    source = path.read_text(encoding="utf-8")
    bad = [f"{path.relative_to(root)}:{tok.start[0]}: {tok.string.strip()}"
           for tok in tokenize.generate_tokens(io.StringIO(source).readline)
           if tok.type == tokenize.COMMENT and ISSUE.search(tok.string)]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc and (m := ISSUE.search(doc)):
                line = node.body[0].lineno if node.body else 1
                bad.append(f"{path.relative_to(root)}:{line}: docstring cites {m.group(0)!r}")
    return bad


def python_files(root: Path) -> list[Path]:
    files = [p for d in ("calib", "appui", "pages", "bench", "tests", "docs") if (root / d).is_dir()
             for p in (root / d).rglob("*.py")]
    return sorted(files + [p for p in (root / "app.py", root / "home.py") if p.is_file()])


def test_checker_finds_a_corpus_reader_reached_through_production(tmp_path):
    root = _tree(tmp_path, {"calib/__init__.py": "", "calib/reading/__init__.py": "",
                            "calib/reading/corpus.py": "def iter_corpus(): ...\n",
                            "calib/production/__init__.py": "",
                            "calib/production/local.py": "from calib.reading.corpus import iter_corpus\ndef apply(): ...\n",
                            "calib/labeling/__init__.py": "",
                            "calib/labeling/draw.py": "from calib.production.local import apply, iter_corpus\n"
                                                      "from calib.reading.corpus import iter_corpus as ok\n"})
    assert reads_through_production(root) == ["calib/labeling/draw.py:1: iter_corpus through calib.production.local"]


def test_checker_finds_issue_numbers_in_comments_and_docstrings_only(tmp_path):
    root = _tree(tmp_path, {"a.py": '"""Bad input (issue 5, item 1)."""\n'
                                    'MSG = "issue 7 in a string is data, not a comment"\n'
                                    'def f():\n    """Two issues, none numbered; 24 issues; an issue #3."""\n'
                                    'x = 1  # as Issues 12 and 14 asked\n'
                                    'y = 2  # the issue: 2 bytes too many\n'})
    assert issue_numbers(root / "a.py", root) == ["a.py:5: # as Issues 12 and 14 asked",
                                                  "a.py:1: docstring cites 'issue 5'",
                                                  "a.py:4: docstring cites 'issue #3'"]


def test_corpora_are_read_in_reading_not_through_production():
    from calib.reading import corpus

    assert corpus.iter_corpus.__module__ == "calib.reading.corpus"
    assert not (ENGINES / "corpus.py").exists()
    assert reads_through_production(ROOT) == []


def test_the_spark_engine_is_one_package_whose_init_names_its_parts():
    assert sorted(p.name for p in ENGINES.glob("spark*.py")) == []
    package = ENGINES / "spark"
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8")))
    parts = sorted(p.stem for p in package.glob("*.py") if p.stem != "__init__")
    assert len(parts) >= 10 and [p for p in parts if f"``{p}``" not in doc] == []


def test_no_forwarder_of_an_old_path_is_left():
    assert not (ROOT / "calib" / "base" / "moved.py").exists()
    bad = []
    for path in sorted((ROOT / "calib").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        if "meta_path" in text or "DeprecationWarning" in text:
            bad.append(f"{path.relative_to(ROOT)}: an import hook or a deprecation")
        if path != ROOT / "calib" / "__init__.py" and any(  # calib's own lazy public names are no forwarder
                isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body):
            bad.append(f"{path.relative_to(ROOT)}: a module __getattr__")
    assert bad == []
    for old in ("calib.lsh", "calib.samples", "calib.review_pg", "calib.production.engines.corpus",
                "calib.production.engines.spark_io"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)


def test_no_comment_or_docstring_cites_an_issue_number():
    assert [line for path in python_files(ROOT) for line in issue_numbers(path, ROOT)] == []


def test_bench_holds_its_benchmarks_in_folders_by_what_they_measure():
    top = sorted(p.name for p in (ROOT / "bench").iterdir() if p.is_file())
    assert len(top) <= BENCH_TOP, top
    folders = [d for d in (ROOT / "bench").iterdir() if d.is_dir() and d.name not in ("results", "__pycache__")]
    assert len(folders) >= 5
    for folder in folders:
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8")))
        assert doc and len(doc) > 30, f"bench/{folder.name}/__init__.py has no docstring saying what it measures"
    # each script says how it is run, by its module name
    for path in sorted((ROOT / "bench").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if 'if __name__ == "__main__"' in text:
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            assert f"python -m {module}" in (ast.get_docstring(ast.parse(text)) or ""), f"{module}: no run line"


def test_every_result_file_is_listed_beside_the_script_that_writes_it():
    readme = (ROOT / "bench" / "README.md").read_text(encoding="utf-8")
    missing = [p.name for p in sorted((ROOT / "bench" / "results").iterdir()) if f"results/{p.name}" not in readme]
    assert missing == []


# -- the docs name real places -------------------------------------------------

# the README, the benchmarks' README and every page of the documentation site except the generated
# ones (docs/reference/cli.md, config-schema.md quote the parser's help and the schema's descriptions)
GENERATED = ("docs/reference/cli.md", "docs/reference/config-schema.md")
DOCS = ("README.md", "bench/README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")
                                             if str(p.relative_to(ROOT)) not in GENERATED))


def _resolve(ref: str) -> str | None:
    """None when ``ref`` (``calib.a.b.name``) is a module or a name in one, else why not."""
    parts = ref.split(".")
    for k in range(len(parts), 0, -1):
        name = ".".join(parts[:k])
        try:
            obj = importlib.import_module(name)
        except ImportError:
            continue
        for attr in parts[k:]:
            if not hasattr(obj, attr):
                return f"{ref}: {name} has no {'.'.join(parts[k:])}"
            obj = getattr(obj, attr)
        return None
    return f"{ref}: no such module"


def test_docs_name_modules_files_and_functions_that_exist():
    bad = []
    for doc in DOCS:
        text = (ROOT / doc).read_text(encoding="utf-8")
        for paragraph in text.split("\n\n"):
            for ref in sorted(set(re.findall(r"(?<![\w/.-])calib(?:\.[A-Za-z_]\w*)+", paragraph))):
                why = None if "old flat paths" in paragraph else _resolve(ref)  # the paragraph saying they are gone
                if why:
                    bad.append(f"{doc}: {why}")
            for path in sorted(set(re.findall(r"(?<![\w/.-])(?:calib|bench(?!/results))/[\w/.]*\w", paragraph))):
                if not (ROOT / path).exists() and "old flat paths" not in paragraph:
                    bad.append(f"{doc}: {path} does not exist")
    assert bad == []
