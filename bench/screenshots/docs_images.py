"""The README's two screenshots, taken from the running app in Chromium.

    .venv/bin/python -m bench.screenshots.docs_images

Starts ``streamlit run app.py`` on a free 127.0.0.1 port (a throwaway review
database), runs the Sweep page's default search on the shipped sample, makes
the recommendation the current configuration and shoots the page from its
recommendation down through the Pareto chart (docs/images/sweep.png); then
shoots the Curves page's S-curve for that configuration (docs/images/curves.png).
Each PNG records who made it and a digest of the page sources it shows
(``pages_digest``): tests/test_readme.py fails when those sources changed after
the images were taken, so the README never shows a page that is gone.
Not a test: it writes into docs/images.
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "images"
IMAGES = ("sweep.png", "curves.png")
# what the two screenshots draw: the two pages and the chart code they share
SOURCES = ("pages/2_Sweep.py", "pages/3_Curves.py", "appui/charts.py")
WIDTH, HEIGHT = 1400, 1000


def pages_digest() -> str:
    h = hashlib.sha256()
    for name in SOURCES:
        h.update(name.encode() + b"\0" + (ROOT / name).read_bytes().replace(b"\r\n", b"\n") + b"\0")
    return h.hexdigest()[:16]


def save(png: bytes, path: Path) -> None:
    """Write the screenshot with its provenance in PNG text chunks (palette-reduced: a tenth of the bytes)."""
    from PIL import Image, PngImagePlugin

    meta = PngImagePlugin.PngInfo()
    meta.add_text("made-by", "bench/screenshots/docs_images.py")
    meta.add_text("pages-digest", pages_digest())
    img = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    tmp = path.with_suffix(".tmp.png")
    img.save(tmp, pnginfo=meta, optimize=True)
    os.replace(tmp, path)


def main() -> None:
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # the browser helpers import tests/_util.py
    from bench.screenshots.every_page import start, visit
    from tests.test_e2e_browser import ARGS, CHROMIUM, idle

    OUT.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="calib-docs-images-"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CALIB_REVIEW_DB": str(tmp / "reviews.sqlite")}
    proc, url = start(env)
    from playwright.sync_api import sync_playwright
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.set_default_timeout(600_000)
            page.goto(url)
            idle(page, "Duplicate pairs")
            visit(page, "Sweep", "Run the search")
            page.get_by_role("button", name="Run the search").click()
            page.get_by_text("How the search went", exact=False).first.wait_for(timeout=1_800_000)
            idle(page, "Recommended under")
            page.get_by_role("button", name="Use the recommended configuration").click()
            idle(page, "The current configuration is this recommendation")
            page.wait_for_timeout(1500)  # the chart finishes drawing
            page.get_by_text("Recommended under", exact=False).first.evaluate(
                "e => e.scrollIntoView({block: 'start'})")
            page.mouse.move(WIDTH // 2, HEIGHT // 2)
            page.mouse.wheel(0, -120)  # the recommendation's line above its figures
            page.wait_for_timeout(800)
            save(page.screenshot(animations="disabled"), OUT / "sweep.png")
            visit(page, "Curves", "S-curve for b=")
            page.wait_for_timeout(1500)
            page.get_by_text("S-curve against measured collision rates", exact=False).first.evaluate(
                "e => e.scrollIntoView({block: 'start'})")
            page.wait_for_timeout(800)
            save(page.screenshot(animations="disabled"), OUT / "curves.png")
            browser.close()
    finally:
        proc.terminate()
        proc.wait(10)
    for name in IMAGES:
        print(f"wrote docs/images/{name} ({(OUT / name).stat().st_size // 1024} KB)")


if __name__ == "__main__":
    main()
