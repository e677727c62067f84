"""Data never becomes markup (a sample is untrusted input): a sample whose file name, ids, texts and
slice values carry Markdown and HTML payloads is uploaded into the real app in
Chromium and every page is walked; the DOM must hold no link, image, heading or
script that came from the data, and the browser must request none of the
payloads' URLs. Screenshots: test-artifacts/screenshots/payload_NN_page.png.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from _app_server import serve
from test_e2e_browser import ARGS, CHROMIUM, SHOTS, idle, nav, only_128_and_a_split_list

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # a real browser: never in the fast loop

ROOT = Path(__file__).resolve().parents[1]
TRAP = "127.0.0.1:9"  # nothing listens there; any request to it came from data
PAYLOADS = [
    f"![MARKimg](http://{TRAP}/MARKimg.png)",
    f"[MARKlink](http://{TRAP}/MARKlink)",
    "# MARKhead",
    f"<img src=http://{TRAP}/MARKtag.png>",
    "<script>window.MARKpwned=1</script>",
    ":red[MARKcolor] $MARKmath$ **MARKbold**",
]
# A file name cannot hold "/": a relative image URL is fetched from the app's own origin.
FILE_NAME = "![MARKfimg](MARKfile.png) [MARKflink](javascript:alert(1)) # MARKfhead <img src=MARKftag.png>.jsonl"

FIND_MARKUP = """() => {
  // any-case "mark": the diff shows normalized (lowercased) text
  const fromData = v => /mark|127\\.0\\.0\\.1:9|javascript:/i.test(v || '');
  const bad = [];
  for (const el of document.querySelectorAll('img, source, video, audio, iframe, embed, object, script')) {
    if (fromData(el.getAttribute('src')) || fromData(el.getAttribute('data'))
        || (el.tagName === 'SCRIPT' && /mark/i.test(el.textContent))) bad.push(el.outerHTML.slice(0, 160));
  }
  for (const el of document.querySelectorAll('a')) {  // heading anchors ("#slug") are Streamlit's own
    const href = el.getAttribute('href') || '';
    if (!href.startsWith('#') && fromData(href)) bad.push(el.outerHTML.slice(0, 160));
  }
  for (const el of document.querySelectorAll('h1, h2, h3, h4, h5, h6')) {
    if (/^mark/i.test((el.textContent || '').trim())) bad.push(el.outerHTML.slice(0, 160));
  }
  if (window.MARKpwned) bad.push('a script from the data ran');
  return bad;
}"""


def _docs(path: Path) -> Path:
    words = " ".join(json.loads(line)["text"] for line in
                     (ROOT / "data" / "sample" / "docs.jsonl").read_text(encoding="utf-8").splitlines()[:60]).split()
    recs = []
    for k in range(12):
        body = " ".join(words[k * 40:(k + 1) * 40])
        payload = PAYLOADS[k % len(PAYLOADS)]
        text = f"{payload}\n\n{body}\n\n{payload} and more {payload}\n\n# MARKhead line\n{PAYLOADS[4]}\n"
        group = f"g{k // 2}" if k < 8 else None
        if k < 8 and k % 2:
            text = recs[-1]["text"].replace(words[k * 40 - 20], "changed")  # a near-duplicate of the previous
        recs.append({"id": f"{payload} id{k}", "text": text, "group": group,
                     "domain": PAYLOADS[(k + 1) % len(PAYLOADS)] + f" d{k % 3}"})
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory, unlabeled):
    """A server of its own: the uploaded payload sample stays out of the other browser tests' server."""
    with serve(tmp_path_factory.mktemp("server"), allowed=[unlabeled]) as url:
        yield url


def check(page, requests: list[str], where: str) -> None:
    bad = page.evaluate(FIND_MARKUP)
    assert bad == [], f"{where}: markup from the data in the DOM: {bad}"
    hits = [u for u in requests if TRAP in u or "MARK" in u]
    assert hits == [], f"{where}: the browser requested {hits}"
    assert page.locator('[data-testid="stException"]').count() == 0, where


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.wait_for_timeout(800)
    page.screenshot(path=str(SHOTS / name), animations="disabled")


def test_payloads_render_as_text_on_every_page(server, tmp_path):
    from playwright.sync_api import sync_playwright

    docs = _docs(tmp_path / FILE_NAME)
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1600})
        page.set_default_timeout(90_000)
        page.on("request", lambda r: requests.append(r.url))
        try:
            page.goto(server)
            idle(page, "Duplicate pairs")
            nav(page, "Sample")
            idle(page, "Length distribution")
            page.get_by_text("Upload files", exact=True).click()
            idle(page)
            page.locator('[data-testid="stFileUploader"] input[type=file]').first.set_input_files(str(docs))
            idle(page)
            page.get_by_role("button", name="Load uploaded files").click()
            idle(page, "Groups: 4 named groups")
            main = page.locator('[data-testid="stMain"]').inner_text()
            # shown, as typed: the file name (flash message and sample name) and a slice value
            assert "![MARKfimg](MARKfile.png)" in main, main[:2000]
            check(page, requests, "Sample")
            shot(page, "payload_01_sample.png")

            nav(page, "Sweep")
            idle(page, "Run the search")
            only_128_and_a_split_list(page)
            page.get_by_role("button", name="Run sweep").click()
            idle(page, "Recommended under")
            page.get_by_role("button", name="Use the recommended configuration").click()
            idle(page, "Current configuration set to the recommendation")
            check(page, requests, "Sweep")

            nav(page, "Curves")
            idle(page, "S-curve for b=")
            check(page, requests, "Curves")

            nav(page, "Clusters")
            idle(page, "Compare two documents")
            page.get_by_text("Exact Jaccard", exact=False).first.evaluate("e => e.scrollIntoView({block: 'start'})")
            diff_text = page.locator(".calib-diff").first.inner_text()
            assert "<script>window.markpwned=1</script>" in diff_text  # the payload (ending every text) is in the diff, as text
            check(page, requests, "Clusters")
            shot(page, "payload_02_clusters_diff.png")

            nav(page, "Review")
            idle(page, "Queue:")
            main = page.locator('[data-testid="stMain"]').inner_text()
            assert " vs " in main and "id" in main
            check(page, requests, "Review")
            shot(page, "payload_03_review.png")

            nav(page, "Export")
            idle(page, "Download config.json")
            check(page, requests, "Export")

            nav(page, "Home")
            idle(page, "Duplicate pairs")
            assert "MARKfhead" in page.locator('[data-testid="stMain"]').inner_text()
            check(page, requests, "Home")
            shot(page, "payload_04_home.png")
            sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
            assert re.search(r"!\[MARKfimg\]\(MARKfile\.png\)", sidebar), sidebar
        except BaseException:
            shot(page, "payload_failure.png")
            raise
        finally:
            browser.close()
