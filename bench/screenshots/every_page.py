"""Screenshots of every page at 1400, 1000 and 800 px wide, for looking at (what AppTest cannot see: the look).

    PYTHONPATH=$PWD .venv/bin/python -m bench.screenshots.every_page OUT_DIR [--drawn FOLDER]

Starts ``streamlit run app.py`` on a free 127.0.0.1 port (a throwaway review
database), walks Home, Sample, Sweep (the default grid, then the recommended
configuration, then its own row ticked in the table), Curves, Clusters, Review
(one decision against the sample's label), Export and Label (``--drawn``: a
folder written by ``calib draw``, allowed through CALIB_ALLOWED_DIRS). Each page
is shot in a tall viewport and cut into 1200 px high pieces:
OUT_DIR/NN_page_WIDTH_K.png. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # the browser helpers import tests/_util.py
from tests._app_server import _free_port  # noqa: E402
from tests.test_e2e_browser import ARGS, CHROMIUM, idle, nav  # noqa: E402 - one set of browser helpers

WIDTHS = (1400, 1000, 800)
TALL = 7000  # Streamlit scrolls an inner container: a tall viewport shows the whole page
PIECE = 1200


def start(env: dict) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.address",
         "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).read() == b"ok":
                return proc, url
        except OSError:
            time.sleep(0.3)
    proc.terminate()
    raise SystemExit("streamlit did not become healthy")


def visit(page, label: str, *texts: str) -> None:
    """Open page ``label`` from the sidebar and wait until it shows every one of ``texts``."""
    nav(page, label)
    for text in texts:
        idle(page, text)


def shoot(page, out: Path, name: str) -> None:
    """The page at each width, cut into pieces below the last drawn element."""
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": TALL})
        idle(page)
        page.wait_for_timeout(1500)  # charts redraw at the new width
        height = page.evaluate("""() => { const m = document.querySelector('[data-testid="stMainBlockContainer"]')
                                          || document.querySelector('[data-testid="stMain"]');
                                          return Math.ceil(m.getBoundingClientRect().bottom); }""")
        full = out / f"{name}_{width}.png"
        page.screenshot(path=str(full), animations="disabled")
        img = Image.open(full)
        bottom = min(img.height, max(int(height) + 20, PIECE))
        for k, top in enumerate(range(0, bottom, PIECE)):
            img.crop((0, top, width, min(top + PIECE, bottom))).save(out / f"{name}_{width}_{k}.png")
        full.unlink()
    page.set_viewport_size({"width": WIDTHS[0], "height": TALL})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--drawn", type=Path, help="a calib draw folder for the Label page")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="calib-screens-"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CALIB_REVIEW_DB": str(tmp / "reviews.sqlite")}
    if a.drawn:
        env["CALIB_ALLOWED_DIRS"] = str(a.drawn.resolve().parent)
    proc, url = start(env)
    from playwright.sync_api import sync_playwright
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": WIDTHS[0], "height": TALL})
            page.set_default_timeout(600_000)
            page.goto(url)
            idle(page, "Duplicate pairs")
            shoot(page, a.out, "01_home")
            visit(page, "Sample", "Length distribution")
            shoot(page, a.out, "02_sample")
            visit(page, "Sweep", "Run the search")
            page.get_by_role("button", name="Run the search").click()
            page.get_by_text("How the search went", exact=False).first.wait_for(timeout=1_800_000)
            idle(page, "Recommended under")
            page.get_by_role("button", name="Use the recommended configuration").click()
            idle(page, "The current configuration is this recommendation")
            # within the budget the recommended (= current) row sorts first: tick it
            page.get_by_text("Only within the budget", exact=True).click()
            idle(page)
            grid = page.locator('[data-testid="stDataFrame"]').first
            grid.scroll_into_view_if_needed()
            page.wait_for_timeout(1500)
            box = grid.bounding_box()
            page.mouse.click(box["x"] + 12, box["y"] + 35 + 17)
            idle(page)
            shoot(page, a.out, "03_sweep")
            visit(page, "Curves", "S-curve for b=", "What datasketch")
            page.get_by_text("Collision rates per bin (table)").click()  # the per-bin table's headers
            idle(page)
            shoot(page, a.out, "04_curves")
            visit(page, "Clusters", "Compare two documents")
            shoot(page, a.out, "05_clusters")
            visit(page, "Review", "Decisions")
            page.get_by_role("textbox", name="Reviewer name").first.fill("screens")
            page.keyboard.press("Enter")
            idle(page)
            for _ in range(2):
                page.get_by_role("button", name="Not duplicate").first.click()
                idle(page, "Recorded")
            page.get_by_text("pairs in the queue").first.click()
            idle(page)
            shoot(page, a.out, "06_review")
            visit(page, "Export", "Download config.json")
            shoot(page, a.out, "07_export")
            if a.drawn:
                visit(page, "Label", "Drawn set folder")
                page.get_by_label("Drawn set folder").fill(str(a.drawn.resolve()))
                page.keyboard.press("Enter")
                idle(page, "Progress")
                shoot(page, a.out, "08_label")
            browser.close()
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
