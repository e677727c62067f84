"""End-to-end: the real app in Chromium (Playwright, no pytest-playwright plugin).

The app served on a free 127.0.0.1 port (tests/_app_server.py), visits every page
through the sidebar navigation, runs a small sweep over three representations,
reads the rendered charts (legend entries, axis labels), moves a slider on
Curves, and saves screenshots (1400 px wide, the desktop width the views are
laid out for) to test-artifacts/screenshots/NN_page.png.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from _util import needs_clough
from appui import labels as words
from calib.reading.clough import CLOUGH_DIR, load_clough
from calib.reading.samples import load_sample

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # a real browser: never in the fast loop

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
SHOTS = ROOT / "test-artifacts" / "screenshots"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'


@pytest.fixture(scope="module")
def server(app_server):
    """The app server of tests/conftest.py, shared with test_e2e_widths.py: its second sweep of the
    shipped sample reuses the sketches this module's sweep computed."""
    return app_server


@pytest.fixture(scope="module")
def page(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        pg = browser.new_page(viewport={"width": 1400, "height": 1600})
        pg.set_default_timeout(90_000)
        yield pg
        browser.close()


def idle(page, text: str | None = None) -> None:
    page.wait_for_timeout(300)
    page.wait_for_selector(IDLE, timeout=120_000)
    if text:
        page.locator('[data-testid="stMain"]').get_by_text(text, exact=False).first.wait_for(timeout=120_000)
    page.wait_for_selector(IDLE, timeout=120_000)


def sample_grid():
    """The grid the Sweep page starts from on the shipped sample (as calib sweep chooses it)."""
    from calib.search.grid import grid_from_sample
    from calib.search.workspace import Workspace
    return grid_from_sample(Workspace(load_sample(ROOT / "data" / "sample")))[0]


def only_128_and_a_split_list(page) -> None:
    """On the Sweep page: drop the 256 hash count (when the form has it) and switch splits to 'a list'
    (the form starts from the grid chosen from the sample: often 128 hashes and a list already). The form
    is the page's "A grid of your own", opened first."""
    summary = page.locator('[data-testid="stExpander"] summary', has_text="A grid of your own").first
    if summary.locator("xpath=..").get_attribute("open") is None:
        summary.click()
        idle(page, "Hash counts")
    box = page.locator('[data-testid="stMultiSelect"]', has_text="Hash counts")
    if "256" in box.inner_text():
        box.locator('svg[title="Delete"], [aria-label*="Remove 256"], [title="Delete"]').last.click()
        idle(page)
    page.get_by_text("a list", exact=True).click()
    idle(page)


def chart_texts(page, title: str, role: str) -> list[list[str]]:
    """The texts Vega drew in the chart whose title contains ``title``: one list per
    ``g.role-<role>`` group (role "legend": one list per legend, its title last;
    "axis-label": one list per axis)."""
    return page.evaluate("""([title, role]) => [...document.querySelectorAll('.vega-embed')]
        .filter(e => [...e.querySelectorAll('g.role-title text')].some(t => t.textContent.includes(title)))
        .flatMap(e => [...e.querySelectorAll('g.role-' + role)]
            .map(g => [...g.querySelectorAll('text')].map(t => t.textContent)))""", [title, role])


def category_labels(page) -> set[str]:
    """The category names on the 'Labeled pairs per category' chart's axes."""
    return {t for axis in chart_texts(page, "Labeled pairs per category", "axis-label") for t in axis}


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.wait_for_timeout(800)  # let charts finish drawing
    page.screenshot(path=str(SHOTS / name), animations="disabled")


def shot_at(page, text: str, name: str) -> None:
    """Scroll the heading ``text`` to the top of the view, then take a screenshot."""
    page.get_by_text(text, exact=False).first.evaluate("e => e.scrollIntoView({block: 'start'})")
    shot(page, name)


def nav(page, label: str) -> None:
    page.locator('[data-testid="stSidebarNavLink"]', has_text=label).first.click()


def no_exception(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.locator('[data-testid="stAlertContentError"]').count() == 0


def metric_value(page, label: str) -> str:
    m = page.locator('[data-testid="stMetric"]', has_text=label).first
    return m.locator('[data-testid="stMetricValue"]').inner_text()


def test_walk_every_page(page, server):
    page.goto(server)
    idle(page, "Duplicate pairs")
    assert "2,396" in page.locator('[data-testid="stMain"]').inner_text()
    no_exception(page)
    shot(page, "01_home.png")

    # a loopback tool for one person: no Deploy button (.streamlit/config.toml toolbarMode = "viewer")
    assert page.locator('[data-testid="stAppDeployButton"]').count() == 0
    assert page.get_by_role("button", name="Deploy").count() == 0

    nav(page, "Sample")
    idle(page, "Length distribution")
    no_exception(page)
    # every category of the shipped sample is labeled on the horizontal bar chart
    expected = set(load_sample(ROOT / "data" / "sample").pairs["category"])
    assert len(expected) == 11 and {words.category(c) for c in expected} <= category_labels(page)
    shot(page, "02_sample.png")

    nav(page, "Sweep")
    idle(page, "Run the search")
    # 128 hashes only, a list of splits; the representations the sample chose are already selected
    only_128_and_a_split_list(page)
    page.get_by_role("button", name="Run sweep").click()
    idle(page, "Recommended under")
    no_exception(page)
    # the Pareto chart's shingle legend: one entry per shingle kind swept (colour), not per representation
    legends = chart_texts(page, "Pair recall vs false-removal rate", "legend")
    kinds = [entries[:-1] for entries in legends if entries[-1] == "Shingles"]
    assert kinds == [sorted({r.shingle for r in sample_grid().representations})], legends
    # the recall axis stops at 100%
    labels = [t for axis in chart_texts(page, "Pair recall vs false-removal rate", "axis-label") for t in axis]
    assert labels and all(float(t.rstrip("%")) <= 100 for t in labels if t), labels
    # the decision columns are the first headers of the table
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.scroll_into_view_if_needed()
    grid.locator("th", has_text="recall").first.wait_for(state="attached")  # the grid draws late
    headers = grid.locator("th").all_text_contents()
    assert [h.strip() for h in headers if h.strip()][:4] == ["configuration", "recall", "false rem.",
                                                            "recall 95% CI"], headers
    recommended = re.search(r"Recommended under a [\d.]+% budget:\s*(\S+)",
                            page.locator('[data-testid="stMain"]').inner_text()).group(1)  # e.g. word3 or char5
    before = page.locator('[data-testid="stSidebar"]').inner_text()
    page.get_by_role("button", name="Use the recommended configuration").click()
    idle(page, "Current configuration set to the recommendation")
    after = page.locator('[data-testid="stSidebar"]').inner_text()
    assert "recommended by the sweep" in after and after != before  # it changed the configuration
    assert recommended in after, (recommended, after)
    idle(page, "The current configuration is this recommendation")
    shot(page, "03_sweep.png")
    shot_at(page, "Pair recall vs false-removal rate", "03b_sweep_chart_table.png")
    shot_at(page, "All configurations", "03c_sweep_table.png")

    nav(page, "Curves")
    idle(page, "S-curve for b=")
    no_exception(page)
    before = metric_value(page, "P at threshold")
    page.get_by_role("slider").first.focus()
    page.keyboard.press("ArrowRight")
    idle(page)
    page.wait_for_function(
        """(b) => { const m = [...document.querySelectorAll('[data-testid="stMetric"]')]
                      .find(e => e.innerText.includes('P at threshold'));
                    return m && !m.innerText.includes(b); }""", arg=before, timeout=60_000)
    after = metric_value(page, "P at threshold")
    assert after != before
    assert re.search(r"b=9.*r=13", page.locator('[data-testid="stMain"]').inner_text().replace("\n", " "))
    assert "b x r may not exceed num_perm = 128" in page.locator('[data-testid="stMain"]').inner_text()
    page.get_by_role("button", name=re.compile(r"^Make b=.* the current configuration$")).wait_for()
    shot(page, "04_curves.png")
    shot_at(page, "MinHash estimate vs exact Jaccard", "04b_curves_error_optimizer.png")

    nav(page, "Clusters")
    idle(page, "Clusters by risk")
    idle(page, "Compare two documents")
    no_exception(page)
    shot(page, "05_clusters.png")
    shot_at(page, "One cluster as a graph", "05b_clusters_graph_diff.png")

    nav(page, "Review")
    idle(page, "Queue:")
    no_exception(page)
    # the shipped sample's not-judged documents: the queue opens on pairs without a sample label
    queue = re.search(r"Queue[^:\n]*: [\d,]+ pairs? left \(([\d,]+) without a sample label",
                      page.locator('[data-testid="stMain"]').inner_text())
    assert queue and int(queue.group(1).replace(",", "")) > 0, queue
    shot(page, "06_review.png")

    nav(page, "Export")
    idle(page, "Download config.json")
    idle(page, "Showing")
    no_exception(page)
    assert "Nothing is deleted" in page.locator('[data-testid="stMain"]').inner_text()
    with page.expect_download() as dl:
        page.get_by_role("button", name="Download config.json").click()
    assert dl.value.suggested_filename.startswith("calib-config-")
    doc = json.loads(Path(dl.value.path()).read_text())
    assert doc["format_version"] == 1 and doc["evidence"]["selection"]["method"] == "recommend"
    with page.expect_download() as dl:
        page.get_by_role("button", name="Download the manifest (CSV)").click()
    header = Path(dl.value.path()).read_text().splitlines()[0]
    assert header.startswith("doc_id,cluster_id,representative_id,")
    page.evaluate("""() => { for (const e of document.querySelectorAll(
        '[data-testid="stMain"], [data-testid="stAppViewContainer"], section.main, .main')) e.scrollTop = 0;
        window.scrollTo(0, 0); }""")
    shot(page, "07_export.png")
    page.get_by_role("tab", name=re.compile("Milvus")).click()
    page.wait_for_timeout(300)
    shot_at(page, "2. Production targets", "07b_export_targets.png")
    shot_at(page, "3. Removal manifest", "07c_export_manifest.png")


def load_path(page, path) -> None:
    """On the Sample page: load a folder by its path."""
    nav(page, "Sample")
    idle(page, "Length distribution")
    page.get_by_text("Path on this machine").click()
    idle(page)
    page.get_by_placeholder("data/sample").fill(str(path))
    page.keyboard.press("Enter")
    idle(page)
    page.get_by_role("button", name="Load path").click()
    idle(page, "Loaded")
    no_exception(page)


def test_sweep_without_labels_says_so_once(page, server, unlabeled):
    page.goto(server)
    idle(page, "Duplicate pairs")
    load_path(page, unlabeled)
    nav(page, "Sweep")
    idle(page, "Run the search")
    only_128_and_a_split_list(page)
    page.get_by_role("button", name="Run sweep").click()
    idle(page, "Results of a grid of your own")
    no_exception(page)
    warnings = page.locator('[data-testid="stAlertContentWarning"]').all_inner_texts()
    assert len(warnings) == 1 and "no duplicate labels" in warnings[0], warnings
    assert page.locator('[data-testid="stVegaLiteChart"]').count() == 0  # no empty Pareto chart
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.scroll_into_view_if_needed()
    grid.locator("th", has_text="candidates").first.wait_for(state="attached")
    headers = [h.strip() for h in grid.locator("th").all_text_contents()]
    assert [h for h in headers if h][:4] == ["configuration", "candidates", "removed", "reduction"], headers
    shot_at(page, "Results", "03d_sweep_no_labels.png")


@needs_clough
def test_category_chart_labels_every_clough_category(page, server):
    """The Clough corpus (four categories, one of them twice as large): every label shows."""
    page.goto(server)
    idle(page, "Duplicate pairs")
    load_path(page, CLOUGH_DIR)
    assert "clough: 100 documents" in page.locator('[data-testid="stSidebar"]').inner_text()
    expected = set(load_clough(CLOUGH_DIR).pairs["category"])
    assert expected == {"cut", "light", "heavy", "non"}
    assert {words.category(c) for c in expected} <= category_labels(page)
    shot_at(page, "Length distribution", "02b_sample_clough.png")
