"""The review store's guarantees on both backends (SQLite file, PostgreSQL
server): append-only in the store itself, concurrent writers from several
processes, a killed writer loses nothing it committed, read-only access, and
one-line errors that never show a password. PostgreSQL tests need
CALIB_TEST_POSTGRES (see tests/conftest.py; .ci/run starts a server)."""

import multiprocessing as mp
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import pandas as pd
import pytest

from calib.review.schema import ALL_COLUMNS, COLUMNS
from calib.review.sqlite import ReviewStore
from calib.review.stores import open_review_store
from calib.review.postgres import PostgresReviewStore, is_postgres_url, redact_url, url_password

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(params=["sqlite", "postgres"])
def target(request, tmp_path) -> str:
    """A fresh, empty review store of each backend: a path or a URL."""
    if request.param == "sqlite":
        return str(tmp_path / "reviews.sqlite")
    return request.getfixturevalue("postgres_db")


def _raw(target: str, sql: str) -> None:
    """Run ``sql`` straight on the store's database, bypassing calib."""
    if is_postgres_url(target):
        import psycopg
        with psycopg.connect(target, autocommit=True) as con:
            con.execute(sql)
    else:
        con = sqlite3.connect(target, isolation_level=None)
        try:
            con.execute(sql)
        finally:
            con.close()


def _raw_error():
    import psycopg
    return (sqlite3.DatabaseError, psycopg.Error)


def _with_url_parts(url: str, *, user: str | None = None, password: str | None = None,
                    port: int | None = None, options: str | None = None) -> str:
    parts = urlsplit(url)
    host = parts.hostname + (f":{port or parts.port}" if (port or parts.port) else "")
    user = user if user is not None else parts.username
    password = password if password is not None else parts.password
    auth = f"{user}:{quote(password, safe='')}@" if password else f"{user}@"
    query = parts.query
    if options:
        query = (query + "&" if query else "") + "options=" + quote(options, safe="")
    return urlunsplit((parts.scheme, auth + host, parts.path, query, parts.fragment))


# ------------------------------------------------------- the same behaviour on both

def _write_sample_decisions(store) -> None:
    store.record("b", "a", "duplicate", "ana", note="same text", config_fingerprint="fp1")
    store.record("a", "b", "not_duplicate", "bo")
    store.record("a", "b", "duplicate", "cy", kind="adjudication")
    store.record_many([{"id_a": "c", "id_b": "d", "decision": "unsure", "reviewer": "ana"},
                       {"id_a": "e", "id_b": None, "decision": "duplicate", "reviewer": "bo", "note": None}])


def test_round_trip_on_each_backend(target):
    with open_review_store(target) as s:
        assert len(s) == 0 and s.all_decisions().empty and list(s.all_decisions().columns) == list(ALL_COLUMNS)
        _write_sample_decisions(s)
        every = s.all_decisions()
        assert list(every.columns) == list(ALL_COLUMNS)
        assert every["id"].is_unique and every["id"].is_monotonic_increasing
        assert list(zip(every["id_a"], every["id_b"].fillna("-"), every["decision"], every["reviewer"],
                        every["kind"])) == [
            ("a", "b", "duplicate", "ana", "review"), ("a", "b", "not_duplicate", "bo", "review"),
            ("a", "b", "duplicate", "cy", "adjudication"), ("c", "d", "unsure", "ana", "review"),
            ("e", "-", "duplicate", "bo", "review")]
        assert every.loc[0, "note"] == "same text" and every.loc[4, "note"] == ""
        assert every.loc[0, "config_fingerprint"] == "fp1" and pd.isna(every.loc[1, "config_fingerprint"])
        assert pd.Timestamp(every.loc[0, "created_at"]).utcoffset().total_seconds() == 0
        assert s.history("b", "a")["reviewer"].tolist() == ["ana", "bo", "cy"]
        assert s.latest()[["id_a", "decision"]].values.tolist() == [["a", "duplicate"], ["c", "unsure"],
                                                                    ["e", "duplicate"]]
        assert s.as_pair_labels().values.tolist() == [["a", "b", "duplicate", "review"]]
        assert len(s) == 5
        with pytest.raises(ValueError, match="row 1: decision"):  # all or nothing
            s.record_many([{"id_a": "x", "id_b": "y", "decision": "duplicate", "reviewer": "ana"},
                           {"id_a": "x", "id_b": "z", "decision": "maybe", "reviewer": "ana"}])
        assert len(s) == 5


