"""Hostile inputs against the review store's link guard and the team store's rules (a server a link names,
a teammate holding a lock, isolation levels, huge notes, odd role names and passwords)."""

from __future__ import annotations

import socket
import struct
import threading

import pytest

psycopg = pytest.importorskip("psycopg")

SECRET = "s3cret-pw-wildcard"


class RogueServer:
    """A server on loopback that answers every connection by asking for the password in clear
    (AuthenticationCleartextPassword), as a server named in a crafted link could, and keeps every
    byte each client sends."""

    def __init__(self):
        self.received: list[bytes] = []
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(8)
        self.srv.settimeout(0.2)
        self.port = self.srv.getsockname()[1]
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self._stop.is_set():
            try:
                con, _ = self.srv.accept()
            except OSError:
                continue
            got = bytearray()
            self.received.append(got)
            try:
                with con:
                    con.settimeout(5)
                    self._talk(con, got)
            except OSError:
                pass

    @staticmethod
    def _talk(con, got: bytearray):
        while True:
            head = con.recv(8)
            got += head
            if len(head) < 8:
                return
            length, code = struct.unpack("!ii", head)
            got += con.recv(length - 8)
            if code in (80877103, 80877104):  # SSLRequest, GSSENCRequest: no
                con.sendall(b"N")
                continue
            con.sendall(b"R" + struct.pack("!ii", 8, 3))  # AuthenticationCleartextPassword
            while chunk := con.recv(4096):
                got += chunk
            return

    def close(self):
        self._stop.set()
        self.thread.join(10)
        self.srv.close()

    def leaked(self) -> bool:
        return any(SECRET.encode() in bytes(r) for r in self.received)


@pytest.fixture
def rogue(tmp_path, monkeypatch):
    """A rogue server and a pgpass file whose wildcard line (the docs' ``*:*:*:ana:...`` case) would
    give ana's password to any server that asks."""
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"*:*:*:ana:{SECRET}\n")
    passfile.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    monkeypatch.delenv("PGREQUIREAUTH", raising=False)
    monkeypatch.delenv("CALIB_REVIEW_DB", raising=False)
    server = RogueServer()
    yield server
    server.close()


LINKS = [
    "postgresql://ana@127.0.0.1:{port}/require_auth?connect_timeout=5",  # the text, as a database name
    "postgresql://ana@127.0.0.1:{port}/calib?application_name=require_auth&connect_timeout=5",
    "postgresql://ana@127.0.0.1:{port}/calib?options=-c%20require_auth%3Dpassword&connect_timeout=5",
    "postgresql://ana@127.0.0.1:{port}/calib?sslmode=disable&connect_timeout=5",
    "postgresql://ana@127.0.0.1:{port}/calib?require_auth=password&connect_timeout=5",  # a link's own guard
    "postgresql://ana@127.0.0.1:{port}/calib?require_auth=%21md5&connect_timeout=5",
    "postgresql://ana@127.0.0.1:{port}/calib?require_auth=password,md5&connect_timeout=5",
    "postgresql://ana@127.0.0.1:{port}/calib?require_auth=md5&require_auth=password&connect_timeout=5",
    "postgresql://ana@127.0.0.1:{port}/calib?req%75ire_auth=password&connect_timeout=5",  # percent-encoded key
    "postgresql://127.0.0.1:{port}/calib?user=ana&connect_timeout=5&require_auth=%70assword",
]


@pytest.mark.parametrize("link", LINKS)
def test_a_link_never_gets_a_wildcard_pgpass_password_in_clear(rogue, link):
    """The app's opener (every page goes through it) against a server asking for the password in clear:
    refused, and the password never arrives, however the link spells or sets require_auth."""
    from appui.reviews import open_store
    with pytest.raises(ValueError):
        open_store(link.format(port=rogue.port))
    assert not rogue.leaked(), rogue.received


