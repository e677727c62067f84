"""The README's Python API example runs as written (a doctest)."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


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
    import calib.sweep as sweep_module
    from calib.config import Config
    for name in calib.__all__:
        assert getattr(calib, name) is not None, name
    assert calib.Config is Config and calib.sweep is sweep_module and calib.sweep.Grid is calib.Grid
    for verb in (calib.sweep, calib.export, calib.apply, calib.load_sample, calib.recommend, calib.evaluate):
        assert callable(verb)
    with pytest.raises(AttributeError):
        calib.no_such_name  # noqa: B018
