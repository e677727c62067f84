"""The documentation site as a reader's browser draws it: no code block hides the end of a command."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
# pages with the longest command lines
PAGES = ("tutorials/own-corpus", "corpus-draw", "how-to/calib-apply", "how-to/datasketch", "getting-started")


@pytest.mark.slow
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium")
def test_code_blocks_wrap_at_800_px(tmp_path):
    """Built with mkdocs, each page's code blocks at 800 px: no line wider than its block (a block that
    scrolls sideways shows its scrollbar only on hover on many systems, and the options at the end of a
    command are then simply not there for the reader)."""
    from playwright.sync_api import sync_playwright
    site = tmp_path / "site"
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(site)], cwd=ROOT, check=True,
                   capture_output=True, env={"NO_MKDOCS_2_WARNING": "1", "PATH": str(Path(sys.executable).parent)})
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 800, "height": 1000})
        for name in PAGES:
            page.goto((site / name / "index.html").as_uri())
            blocks = page.eval_on_selector_all(
                "pre > code", "els => els.map(e => [e.scrollWidth, e.clientWidth, e.innerText.slice(0, 60)])")
            assert blocks, name
            cut = [b for b in blocks if b[0] > b[1] + 1]
            assert not cut, (name, cut)
        browser.close()
