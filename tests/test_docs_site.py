"""The documentation site as a reader's browser draws it: no code block wraps inside an option or hides the end of a command."""

import os
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


def built_site(tmp_path: Path) -> Path:
    """The site .ci/run built a moment ago from this tree with mkdocs build --strict (CALIB_DOCS_SITE), or
    one built here the same way when the variable is unset."""
    given = os.environ.get("CALIB_DOCS_SITE")
    if given:
        assert (Path(given) / "index.html").is_file(), f"CALIB_DOCS_SITE={given} holds no built site"
        return Path(given)
    site = tmp_path / "site"
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(site)], cwd=ROOT, check=True,
                   capture_output=True, env={"NO_MKDOCS_2_WARNING": "1", "PATH": str(Path(sys.executable).parent)})
    return site


@pytest.mark.slow
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium")
def test_code_blocks_scroll_and_never_wrap_inside_an_option_at_800_px(tmp_path):
    """Built with mkdocs, each page's code blocks at 800 px: no line wraps (a wrap breaks after any
    hyphen, inside an option: "--pairs 500 -" / "-seed 0"); a line wider than its block scrolls, with a
    scrollbar that takes layout space (drawn always, not only on hover); and the first line's end is
    clear of the copy button."""
    from playwright.sync_api import sync_playwright
    site = built_site(tmp_path)
    probe = """els => els.map(e => {
        const cs = getComputedStyle(e), r = e.getBoundingClientRect();
        const button = e.parentElement.querySelector('.md-clipboard');
        const bar = e.offsetHeight - e.clientHeight - parseFloat(cs.borderTopWidth) - parseFloat(cs.borderBottomWidth);
        return {text: e.innerText.slice(0, 60), ws: cs.whiteSpace, ox: cs.overflowX, wide: e.scrollWidth > e.clientWidth + 1,
                bar: bar, textRight: r.right - parseFloat(cs.paddingRight),
                buttonLeft: button ? button.getBoundingClientRect().left : null};
    })"""
    seen_wide = 0
    with sync_playwright() as p:
        # Playwright hides scrollbars by default (--hide-scrollbars): a reader's browser draws them
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, ignore_default_args=["--hide-scrollbars"])
        page = browser.new_page(viewport={"width": 800, "height": 1000})
        for name in PAGES:
            page.goto((site / name / "index.html").as_uri())
            blocks = page.eval_on_selector_all("pre > code", probe)
            assert blocks, name
            for b in blocks:
                assert b["ws"] == "pre", (name, b)  # never wraps
                if b["wide"]:
                    seen_wide += 1
                    assert b["ox"] in ("auto", "scroll") and b["bar"] > 0, (name, b)  # scrolls, bar drawn
                if b["buttonLeft"] is not None:
                    assert b["textRight"] <= b["buttonLeft"] + 1, (name, b)  # text clear of the copy button
        browser.close()
    assert seen_wide > 0  # the pages' long commands are there, and scroll
