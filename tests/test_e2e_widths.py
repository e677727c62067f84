"""Every page measured in Chromium at 1400, 1000 and 800 px: what the browser draws, not only a look.

One server and one browser session for the module; the page loads are few (the
sidebar navigates, the viewport is resized in place). On each page and width:
no metric label or value, widget label, multiselect chip, st.table cell, chart title, axis
title or legend cut (scrollWidth against clientWidth, SVG boxes against the
chart's), and no legend over a chart's plot area. Screenshots:
test-artifacts/widths/NN_page_WIDTH.png. Streamlit's st.dataframe draws on a
canvas: its columns are sized by a rule (appui.tables.fit_width), tested in
test_app_readability.py.
"""

from __future__ import annotations

import re

import pytest

from test_e2e_browser import (ARGS, CHROMIUM, ROOT, idle, nav, no_exception, only_128_and_a_split_list,  # noqa: F401
                              server)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WIDTHS = (1400, 1000, 800)
HEIGHT = 2400
SHOTS = ROOT / "test-artifacts" / "widths"

MEASURE = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const bad = [];
  const cut = e => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1;
  const text = e => (e.innerText || e.textContent || '').trim().slice(0, 60);
  for (const m of main.querySelectorAll('[data-testid="stMetricLabel"], [data-testid="stMetricValue"]'))
    for (const e of [m, ...m.querySelectorAll('div, p, span')]) if (cut(e)) { bad.push('metric: ' + text(m)); break; }
  // a widget's label text (the label element itself also holds the hidden input, so its own width says nothing)
  for (const w of main.querySelectorAll('[data-testid="stWidgetLabel"], [data-testid="stCheckbox"] label'))
    for (const e of w.querySelectorAll('[data-testid="stMarkdownContainer"], p')) if (cut(e)) { bad.push('widget label: ' + text(w)); break; }
  for (const t of main.querySelectorAll('[data-testid="stMultiSelect"] [data-baseweb="tag"]'))
    for (const e of [t, ...t.querySelectorAll('span')]) if (cut(e)) { bad.push('chip: ' + text(t)); break; }
  // a button's label (a column narrower than the label cut it to "Download ...")
  for (const b of main.querySelectorAll('button[data-testid^="stBaseButton"]'))
    for (const e of [b, ...b.querySelectorAll('div, p, span')]) if (cut(e)) { bad.push('button: ' + text(b)); break; }
  // a right margin: nothing drawn up to the window's edge (at 800 px the home links and an axis title were)
  for (const e of main.querySelectorAll('[data-testid="stElementContainer"]')) {
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > window.innerWidth - 8) bad.push(`no right margin (${Math.round(r.right)} px): ` + text(e));
  }
  for (const c of main.querySelectorAll('[data-testid="stTable"] td, [data-testid="stTable"] th'))
    if (cut(c)) bad.push('table cell: ' + text(c));
  for (const t of main.querySelectorAll('[data-testid="stTable"]'))  // a table wider than its column hides cells
    for (const e of [t, ...t.querySelectorAll('div')]) if (cut(e)) { bad.push('table cut: ' + text(t.querySelector('th') || t)); break; }
  // 6 px of slack: a glyph's box (ascent, a rotated title's) pokes past the chart's by a few pixels when
  // nothing is cut; a cut title or legend loses whole letters or entries
  const within = (r, box) => r.left >= box.left - 6 && r.right <= box.right + 6 && r.top >= box.top - 6
                             && r.bottom <= box.bottom + 6;
  const overlaps = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  let charts = 0, legends = 0;
  for (const svg of main.querySelectorAll('.vega-embed svg')) {
    charts += 1;
    const box = (svg.closest('[data-testid="stVegaLiteChart"]') || svg.closest('.vega-embed') || svg).getBoundingClientRect();
    const title = (svg.querySelector('g.role-title text') || {}).textContent || '?';
    for (const t of svg.querySelectorAll('g.role-title text, g.role-axis-title text, g.role-legend-title text'))
      if (t.textContent && !within(t.getBoundingClientRect(), box)) { const r = t.getBoundingClientRect();
        bad.push(`cut text in "${title}": ${t.textContent} [${[r.left - box.left, r.top - box.top, box.right - r.right, box.bottom - r.bottom].map(Math.round)}]`); }
    const domains = [...svg.querySelectorAll('g.role-axis-domain path')].map(p => p.getBoundingClientRect());
    const plot = domains.length < 2 ? null : {left: Math.min(...domains.map(r => r.left)),
      right: Math.max(...domains.map(r => r.right)), top: Math.min(...domains.map(r => r.top)),
      bottom: Math.max(...domains.map(r => r.bottom))};
    for (const g of svg.querySelectorAll('g.role-legend')) {
      legends += 1;
      const r = g.getBoundingClientRect();
      if (r.width === 0) continue;
      if (!within(r, box)) bad.push(`legend cut in "${title}"`);
      if (plot && overlaps(r, plot)) bad.push(`legend over the plot in "${title}"`);
    }
    if (plot && plot.bottom - plot.top < 250) bad.push(`plot squashed to ${Math.round(plot.bottom - plot.top)} px in "${title}"`);
  }
  return {bad, charts, legends};
}"""


def measure(page, name: str) -> dict:
    """The page at each width: problems found (asserted empty) and a screenshot per width."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    seen = {}
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": HEIGHT})
        idle(page)
        page.wait_for_timeout(1200)  # charts and grids redraw at the new width
        got = page.evaluate(MEASURE)
        page.screenshot(path=str(SHOTS / f"{name}_{width}.png"), animations="disabled")
        seen[width] = got
    page.set_viewport_size({"width": WIDTHS[0], "height": HEIGHT})
    problems = {w: g["bad"] for w, g in seen.items() if g["bad"]}
    assert not problems, f"{name}: {problems}"
    return seen[WIDTHS[0]]


