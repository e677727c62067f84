"""The review store in one SQLite file (stdlib sqlite3): append-only decisions on proposed removals.

Every decision is a new row; nothing is updated or deleted (triggers refuse
it). The file is created by the first decision, not by opening it; an existing
file is inspected read-only first, and one that is not a review store (another
application's SQLite file) is refused before anything in it changes. The
decision in force for a pair is the latest one (see below);
``created_at`` (ISO-8601 UTC, microseconds) is kept for the record. Pairs are stored
with ``id_a < id_b``; ``id_b`` is NULL for a decision on a single proposed
removal. WAL journal, a busy timeout, one transaction per write, so several
processes may write to the same file at once.

"Latest" means last inserted (the row id, which only grows: rows are never
deleted), not the ``created_at`` clock reading: a reviewer whose clock runs
behind must not have a newer decision ignored. A store the process cannot
write (a read-only file or folder) opens read-only: reading works, writing
raises a ``ValueError``.

Schema version 2 added ``kind`` ('review' or 'adjudication') to every
decision; a version-1 file is upgraded in place (one ALTER TABLE, default
'review') the first time it is opened for writing, and reads as kind 'review'
when opened read-only. :func:`calib.review.stores.open_review_store` opens this
SQLite store for a path and the PostgreSQL one (:mod:`calib.review.postgres`) for
a ``postgresql://`` URL; the table and the shared interface are :mod:`calib.review.schema`.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from calib.base.inputs import check_path
from calib.review.schema import (APPEND_ONLY, DECISIONS_INDEX_SQL, KIND_COLUMN_SQL, SCHEMA_VERSION, DecisionStore,
    check_schema, decision_columns_sql)

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY,{decision_columns_sql(nul_free="instr(CAST({} AS BLOB), X'00') = 0")}
);
{DECISIONS_INDEX_SQL};
CREATE TRIGGER IF NOT EXISTS decisions_no_update BEFORE UPDATE ON decisions
    BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}'); END;
CREATE TRIGGER IF NOT EXISTS decisions_no_delete BEFORE DELETE ON decisions
    BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}'); END;
"""


class ReviewStore(DecisionStore):
    """Append-only store of review decisions in one SQLite file.

    >>> with ReviewStore("reviews/decisions.sqlite") as store:   # doctest: +SKIP
    ...     store.record("doc-1", "doc-9", "not_duplicate", "ana", note="same template")
    """

    def __init__(self, path: str | Path, *, readonly: bool = False, busy_timeout_ms: int = 30_000):
        self.path = Path(path)
        self.where = str(self.path)
        self._con = None
        self._closed = False
        self._busy_ms = int(busy_timeout_ms)
        self._asked_readonly = bool(readonly)
        self.readonly = self._asked_readonly or (self.path.exists() and not (
            os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK)))
        if not self.path.exists():
            return  # created by the first decision, not by opening: reads see an empty store until then
        if self.path.is_dir():
            raise ValueError(f"{self.path}: is a folder, not a review store (a SQLite file)")
        check_path(self.path, what="a SQLite review store")  # a FIFO or a device is refused, not read as empty
        if self.path.stat().st_size == 0:  # an empty file (touched): a new store
            if not self.readonly:
                self._open_writable()
            return
        # Inspected read-only first: a foreign SQLite file or a newer schema is refused before anything
        # (journal mode, tables, the version-2 upgrade) is changed in it.
        con = self._open_readonly()
        if self.readonly:
            self._con = con
            return
        if con is not None:
            con.close()
        self._open_writable()

    @property
    def exists(self) -> bool:
        """Whether the store holds a schema yet (a SQLite file is created by the first decision)."""
        return self._con is not None

    def _open_writable(self) -> None:
        """Connect for writing (creating the file and the schema if needed, upgrading a
        version-1 file to version 2), WAL journal."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._con = sqlite3.connect(self.path, timeout=self._busy_ms / 1000, isolation_level=None)
        self._con.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
        self._set_wal()
        # One IMMEDIATE transaction: of several processes opening a version-1 file at once, one
        # upgrades it and the others then see version 2.
        with self._transaction() as cur:
            for stmt in _SCHEMA.split(";\n"):
                if stmt.strip():
                    cur.execute(stmt)
            version = cur.execute("SELECT max(version) FROM schema_version").fetchone()[0]
            check_schema(self.where, {r[1] for r in cur.execute("PRAGMA table_info(decisions)")}, version)
            if version is None:
                cur.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
            elif version < 2:
                cur.execute(f"ALTER TABLE decisions ADD COLUMN {KIND_COLUMN_SQL}")
                cur.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
        self._has_kind = True

    def _set_wal(self) -> None:
        """WAL journal mode, retried while the file is locked: SQLite answers "database is locked"
        at once, without its busy timeout, when another process is creating the same new file
        (seen with 4 writers starting together on a new store)."""
        deadline = time.monotonic() + self._busy_ms / 1000
        while True:
            try:
                self._con.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _open_readonly(self) -> sqlite3.Connection | None:
        """A connection that writes nothing (no journal-mode change, no schema),
        after checking the file is a review store of this schema or older;
        ``immutable`` when even the WAL index cannot be created beside it. None for
        a database without any table yet (read as an empty store)."""
        uri = self.path.resolve().as_uri()
        for query in ("mode=ro", "mode=ro&immutable=1"):
            con = sqlite3.connect(f"{uri}?{query}", uri=True, timeout=self._busy_ms / 1000, isolation_level=None)
            try:
                tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                break
            except sqlite3.OperationalError:
                con.close()
                if query.endswith("immutable=1"):
                    raise
            except sqlite3.DatabaseError as exc:  # not a database at all
                con.close()
                raise ValueError(f"{self.path}: not a usable review store ({exc})") from None
        if not tables:
            # A database without a single table: a store another process is creating right now (its
            # schema transaction not yet committed), or an empty SQLite file: a new store either way.
            con.close()
            return None
        if not {"decisions", "schema_version"} <= tables:
            con.close()
            raise ValueError(f"{self.path}: not a review store (no decisions table)")
        columns = {r[1] for r in con.execute("PRAGMA table_info(decisions)")}
        try:
            check_schema(self.where, columns, con.execute("SELECT max(version) FROM schema_version").fetchone()[0])
        except ValueError:
            con.close()
            raise
        self._has_kind = "kind" in columns  # a version-1 file read read-only: every decision is a review
        return con

    # -- plumbing
    class _Tx:
        def __init__(self, con: sqlite3.Connection):
            self.con = con

        def __enter__(self) -> sqlite3.Cursor:
            self.cur = self.con.cursor()
            self.cur.execute("BEGIN IMMEDIATE")
            return self.cur

        def __exit__(self, exc_type, exc, tb) -> None:
            self.cur.execute("COMMIT" if exc_type is None else "ROLLBACK")

    def _transaction(self) -> "ReviewStore._Tx":
        if self._closed:
            raise ValueError(f"{self.path}: the review store is closed")
        if self.readonly:
            why = "opened read-only" if self._asked_readonly else "no write permission"
            raise ValueError(f"{self.path}: the review store is read-only ({why}); nothing recorded")
        if self._con is None:  # the first decision creates the file
            self._open_writable()
        return ReviewStore._Tx(self._con)

    def _rows(self, sql: str, params: tuple) -> list:
        if self._closed:
            raise ValueError(f"{self.path}: the review store is closed")
        return [] if self._con is None else self._con.execute(sql, params).fetchall()

    # -- lifetime
    def close(self) -> None:
        self._closed = True
        if self._con is not None:
            self._con.close()
            self._con = None
