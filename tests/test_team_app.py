"""Reviewing as a team in the app (AppTest): two reviewers, a blind second review, adjudication."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from calib.review.adjudication import review_labels
from calib.review.sqlite import ReviewStore
from test_app import small_sweep

ROOT = Path(__file__).resolve().parents[1]


def review_session(name: str, share: float = 1.0) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    at.switch_page("pages/5_Review.py").run()
    at.text_input(key="reviewer_input").set_value(name)
    at.number_input(key="reviewer_input_overlap").set_value(share)
    at.run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    return at


def page_text(at) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [s.value for s in at.subheader]
    parts += [d.value.to_csv() for d in at.dataframe]
    return "\n".join(parts).replace("\\", "").replace("\u2060", "")  # md() escapes


def shown_pair(at) -> tuple[str, str]:
    line = next(m.value for m in at.markdown if " vs **" in m.value)
    a, rest = line[2:].split("** vs **", 1)
    return a, rest.split("**", 1)[0]


def test_two_reviewers_disagree_blind_then_adjudicated():
    db = os.environ["CALIB_REVIEW_DB"]
    ana = review_session("ana")
    pair = shown_pair(ana)
    ana.button(key="decide_duplicate").click().run()
    assert not ana.exception
    # bo sees the same pair first (share 1: every pair gets a second review), blind
    bo = review_session("bo")
    assert shown_pair(bo) == pair
    assert any("Second review" in c.value for c in bo.caption)
    assert "ana" not in page_text(bo)  # neither the name nor the decision of the first reviewer
    bo.button(key="decide_not_duplicate").click().run()
    assert not bo.exception and not bo.error
    # the pair is contested now: no label, one pair in the adjudication section
    labels, counts = review_labels(ReviewStore(db).all_decisions())
    assert counts.contested == 1 and counts.used == 0 and labels.empty
    assert any("1 contested pair" in c.value for c in bo.caption), [c.value for c in bo.caption]
    # a reviewer of the pair may not adjudicate it: the buttons are off, and say why before any click
    assert bo.button(key="adjudicate_duplicate").disabled and bo.button(key="adjudicate_not_duplicate").disabled
    assert "bo reviewed this pair: another person adjudicates it" in page_text(bo)
    # the agreement section has the two ratings (one pair, they disagree)
    table = next(d.value for d in bo.dataframe if "kappa" in d.value.columns)
    overall = table[table["scope"] == "overall"].iloc[0]
    assert overall["pairs"] == 1 and overall["agreed"] == 0
    # cy adjudicates: the adjudication is the label
    cy = review_session("cy")
    assert "ana: duplicate; bo: not duplicate" in page_text(cy)
    cy.button(key="adjudicate_duplicate").click().run()
    assert not cy.exception and not cy.error
    assert any("No contested pair" in i.value for i in cy.info)
    with ReviewStore(db) as store:
        labels, counts = review_labels(store.all_decisions())
        kinds = list(store.all_decisions()["kind"])
    assert kinds == ["review", "review", "adjudication"]
    assert counts.adjudicated == 1 and counts.contested == 0
    assert list(labels["label"]) == ["duplicate"] and tuple(sorted(pair)) == (labels["id_a"][0], labels["id_b"][0])
    # using the reviews as labels says how they were made
    cy.button(key="use_reviews").click().run()
    assert any("1 adjudicated" in s.value for s in cy.success), [s.value for s in cy.success]
    assert cy.session_state["calib_review_labels"]["contested"].empty  # for the Sweep page's sensitivity


def test_second_review_only_within_the_overlap_share():
    ana = review_session("ana", share=0.0)
    pair = shown_pair(ana)
    ana.button(key="decide_duplicate").click().run()
    bo = review_session("bo", share=0.0)
    assert shown_pair(bo) != pair  # no overlap: a decided pair is not offered again
    assert "0 second reviews" in bo.subheader[0].value


def test_sweep_page_reports_the_contested_pairs_sensitivity():
    """Reviews used as labels with contested pairs: the Sweep page says how labels were made and how
    the recommendation moves if the contested pairs went either way."""
    from calib.reading.sample import SAMPLE_DIR
    from calib.reading.samples import load_sample
    s = load_sample(SAMPLE_DIR)
    p = s.pairs[s.pairs["category"] == "near_threshold"].head(5)
    with ReviewStore(os.environ["CALIB_REVIEW_DB"]) as store:
        for k, (i, j) in enumerate(zip(p["i"], p["j"])):
            store.record(s.ids[i], s.ids[j], "duplicate", "ana")
            store.record(s.ids[i], s.ids[j], "duplicate" if k < 2 else "not_duplicate", "bo")
    at = review_session("cy")
    at.button(key="use_reviews").click().run()
    assert at.session_state["calib_sample"].name.endswith("+reviews")
    small_sweep(at)
    assert "If the 3 contested pairs" not in page_text(at)  # two more scorings of the table: on request
    at.button(key="check_contested").click().run()
    text = page_text(at)
    assert "2 label(s) used: 0 adjudicated, 2 unanimous; 3 contested pair(s) excluded" in text
    assert "If the 3 contested pairs went the other way" in text
    sens = next(d.value for d in at.dataframe if "same_config" in d.value.columns)
    assert list(sens["labels"]) == ["as labeled", "contested -> duplicate", "contested -> not duplicate"]


@pytest.mark.slow
def test_a_reload_keeps_the_sqlite_store_and_the_typed_name(tmp_path):
    """SQLite is one person's store: the name is typed; the page's query string keeps it and the store
    (a reload is a new session that starts from the query string)."""
    db = str(Path(os.environ["CALIB_REVIEW_DB"]).with_name("other.sqlite"))
    at = review_session("bo")
    at.text_input(key="review_db_input").set_value(db).run()
    assert at.query_params.get("reviews") == db and at.query_params.get("reviewer") == "bo"
    assert any("A SQLite store is one person's" in c.value for c in at.caption)
    again = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    again.query_params.update(at.query_params)
    again.run()
    again.switch_page("pages/5_Review.py").run()
    assert not again.exception and not again.error
    assert again.text_input(key="review_db_input").value == db
    assert again.text_input(key="reviewer_input").value == "bo"
    assert again.subheader[0].value.startswith("Queue of bo:")


@pytest.mark.slow
def test_on_a_teams_store_the_page_shows_the_databases_identity_and_share(postgres_db, tmp_path, monkeypatch):
    """No name box on a team's PostgreSQL store: the page shows the connected role; an adjudicator sets
    the share for the whole team (the store keeps it); a viewer's decision buttons are off."""
    import uuid

    import psycopg

    from calib.review.stores import open_review_store
    from calib.review.team import TeamRoles, add_member, current_share, pgpass_line, person_url, setup_team
    tag = uuid.uuid4().hex[:6]
    cy, vi, roles = f"cy_{tag}", f"vi_{tag}", TeamRoles.with_prefix(f"a{tag}")
    with open_review_store(postgres_db) as store:
        setup_team(store, roles)
        lines = [pgpass_line(store, n, add_member(store, n, g)) for n, g in ((cy, "adjudicator"), (vi, "viewer"))]
        url = {n: person_url(store, n) for n in (cy, vi)}
    (tmp_path / "pgpass").write_text("\n".join(lines) + "\n")
    (tmp_path / "pgpass").chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "pgpass"))
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
        at.query_params["reviews"] = url[cy]
        at.run()
        at.switch_page("pages/5_Review.py").run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert f"Connected as **{cy}** (reviewer, adjudicator, viewer)" in page_text(at)
        assert not [t for t in at.text_input if t.key == "reviewer_input"]  # no name asked
        assert not at.button(key="decide_duplicate").disabled
        at.number_input(key="reviewer_input_team_overlap").set_value(0.5).run()
        at.button(key="reviewer_input_set_share").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        with open_review_store(url[cy], readonly=True) as store:
            assert current_share(store) == 0.5
        viewer = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
        viewer.query_params["reviews"] = url[vi]
        viewer.run()
        viewer.switch_page("pages/5_Review.py").run()
        assert f"Connected as **{vi}** (viewer)" in page_text(viewer)
        assert "Share shown to a second reviewer: **0.5**" in page_text(viewer)  # the team's, read from the store
        assert viewer.button(key="decide_duplicate").disabled
        assert any("may only read this store" in w.value for w in viewer.warning)
    finally:
        with psycopg.connect(postgres_db, autocommit=True) as con:
            for role in (cy, vi, roles.adjudicator, roles.reviewer, roles.viewer):
                con.execute(f'DROP OWNED BY "{role}"')
                con.execute(f'DROP ROLE "{role}"')


