"""A team on the PostgreSQL review store: the database vouches for who wrote a decision, when, and
who may adjudicate. Every forgery is tried straight through psycopg (as psql would), as each role."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from urllib.parse import quote, urlsplit, urlunsplit

import pytest

from calib.review.adjudication import review_labels
from calib.review.agreement import agreement_table
from calib.review.stores import open_review_store

psycopg = pytest.importorskip("psycopg")


def _as(url: str, user: str, password: str | None = None) -> str:
    p = urlsplit(url)
    auth = f"{quote(user, safe='')}:{quote(password, safe='')}@" if password else f"{quote(user, safe='')}@"
    return urlunsplit((p.scheme, f"{auth}{p.hostname}:{p.port}", p.path, "", ""))


@dataclass
class Team:
    admin: str
    urls: dict  # person -> URL with their password (what they would type in psql)
    names: dict  # person -> role name
    roles: object

    def sql(self, who: str, statement: str, params=()):
        with psycopg.connect(self.urls[who], autocommit=True) as con:
            cur = con.execute(statement, params)
            return cur.fetchall() if cur.description else None


@pytest.fixture
def team(postgres_db):
    """ana and bo review, cy adjudicates, vi views; each with a login role of their own."""
    from calib.review.team import TeamRoles, add_member, setup_team
    tag = uuid.uuid4().hex[:8]
    names = {p: f"{p}_{tag}" for p in ("ana", "bo", "cy", "vi")}
    groups = {"ana": "reviewer", "bo": "reviewer", "cy": "adjudicator", "vi": "viewer"}
    with open_review_store(postgres_db) as store:
        roles = TeamRoles.with_prefix(f"t{tag}")
        assert setup_team(store, roles) == []
        for p, name in names.items():
            assert add_member(store, name, groups[p], password=f"pw-{p}-{tag}") == f"pw-{p}-{tag}"
    t = Team(postgres_db, {p: _as(postgres_db, n, f"pw-{p}-{tag}") for p, n in names.items()}, names, roles)
    yield t
    _drop_roles(postgres_db, *names.values(), roles.adjudicator, roles.reviewer, roles.viewer)


def _drop_roles(admin: str, *roles: str) -> None:
    """Roles are the server's, not the test database's: drop the ones a test made."""
    with psycopg.connect(admin, autocommit=True) as con:
        for role in roles:
            if con.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                con.execute(f'DROP OWNED BY "{role}"')
                con.execute(f'DROP ROLE "{role}"')


INSERT = "INSERT INTO decisions (id_a, id_b, decision, reviewer, kind) VALUES (%s, %s, %s, %s, %s)"
WRITERS = ("ana", "cy")  # a reviewer and an adjudicator (adjudicators review too)


def test_a_decision_records_the_connected_role_and_the_server_clock(team):
    for who in WRITERS:
        (row,) = team.sql(who, "INSERT INTO decisions (id_a, id_b, decision, created_at) VALUES "
                               "('a', %s, 'duplicate', '1999-01-01T00:00:00+00:00') RETURNING reviewer, created_at",
                          (f"b-{who}",))
        assert row[0] == team.names[who]  # the column's default: session_user
        stamped = datetime.fromisoformat(row[1])
        assert abs(stamped - datetime.now(timezone.utc)) < timedelta(minutes=5)  # the server's clock, not 1999


@pytest.mark.parametrize("who", ["ana", "bo", "cy", "vi"])
def test_every_forgery_is_refused_as_every_role(team, who):
    """The issue's forgeries, each as each role, straight through psycopg."""
    me, other = team.names[who], team.names["bo" if who != "bo" else "ana"]
    team.sql("ana", INSERT, ("p", "q", "duplicate", team.names["ana"], "review"))
    team.sql("bo", INSERT, ("p", "q", "duplicate", team.names["bo"], "review"))
    before = team.sql("cy", "SELECT id, reviewer, decision, kind FROM decisions ORDER BY id")
    refusals = psycopg.errors.InsufficientPrivilege
    forgeries = [
        # someone else's vote: replaces their decision and turns an agreed pair contested
        (INSERT, ("p", "q", "not_duplicate", other, "review")),
        # an adjudication under another name (an adjudicator's, or a reviewer's for the adjudicator)
        (INSERT, ("p", "q", "not_duplicate", team.names["cy" if who != "cy" else "ana"], "adjudication")),
        # a row id of one's choosing (the latest decision wins by row id)
        ("INSERT INTO decisions (id, id_a, id_b, decision, reviewer) OVERRIDING SYSTEM VALUE "
         "VALUES (999999, 'p', 'q', 'not_duplicate', %s)", (me,)),
        ("UPDATE decisions SET decision = 'not_duplicate'", ()),
        ("DELETE FROM decisions", ()),
        ("TRUNCATE decisions", ()),
        ("UPDATE team SET adjudicator_role = %s", (team.roles.reviewer,)),
        ("UPDATE team_settings SET overlap_share = 1", ()),
        ("DELETE FROM team_settings", ()),
    ]
    if who != "cy":  # an adjudication of one's own on a pair one reviewed (or as a non-adjudicator)
        forgeries.append((INSERT, ("p", "q", "not_duplicate", me, "adjudication")))
        forgeries.append(("INSERT INTO team_settings (overlap_share) VALUES (0.9)", ()))
    for statement, params in forgeries:
        with pytest.raises(refusals):
            team.sql(who, statement, params)
    for other_person in set(team.names.values()) - {me}:  # SET ROLE to someone else
        with pytest.raises(refusals):
            team.sql(who, f'SET ROLE "{other_person}"')
    assert team.sql("cy", "SELECT id, reviewer, decision, kind FROM decisions ORDER BY id") == before
    labels, counts = review_labels(open_review_store(team.admin, readonly=True).all_decisions())
    assert counts.unanimous == 1 and counts.contested == 0 and list(labels["label"]) == ["duplicate"]


