"""The review store on a PostgreSQL server, shared by a team (``psycopg`` v3:
``pip install 'calib[postgres]'``).

The same table, columns and public interface as the SQLite store
(:class:`calib.review.schema.DecisionStore`), with the same guarantees, enforced by
the server: a trigger refuses every UPDATE, DELETE and TRUNCATE of a decision
(whoever asks, the owner included), and a role given only INSERT and SELECT
(see the README) is refused them before the trigger runs. One transaction per
write; any number of processes on any number of machines may write at once
(row ids come from an identity column: unique, growing in the order the
inserts ran). The schema (version 2, in a ``schema_version`` table) is created
by the first decision, under an advisory lock so that writers starting
together create it once.

Read-only (``readonly=True``, for viewers): the session is set to
``default_transaction_read_only``, so the server refuses writes too, and
every write raises a one-line ``ValueError`` before reaching it. That guards
against slips, not against a viewer who means harm: for that, give viewers a
role with SELECT only (the server then refuses writes whatever the client
does). Errors are one line naming the store by its display form
(:func:`calib.review.urls.redact_url`: what libpq parses, never a password).
"""

from __future__ import annotations

from contextlib import contextmanager

from calib.review.schema import (APPEND_ONLY, DECISIONS_INDEX_SQL, INSERTED, SCHEMA_VERSION, DecisionStore,
    check_schema, decision_columns_sql)
# the URL rules live in calib.review.urls; their names stay importable here
from calib.review.urls import URL_SCHEMES, check_unambiguous, conninfo, is_postgres_url, redact_url, scrub, url_password  # noqa: F401

CONNECT_TIMEOUT_S = 10
# advisory lock key held while the schema is created: writers starting on an empty database together
_SCHEMA_LOCK = 0x63616C6962  # "calib"

_PG_SCHEMA = f"""
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE decisions (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,{decision_columns_sql('TEXT COLLATE "C"')}
);
{DECISIONS_INDEX_SQL};
CREATE FUNCTION decisions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION '{APPEND_ONLY}'; END $$;
CREATE TRIGGER decisions_no_update_delete BEFORE UPDATE OR DELETE ON decisions
    FOR EACH ROW EXECUTE FUNCTION decisions_append_only();
CREATE TRIGGER decisions_no_truncate BEFORE TRUNCATE ON decisions
    FOR EACH STATEMENT EXECUTE FUNCTION decisions_append_only();
REVOKE UPDATE, DELETE, TRUNCATE ON decisions, schema_version FROM PUBLIC;
INSERT INTO schema_version (version) VALUES ({SCHEMA_VERSION})
"""


def _psycopg():
    try:
        import psycopg
    except ImportError:
        raise ValueError("a PostgreSQL review store needs psycopg: pip install 'calib[postgres]'") from None
    return psycopg


