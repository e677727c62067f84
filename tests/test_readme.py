"""The README and the documentation site run as written.

Every code block of README.md and of the pages under docs/ (in the site's
navigation order, then any page the navigation does not list) is run, in
order, from one folder laid out like a fresh clone (``data/`` of the
repository, ``work/`` for the outputs, so a page may use what an earlier one
wrote): ``bash`` blocks command by command, ``pycon`` blocks as doctests (one
namespace per page). ``text`` blocks are output, not code. Any other block,
and a block that cannot run here (a server, a cluster, a GPU), carries a
marker on the line before its fence, which the rendered page does not show:

    <!-- not run: the reason -->
    <!-- needs ../shared/corpora/clough -->   (run when that folder exists beside the clone)

Links and anchors are checked, inline commands are refused (only blocks are
run), and the generated reference pages must equal what docs/gen_reference.py
writes.
"""

from __future__ import annotations

import doctest
import importlib.util
import os
import re
import shlex
import subprocess
import sys
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
VENV = ".venv/bin/"
# the README's first lines, what CI and users run: set-up, not a step of the tour
SETUP_LINES = ("python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/streamlit run app.py "
               "--server.address 127.0.0.1 --server.headless true", "bash .ci/run")
RUNNABLE = ("bash", "pycon")
# a human labels the drawn pairs between the draw steps; the test stands in for them
DUPLICATE_FROM = 0.7  # char 5-gram J at which the stand-in reviewer says duplicate
MARKER = re.compile(r"<!--\s*(not run|needs)\s*:?\s*(.*?)\s*-->")


# -- reading the pages ---------------------------------------------------------------------------

def nav_pages() -> list[Path]:
    """The site's pages in the order of mkdocs.yml's navigation."""
    import yaml

    def walk(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)
        elif isinstance(node, dict):
            for value in node.values():
                yield from walk(value)

    return [DOCS / p for p in walk(yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))["nav"])]


def site_pages() -> list[Path]:
    """README.md, then the site's pages in navigation order, then pages the navigation leaves out."""
    nav = nav_pages()
    return [README, *nav, *sorted(set(DOCS.rglob("*.md")) - set(nav))]


def rel(path: Path) -> str:
    return str(path.relative_to(REPO))


@dataclass
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    marker: tuple[str, str] | None  # ("not run", reason) or ("needs", path)

    def where(self) -> str:
        return f"{rel(self.page)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a page, with the marker on the line before each."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out, k = [], 0
    while k < len(lines):
        m = re.match(r"^(\s*)(```+|~~~+)\s*([\w+-]*)", lines[k])
        if not m:
            k += 1
            continue
        fence, start = m.group(2), k
        end = next(j for j in range(k + 1, len(lines)) if lines[j].strip().startswith(fence))
        before = lines[start - 1].strip() if start else ""
        mm = MARKER.fullmatch(before)
        marker = (mm.group(1), mm.group(2)) if mm else None
        indent = len(m.group(1))
        text = "\n".join(line[indent:] for line in lines[start + 1:end])
        out.append(Block(page, start + 1, m.group(3).lower(), text + "\n", marker))
        k = end + 1
    return out


def prose(page: Path) -> str:
    """The page without its fenced blocks and HTML comments."""
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"^(\s*)(```+|~~~+).*?^\1\2\s*$", "", text, flags=re.S | re.M)
    return re.sub(r"<!--.*?-->", "", text, flags=re.S)


def indented_code(page: Path) -> list[str]:
    """Lines of indented (4-space) code blocks: after a blank line, outside lists."""
    out, prev_blank, in_list = [], True, False
    for line in prose(page).splitlines():
        if not line.strip():
            prev_blank = True
            continue
        if re.match(r"^\s{0,3}([-*+]|\d+\.)\s", line):
            in_list = True
        elif not line.startswith(" "):
            in_list = False
        if line.startswith("    ") and (prev_blank or (out and out[-1] is not None)) and not in_list:
            out.append(line.strip())
        else:
            out.append(None)
        prev_blank = False
    return [line for line in out if line]


