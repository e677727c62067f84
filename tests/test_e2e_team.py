"""End-to-end, in Chromium: two reviewers in two browser sessions disagree on a pair (the second one
blind to the first), a third session adjudicates it in the Adjudication section, and the label rule
then gives the adjudicated label."""

from __future__ import annotations

import re

import pytest

from calib.review.adjudication import review_labels
from calib.review.sqlite import ReviewStore
from _app_server import serve
from test_e2e_browser import ARGS, CHROMIUM, SHOTS, idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAIR = re.compile(r"(\S+) vs (\S+): exact Jaccard")


@pytest.fixture(scope="module")
def server(tmp_path_factory, unlabeled, passfile):
    """A server of its own (its review store holds only this module's decisions), started with PGPASSFILE."""
    with serve(tmp_path_factory.mktemp("server"), allowed=[unlabeled], extra_env={"PGPASSFILE": str(passfile)}) as url:
        yield url


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


@pytest.fixture(scope="module", autouse=True)
def passfile(tmp_path_factory):
    """PGPASSFILE for the app's server (set before it starts): each person's line is added by the test
    that makes their role, as each person would keep theirs in their own ~/.pgpass."""
    path = tmp_path_factory.mktemp("pgpass") / "pgpass"
    path.write_text("")
    path.chmod(0o600)
    mp = pytest.MonkeyPatch()
    mp.setenv("PGPASSFILE", str(path))
    yield path
    mp.undo()


def test_three_people_with_their_own_roles_on_postgres(browser, server, postgres_db, passfile):
    """ana and bo review, cy adjudicates, each in a browser session of their own on one team's
    PostgreSQL store, each connected as their own role (password from PGPASSFILE): the pages show
    who the database says they are, a reload keeps the store and the identity, and the decisions
    record the roles the database saw."""
    import uuid
    from urllib.parse import quote, urlsplit

    import psycopg
    from playwright.sync_api import expect

    from calib.review.stores import open_review_store
    from calib.review.team import TeamRoles, add_member, pgpass_line, person_url, setup_team
    tag = uuid.uuid4().hex[:6]
    names = {"ana": f"ana_{tag}", "bo": f"bo_{tag}", "cy": f"cy_{tag}"}
    roles = TeamRoles.with_prefix(f"e{tag}")
    with open_review_store(postgres_db) as store:
        setup_team(store, roles, share=1.0)  # every pair goes to a second reviewer
        lines = [pgpass_line(store, name, add_member(store, name, "adjudicator" if p == "cy" else "reviewer"))
                 for p, name in names.items()]
        urls = {p: person_url(store, name) for p, name in names.items()}
    passfile.write_text("\n".join(lines) + "\n")
    assert all(urlsplit(u).password is None for u in urls.values())
    try:
        def session(who: str):
            page = browser.new_context(viewport={"width": 1400, "height": 2400}).new_page()
            page.set_default_timeout(120_000)
            page.goto(f"{server}/Review?reviews={quote(urls[who], safe='')}")
            idle(page, f"Connected as {names[who]}")
            return page

        ana = session("ana")
        text = main_text(ana)
        assert "(reviewer, viewer)" in text and "Share shown to a second reviewer: 1" in text
        assert f"this team's adjudicators: {names['cy']}" in text.replace("\\", "")
        assert ana.get_by_role("textbox", name="Reviewer name").count() == 0  # no name asked
        pair = shown_pair(ana)
        ana.get_by_role("button", name="Duplicate", exact=True).click()
        idle(ana, "Recorded duplicate")
        ana.reload()  # a new Streamlit session: the query string keeps the store, the database the identity
        idle(ana, f"Connected as {names['ana']}")
        # the box is filled once its widget has mounted, which may follow the first texts on a loaded machine
        expect(ana.get_by_role("textbox", name="Review database (SQLite file) or postgresql:// URL")) \
            .to_have_value(urls["ana"], timeout=30_000)
        assert shown_pair(ana) != pair  # still ana: her decided pair is not offered again

        bo = session("bo")
        assert shown_pair(bo) == pair
        text = main_text(bo)
        assert "Second review" in text and names["ana"] not in text  # blind
        bo.get_by_role("button", name="Not duplicate", exact=True).click()
        idle(bo, "Recorded not_duplicate")
        idle(bo, "1 contested pair")
        assert bo.get_by_role("button", name="Adjudicate: duplicate").is_disabled()
        assert "is not an adjudicator of this team" in main_text(bo)

        cy = session("cy")
        assert "(reviewer, adjudicator, viewer)" in main_text(cy)
        assert f"{names['ana']}: duplicate; {names['bo']}: not duplicate" in main_text(cy).replace("\\", "")
        cy.get_by_role("button", name="Adjudicate: not duplicate").click()
        idle(cy, "No contested pair")
        cy.screenshot(path=str(SHOTS / "team_04_postgres_adjudicated.png"), animations="disabled")

        with open_review_store(postgres_db, readonly=True) as store:
            decisions = store.all_decisions()
        assert list(zip(decisions["reviewer"], decisions["kind"])) == [
            (names["ana"], "review"), (names["bo"], "review"), (names["cy"], "adjudication")]
        labels, counts = review_labels(decisions)
        assert counts.adjudicated == 1 and counts.contested == 0
        assert list(zip(labels["id_a"], labels["id_b"], labels["label"])) == [(*sorted(pair), "not_duplicate")]
    finally:
        with psycopg.connect(postgres_db, autocommit=True) as con:
            con.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = ANY(%s)",
                        (list(names.values()),))
            for role in [*names.values(), roles.adjudicator, roles.reviewer, roles.viewer]:
                con.execute(f'DROP OWNED BY "{role}"')
                con.execute(f'DROP ROLE "{role}"')
