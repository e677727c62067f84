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

from calib.review import ALL_COLUMNS, COLUMNS, ReviewStore, open_review_store
from calib.review_pg import PostgresReviewStore, is_postgres_url, redact_url, url_password

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
    frames = []
    for target in (str(tmp_path / "r.sqlite"), postgres_db):
        with open_review_store(target) as s:
            _write_sample_decisions(s)
            frames.append([f.drop(columns=["created_at"], errors="ignore") for f in (s.all_decisions(), s.all(), s.latest(),
                                                                    s.history("a", "b"), s.as_pair_labels())])
    for lite, pg in zip(*frames):
        pd.testing.assert_frame_equal(lite, pg, check_dtype=True)


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
    start.wait(60)
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
    start = ctx.Event()
    tags = ("p", "q", "r", "s")
    procs = [ctx.Process(target=_writer, args=(target, tag, n, start)) for tag in tags]
    for p in procs:
        p.start()
    start.set()
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
from calib.review import open_review_store
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
        rest, _ = child.communicate(timeout=30)
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


# ------------------------------------------------------- PostgreSQL only

def test_url_helpers():
    url = "postgresql://ana:s3cr%40t@db.example:5433/reviews?sslmode=require"
    assert is_postgres_url(url) and is_postgres_url("postgres://db/x") and is_postgres_url(" POSTGRESQL://h/d")
    assert not is_postgres_url("reviews/postgresql.sqlite") and not is_postgres_url(Path("postgresql://x"))
    assert redact_url(url) == "postgresql://ana:***@db.example:5433/reviews?sslmode=require"
    assert url_password(url) == "s3cr%40t"
    q = "postgresql://db.example/reviews?user=ana&password=hunter2&sslmode=require"
    assert redact_url(q) == "postgresql://db.example/reviews?user=ana&password=***&sslmode=require"
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


def test_writer_and_viewer_roles(postgres_db):
    """The README's roles: the writer may insert and read but not update (refused by its
    privileges before the trigger); the viewer only reads."""
    import psycopg
    suffix = uuid.uuid4().hex[:8]
    writer, viewer = f"calib_writer_{suffix}", f"calib_viewer_{suffix}"
    db = urlsplit(postgres_db).path.lstrip("/")
    with open_review_store(postgres_db) as s:  # the owner creates the schema with the first decision
        s.record("a", "b", "duplicate", "owner")
    _raw(postgres_db, f"CREATE ROLE {writer} LOGIN PASSWORD 'w-{suffix}'")
    _raw(postgres_db, f"CREATE ROLE {viewer} LOGIN PASSWORD 'v-{suffix}'")
    try:
        for sql in (f'GRANT CONNECT ON DATABASE "{db}" TO {writer}, {viewer}',
                    f"GRANT USAGE ON SCHEMA public TO {writer}, {viewer}",
                    f"GRANT SELECT, INSERT ON decisions TO {writer}",
                    f"GRANT SELECT ON decisions, schema_version TO {writer}, {viewer}"):
            _raw(postgres_db, sql)
        writer_url = _with_url_parts(postgres_db, user=writer, password=f"w-{suffix}")
        viewer_url = _with_url_parts(postgres_db, user=viewer, password=f"v-{suffix}")
        with open_review_store(writer_url) as s:
            s.record("a", "b", "not_duplicate", "ana")
            assert s.history("a", "b")["reviewer"].tolist() == ["owner", "ana"]
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            _raw(writer_url, "UPDATE decisions SET decision = 'unsure'")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            _raw(writer_url, "DELETE FROM decisions")
        with open_review_store(viewer_url) as s:
            assert len(s) == 2
            with pytest.raises(ValueError, match="permission denied for table decisions; nothing recorded") as err:
                s.record("c", "d", "duplicate", "vi")
            _one_line_without_password(err, f"v-{suffix}")
            assert str(err.value).startswith(redact_url(viewer_url))
        with open_review_store(postgres_db) as s:
            assert len(s) == 2
    finally:
        _raw(postgres_db, f"DROP OWNED BY {writer}, {viewer}")
        _raw(postgres_db, f"DROP ROLE {writer}")
        _raw(postgres_db, f"DROP ROLE {viewer}")


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
