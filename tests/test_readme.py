"""The README runs as written: its Python API example (a doctest) and every
``.venv/bin/calib`` command of its code blocks, in order, from a folder laid out
like a fresh clone (``data/`` of the repository, nothing else), except the
commands listed in NOT_RUN with the reason."""

from __future__ import annotations

import doctest
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
VENV = ".venv/bin/"
# command prefix -> why the README test does not run it
NOT_RUN = {
    ".venv/bin/calib apply --engine spark": "needs a Java runtime and the [spark] extra; the Spark engine is "
                                            "checked against the local one in tests/test_spark_apply.py",
}
# a human labels the drawn pairs between the README's draw steps; the test stands in for them
DUPLICATE_FROM = 0.7  # char 5-gram J at which the stand-in reviewer says duplicate


def readme_text() -> str:
    return README.read_text(encoding="utf-8")


def code_block_lines(text: str) -> list[str]:
    """The lines of the README's indented code blocks (4 spaces, outside lists'
    3-space continuations), with ``\\`` continuations joined."""
    out: list[str] = []
    for line in text.splitlines():
        if not line.startswith("    ") or not line.strip():
            continue
        line = line.strip()
        if out and out[-1].endswith("\\"):
            out[-1] = out[-1][:-1].rstrip() + " " + line
        else:
            out.append(line)
    return out


def calib_steps(text: str) -> list[str]:
    """The README's ``.venv/bin/calib`` commands and the comment lines between
    them (``#`` first), in README order."""
    steps, in_calib_block = [], False
    for line in code_block_lines(text):
        if line.startswith(VENV + "calib "):
            steps.append(line)
            in_calib_block = True
        elif line.startswith("#") and in_calib_block:
            steps.append(line)
        else:
            in_calib_block = False
    return steps


def test_readme_commands_are_spelled_to_run_from_the_clone():
    """After the README's first line, calib, python and streamlit live in .venv/bin/:
    every command of a code block, and every inline command with a file argument,
    names them there."""
    text = readme_text()
    bare = re.compile(r"^(calib|python3?|streamlit|pip)\s")
    blocks = [line for line in code_block_lines(text) if bare.match(line) and not line.startswith("python3 -m venv")]
    assert not blocks, blocks
    prose = re.sub(r"```.*?```", "", text, flags=re.S).replace("\n", " ")  # fences would shift the pairing
    spans = [s for s in re.findall(r"`([^`]+)`", prose)
             if bare.match(s) and any(tok != "/" and ("/" in tok or "." in tok) for tok in s.split()[1:])]
    assert not spans, spans
    steps = [s for s in calib_steps(text) if not s.startswith("#")]
    assert len(steps) >= 8, steps  # the three-step path, the draw loop, the Spark line
    for prefix in NOT_RUN:
        assert any(s.startswith(prefix) for s in steps), f"NOT_RUN lists {prefix!r}, which the README no longer has"


def _argv(command: str) -> list[str]:
    argv = shlex.split(command, comments=True)
    assert argv[0] == VENV + "calib", argv
    return [sys.executable, "-m", "calib", *argv[1:]]


def _label_drawn(folder: Path) -> int:
    """Fill the empty labels of a drawn set as a reviewer might: duplicate from J >= DUPLICATE_FROM."""
    p = pd.read_csv(folder / "pairs.csv", dtype=str, keep_default_na=False)
    empty = p["label"].str.strip() == ""
    p.loc[empty, "label"] = ["duplicate" if float(s) >= DUPLICATE_FROM else "not_duplicate"
                             for s in p.loc[empty, "similarity"]]
    p.to_csv(folder / "pairs.csv", index=False)
    return int(empty.sum())


@pytest.mark.slow
def test_readme_calib_commands_run_as_written(tmp_path, monkeypatch):
    import appui.paths as paths
    from calib.labeling.draw import read_drawn

    (tmp_path / "data").symlink_to(REPO / "data")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("CALIB_ALLOWED_DIRS", None)
    steps, numbered, ran = calib_steps(readme_text()), {}, []

    def run(command: str) -> None:
        proc = subprocess.run(_argv(command), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800)
        assert proc.returncode == 0, f"{command}\n{proc.stderr[-3000:]}"
        ran.append(command)

    for step in steps:
        if step.startswith("#"):
            if "label" in step:  # a human's step: label what the draw wrote
                assert _label_drawn(tmp_path / "work" / "drawn") > 0, step
            for n in re.findall(r"run (\d+) again", step):
                run(numbered[n])
            continue
        m = re.search(r"#\s*(\d+)\.", step)
        if m:
            numbered[m.group(1)] = step
        if any(step.startswith(prefix) for prefix in NOT_RUN):
            continue
        run(step)
    assert len(ran) >= 7, ran
    for out in ("work/results.parquet", "work/export/config.json", "work/proposal/manifest.csv",
                "work/drawn/pairs.csv", "work/drawn-export/config.json"):
        assert (tmp_path / out).is_file(), out
    manifest = pd.read_csv(tmp_path / "work" / "proposal" / "manifest.csv")
    assert len(manifest) > 0 and "source" in manifest.columns  # --keep-fields names a field the corpus has
    # "or on the app's Label page": the folder calib draw wrote is inside the app's allowed roots
    monkeypatch.setattr(paths, "REPO_ROOT", tmp_path)
    folder = paths.resolve_allowed("work/drawn")
    assert len(read_drawn(folder).pairs) > 500  # the first 500 and the ones --more added




def _pycon_blocks(text: str) -> list[str]:
    return re.findall(r"```pycon\n(.*?)```", text, flags=re.S)


@pytest.mark.slow
def test_readme_api_example_runs(tmp_path, monkeypatch):
    blocks = _pycon_blocks((REPO / "README.md").read_text(encoding="utf-8"))
    assert blocks, "the README has no ```pycon block"
    (tmp_path / "data").symlink_to(REPO / "data")
    monkeypatch.chdir(tmp_path)
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for k, block in enumerate(blocks):
        test = parser.get_doctest(block, {}, f"README.md block {k}", str(REPO / "README.md"), 0)
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 5 and result.failed == 0, f"{result.failed} README example(s) failed (see output)"
    assert (tmp_path / "export" / "config.json").is_file()


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
