"""The layout of ``calib/``: stage folders whose imports only run downward.

Read from the code's own import statements (every one, including those inside
functions and ``TYPE_CHECKING`` blocks: a deferred import is still a
dependency), for ``calib/``, ``appui/`` and ``bench/``:

- no import cycle anywhere;
- a module of ``calib/`` imports only its own folder and the folders below it
  in :data:`STAGES`, so the library never imports the CLI, the app or Streamlit;
- nothing imports an old flat path (``calib.lsh``); those paths still work for
  one release (:mod:`calib.base.moved`), each forwarding to its new module.

The checker itself is tested on a planted tree, so a cycle or an upward import
cannot pass unnoticed.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import warnings
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


def test_tests_pages_and_app_import_no_old_path():
    """The old paths are for external code: nothing shipped here uses them."""
    from calib.base.moved import MOVED

    known = modules(ROOT)
    bad = []
    for path in sorted([*ROOT.glob("tests/*.py"), *ROOT.glob("pages/*.py"), ROOT / "app.py"]):
        for target, line in imports(path, module_name(path, ROOT), known):
            if target in MOVED and target not in known:
                bad.append(f"{path.relative_to(ROOT)}:{line}: {target} (now {MOVED[target]})")
    assert bad == []


def test_no_code_in_a_string_imports_an_old_path():
    """Subprocess children are code in strings: an old path there would forward, and a
    monkeypatch through it would miss the real module."""
    import re

    from calib.base.moved import MOVED

    folders = {old for old in MOVED if (ROOT / "calib" / old.split(".")[1]).is_dir()}
    bad = []
    files = [*ROOT.glob("tests/*.py"), *ROOT.glob("bench/*.py"), *ROOT.glob("appui/*.py"), *ROOT.glob("pages/*.py"),
             *(ROOT / "calib").rglob("*.py")]
    for path in sorted(files):
        if path.name in ("test_layout.py", "moved.py"):
            continue
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"(?:from|import) (calib(?:\.\w+)+)(?: import ([\w, ]+))?", text):
            mod, names = m.group(1), m.group(2) or ""
            if mod in MOVED and not (mod in folders and names and
                                     all((ROOT / mod.replace(".", "/") / f"{n.strip()}.py").exists()
                                         for n in names.split(",") if n.strip())):
                bad.append(f"{path.relative_to(ROOT)}: {m.group(0)}")
        for m in re.finditer(r"from calib import ([\w, ]+)", text):
            bad += [f"{path.relative_to(ROOT)}: {m.group(0)}" for n in m.group(1).split(",")
                    if f"calib.{n.strip()}" in MOVED and f"calib.{n.strip()}" not in folders]
    assert bad == []


def test_no_file_of_calib_holds_more_than_one_job_by_length():
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "calib").rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_every_stage_folder_says_what_it_does():
    for folder in (ROOT / "calib").iterdir():
        if folder.is_dir() and (folder / "__init__.py").exists():
            doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text()))
            assert doc and len(doc) > 30, f"calib/{folder.name}/__init__.py has no docstring saying what it holds"


# -- the old paths, for one release --------------------------------------------

def test_every_old_path_forwards_to_its_new_module_with_a_deprecation_warning():
    from calib.base.moved import MOVED

    code = r"""
import importlib, json, sys, warnings
from calib.base.moved import MOVED
out = {}
for old, new in MOVED.items():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mod = importlib.import_module(old)
        same, public = True, 0
        for name in (new,) if isinstance(new, str) else new:  # a module split in several: each one's own names
            target = importlib.import_module(name)
            own = [n for n, v in vars(target).items() if not n.startswith("__") and
                   getattr(v, "__module__", name) == name and not isinstance(v, type(sys))]
            same = same and all(getattr(mod, n) is getattr(target, n) for n in own)
            public += len(own)
    out[old] = [same, public, [str(w.message) for w in caught if w.category is DeprecationWarning]]