def commands(block: Block) -> list[str]:
    """A bash block's lines with ``\\`` continuations joined (comment lines kept)."""
    out: list[str] = []
    for line in block.text.splitlines():
        line = line.strip()
        if not line:
            continue
        if out and out[-1].endswith("\\"):
            out[-1] = out[-1][:-1].rstrip() + " " + line
        else:
            out.append(line)
    return out


def _argv(command: str) -> tuple[dict, list[str]]:
    """Environment assignments and argv of a command line, the virtualenv's programs as this Python."""
    argv = shlex.split(command, comments=True)
    env = {}
    while argv and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", argv[0]):
        key, value = argv.pop(0).split("=", 1)
        env[key] = value
    if argv[0] == VENV + "calib":
        return env, [sys.executable, "-m", "calib", *argv[1:]]
    if argv[0] == VENV + "python":
        return env, [sys.executable, *argv[1:]]
    raise AssertionError(f"{command!r}: only .venv/bin/calib and .venv/bin/python commands run; mark the block")


# -- fast checks ---------------------------------------------------------------------------------

def test_readme_is_short_and_starts_with_the_set_up_lines():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, len(lines)
    assert [line.strip() for line in lines[2:4]] == list(SETUP_LINES), lines[:4]
    assert indented_code(README) == list(SETUP_LINES), "only the set-up lines are an indented block"


def test_every_code_block_runs_or_says_why():
    bad = []
    for page in site_pages():
        if page != README and indented_code(page):
            bad.append(f"{rel(page)}: an indented code block ({indented_code(page)[0]!r}): fence it")
        for b in blocks(page):
            if b.marker:
                if not b.marker[1]:
                    bad.append(f"{b.where()}: a marker without its reason")
                elif b.marker[0] == "needs" and not b.marker[1].startswith("../shared/"):
                    bad.append(f"{b.where()}: 'needs' names a folder beside the clone (../shared/...)")
            elif b.lang == "bash":
                for command in commands(b):
                    if not command.startswith("#"):
                        try:
                            _argv(command)
                        except AssertionError as e:
                            bad.append(f"{b.where()}: {e}")
            elif b.lang not in RUNNABLE + ("text",):
                bad.append(f"{b.where()}: a ```{b.lang or '(no language)'} block is neither run nor marked")
    assert bad == []
    assert sum(b.lang == "pycon" for p in site_pages() for b in blocks(p)) >= 5


def test_no_command_hides_in_prose():
    """Only blocks are run: a command with a file argument written inline would not be."""
    program = re.compile(r"^([A-Z_]+=\S+\s+)*(\.venv/bin/\w+|calib|python3?|streamlit|pip|mkdocs|bash|spark-submit)\s")
    bad = []
    for page in site_pages():
        for span in re.findall(r"`([^`\n]+)`", prose(page)):
            if program.match(span) and any("/" in tok or re.search(r"\.\w", tok) for tok in span.split()[1:]):
                bad.append(f"{rel(page)}: `{span}`")
    assert bad == []