def test_the_adjudication_rule_is_the_databases(team):
    a, b, c = (team.names[p] for p in ("ana", "bo", "cy"))
    team.sql("ana", INSERT, ("p", "q", "duplicate", a, "review"))
    team.sql("bo", INSERT, ("p", "q", "not_duplicate", b, "review"))
    team.sql("cy", INSERT, ("r", "s", "duplicate", c, "review"))
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="only members of"):
        team.sql("bo", INSERT, ("p", "q", "duplicate", b, "adjudication"))
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="reviewed r / s: another person adjudicates it"):
        team.sql("cy", INSERT, ("r", "s", "duplicate", c, "adjudication"))
    team.sql("cy", INSERT, ("p", "q", "not_duplicate", c, "adjudication"))  # a third person: accepted
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="adjudicated p / q"):
        team.sql("cy", INSERT, ("p", "q", "duplicate", c, "review"))
    # a temporary table cannot stand in for the team's (the trigger names its schema, pg_temp last)
    with psycopg.connect(team.urls["bo"], autocommit=True) as con:
        con.execute("CREATE TEMP TABLE team (adjudicator_role TEXT)")
        con.execute("INSERT INTO team VALUES (%s)", (team.roles.reviewer,))
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="only members of"):
            con.execute(INSERT, ("x", "y", "duplicate", b, "adjudication"))
    d = open_review_store(team.urls["vi"], readonly=True).all_decisions()
    assert list(zip(d["reviewer"], d["kind"])) == [(a, "review"), (b, "review"), (c, "review"), (c, "adjudication")]
    labels, counts = review_labels(d)
    assert counts.adjudicated == 1 and counts.contested == 0


def test_team_settings_are_the_stores_and_only_adjudicators_change_them(team):
    from calib.review.team import current_share, set_share, settings_history, whoami
    with open_review_store(team.urls["ana"]) as s:
        me = whoami(s)
        assert (me.user, me.groups, me.share) == (team.names["ana"], ("reviewer", "viewer"), 0.2)
        with pytest.raises(ValueError, match="permission denied for table team_settings"):
            set_share(s, 0.5)
    with open_review_store(team.urls["cy"]) as s:
        assert whoami(s).groups == ("reviewer", "adjudicator", "viewer")
        set_share(s, 0.5)
        with pytest.raises(ValueError, match="overlap share must be between 0 and 1"):
            set_share(s, 1.5)
    with open_review_store(team.urls["vi"], readonly=True) as s:  # every session reads it
        assert current_share(s) == 0.5 and whoami(s).groups == ("viewer",)
        history = settings_history(s)
    assert [(share, by) for share, by, _ in history] == [(0.2, urlsplit(team.admin).username),
                                                        (0.5, team.names["cy"])]