def test_postgres_reads_equal_sqlite_reads(postgres_db, tmp_path):
    """The same decisions give the same frames, ids in the same order: pairs sorted by code point
    ('B' < 'a', as Python sorts them, whatever the database's collation), a single-document
    decision before the pairs of the same first id."""
    frames = []
    for target in (str(tmp_path / "r.sqlite"), postgres_db):
        with open_review_store(target) as s:
            _write_sample_decisions(s)
            s.record("a", "B", "duplicate", "ana")
            s.record("a", None, "unsure", "bo")
            s.record("\u00e9", "Z", "not_duplicate", "cy")
            frames.append([f.drop(columns=["created_at"], errors="ignore") for f in (s.all_decisions(), s.all(), s.latest(),
                                                                    s.history("a", "b"), s.as_pair_labels())])
    for lite, pg in zip(*frames):
        pd.testing.assert_frame_equal(lite, pg, check_dtype=True)
    latest = frames[1][2]
    assert list(zip(latest["id_a"], latest["id_b"].fillna("-"))) == [
        ("B", "a"), ("Z", "\u00e9"), ("a", "-"), ("a", "b"), ("c", "d"), ("e", "-")]


def test_append_only_in_the_store_itself(target):
    with open_review_store(target) as s:
        _write_sample_decisions(s)
    statements = ["UPDATE decisions SET decision = 'unsure'", "DELETE FROM decisions WHERE id_a = 'a'",
                  "UPDATE decisions SET kind = 'review' WHERE kind = 'adjudication'"]
    if is_postgres_url(target):
        statements.append("TRUNCATE decisions")
    for sql in statements:
        with pytest.raises(_raw_error(), match="append-only"):
            _raw(target, sql)
    with open_review_store(target, readonly=True) as s:
        assert len(s) == 5 and s.all_decisions()["decision"].tolist()[:2] == ["duplicate", "not_duplicate"]


def test_read_only_store_reads_and_refuses_writes(target):
    with open_review_store(target) as s:
        s.record("a", "b", "duplicate", "ana")
    with open_review_store(target, readonly=True) as s:
        assert s.readonly and s.all_decisions()["reviewer"].tolist() == ["ana"]
        for write in (lambda: s.record("a", "b", "not_duplicate", "bo"),
                      lambda: s.record_many([{"id_a": "c", "id_b": "d", "decision": "unsure", "reviewer": "bo"}])):
            with pytest.raises(ValueError) as err:
                write()
            assert "read-only" in str(err.value) and "nothing recorded" in str(err.value)
            assert "\n" not in str(err.value)
        assert len(s) == 1
    with open_review_store(target) as s:
        assert len(s) == 1


# ------------------------------------------------------- several processes

def _writer(target, tag, n, start):
    start.wait(120)  # a barrier: every writer has imported calib, then all open the store at once
    with open_review_store(target) as s:
        for k in range(n):
            s.record(f"{tag}-{k:04d}", f"{tag}-{k + 1:04d}", "duplicate", tag)


@pytest.mark.slow
def test_four_processes_write_at_once(target):
    """Four writers start together on a store that does not exist yet (the schema is created
    once) and each appends N decisions, one transaction each: all 4N rows, unique ids,
    each writer's rows in its own order."""
    n = 150
    ctx = mp.get_context("spawn")
    tags = ("p", "q", "r", "s")
    start = ctx.Barrier(len(tags))
    procs = [ctx.Process(target=_writer, args=(target, tag, n, start)) for tag in tags]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
        assert p.exitcode == 0
    with open_review_store(target, readonly=True) as s:
        df = s.all_decisions()
    assert len(df) == 4 * n and df["id"].is_unique
    assert df.groupby("reviewer").size().to_dict() == {t: n for t in tags}
    for tag in tags:
        assert df.loc[df["reviewer"] == tag, "id_a"].tolist() == [f"{tag}-{k:04d}" for k in range(n)]