def slugify(heading: str) -> str:
    """Python-Markdown's toc anchor of a heading (the one MkDocs uses), after its inline markup."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[`*_]", "", text) if "`" in text or "*" in text else text
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    return {slugify(m) for m in re.findall(r"^#{1,6}\s+(.+?)\s*#*$", prose(page), flags=re.M)}


def test_links_and_anchors_resolve():
    bad, pages = [], site_pages()
    for page in pages:
        for target in re.findall(r"!?\[[^\]]*\]\(([^)\s]+)\)", re.sub(r"`[^`\n]*`", "", prose(page))):
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                bad.append(f"{rel(page)}: {target} (no such file)")
            elif page != README and DOCS not in dest.parents:
                bad.append(f"{rel(page)}: {target} (outside docs/: the site cannot link it)")
            elif anchor and anchor not in anchors(dest):
                bad.append(f"{rel(page)}: {target} (no heading with that anchor)")
    assert bad == []
    linked = {(README.parent / t.partition("#")[0]).resolve()
              for t in re.findall(r"\]\(([^)\s]+)\)", prose(README)) if not re.match(r"^[a-z]+:", t)}
    unlinked = [rel(p) for p in nav_pages() if p.resolve() not in linked and p.name != "index.md" or
                p == DOCS / "how-to" / "index.md" and p.resolve() not in linked]
    assert unlinked == [], "the README links every page of the site's navigation"


def test_generated_reference_pages_are_up_to_date():
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    for page, make in gen.PAGES.items():
        assert page.read_text(encoding="utf-8") == make(), (
            f"{rel(page)} is not what docs/gen_reference.py writes: run .venv/bin/python docs/gen_reference.py")
    cli = gen.CLI_PAGE.read_text(encoding="utf-8")
    from calib.cli.samples import samples_parser
    for name, sub, _ in [*gen._subcommands(__import__("calib.cli", fromlist=["build_parser"]).build_parser()),
                         *gen._subcommands(samples_parser())]:
        assert f"`{sub.prog}`" in cli, name
        for opt in (s for a in sub._actions for s in a.option_strings if s.startswith("--") and s != "--help"):
            assert f"`{opt}`" in cli, (name, opt)


def test_screenshots_show_the_current_pages():
    """The README's two screenshots were taken by bench/screenshots/docs_images.py from the pages as they are."""
    from PIL import Image

    sys.path.insert(0, str(REPO))
    from bench.screenshots.docs_images import IMAGES, pages_digest

    text = README.read_text(encoding="utf-8")
    for name in IMAGES:
        path = DOCS / "images" / name
        assert f"](docs/images/{name})" in text and path.is_file(), name
        info = Image.open(path).info
        assert info.get("made-by") == "bench/screenshots/docs_images.py", (name, info)
        assert info.get("pages-digest") == pages_digest(), (
            f"docs/images/{name} shows the pages as they were before their last change: "
            "run .venv/bin/python -m bench.screenshots.docs_images and commit the images")


def test_public_api_names():
    import calib
    import calib.search.sweep as sweep_module
    from calib.search.config import Config
    for name in calib.__all__:
        assert getattr(calib, name) is not None, name
    assert calib.Config is Config and calib.sweep is sweep_module and calib.sweep.Grid is calib.Grid
    for verb in (calib.sweep, calib.export, calib.apply, calib.load_sample, calib.recommend, calib.evaluate):
        assert callable(verb)
    with pytest.raises(AttributeError):
        calib.no_such_name  # noqa: B018


# -- running them --------------------------------------------------------------------------------

def _label_drawn(folder: Path) -> int:
    """Fill the empty labels of a drawn set as a reviewer might: duplicate from J >= DUPLICATE_FROM."""
    p = pd.read_csv(folder / "pairs.csv", dtype=str, keep_default_na=False)
    empty = p["label"].str.strip() == ""
    p.loc[empty, "label"] = ["duplicate" if float(s) >= DUPLICATE_FROM else "not_duplicate"
                             for s in p.loc[empty, "similarity"]]
    p.to_csv(folder / "pairs.csv", index=False)
    return int(empty.sum())