@pytest.mark.parametrize("link", LINKS[:2])
def test_the_review_page_opened_from_a_link_never_sends_the_password(rogue, link, tmp_path, monkeypatch):
    """The attack end to end, as a visitor's browser would: the Review page opened with ``?reviews=URL``
    (the issue's ``/Review?reviews=postgresql%3A%2F%2Fana%40127.0.0.1%3A5999%2Frequire_auth``)."""
    from streamlit.testing.v1 import AppTest

    from test_app_security import ROOT
    monkeypatch.setenv("HOME", str(tmp_path))
    at = AppTest.from_file(str(ROOT / "pages" / "5_Review.py"), default_timeout=120)
    at.query_params["reviews"] = link.format(port=rogue.port)
    at.run()
    assert not at.exception
    assert any("Cannot open the review store" in e.value for e in at.error), [e.value for e in at.error]
    assert rogue.received and not rogue.leaked(), rogue.received


def test_the_rogue_server_is_a_real_control(rogue):
    """Without the guard libpq does send the wildcard line's password to that server: the test above can fail."""
    from calib.review.stores import open_review_store
    with pytest.raises(ValueError):
        open_review_store(f"postgresql://ana@127.0.0.1:{rogue.port}/calib?connect_timeout=5&sslmode=disable")
    rogue.close()
    assert rogue.leaked()


def test_the_guard_is_decided_on_the_parse():
    """The rebuilt URL: libpq's parse of the link, the guard merged into the link's own require_auth so
    that it only ever gets stricter."""
    from calib.review.urls import conninfo, without_cleartext
    base = "postgresql://ana@db.example:5432/calib"
    cases = {"": "!password", "?require_auth=%21md5": "!md5,!password", "?require_auth=scram-sha-256": "scram-sha-256",
             "?require_auth=password,scram-sha-256": "scram-sha-256", "?require_auth=md5&require_auth=!password":
             "!password", "?application_name=require_auth": "!password"}
    for query, expected in cases.items():
        info = conninfo(without_cleartext(base + query))
        assert info["require_auth"] == expected, query
        assert (info["host"], info["port"], info["dbname"], info["user"]) == ("db.example", "5432", "calib", "ana")
    with pytest.raises(ValueError, match="only a password sent in clear"):
        without_cleartext(base + "?require_auth=password")
    with pytest.raises(ValueError, match="mixes"):
        without_cleartext(base + "?require_auth=md5,!password")
    kept = conninfo(without_cleartext("postgresql://an%2Fa:p%40ss@h1:5,h2:6/d%20b?options=-c%20x%3Dy"))
    assert (kept["user"], kept["password"], kept["host"], kept["port"], kept["dbname"], kept["options"]) == \
        ("an/a", "p@ss", "h1,h2", "5,6", "d b", "-c x=y")


def test_the_operators_stricter_setting_stays(monkeypatch):
    """PGREQUIREAUTH (set where the app runs) is the starting point, never replaced by a looser one."""
    from calib.review.urls import conninfo, without_cleartext
    monkeypatch.setenv("PGREQUIREAUTH", "scram-sha-256")
    assert conninfo(without_cleartext("postgresql://ana@h/d"))["require_auth"] == "scram-sha-256"


# -- the team store's lock and isolation ---------------------------------------------------------------

from test_team_store import INSERT, team  # noqa: E402,F401  (team: ana and bo review, cy adjudicates, vi views)


def _blocked(team, application_name: str) -> bool:
    """Whether the session named ``application_name`` waits for a lock now."""
    rows = team.sql("cy", "SELECT 1 FROM pg_stat_activity WHERE application_name = %s AND wait_event_type = 'Lock'",
                    (application_name,))
    return bool(rows)


