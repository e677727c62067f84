"""End-to-end, in Chromium: two reviewers in two browser sessions disagree on a pair (the second one
blind to the first), a third session adjudicates it in the Adjudication section, and the label rule
then gives the adjudicated label."""

from __future__ import annotations

import re

import pytest

from calib.review.adjudication import review_labels
from calib.review.sqlite import ReviewStore
from test_e2e_browser import ARGS, CHROMIUM, SHOTS, idle, server, unlabeled  # noqa: F401 - fixtures

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAIR = re.compile(r"(\S+) vs (\S+): exact Jaccard")


@pytest.fixture(scope="module")
def browser(server):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def reviewer_session(browser, url: str, name: str):
    """A new browser context (its own Streamlit session) on the Review page, as ``name``, every pair
    open to a second reviewer."""
    page = browser.new_context(viewport={"width": 1400, "height": 2400}).new_page()
    page.set_default_timeout(120_000)
    page.goto(f"{url}/Review")
    idle(page, "Review database")
    box = page.get_by_role("textbox", name="Reviewer name")
    box.fill(name)
    box.press("Enter")
    idle(page)
    share = page.get_by_role("spinbutton", name="Share shown to a second reviewer")
    share.fill("1.00")
    share.press("Enter")
    idle(page, f"Queue of {name}")
    return page


def main_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def shown_pair(page) -> tuple[str, str]:
    m = PAIR.search(main_text(page))
    assert m, main_text(page)[:2000]
    return m.group(1), m.group(2)


def test_two_sessions_disagree_and_a_third_adjudicates(browser, server):
    ana = reviewer_session(browser, server, "ana")
    db = ana.get_by_role("textbox", name="Review database (SQLite file) or postgresql:// URL").input_value()
    pair = shown_pair(ana)
    ana.get_by_role("button", name="Duplicate", exact=True).click()
    idle(ana, "Recorded duplicate")
    assert shown_pair(ana) != pair  # ana's queue moved on

    bo = reviewer_session(browser, server, "bo")
    assert shown_pair(bo) == pair  # the overlap share sends the pair to a second reviewer
    text = main_text(bo)
    assert "Second review" in text and "ana" not in text  # blind: neither ana's name nor her decision
    SHOTS.mkdir(parents=True, exist_ok=True)
    bo.screenshot(path=str(SHOTS / "team_01_second_review.png"), animations="disabled")
    bo.get_by_role("button", name="Not duplicate", exact=True).click()
    idle(bo, "Recorded not_duplicate")
    idle(bo, "1 contested pair")

    cy = reviewer_session(browser, server, "cy")
    idle(cy, "Adjudication")
    text = main_text(cy)
    assert "ana: duplicate; bo: not duplicate" in text.replace("\\", "")
    cy.screenshot(path=str(SHOTS / "team_02_adjudication.png"), animations="disabled")
    cy.get_by_role("button", name="Adjudicate: not duplicate").click()
    idle(cy, "No contested pair")
    cy.screenshot(path=str(SHOTS / "team_03_adjudicated.png"), animations="disabled")

    with ReviewStore(db) as store:
        decisions = store.all_decisions()
    assert list(zip(decisions["reviewer"], decisions["kind"])) == [("ana", "review"), ("bo", "review"),
                                                                   ("cy", "adjudication")]
    labels, counts = review_labels(decisions)
    assert counts.adjudicated == 1 and counts.contested == 0
    assert list(zip(labels["id_a"], labels["id_b"], labels["label"])) == [(*sorted(pair), "not_duplicate")]