@pytest.mark.slow
def test_readme_and_docs_run_in_order(tmp_path, monkeypatch, capsys):
    from calib.reading.clough import CLOUGH_DIR

    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "data").symlink_to(REPO / "data")
    if CLOUGH_DIR.is_dir():  # the corpora that do not ship, beside the clone as beside the repository
        (tmp_path / "shared" / "corpora").mkdir(parents=True)
        (tmp_path / "shared" / "corpora" / "clough").symlink_to(CLOUGH_DIR)
    # the commands run as on a user's machine: calib sweep keeps its steps on disk by default (the other
    # tests run with the store off), here in a folder of this run's own
    env = dict(os.environ, PYTHONPATH=str(REPO), CALIB_CACHE="on", CALIB_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("CALIB_ALLOWED_DIRS", None)
    monkeypatch.chdir(clone)
    ran, skipped, done, took = [], [], set(), {}
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)

    def run(command: str, where: str) -> None:
        key = shlex.join(shlex.split(command, comments=True))
        if key in done:  # a page repeating an earlier page's command reuses its output
            return
        extra, argv = _argv(command)
        start = time.perf_counter()
        proc = subprocess.run(argv, cwd=clone, env={**env, **extra}, capture_output=True, text=True, timeout=1800)
        assert proc.returncode == 0, f"{where}: {command}\n{proc.stderr[-3000:]}"
        done.add(key)
        ran.append(command)
        took[where + " " + command[:70]] = time.perf_counter() - start

    for page in site_pages():
        globs: dict = {}
        for b in blocks(page):
            if b.marker and b.marker[0] == "needs" and not (clone / b.marker[1]).exists():
                skipped.append(f"{b.where()}: needs {b.marker[1]}, absent")
                continue
            if b.marker and b.marker[0] == "not run":
                skipped.append(f"{b.where()}: {b.marker[1]}")
                continue
            if b.lang == "pycon":
                test = doctest.DocTestParser().get_doctest(b.text, globs, b.where(), str(page), b.line)
                failed_before = runner.failures
                start = time.perf_counter()
                runner.run(test, clear_globs=False)
                assert runner.failures == failed_before, f"{b.where()}: a doctest failed (see the output above)"
                globs.update(test.globs)  # the page's later blocks see its earlier names
                ran.append(b.where())
                took[b.where() + " (doctest)"] = time.perf_counter() - start
            elif b.lang == "bash":
                numbered: dict[str, str] = {}
                for command in commands(b):
                    if command.startswith("#"):
                        if "label" in command:  # a human's step: label what the draw wrote
                            assert _label_drawn(clone / "work" / "drawn") > 0, command
                        for n in re.findall(r"run (\d+) again", command):
                            done.discard(shlex.join(shlex.split(numbered[n], comments=True)))
                            run(numbered[n], b.where())
                        continue
                    m = re.search(r"#\s*(\d+)\.", command)
                    if m:
                        numbered[m.group(1)] = command
                    run(command, b.where())
    with capsys.disabled():
        print(f"\nran {len(ran)} commands and doctests; skipped {len(skipped)} blocks:", *skipped, sep="\n  ")
        print("slowest:", *(f"{t:6.1f} s  {w}" for w, t in sorted(took.items(), key=lambda kv: -kv[1])[:12]),
              sep="\n  ")

    assert len(ran) >= 20, ran
    for out in ("work/results.parquet", "work/export/config.json", "work/proposal/manifest.csv",
                "work/drawn/pairs.csv", "work/drawn-export/config.json", "work/api-export/config.json"):
        assert (clone / out).is_file(), out
    manifest = pd.read_csv(clone / "work" / "proposal" / "manifest.csv")
    assert len(manifest) > 0 and "source" in manifest.columns  # --keep-fields names a field the corpus has
    # every column calib writes into a manifest is on the manifest page
    documented = (DOCS / "reference" / "manifest.md").read_text(encoding="utf-8")
    sample_columns = set(pd.read_csv(clone / "work" / "export" / "manifest.csv").columns)
    for column in (set(manifest.columns) | sample_columns) - {"source", "module", "domain", "language", "variant",
                                                                "length"}:
        assert f"`{column}`" in documented, column
    # "or on the app's Label page": the folder calib draw wrote is inside the app's allowed roots
    import appui.paths as paths
    from calib.labeling.draw import read_drawn
    monkeypatch.setattr(paths, "REPO_ROOT", clone)
    folder = paths.resolve_allowed("work/drawn")
    assert len(read_drawn(folder).pairs) > 500  # the first 500 and the ones --more added