_LOOP = """
import sys
from calib.review.stores import open_review_store
s = open_review_store(sys.argv[1])
k = 0
while True:
    rid = s.record(f"d{k:06d}", f"e{k:06d}", "not_duplicate", "loop")
    print(rid, flush=True)
    k += 1
"""


def test_killed_writer_loses_nothing_committed(target):
    """A writer SIGKILLed mid-stream: every decision it reported committed (through a pipe)
    is in the store, at most one more (committed, not yet reported), and the store stays writable."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    child = subprocess.Popen([sys.executable, "-c", _LOOP, target], stdout=subprocess.PIPE, env=env, text=True)
    seen = []
    deadline = time.monotonic() + 120
    try:
        while len(seen) < 80 and time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line:
                break
            seen.append(int(line))
        os.kill(child.pid, signal.SIGKILL)
        # Read the rest through the same text stream: communicate(timeout=...) reads the raw pipe
        # and would drop the lines readline() has already buffered (many, on a loaded machine).
        rest = child.stdout.read()
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    seen += [int(x) for x in rest.split()]
    assert child.returncode == -signal.SIGKILL
    assert len(seen) >= 80
    if not is_postgres_url(target):
        con = sqlite3.connect(target)
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        con.close()
    with open_review_store(target) as s:
        ids = set(s.all_decisions()["id"])
        assert set(seen) <= ids
        assert len(ids) - len(seen) in (0, 1)
        s.record("after", "crash", "duplicate", "ana")
        assert len(s) == len(ids) + 1


# ------------------------------------------------------- the command line

SMALL_GRID = ["--shingles", "word3", "--num-perm", "64", "--splits", "16x4", "--thresholds", "0.8"]


def test_sweep_reads_reviews_from_either_store(target, tmp_path, capsys):
    from calib.cli import main
    from calib.reading.samples import load_sample
    s = load_sample(ROOT / "data" / "sample")
    singles = s.docs[s.docs["group"].isna()]["id"].tolist()[:2]  # two unrelated documents
    with open_review_store(target) as store:
        store.record(singles[0], singles[1], "duplicate", "ana")
    base, reviewed = tmp_path / "a.csv", tmp_path / "b.csv"
    assert main(["sweep", "--sample", str(ROOT / "data" / "sample"), "--out", str(base), *SMALL_GRID]) == 0
    capsys.readouterr()
    assert main(["sweep", "--sample", str(ROOT / "data" / "sample"), "--out", str(reviewed), "--reviews", target,
                 *SMALL_GRID]) == 0
    err = capsys.readouterr().err
    assert f"reviews: 1 pair label(s) from {redact_url(target)}" in err
    if is_postgres_url(target):
        assert urlsplit(target).password not in err
    assert (pd.read_csv(reviewed)["n_positive"] == pd.read_csv(base)["n_positive"] + 1).all()


def test_cli_url_errors_are_one_line(postgres_db, tmp_path, capsys):
    from calib.cli import main
    password = urlsplit(postgres_db).password
    args = ["sweep", "--sample", str(ROOT / "data" / "sample"), "--out", str(tmp_path / "r.csv"), *SMALL_GRID]
    for url, needle in ((postgres_db, "no review store in that database"),
                        (_with_url_parts(postgres_db, port=_free_port()), "cannot open the review store"),
                        (_with_url_parts(postgres_db, password="wrong"), "password authentication failed")):
        capsys.readouterr()
        assert main([*args, "--reviews", url]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and password not in err and "Traceback" not in err
        assert err.startswith(f"calib sweep: error: --reviews {redact_url(url)}: ")
        assert needle in err
    assert not (tmp_path / "r.csv").exists()


# ------------------------------------------------------- PostgreSQL only

def test_url_helpers():
    url = "postgresql://ana:s3cr%40t@db.example:5433/reviews?sslmode=require"
    assert is_postgres_url(url) and is_postgres_url("postgres://db/x") and is_postgres_url(" POSTGRESQL://h/d")
    assert not is_postgres_url("reviews/postgresql.sqlite") and not is_postgres_url(Path("postgresql://x"))
    # the display form: user, host, port and database as libpq parses them; no other parameter
    assert redact_url(url) == "postgresql://ana:***@db.example:5433/reviews"
    assert url_password(url) == "s3cr@t"  # the password libpq sends (percent-decoded)
    q = "postgresql://db.example/reviews?user=ana&password=hunter2&sslmode=require"
    assert redact_url(q) == "postgresql://ana:***@db.example/reviews"
    assert url_password(q) == "hunter2"
    assert redact_url("postgresql://ana@db/reviews") == "postgresql://ana@db/reviews"
    assert url_password("postgresql://ana@db/reviews") is None


def _free_port() -> int:
    """A local TCP port nobody listens on (bound by the OS, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _one_line_without_password(exc: pytest.ExceptionInfo, password: str) -> str:
    text = str(exc.value)
    assert "\n" not in text and password not in text
    return text


def test_url_errors_are_one_line_without_the_password(postgres_db):
    password = urlsplit(postgres_db).password
    assert password
    # nothing listens on that port
    dead = _with_url_parts(postgres_db, port=_free_port())
    with pytest.raises(ValueError) as err:
        PostgresReviewStore(dead, connect_timeout_s=5)
    text = _one_line_without_password(err, password)
    assert text.startswith(f"{redact_url(dead)}: cannot open the review store (") and "***" in text
    # bad credentials
    wrong = _with_url_parts(postgres_db, password="not-the-" + password)
    with pytest.raises(ValueError) as err:
        open_review_store(wrong)
    text = _one_line_without_password(err, "not-the-" + password)
    assert "password authentication failed" in text and text.startswith(redact_url(wrong))
    # a database that does not exist
    missing = postgres_db.rsplit("/", 1)[0] + "/no_such_db_" + uuid.uuid4().hex[:6]
    with pytest.raises(ValueError) as err:
        open_review_store(missing)
    assert "does not exist" in _one_line_without_password(err, password)


def test_another_applications_table_is_refused_untouched(postgres_db):
    import psycopg
    _raw(postgres_db, "CREATE TABLE decisions (id serial PRIMARY KEY, body text)")
    _raw(postgres_db, "INSERT INTO decisions (body) VALUES ('theirs')")
    for readonly in (False, True):
        with pytest.raises(ValueError, match="not a review store") as err:
            open_review_store(postgres_db, readonly=readonly)
        assert str(err.value).startswith(redact_url(postgres_db) + ": ")
        assert urlsplit(postgres_db).password not in str(err.value)
    with psycopg.connect(postgres_db) as con:
        assert con.execute("SELECT body FROM decisions").fetchall() == [("theirs",)]
        assert con.execute("SELECT to_regclass('schema_version')").fetchone() == (None,)


def test_newer_schema_is_refused(postgres_db):
    with open_review_store(postgres_db) as s:
        s.record("a", "b", "duplicate", "ana")
    _raw(postgres_db, "UPDATE schema_version SET version = 9")
    with pytest.raises(ValueError, match=r"schema version 9 is newer than this code \(2\)"):
        open_review_store(postgres_db)


def test_read_only_from_the_url_is_refused_by_the_server(postgres_db):
    """A viewer's URL with ``options=-c default_transaction_read_only=on``: the store opens
    for writing as far as calib knows, and the server itself refuses the insert."""
    with open_review_store(postgres_db) as s:
        s.record("a", "b", "duplicate", "ana")
    viewer = _with_url_parts(postgres_db, options="-c default_transaction_read_only=on")
    with open_review_store(viewer) as s:
        assert not s.readonly and len(s) == 1
        with pytest.raises(ValueError, match="read-only transaction; nothing recorded") as err:
            s.record("c", "d", "duplicate", "bo")
        _one_line_without_password(err, urlsplit(postgres_db).password)
    with open_review_store(postgres_db) as s:
        assert len(s) == 1


def test_writer_and_viewer_roles(postgres_db, capsys):
    """The README's setup: the owner creates the tables (python -m calib.review.postgres URL), the
    reviewer role may insert and read but not update or delete (refused by its privileges,
    before the trigger), the viewer role only reads."""
    import psycopg

    from calib.review.postgres import main as create_store
    suffix = uuid.uuid4().hex[:8]
    reviewer, viewer = f"calib_reviewer_{suffix}", f"calib_viewer_{suffix}"
    db = urlsplit(postgres_db).path.lstrip("/")
    assert create_store([postgres_db]) == 0
    err = capsys.readouterr().err
    assert f"review store ready at {redact_url(postgres_db)}: schema version 2, 0 decision(s)" in err
    assert urlsplit(postgres_db).password not in err
    assert create_store([postgres_db]) == 0  # again: nothing to do
    _raw(postgres_db, f"CREATE ROLE {reviewer} LOGIN PASSWORD 'w-{suffix}'")
    _raw(postgres_db, f"CREATE ROLE {viewer} LOGIN PASSWORD 'v-{suffix}'")
    try:
        for sql in (f'GRANT CONNECT ON DATABASE "{db}" TO {reviewer}, {viewer}',
                    f"GRANT USAGE ON SCHEMA public TO {reviewer}, {viewer}",
                    f"GRANT SELECT, INSERT ON decisions TO {reviewer}",
                    f"GRANT SELECT ON decisions, schema_version TO {reviewer}, {viewer}"):
            _raw(postgres_db, sql)
        reviewer_url = _with_url_parts(postgres_db, user=reviewer, password=f"w-{suffix}")
        viewer_url = _with_url_parts(postgres_db, user=viewer, password=f"v-{suffix}")
        with open_review_store(reviewer_url) as s:
            s.record("a", "b", "not_duplicate", "ana")
            s.record("b", "a", "duplicate", "bo", kind="adjudication")
            assert s.history("a", "b")["reviewer"].tolist() == ["ana", "bo"]
        for sql in ("UPDATE decisions SET decision = 'unsure'", "DELETE FROM decisions", "TRUNCATE decisions"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                _raw(reviewer_url, sql)
        with open_review_store(viewer_url) as s:
            assert len(s) == 2 and s.all_decisions()["kind"].tolist() == ["review", "adjudication"]
            with pytest.raises(ValueError, match="permission denied for table decisions; nothing recorded") as err:
                s.record("c", "d", "duplicate", "vi")
            _one_line_without_password(err, f"v-{suffix}")
            assert str(err.value).startswith(redact_url(viewer_url))
        assert create_store([viewer_url]) == 0  # the tables are there: the viewer creates nothing
        with open_review_store(postgres_db) as s:
            assert len(s) == 2
    finally:
        _raw(postgres_db, f"DROP OWNED BY {reviewer}, {viewer}")
        _raw(postgres_db, f"DROP ROLE {reviewer}")
        _raw(postgres_db, f"DROP ROLE {viewer}")


def test_creating_the_tables_needs_the_right(postgres_db, capsys):
    """A role that may not create tables in the database: one line, nothing created."""
    from calib.review.postgres import main as create_store
    suffix = uuid.uuid4().hex[:8]
    role = f"calib_nobody_{suffix}"
    _raw(postgres_db, f"CREATE ROLE {role} LOGIN PASSWORD 'n-{suffix}'")
    _raw(postgres_db, "REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    try:
        url = _with_url_parts(postgres_db, user=role, password=f"n-{suffix}")
        assert create_store([url]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"calib.review.postgres: {redact_url(url)}: permission denied for schema public")
        assert "\n" not in err and f"n-{suffix}" not in err
        with open_review_store(url) as s:
            with pytest.raises(ValueError, match="permission denied for schema public; nothing recorded"):
                s.record("a", "b", "duplicate", "ana")
            assert not s.exists and len(s) == 0
    finally:
        _raw(postgres_db, f"DROP OWNED BY {role}")
        _raw(postgres_db, f"DROP ROLE {role}")


def test_schema_matches_sqlite_columns(postgres_db, tmp_path):
    """The same table and columns in both backends."""
    import psycopg
    with open_review_store(postgres_db) as s:
        s.record("a", "b", "duplicate", "ana")
    with ReviewStore(tmp_path / "r.sqlite") as s:
        s.record("a", "b", "duplicate", "ana")
        lite = [r[1] for r in s._con.execute("PRAGMA table_info(decisions)")]
    with psycopg.connect(postgres_db) as con:
        pg = [r[0] for r in con.execute("SELECT column_name FROM information_schema.columns WHERE table_name ="
                                        " 'decisions' ORDER BY ordinal_position")]
        assert con.execute("SELECT version FROM schema_version").fetchall() == [(2,)]
    assert pg == lite == list(ALL_COLUMNS) and list(COLUMNS) == lite[:-1]