class PostgresReviewStore(DecisionStore):
    """Append-only store of review decisions in a PostgreSQL database.

    >>> with PostgresReviewStore("postgresql://ana@db.example/calib_reviews") as store:   # doctest: +SKIP
    ...     store.record("doc-1", "doc-9", "not_duplicate", "ana")
    """

    _PLACEHOLDER = "%s"

    def __init__(self, url: str, *, readonly: bool = False, connect_timeout_s: int = CONNECT_TIMEOUT_S):
        psycopg = _psycopg()
        self.url = url.strip()
        self.where = redact_url(self.url)
        self.readonly = bool(readonly)
        self._closed = False
        self._con = None
        check_unambiguous(self.url)  # libpq would connect elsewhere than meant; never echoed
        settings = {"application_name": "calib"}
        if "connect_timeout" not in conninfo(self.url):
            settings["connect_timeout"] = int(connect_timeout_s)
        try:
            self._con = psycopg.connect(self.url, autocommit=True, **settings)
            if self.readonly:
                self._con.execute("SET default_transaction_read_only = on")
            self._exists = self._inspect()
        except psycopg.Error as exc:
            self.close()
            raise ValueError(f"{self.where}: cannot open the review store ({self._one_line(exc)})") from None
        except ValueError:
            self.close()
            raise

    @property
    def exists(self) -> bool:
        """Whether the database holds the store's tables yet (created by the first decision)."""
        return self._exists

    def _one_line(self, exc: Exception) -> str:
        """A server or driver error as one line, never with the password in it."""
        # the server's own sentence when there is one (str(exc) adds the statement's LINE and a caret)
        text = getattr(getattr(exc, "diag", None), "message_primary", None) or \
            " ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__
        return scrub(text, self.url)

    def _inspect(self) -> bool:
        """Whether the store's tables are there; a ``decisions`` table that is not a review
        store's, or a newer schema, is refused before anything is written."""
        decisions, versions = self._con.execute(
            "SELECT to_regclass('decisions'), to_regclass('schema_version')").fetchone()
        if decisions is None:
            return False
        if versions is None:
            raise ValueError(f"{self.where}: not a review store (a decisions table, but no schema_version table)")
        columns = {r[0] for r in self._con.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = 'decisions'::regclass AND attnum > 0"
            " AND NOT attisdropped")}
        check_schema(self.where, columns, self._con.execute("SELECT max(version) FROM schema_version").fetchone()[0])
        return True

    def create(self) -> None:
        """Create the store's tables now if missing (else by the first decision): run once
        as the database's owner before granting roles (``python -m calib.review.postgres URL``)."""
        if self.readonly:
            raise ValueError(f"{self.where}: the review store is read-only (opened read-only); nothing created")
        psycopg = _psycopg()
        try:
            self._create_schema()
        except psycopg.Error as exc:
            raise ValueError(f"{self.where}: {self._one_line(exc)}; nothing created") from None

    def _create_schema(self) -> None:
        # A session lock taken before the transaction begins, not a transaction lock inside it: a
        # transaction that waited would still see its catalog as it was when it began (the table
        # missing) and fail on "already exists"; one begun after the wait sees the other's tables.
        self._con.execute("SELECT pg_advisory_lock(%s)", (_SCHEMA_LOCK,))
        try:
            with self._con.transaction():
                if not self._inspect():  # another writer may have created them while we waited
                    for stmt in _PG_SCHEMA.split(";\n"):
                        if stmt.strip():
                            self._con.execute(stmt)
        finally:
            self._con.execute("SELECT pg_advisory_unlock(%s)", (_SCHEMA_LOCK,))
        self._exists = True

    @contextmanager
    def _transaction(self):
        """A cursor for one transaction (committed at the end, rolled back on an error);
        the server's refusal (read-only, no privilege, lost connection) as a one-line ``ValueError``."""
        if self._closed:
            raise ValueError(f"{self.where}: the review store is closed")
        if self.readonly:
            raise ValueError(f"{self.where}: the review store is read-only (opened read-only); nothing recorded")
        psycopg = _psycopg()
        try:
            if not self._exists:
                self._create_schema()
            with self._con.transaction(), self._con.cursor() as cur:
                yield cur
        except psycopg.Error as exc:
            raise ValueError(f"{self.where}: {self._one_line(exc)}; nothing recorded") from None

    def _insert_many(self, cur, values: list[tuple]) -> None:
        """All rows in one statement (one array per column): a team store's triggers count a person's
        decisions once per statement, so one statement per row would cost more with every row."""
        if values:
            arrays = [list(column) for column in zip(*values)]
            cur.execute(f"INSERT INTO decisions ({', '.join(INSERTED)}) SELECT * FROM unnest("
                        f"{', '.join(['%s::text[]'] * len(INSERTED))})", arrays)

    def _rows(self, sql: str, params: tuple) -> list:
        if self._closed:
            raise ValueError(f"{self.where}: the review store is closed")
        if not self._exists:
            self._exists = self._checked(self._inspect)  # created by another process since we opened?
            if not self._exists:
                return []
        return self._checked(lambda: self._con.execute(sql, params).fetchall())

    def _checked(self, read):
        psycopg = _psycopg()
        try:
            return read()
        except psycopg.Error as exc:
            raise ValueError(f"{self.where}: {self._one_line(exc)}") from None

    def close(self) -> None:
        self._closed = True
        if self._con is not None:
            self._con.close()
            self._con = None


def main(argv: list[str] | None = None) -> int:
    """``python -m calib.review.postgres URL``: create the review store's tables in that database."""
    import sys
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not is_postgres_url(args[0]):
        print("usage: python -m calib.review.postgres postgresql://OWNER@HOST:PORT/DATABASE", file=sys.stderr)
        return 2
    try:
        with PostgresReviewStore(args[0]) as store:
            store.create()
            print(f"review store ready at {store.where}: schema version {SCHEMA_VERSION}, "
                  f"{len(store)} decision(s)", file=sys.stderr)
    except ValueError as exc:
        print(f"calib.review.postgres: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