def test_the_app_api_records_under_the_connected_role(team):
    with open_review_store(team.urls["ana"]) as s:
        s.record("a", "b", "duplicate", team.names["ana"])
        with pytest.raises(ValueError, match="is not the connected role"):
            s.record("a", "c", "duplicate", "someone else")
    with open_review_store(team.urls["vi"]) as s:
        with pytest.raises(ValueError, match="permission denied for table decisions"):
            s.record("a", "c", "duplicate", team.names["vi"])


@pytest.mark.slow
def test_team_cli_init_add_show_share_remove_and_agreement(postgres_db, tmp_path, monkeypatch, capsys):
    """The commands a team's admin runs, each person's password from their pgpass file (PGPASSFILE),
    and ``calib reviews agreement`` on the URL: the hand-computed kappa.

    ana and bo on 11 pairs: both duplicate on 3, both not on 4, ana dup / bo not on 2, ana not / bo dup
    on 1, and one pair ana calls unsure. Kappa over the 10 rated pairs: p_o = 7/10, ana duplicate 5/10,
    bo 4/10, p_e = .5 x .4 + .5 x .6 = .5, kappa = (.7 - .5) / .5 = 0.4."""
    from calib.cli import main
    tag = uuid.uuid4().hex[:8]
    prefix = f"c{tag}"
    ana, bo, cy, owner = f"ana_{tag}", f"bo_{tag}", f"cy_{tag}", f"owner_{tag}"
    with psycopg.connect(postgres_db, autocommit=True) as con:  # as docs/team-review.md: an owner, not a superuser
        con.execute(f"CREATE ROLE {owner} LOGIN CREATEROLE PASSWORD 'pw-{tag}'")
        con.execute(f'ALTER DATABASE "{urlsplit(postgres_db).path.lstrip("/")}" OWNER TO {owner}')
    admin = _as(postgres_db, owner, f"pw-{tag}")
    try:
        assert main(["reviews", "team", "init", "--reviews", admin, "--prefix", prefix, "--share", "0.3"]) == 0
        err = capsys.readouterr().err
        assert f"groups {prefix}_reviewer, {prefix}_adjudicator" in err and "overlap share 0.3" in err
        assert f"pw-{tag}" not in err
        lines = []
        for name, role in ((ana, "reviewer"), (bo, "reviewer"), (cy, "adjudicator")):
            assert main(["reviews", "team", "add", "--reviews", admin, name, "--role", role]) == 0
            out, err = capsys.readouterr()
            host, port, db, user, password = out.strip().split(":")
            assert (user, host, port) == (name, urlsplit(postgres_db).hostname, str(urlsplit(postgres_db).port))
            assert f"postgresql://{name}@{host}:{port}/{db}" in err
            lines.append(out.strip())
        passfile = tmp_path / "pgpass"
        passfile.write_text("\n".join(lines) + "\n")
        passfile.chmod(0o600)
        monkeypatch.setenv("PGPASSFILE", str(passfile))
        url = {n: _as(postgres_db, n) for n in (ana, bo, cy)}  # no password in the URL
        rows = [("duplicate", "duplicate")] * 3 + [("not_duplicate", "not_duplicate")] * 4 + \
            [("duplicate", "not_duplicate")] * 2 + [("not_duplicate", "duplicate")] + [("unsure", "duplicate")]
        for person, col in ((ana, 0), (bo, 1)):
            with open_review_store(url[person]) as s:
                for k, votes in enumerate(rows):
                    s.record(f"a{k:02d}", f"b{k:02d}", votes[col], person)
        assert main(["reviews", "agreement", "--reviews", url[cy], "--json", "--replicates", "200"]) == 0
        doc = json.loads(capsys.readouterr().out)
        overall = doc["agreement"][0]
        assert overall["kappa"] == pytest.approx(0.4, abs=1e-9)
        assert (overall["pairs"], overall["agreed"], overall["unsure"]) == (10, 7, 1)
        assert doc["labels"]["double_reviewed"] == 11 and doc["labels"]["unsure"] == 1
        with open_review_store(url[cy]) as s:
            decisions = s.all_decisions()
        assert agreement_table(decisions, replicates=200).iloc[0]["kappa"] == pytest.approx(0.4, abs=1e-9)
        assert main(["reviews", "agreement", "--reviews", url[cy]]) == 0
        assert "0.400 [" in capsys.readouterr().out
        assert main(["reviews", "team", "share", "--reviews", url[bo], "0.9"]) == 2
        assert "permission denied for table team_settings" in capsys.readouterr().err
        assert main(["reviews", "team", "share", "--reviews", url[cy], "0.5"]) == 0
        capsys.readouterr()
        assert main(["reviews", "team", "show", "--reviews", url[bo]]) == 0
        out = capsys.readouterr().out
        assert f"connected as {bo} (reviewer, viewer)" in out
        assert f"reviewers ({prefix}_reviewer): {ana}, {bo}" in out and f"adjudicators ({prefix}_adjudicator): {cy}" in out
        assert f"overlap share: 0.5 (set by {cy} at " in out
        assert main(["reviews", "team", "remove", "--reviews", admin, bo]) == 0
        capsys.readouterr()
        assert main(["reviews", "agreement", "--reviews", url[bo]]) == 2
        assert "permission denied" in capsys.readouterr().err
        assert main(["reviews", "team", "init", "--reviews", str(tmp_path / "r.sqlite")]) == 2
        assert "a team needs a PostgreSQL store" in capsys.readouterr().err
    finally:
        with psycopg.connect(postgres_db, autocommit=True) as con:
            con.execute(f'ALTER DATABASE "{urlsplit(postgres_db).path.lstrip("/")}" OWNER TO CURRENT_USER')
        _drop_roles(postgres_db, ana, bo, cy, f"{prefix}_adjudicator", f"{prefix}_reviewer", f"{prefix}_viewer", owner)