print(json.dumps(out))
"""
    import json
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert set(out) == set(MOVED)
    for old, (same, n_public, messages) in out.items():
        assert same and n_public > 0, old
        first = MOVED[old] if isinstance(MOVED[old], str) else MOVED[old][0]
        assert any(m.startswith(f"{old}") and " moved to calib." in m and "0.2" in m for m in messages), (old, messages)


def test_old_verbs_stay_callable_and_the_public_api_gives_no_warning():
    code = r"""
import warnings
warnings.simplefilter("error")
import calib
assert callable(calib.sweep) and callable(calib.export) and callable(calib.apply)
assert calib.sweep.Grid is calib.Grid
from calib import load_sample, Grid, recommend, Config, evaluate, config_from_row, Representation, Verify
warnings.simplefilter("ignore")
import calib.sweep, calib.apply, calib.lsh
assert callable(calib.sweep) and callable(calib.apply)
from calib.lsh import band_keys
from calib.candidates.lsh import band_keys as new
assert band_keys is new
from calib.search import grid_from_sample  # the old module calib.search, now a folder
from calib.search.from_sample import grid_from_sample as g
assert grid_from_sample is g
from calib.clusters import cluster_pairs
from calib.review import ReviewStore
import calib.lsh as old, calib.candidates.lsh as new
old.MAX_PAIRS_FOR_TEST = 7  # a monkeypatch through an old path reaches the module
assert new.MAX_PAIRS_FOR_TEST == 7
del old.MAX_PAIRS_FOR_TEST
assert not hasattr(new, "MAX_PAIRS_FOR_TEST")
print("ok")
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr


def test_an_unknown_name_of_an_old_folder_module_is_an_attribute_error():
    import calib.search

    with pytest.raises(AttributeError, match="no_such_name"):
        calib.search.no_such_name  # noqa: B018
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert importlib.import_module("calib.search.sweep").__name__ == "calib.search.sweep"


# -- the docs name real places -------------------------------------------------

# the README, the benchmarks' README and every page of the documentation site except the generated
# ones (docs/reference/cli.md, config-schema.md quote the parser's help and the schema's descriptions)
GENERATED = ("docs/reference/cli.md", "docs/reference/config-schema.md")
DOCS = ("README.md", "bench/README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")
                                             if str(p.relative_to(ROOT)) not in GENERATED))
VERBS = ("calib.sweep", "calib.export", "calib.apply")  # the public API's callable modules


def _resolve(ref: str, old_allowed: bool = False) -> str | None:
    """None when ``ref`` (``calib.a.b.name``) is a module or a name in one, else why not
    (an old flat path only where ``old_allowed``: the paragraph about them)."""
    from calib.base.moved import MOVED

    parts = ref.split(".")
    if ref in MOVED and old_allowed:
        return None
    if ref not in VERBS and ".".join(parts[:2]) in MOVED and not (ROOT / "calib" / parts[1]).is_dir():
        return f"{ref}: an old path (now {MOVED['.'.join(parts[:2])]})"
    for k in range(len(parts), 0, -1):
        name = ".".join(parts[:k])
        if name in MOVED and name not in ("calib.clusters", "calib.review", "calib.search", "calib.reading"):
            continue
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
    import re

    bad = []
    for doc in DOCS:
        text = (ROOT / doc).read_text(encoding="utf-8")
        for paragraph in text.split("\n\n"):
            for ref in sorted(set(re.findall(r"(?<![\w/.-])calib(?:\.[A-Za-z_]\w*)+", paragraph))):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    why = _resolve(ref, old_allowed="old flat paths" in paragraph)
                if why:
                    bad.append(f"{doc}: {why}")
            for path in sorted(set(re.findall(r"(?<![\w/.-])calib/[\w/.]*\w", paragraph))):
                if not (ROOT / path).exists() and "old flat paths" not in paragraph:
                    bad.append(f"{doc}: {path} does not exist")
    assert bad == []