@pytest.fixture(scope="module")
def page(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        pg = browser.new_page(viewport={"width": WIDTHS[0], "height": HEIGHT})
        pg.set_default_timeout(120_000)
        yield pg
        browser.close()


@pytest.fixture(scope="module")
def drawn(unlabeled):
    """A drawn set (300 shipped documents, 40 pairs) inside the server's allowed folder."""
    from calib.labeling.draw import draw, write_drawn
    folder = unlabeled / "drawn"
    write_drawn(folder, draw(ROOT / "data" / "sample" / "docs.jsonl", docs=300, pairs=40, seed=3))
    return folder


def slow_step(page, text: str) -> None:
    """Wait for a sweep (minutes on a loaded 2-core machine), then for the page to be idle."""
    page.locator('[data-testid="stMain"]').get_by_text(text, exact=False).first.wait_for(timeout=600_000)
    idle(page, text)


def main_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


# The grid's font, as Streamlit's dataframe draws it; a character wider than appui.tables.CHAR_WIDTHS says
# would cut a cell sized by appui.tables.fit_width.
CHAR_WIDTHS = """(chars) => { const m = document.createElement('canvas').getContext('2d'); const out = {};
  const family = getComputedStyle(document.querySelector('[data-testid="stMain"]')).fontFamily;
  for (const weight of ['400', '600']) { m.font = `${weight} 14px ${family}`;
    for (const c of chars) out[c] = Math.max(out[c] || 0, m.measureText(c).width); }
  return out; }"""
ROW_MARKERS_PX = 40  # the grid's tick-box column in front of the pinned ones


def sweep_table_fits(page) -> None:
    """The Sweep table's pinned columns (configuration, recall, false-removal rate) fit in the grid at every
    width, with each column as wide as appui.tables.fit_width makes it from the results the page holds
    (downloaded as CSV), and the grid font's characters no wider than the rule assumes."""
    import pandas as pd

    from appui import tables
    measured = page.evaluate(CHAR_WIDTHS, "".join(tables.CHAR_WIDTHS))
    wider = {c: (round(w, 2), tables.CHAR_WIDTHS[c]) for c, w in measured.items() if w > tables.CHAR_WIDTHS[c] + 0.05}
    assert not wider, wider
    with page.expect_download() as got:
        page.get_by_role("button", name="Download results (CSV)").click()
    results = pd.read_csv(got.value.path())
    results = results[results["status"] == "ok"]
    fp = results["config_fingerprint"].iloc[0]  # the longest mark ("★● ") on a row: the widest the column gets
    _, config = tables.sweep_view(results, recommended_fp=fp, current_fp=fp)
    pinned = [c for c, v in config.items() if v.get("pinned")]
    assert pinned == ["configuration", "pair_recall", "false_removal_rate"], pinned
    need = sum(config[c]["width"] for c in pinned) + tables.text_px("★● ") + ROW_MARKERS_PX
    grid = page.locator('[data-testid="stDataFrame"]').first
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": HEIGHT})
        idle(page)
        page.wait_for_timeout(800)
        have = grid.bounding_box()["width"]
        assert need <= have, (width, need, have, {c: config[c]["width"] for c in pinned})
    page.set_viewport_size({"width": WIDTHS[0], "height": HEIGHT})


def r_follows_b(page) -> None:
    """Curves: b from 16 to 25 with the keyboard leaves r's slider at 5 of 5 (it was drawn at 1 while the
    page used 5)."""
    def shown(k: int) -> tuple[str, str]:  # slider k's value and the largest it takes, as drawn
        value = page.locator('[data-testid="stSliderThumbValue"]').nth(k).inner_text().strip()
        return value, page.locator('[data-testid="stSliderTickBar"]').nth(k).inner_text().split()[-1]

    assert (shown(0)[0], shown(1)) == ("16", ("8", "8"))
    b = page.get_by_role("slider").nth(0)
    for _ in range(9):
        b.focus()
        b.press("ArrowRight")
    idle(page, "125/128")
    page.wait_for_timeout(500)
    assert (shown(0)[0], shown(1)) == ("25", ("5", "5"))
    r = page.get_by_role("slider").nth(1)
    r.focus()
    r.press("ArrowLeft")
    idle(page, "100/128")
    assert shown(1) == ("4", "5")
    page.get_by_role("button", name="Reset sliders to the current configuration").click()
    idle(page)


def test_every_page_reads_at_1400_1000_and_800_px(page, server, drawn):
    page.goto(server)
    idle(page, "Duplicate pairs")
    measure(page, "01_home")

    # before any sweep the Export page says its configuration is the untuned default
    nav(page, "Export")
    idle(page, "Download config.json")
    no_exception(page)
    assert "Untuned:" in main_text(page) and "untuned default" in main_text(page)
    measure(page, "07_export_untuned")

    nav(page, "Sample")
    idle(page, "Length distribution")
    no_exception(page)
    got = measure(page, "02_sample")
    assert got["charts"] == 2
    text = main_text(page)
    assert "light edit" in text and "light_edit" not in text  # categories in words

    nav(page, "Sweep")
    idle(page, "Run the search")
    only_128_and_a_split_list(page)
    grid_line = next(t for t in page.locator('[data-testid="stCaptionContainer"]').all_inner_texts()
                     if t.startswith("Grid:"))
    assert "[" not in grid_line and "'" not in grid_line, grid_line  # no Python list reprs
    page.get_by_role("button", name="Run sweep").click()
    slow_step(page, "Recommended under")
    page.get_by_role("button", name="Refine around the front (second pass)").click()
    slow_step(page, "Second pass:")
    no_exception(page)
    text = main_text(page)
    line = re.search(r"Results of a grid of your own, refined: ([\d,]+) configurations.*", text).group(0)
    assert "pair_recall" not in line and not re.search(r"recall \d\.\d{3}", line), line  # words, a percentage
    total = int(re.search(r"refined: ([\d,]+) configurations", line).group(1).replace(",", ""))
    stopped = re.search(r"([\d,]+) configurations? stopped", text)
    shown_rows = total - (int(stopped.group(1).replace(",", "")) if stopped else 0)
    # the table's filter follows every row the session holds: the second pass's rows are listed
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.scroll_into_view_if_needed()
    count = """() => { const g = document.querySelector('[data-testid="stDataFrame"] [aria-rowcount]');
                       return g ? Number(g.getAttribute('aria-rowcount')) : -1; }"""
    try:  # the grid is redrawn after the rerun that added the rows
        page.wait_for_function(f"() => ({count})() === {shown_rows + 1}", timeout=30_000)
    except Exception:  # noqa: BLE001 - the assertion below says what was drawn
        pass
    rows = page.evaluate(count)
    assert rows - 1 == shown_rows, (rows, shown_rows, line)
    headers = [h.strip() for h in grid.locator("th").all_text_contents() if h.strip()]
    assert headers[:3] == ["configuration", "recall", "false rem."], headers
    got = measure(page, "03_sweep_second_pass")
    assert got["legends"] >= 2
    sweep_table_fits(page)

    nav(page, "Curves")
    idle(page, "S-curve for b=")
    no_exception(page)
    measure(page, "04_curves")
    r_follows_b(page)

    nav(page, "Clusters")
    idle(page, "Clusters by risk")
    idle(page, "Compare two documents")
    no_exception(page)
    measure(page, "05_clusters")

    nav(page, "Export")
    idle(page, "Download the manifest (CSV)")
    no_exception(page)
    measure(page, "07_export")

    nav(page, "Review")
    idle(page, "Queue:")
    no_exception(page)
    measure(page, "06_review")

    nav(page, "Label")
    idle(page)
    no_exception(page)
    measure(page, "08_label")
    # with a drawn set loaded: its progress table, the pair, the buttons and what to label next
    box = page.get_by_role("textbox", name="Drawn set folder")
    box.fill(str(drawn))
    box.press("Enter")
    idle(page, "drawn pairs decided")
    reviewer = page.get_by_role("textbox", name="Reviewer name")
    reviewer.fill("ann")
    reviewer.press("Enter")
    idle(page, "What to label next")
    no_exception(page)
    measure(page, "09_label_drawn")
    page.get_by_role("button", name=re.compile(r"^Duplicate")).click()
    idle(page, "Recorded duplicate")
    page.get_by_role("button", name="Write the labels into the folder").click()
    idle(page, "Wrote 1 label into")
    assert "\\" not in next(t for t in page.locator('[data-testid="stAlertContentSuccess"]').all_inner_texts()
                             if t.startswith("Wrote"))
    page.get_by_role("button", name="Use this drawn set as the sample").click()
    idle(page, "The drawn set is the sample now")
    idle(page, "Target half-width")
    no_exception(page)
    text = main_text(page).split("What to label next")[-1]  # (the documents' own texts may say "inf")
    assert not re.search(r"\bnan\b|\binf\b", text), text  # a rate with no labeled removal says so in words
    assert "not measured (no labeled removal)" in text, text
    measure(page, "10_label_next")