def test_an_older_shared_role_is_named_and_writes_under_its_own_name(postgres_db, capsys):
    """A store set up the old way (one calib_reviewer role for everyone): init names the role, and
    from then on its decisions record the shared role's name, not a typed one."""
    from calib.cli import main
    tag = uuid.uuid4().hex[:8]
    shared, prefix = f"calib_reviewer_{tag}", f"o{tag}"
    with open_review_store(postgres_db) as s:
        s.create()
    db = urlsplit(postgres_db).path.lstrip("/")
    with psycopg.connect(postgres_db, autocommit=True) as con:
        con.execute(f"CREATE ROLE {shared} LOGIN PASSWORD 'pw-{tag}'")
        for stmt in (f'GRANT CONNECT ON DATABASE "{db}" TO {shared}', f"GRANT USAGE ON SCHEMA public TO {shared}",
                     f"GRANT SELECT, INSERT ON decisions TO {shared}", f"GRANT SELECT ON schema_version TO {shared}"):
            con.execute(stmt)
    try:
        with open_review_store(_as(postgres_db, shared, f"pw-{tag}")) as s:
            s.record("a", "b", "duplicate", "ana")  # before the team: a typed name
        assert main(["reviews", "team", "init", "--reviews", postgres_db, "--prefix", prefix]) == 0
        assert f"role {shared} may also insert decisions" in capsys.readouterr().err
        with open_review_store(_as(postgres_db, shared, f"pw-{tag}")) as s:
            with pytest.raises(ValueError, match="is not the connected role"):
                s.record("a", "b", "not_duplicate", "ana")
            s.record("a", "b", "not_duplicate", shared)
            assert list(s.all_decisions()["reviewer"]) == ["ana", shared]
    finally:
        _drop_roles(postgres_db, shared, f"{prefix}_adjudicator", f"{prefix}_reviewer", f"{prefix}_viewer")