def test_a_teammate_cannot_block_anothers_decisions(team):
    """ana takes what was cy's per-person lock and stays connected: cy's decisions go through at once,
    and the lock the rule uses now is one ana cannot take or hold."""
    cy = team.names["cy"]
    with psycopg.connect(team.urls["ana"], autocommit=True) as ana:
        ana.execute("SELECT pg_advisory_lock(hashtext('calib.team'), hashtext(%s))", (cy,))
        for attempt in ("SELECT * FROM team_people FOR UPDATE", "LOCK TABLE team_people IN ACCESS EXCLUSIVE MODE",
                        "LOCK TABLE decisions IN ACCESS EXCLUSIVE MODE", "SELECT * FROM team FOR SHARE"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                with ana.transaction():
                    ana.execute(attempt)
        with psycopg.connect(team.urls["cy"], autocommit=True) as con:
            con.execute("SET statement_timeout = '5s'")  # the control: on the advisory lock this waited forever
            con.execute(INSERT, ("p", "q", "duplicate", cy, "review"))
    assert team.sql("vi", "SELECT reviewer FROM decisions") == [(cy,)]


@pytest.mark.slow
def test_a_persons_own_open_transaction_makes_their_next_decision_wait_a_bounded_time(team):
    """cy's own second session waits for cy's first one (the rule checks one person's decisions one at a
    time), but not forever: a one-line refusal that says why."""
    from calib.review.team import LOCK_WAIT_S
    cy = team.names["cy"]
    with psycopg.connect(team.urls["cy"]) as first, psycopg.connect(team.urls["cy"], autocommit=True) as second:
        first.execute(INSERT, ("p", "q", "duplicate", cy, "review"))  # open: not committed
        with pytest.raises(psycopg.errors.LockNotAvailable, match="another open transaction of"):
            second.execute(INSERT, ("r", "s", "duplicate", cy, "review"))
        first.rollback()
    assert LOCK_WAIT_S <= 30


@pytest.mark.parametrize("level", ["READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"])
@pytest.mark.parametrize("first, second", [("review", "adjudication"), ("adjudication", "review")])
@pytest.mark.parametrize("early_snapshot", [False, True])
def test_the_adjudicator_rule_holds_at_every_isolation_level(team, level, first, second, early_snapshot):
    """cy writes a review of a pair in one open transaction and an adjudication of the same pair in a
    second one (or the other way round), at each isolation level: once the first commits, the second
    is refused (it used to be accepted at REPEATABLE READ and SERIALIZABLE: its snapshot predated the lock)."""
    cy = team.names["cy"]
    tag = f"iso-{first}-{level.replace(' ', '-').lower()}-{early_snapshot}"
    outcome: list = []
    with psycopg.connect(team.urls["cy"]) as one, \
            psycopg.connect(team.urls["cy"], application_name=tag) as two:
        two.execute(f"SET TRANSACTION ISOLATION LEVEL {level}")
        if early_snapshot:
            two.execute("SELECT count(*) FROM decisions")
        one.execute(INSERT, ("p", "q", "duplicate", cy, first))

        def write_second():
            try:
                two.execute(INSERT, ("p", "q", "not_duplicate", cy, second))
                two.commit()
                outcome.append("accepted")
            except psycopg.Error as exc:
                two.rollback()
                outcome.append(exc)
        thread = threading.Thread(target=write_second)
        thread.start()
        for _ in range(200):
            if _blocked(team, tag) or not thread.is_alive():
                break
            threading.Event().wait(0.05)
        one.commit()
        thread.join(60)
    assert len(outcome) == 1 and outcome[0] != "accepted", outcome
    assert isinstance(outcome[0], (psycopg.errors.InsufficientPrivilege, psycopg.errors.SerializationFailure))
    rows = team.sql("vi", "SELECT kind FROM decisions WHERE id_a = 'p' AND id_b = 'q'")
    assert rows == [(first,)]


# -- team add: odd names, other roles, passwords from stdin ---------------------------------------------

def _add(team, monkeypatch, capsys, name: str, stdin: bytes | None = None, role: str = "reviewer"):
    """``calib reviews team add`` as the admin: (exit code, stdout, stderr)."""
    import io

    from calib.cli import main
    argv = ["reviews", "team", "add", "--reviews", team.admin, name, "--role", role]
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
        argv.append("--password-stdin")
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _roles_in(team, group_role: str) -> set[str]:
    return {r[0] for r in team.sql("cy", "SELECT m.rolname FROM pg_auth_members a JOIN pg_roles m ON m.oid = a.member "
                                         "JOIN pg_roles g ON g.oid = a.roleid WHERE g.rolname = %s", (group_role,))}


@pytest.mark.parametrize("name", ["ana\nbo", "ana\rbo", "tab\there", "bell\x07", "zero\u200bwidth"])
def test_team_add_refuses_a_name_with_control_characters(team, monkeypatch, capsys, name):
    code, out, err = _add(team, monkeypatch, capsys, name)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (out, err)
    assert "control character" in err
    assert not team.sql("cy", "SELECT 1 FROM pg_roles WHERE rolname = %s", (name,))


def test_team_show_keeps_a_hand_made_name_on_one_line(team, capsys):
    """A role made by hand with a newline in its name (calib refuses to make one) is shown escaped."""
    from calib.cli import main
    odd = f"odd\nname_{team.names['ana'][-8:]}"
    with psycopg.connect(team.admin, autocommit=True) as con:
        con.execute(f'CREATE ROLE "{odd}" LOGIN IN ROLE "{team.roles.reviewer}"')
    try:
        assert main(["reviews", "team", "show", "--reviews", team.urls["vi"]]) == 0
        out = capsys.readouterr().out
        assert repr(odd) in out and len(out.strip().splitlines()) == 5, out
    finally:
        with psycopg.connect(team.admin, autocommit=True) as con:
            con.execute(f'DROP ROLE "{odd}"')


def test_team_add_refuses_roles_that_are_not_a_persons(team, monkeypatch, capsys):
    """Another team's group role (it cannot log in, and its members would get this team's rights) and
    PostgreSQL's own roles (pg_read_all_data would join the reviewer group) are refused, untouched."""
    import uuid
    other = f"calib_reviews_viewer_{uuid.uuid4().hex[:6]}"
    group = f"login_group_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(team.admin, autocommit=True) as con:
        con.execute(f'CREATE ROLE "{other}" NOLOGIN')
        con.execute(f'CREATE ROLE "{group}" LOGIN')
        con.execute(f'GRANT "{group}" TO "{team.names["vi"]}"')
    try:
        for name, why in ((other, "cannot log in"), ("pg_read_all_data", "PostgreSQL's own"),
                          (group, "other roles are members of")):
            code, out, err = _add(team, monkeypatch, capsys, name)
            assert code == 2 and out == "" and why in err and len(err.strip().splitlines()) == 1, err
            assert name not in _roles_in(team, team.roles.reviewer)
    finally:
        with psycopg.connect(team.admin, autocommit=True) as con:
            con.execute(f'DROP ROLE "{other}"')
            con.execute(f'DROP ROLE "{group}"')


def test_password_stdin_strips_crlf_and_refuses_nul_and_bad_utf8(team, monkeypatch, capsys):
    import uuid

    from test_team_store import _as, _drop_roles
    tag = uuid.uuid4().hex[:6]
    crlf, nul, latin = f"crlf_{tag}", f"nul_{tag}", f"latin_{tag}"
    try:
        code, out, err = _add(team, monkeypatch, capsys, crlf, b"pw-with-crlf\r\n")
        assert code == 0 and out.strip().endswith(":pw-with-crlf"), (out, err)
        with psycopg.connect(_as(team.admin, crlf, "pw-with-crlf")) as con:  # logs in with what was typed
            assert con.execute("SELECT session_user").fetchone()[0] == crlf
        for name, stdin, why in ((nul, b"before\x00after\n", "NUL"), (latin, b"caf\xe9\n", "UTF-8")):
            code, out, err = _add(team, monkeypatch, capsys, name, stdin)
            assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (out, err)
            assert "--password-stdin" in err and "password" in err and why in err
            assert not team.sql("cy", "SELECT 1 FROM pg_roles WHERE rolname = %s", (name,))
    finally:
        _drop_roles(team.admin, crlf, nul, latin)


# -- one reviewer's flood of decisions: the label rule and agreement in bounded time ----------------------

def _verdicts_by_loop(decisions):
    """The label rule pair by pair, in plain Python: the reference for the whole-column version."""
    import pandas as pd

    from calib.review.adjudication import pair_decisions, reviewer_votes
    d = pair_decisions(decisions)
    votes = reviewer_votes(d)
    adj = d[d["kind"] == "adjudication"].drop_duplicates(["id_a", "id_b"], keep="last").set_index(["id_a", "id_b"])
    rows = {}
    for (a, b), v in votes.groupby(["id_a", "id_b"], sort=True):
        said = v.sort_values("order")
        decided = set(said["decision"]) - {"unsure"}
        status, label = (("unanimous", decided.pop()) if len(decided) == 1 else
                         ("contested", None) if len(decided) > 1 else ("undecided", None))
        rows[(a, b)] = [status, label, said["reviewer"].nunique(),
                        "; ".join(f"{r}: {x.replace('_', ' ')}" for r, x in zip(said["reviewer"], said["decision"])),
                        None, int((said["decision"] == "unsure").sum())]
    for (a, b), r in adj.iterrows():
        got = rows.setdefault((a, b), [None, None, 0, "", None, 0])
        got[0], got[1], got[4] = ("undecided" if r["decision"] == "unsure" else "adjudicated",
                                  None if r["decision"] == "unsure" else r["decision"], r["reviewer"])
    return pd.DataFrame([[a, b, *r] for (a, b), r in sorted(rows.items())],
                        columns=["id_a", "id_b", "status", "label", "reviewers", "votes", "adjudicator", "unsure"])


@pytest.mark.parametrize("seed", range(8))
def test_pair_verdicts_equal_the_rule_pair_by_pair(seed):
    import numpy as np
    import pandas as pd

    from calib.review.adjudication import pair_verdicts
    rng = np.random.default_rng(seed)
    n = 400
    docs = np.array([f"d{k}" for k in range(12)], dtype=object)
    a, b = rng.integers(0, 12, n), rng.integers(0, 12, n)
    keep = a != b
    d = pd.DataFrame({"id": np.arange(n)[keep], "id_a": docs[a[keep]], "id_b": docs[b[keep]],
                      "decision": rng.choice(["duplicate", "not_duplicate", "unsure"], n)[keep],
                      "reviewer": rng.choice(["ana", "bo", "cy", "di"], n)[keep],
                      "kind": rng.choice(["review", "review", "review", "adjudication"], n)[keep]})
    got = pair_verdicts(d)
    want = _verdicts_by_loop(d)
    def plain(frame):
        return frame.astype(object).where(frame.notna(), None)
    pd.testing.assert_frame_equal(plain(got), plain(want), check_dtype=False)


@pytest.mark.slow
def test_agreement_over_one_reviewers_300000_decisions_is_quick(tmp_path, capsys):
    """One reviewer's 300,000 decisions and two teammates' 50: ``calib reviews agreement`` answers in
    seconds (it took 152 s and 714 MB on a team store), with the teammates' kappa."""
    import time

    import numpy as np
    import pandas as pd

    from calib.cli import main
    from calib.review.sqlite import ReviewStore
    n = 300_000
    flood = pd.DataFrame({"id_a": [f"a{k:07d}" for k in range(n)], "id_b": [f"b{k:07d}" for k in range(n)],
                          "decision": "duplicate", "reviewer": "mallory"})
    votes = np.array(["duplicate"] * 6 + ["not_duplicate"] * 4, dtype=object)
    pairs = {"id_a": [f"x{k}" for k in range(10)], "id_b": [f"y{k}" for k in range(10)]}
    path = tmp_path / "r.sqlite"
    with ReviewStore(path) as s:
        s.record_many(flood)
        s.record_many(pd.DataFrame({**pairs, "decision": votes, "reviewer": "ana"}))
        s.record_many(pd.DataFrame({**pairs, "decision": np.r_[votes[:5], votes[6:], votes[5:6]], "reviewer": "bo"}))
    start = time.perf_counter()
    assert main(["reviews", "agreement", "--reviews", str(path), "--json", "--replicates", "100"]) == 0
    took = time.perf_counter() - start
    import json
    doc = json.loads(capsys.readouterr().out)
    # ana and bo: 10 pairs, 8 agree (one duplicate and one not_duplicate swapped): p_o 0.8, p_e 0.52
    assert doc["agreement"][0]["kappa"] == pytest.approx((0.8 - 0.52) / 0.48, abs=1e-9)
    assert doc["labels"]["unanimous"] == n + 8 and doc["labels"]["contested"] == 2
    assert took < 60, took


def _store_with_huge_notes(path, size: int):
    """A SQLite store written before notes were bounded (the check off, as an older file or a hand edit)."""
    import sqlite3

    from calib.review.sqlite import ReviewStore
    with ReviewStore(path) as s:
        s.record("a", "b", "duplicate", "ana")
        s.record("a", "b", "duplicate", "bo")
    con = sqlite3.connect(path)
    con.execute("PRAGMA ignore_check_constraints = ON")
    con.executemany("INSERT INTO decisions (id_a, id_b, decision, reviewer, note, created_at, kind) "
                    "VALUES (?, ?, 'not_duplicate', 'mallory', ?, '2026-01-01', 'review')",
                    [(f"m{k}", f"n{k}", "x" * size) for k in range(4)])
    con.commit()
    con.close()


def test_huge_notes_are_cut_on_read_and_not_read_for_the_rule(tmp_path):
    from calib.review.adjudication import decisions_of
    from calib.review.schema import MAX_NOTE
    from calib.review.sqlite import ReviewStore
    path = tmp_path / "r.sqlite"
    _store_with_huge_notes(path, 5_000_000)
    with ReviewStore(path, readonly=True) as s:
        assert "note" not in decisions_of(s).columns  # the rule and agreement read no note
        for frame in (s.all(), s.all_decisions(), s.latest(), s.history("m0", "n0")):
            assert frame["note"].str.len().max() == MAX_NOTE
    with ReviewStore(path) as s:
        with pytest.raises(ValueError, match="note holds 10,001 characters"):
            s.record("c", "d", "duplicate", "ana", note="y" * (MAX_NOTE + 1))


def test_the_review_page_opens_a_store_with_huge_notes(tmp_path, monkeypatch):
    """Four notes of 50 MB (400 MB in the issue): the Review page opens and counts the decisions; no
    MemoryError for every member."""
    from streamlit.testing.v1 import AppTest

    from test_app_security import ROOT
    path = tmp_path / "reviews" / "r.sqlite"
    path.parent.mkdir()
    _store_with_huge_notes(path, 50_000_000)
    monkeypatch.setenv("CALIB_REVIEW_DB", str(path))
    monkeypatch.setenv("HOME", str(tmp_path))
    from calib.review.sqlite import ReviewStore
    fetched = []
    real = ReviewStore._rows

    def counted(self, sql, params):
        rows = real(self, sql, params)
        fetched.append(sum(len(v) for r in rows for v in r if isinstance(v, str)))
        return rows
    monkeypatch.setattr(ReviewStore, "_rows", counted)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("pages/5_Review.py").run()
    assert not at.exception and not [e.value for e in at.error], (at.exception, [e.value for e in at.error])
    assert any(m.value == "6" for m in at.metric), [m.value for m in at.metric]
    assert fetched and sum(fetched) < 1_000_000, fetched  # the page read 200 MB of notes it never shows


def test_the_team_store_caps_each_persons_decisions_and_notes(team, monkeypatch):
    """The caps live in the trigger (lowered here to see them bite): counted from the decisions already
    there when the team is set up again, per person, and a note over the bound is refused even in a
    store whose table predates the column's check."""
    from calib.review.team import setup_team
    from calib.review.schema import MAX_NOTE
    ana, bo = team.names["ana"], team.names["bo"]
    for k in range(3):
        team.sql("ana", INSERT, (f"a{k}", f"b{k}", "duplicate", ana, "review"))
    monkeypatch.setattr("calib.review.team.MAX_DECISIONS_PER_PERSON", 5)
    monkeypatch.setattr("calib.review.team.MAX_NOTES_PER_PERSON", 30)
    with psycopg.connect(team.admin, autocommit=True) as con:  # an older store: no check on the note's length
        for (name,) in con.execute("SELECT conname FROM pg_constraint WHERE conrelid = 'decisions'::regclass "
                                   "AND pg_get_constraintdef(oid) LIKE '%%length(note)%%'").fetchall():
            con.execute(f'ALTER TABLE decisions DROP CONSTRAINT "{name}"')
    from calib.review.stores import open_review_store
    with open_review_store(team.admin) as store:
        setup_team(store, team.roles)
    team.sql("ana", INSERT, ("a3", "b3", "duplicate", ana, "review"))
    team.sql("ana", INSERT, ("a4", "b4", "duplicate", ana, "review"))
    with pytest.raises(psycopg.errors.ProgramLimitExceeded, match="one person may have at most 5 and 30"):
        team.sql("ana", INSERT, ("a5", "b5", "duplicate", ana, "review"))
    note = "INSERT INTO decisions (id_a, id_b, decision, note) VALUES (%s, %s, 'duplicate', %s)"
    team.sql("bo", note, ("c0", "d0", "x" * 30))
    with pytest.raises(psycopg.errors.ProgramLimitExceeded):
        team.sql("bo", note, ("c1", "d1", "x"))
    with pytest.raises(psycopg.errors.StringDataRightTruncation, match="at most 10000 characters of note"):
        team.sql("cy", note, ("c2", "d2", "x" * (MAX_NOTE + 1)))
    assert team.sql("vi", "SELECT reviewer, count(*) FROM decisions GROUP BY 1 ORDER BY 1") == [(ana, 5), (bo, 1)]


# -- the Spark environment archive: planted, cut short, unwritable ------------------------------------------

EVIL = b"import os; os.system('touch /tmp/owned')  # run by every executor's Python worker\n"


@pytest.fixture
def small_env(tmp_path, monkeypatch):
    """spark_ship packing a tiny environment (two of calib's files, no distribution) into a cache folder
    of the test's own: what matters is which archive gets shipped, not what a real one holds."""
    from calib.production.engines.spark import ship as spark_ship
    cache = tmp_path / "cache"
    monkeypatch.setenv("CALIB_CACHE_DIR", str(cache))
    monkeypatch.setattr(spark_ship, "distributions", lambda root="calib": [])
    files = [(spark_ship.PACKAGE / "__init__.py", "calib/__init__.py")]
    monkeypatch.setattr(spark_ship, "_calib_files", lambda: files)
    monkeypatch.setattr(spark_ship, "source_digest", lambda: "test")
    desc = spark_ship.describe()
    return cache, cache / f"spark-env-{spark_ship.digest(desc)}.tar"


def _tar_with_sitecustomize(path, code: bytes) -> None:
    import io
    import tarfile
    with tarfile.open(path, "w") as tar:
        info = tarfile.TarInfo("lib/sitecustomize.py")
        info.size = len(code)
        tar.addfile(info, io.BytesIO(code))


def _sitecustomize(path) -> bytes:
    import tarfile
    with tarfile.open(path) as tar:
        return tar.extractfile("lib/sitecustomize.py").read()


def test_a_planted_environment_archive_is_never_shipped(small_env):
    """Another user places spark-env-<digest>.tar with a sitecustomize of theirs in the cache folder: the
    archive shipped is packed again, whoever owns the planted one (this user, or another: uid 65534)."""
    import os

    from calib.production.engines.spark import ship as spark_ship
    cache, path = small_env
    cache.mkdir(mode=0o1777)
    os.chmod(cache, 0o1777)  # a shared, world-writable folder with the sticky bit (as /tmp)
    for owner in ((65534,) if os.getuid() == 0 else ()) + (os.getuid(),):
        _tar_with_sitecustomize(path, EVIL)
        if owner != os.getuid():
            os.chown(path, owner, owner)
        log = []
        shipped = spark_ship.archive(log=log.append)
        assert shipped == path and _sitecustomize(path) != EVIL and b"times.tsv" in _sitecustomize(path)
        assert log and str(path) in log[0]
        assert spark_ship.archive(log=log.append) == path and len(log) == 1  # then reused, verified


@pytest.mark.parametrize("damage", ["truncated", "same_size_other_bytes", "record_missing", "world_writable",
                                    "a_link"])
def test_a_damaged_archive_is_packed_again(small_env, damage):
    import os

    from calib.production.engines.spark import ship as spark_ship
    from calib.production.engines.spark.cache import record_path
    cache, path = small_env
    spark_ship.archive()
    good = path.read_bytes()
    if damage == "truncated":  # a killed copy
        with open(path, "r+b") as fh:
            fh.truncate(len(good) // 2)
    elif damage == "same_size_other_bytes":
        _tar_with_sitecustomize(path, EVIL)
        with open(path, "r+b") as fh:
            fh.truncate(len(good))
    elif damage == "record_missing":  # killed between the archive and its record
        _tar_with_sitecustomize(path, EVIL)
        record_path(path).unlink()
    elif damage == "world_writable":
        os.chmod(path, 0o666)
    else:
        other = cache / "elsewhere.tar"
        _tar_with_sitecustomize(other, EVIL)
        path.unlink()
        path.symlink_to(other)
    left = cache / f".{path.name}.pid999999999-killed.tmp"  # a packer killed mid-write
    left.write_bytes(b"partial")
    log = []
    assert spark_ship.archive(log=log.append) == path
    assert not left.exists()
    assert not path.is_symlink() and path.read_bytes() == good and len(log) == 1 and "packing it again" in log[0]
    assert os.stat(path).st_mode & 0o777 == 0o644


def test_an_unsafe_cache_folder_is_refused_naming_it(small_env):
    import os

    from calib.production.engines.spark import ship as spark_ship
    from calib.production.engines.spark.cache import ArchiveError
    cache, path = small_env
    cache.mkdir()
    os.chmod(cache, 0o777)  # world-writable, no sticky bit: anyone may rename our archive away
    with pytest.raises(ArchiveError, match=f"{cache} is writable by other users and has no sticky bit"):
        spark_ship.archive()
    assert not path.exists()


def test_a_full_disk_is_one_line_naming_the_folder(small_env, monkeypatch):
    import errno

    from calib.production.engines.spark import ship as spark_ship
    from calib.production.engines.spark.cache import ArchiveError
    cache, path = small_env

    def full(tmp, desc):
        with open(tmp, "wb") as fh:
            fh.write(b"partial")
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(spark_ship, "_fill", full)
    with pytest.raises(ArchiveError) as got:
        spark_ship.archive()
    assert str(got.value).startswith(f"cannot write the Spark environment archive in {cache}: No space left")
    assert list(cache.iterdir()) == []  # no partial archive, no temp file left
    code = spark_ship.main()
    assert code == 2


# -- Spark under an address-space limit ------------------------------------------------------------------------

@pytest.mark.slow
def test_spark_under_an_address_space_limit_says_java_could_not_start(tmp_path):
    """``ulimit -v 6000000`` then ``calib apply --engine spark``: the JVM cannot reserve its class space; one
    calib line says Java could not start and why (it was a JAVA_GATEWAY_EXITED traceback)."""
    import os
    import resource
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("pyspark")
    from calib.production import export as E
    from calib.production.engines.spark import io as spark_io
    from calib.search.config import Config
    try:
        spark_io.check_environment()
    except spark_io.SparkApplyError as exc:
        pytest.skip(str(exc))
    E.write_config(tmp_path / "config.json", Config())
    (tmp_path / "c.jsonl").write_text('{"id": 1, "text": "a b c"}\n')
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "CALIB_SPARK_MASTER": "local[2]", "PYTHONPATH": root}

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (6_000_000 * 1024, 6_000_000 * 1024))
    run = subprocess.run([sys.executable, "-c", "import sys; from calib.cli import main; sys.exit(main(sys.argv[1:]))",
                          "apply", "--engine", "spark", "--config", str(tmp_path / "config.json"), "--corpus",
                          str(tmp_path / "c.jsonl"), "--out", str(tmp_path / "out")],
                         env=env, preexec_fn=limited, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-3000:]
    assert lines[-1].startswith("calib apply: error: Java could not start") and "ulimit -v" in lines[-1], lines[-3:]
    assert [line for line in lines if line.startswith("calib")] == lines[-1:]


def test_the_likely_cause_names_java_home(monkeypatch, tmp_path):
    import resource

    from calib.production.engines.spark import io as spark_io
    if resource.getrlimit(resource.RLIMIT_AS)[0] != resource.RLIM_INFINITY:
        pytest.skip("this run has an address-space limit: that is the cause named first")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert spark_io.java_start_cause().startswith(f"JAVA_HOME={tmp_path} holds no bin/java")