def _rogue_server(received: list[bytes]):
    """A server that answers every connection by asking for the password in clear (what a server named
    in a crafted link could do), and keeps whatever the client sends back. Returns (port, thread)."""
    import socket
    import struct
    import threading
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    srv.settimeout(10)

    def serve():  # one connection: libpq's first try, the one a password would go to
        try:
            con, _ = srv.accept()
            with con:
                con.settimeout(10)
                while True:
                    head = con.recv(8)
                    if len(head) < 8:
                        return
                    length, code = struct.unpack("!ii", head)
                    con.recv(length - 8)
                    if code in (80877103, 80877104):  # SSLRequest, GSSENCRequest: no
                        con.sendall(b"N")
                        continue
                    con.sendall(b"R" + struct.pack("!ii", 8, 3))  # AuthenticationCleartextPassword
                    received.append(con.recv(4096))
                    return
        except OSError:
            pass
        finally:
            srv.close()
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return srv.getsockname()[1], thread, srv


def test_a_server_named_in_a_link_cannot_get_a_pgpass_password_in_clear(tmp_path, monkeypatch):
    """The store comes from the page's query string, so a link can name any server. The app opens
    PostgreSQL URLs with require_auth=!password: a wildcard ~/.pgpass line's password never reaches a
    server that asks for it in clear (without the guard it does: the control)."""
    pytest.importorskip("psycopg")
    from appui.reviews import open_store
    from calib.review.stores import open_review_store
    (tmp_path / "pgpass").write_text("*:*:*:ana:s3cret-pw\n")
    (tmp_path / "pgpass").chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "pgpass"))
    for opener, leaks in ((open_review_store, True), (open_store, False)):
        received: list[bytes] = []
        port, thread, srv = _rogue_server(received)
        with pytest.raises(ValueError):
            opener(f"postgresql://ana@127.0.0.1:{port}/calib?connect_timeout=5&sslmode=disable")
        srv.close()
        thread.join(30)
        assert any(b"s3cret-pw" in r for r in received) is leaks, received
