"""The review store's decisions table and the interface every backend shares.

One table, ``decisions``, the same in every backend (SQLite file,
PostgreSQL server): a row per decision (duplicate, not_duplicate or unsure;
kind review or adjudication) on a pair ``id_a < id_b`` or a single removal
(``id_b`` NULL), never updated or deleted (:data:`APPEND_ONLY`); the decision
in force for a pair is the last one inserted (the largest row id), not the
latest ``created_at``. :func:`check_schema` refuses another application's
table of that name and a schema newer than :data:`SCHEMA_VERSION`.
:class:`DecisionStore` holds the validation, the writes and the SQL of the
reads; the backends are :class:`calib.review.sqlite.ReviewStore` and
:class:`calib.review.postgres.PostgresReviewStore`.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from calib.reading.records import MAX_ID  # noqa: F401 - characters of a document id: the draw refuses longer ones too

SCHEMA_VERSION = 2
MAX_REVIEWER = 200  # characters of a reviewer name (a name, not a document: both backends refuse more)
MAX_NOTE = 10_000  # characters of a note: a reviewer's remark, not a document
MAX_SHORT = 200  # characters of a configuration fingerprint
DECISIONS = ("duplicate", "not_duplicate", "unsure")
KINDS = ("review", "adjudication")
COLUMNS = ("id", "id_a", "id_b", "decision", "reviewer", "note", "config_fingerprint", "created_at")
ALL_COLUMNS = COLUMNS + ("kind",)
INSERTED = ("id_a", "id_b", "decision", "reviewer", "note", "config_fingerprint", "created_at", "kind")
_INSERTED = INSERTED
KIND_COLUMN_SQL = f"kind TEXT NOT NULL DEFAULT 'review' CHECK (kind IN {KINDS!r})"


def decision_columns_sql(id_type: str = "TEXT", nul_free: str | None = None) -> str:
    """The decisions table after its id column, the same in every backend but for the type of
    the document ids: it must compare by code point, as Python's ``min``/``max`` that sort a
    pair do (SQLite's TEXT does; PostgreSQL passes ``TEXT COLLATE "C"``, else the database's
    collation could order 'B' after 'a' and refuse the pair). A reviewer name holds 1 to
    :data:`MAX_REVIEWER` characters, a note at most :data:`MAX_NOTE`, a document id :data:`MAX_ID`, a
    fingerprint and a time :data:`MAX_SHORT` (a store stays small enough for every reader). ``nul_free``: the backend's test that a text column
    (``{}``) holds no NUL (SQLite's; PostgreSQL's TEXT cannot hold one at all)."""
    def no_nul(col: str) -> str:
        return f" CHECK ({nul_free.format(col)})" if nul_free else ""
    return f"""
    id_a {id_type} NOT NULL CHECK (length(id_a) <= {MAX_ID}){no_nul('id_a')},
    id_b {id_type} CHECK (length(id_b) <= {MAX_ID}){no_nul('id_b')},
    decision TEXT NOT NULL CHECK (decision IN {DECISIONS!r}),
    reviewer TEXT NOT NULL CHECK (length(reviewer) > 0 AND length(reviewer) <= {MAX_REVIEWER}){no_nul('reviewer')},
    note TEXT NOT NULL DEFAULT '' CHECK (length(note) <= {MAX_NOTE}){no_nul('note')},
    config_fingerprint TEXT CHECK (length(config_fingerprint) <= {MAX_SHORT}),
    created_at TEXT NOT NULL CHECK (length(created_at) <= {MAX_SHORT}),
    {KIND_COLUMN_SQL},
    CHECK (id_b IS NULL OR id_a < id_b)"""


DECISIONS_INDEX_SQL = "CREATE INDEX IF NOT EXISTS decisions_pair ON decisions (id_a, id_b, created_at, id)"
APPEND_ONLY = "decisions are append-only"

# Every read cuts a note at MAX_NOTE on the server: a store written before the bound (or by hand) can hold
# notes of hundreds of MB, which no reader should have to hold; reads that need no note leave it out.
_NOTE_READ = f"substr(note, 1, {MAX_NOTE}) AS note"
_READ = ", ".join(_NOTE_READ if c == "note" else c for c in COLUMNS)
VOTE_COLUMNS = ("id", "id_a", "id_b", "decision", "reviewer", "created_at", "kind")  # no note, no fingerprint

_LATEST = f"""
SELECT {_READ} FROM (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY id_a, id_b ORDER BY id DESC) AS rn
    FROM decisions) AS ranked
WHERE rn = 1 ORDER BY id_a, id_b NULLS FIRST
"""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def _doc_id(name: str, value) -> str:
    if not isinstance(value, str) or value == "":
        raise ValueError(f"{name} must be a non-empty string document id, got {value!r}")
    _no_nul(name, value)
    _bounded(name, value, MAX_ID)
    return value


def _bounded(name: str, value: str, most: int) -> None:
    if len(value) > most:
        raise ValueError(f"{name} holds {len(value):,} characters, more than a review store keeps ({most:,})")


def _no_nul(name: str, value: str) -> None:
    """PostgreSQL's TEXT cannot hold a NUL: every backend refuses one, so a store moves between them whole."""
    if "\x00" in value:
        raise ValueError(f"{name} contains a NUL character (\\x00), which a review store does not hold")


def _validated(id_a, id_b, decision, reviewer, note, config_fingerprint, kind="review") -> tuple:
    """The row to insert (``_INSERTED`` order less created_at and kind, then kind), ids sorted;
    a ``ValueError`` naming the field otherwise. Shared by every store backend."""
    a = _doc_id("id_a", id_a)
    b = None if id_b is None or (not isinstance(id_b, str) and pd.isna(id_b)) else _doc_id("id_b", id_b)
    if b is not None:
        if a == b:
            raise ValueError(f"id_b: a pair needs two different documents, got {a!r} twice")
        a, b = min(a, b), max(a, b)
    if decision not in DECISIONS:
        raise ValueError(f"decision must be one of {DECISIONS}, got {decision!r}")
    if not isinstance(reviewer, str) or not reviewer.strip():
        raise ValueError(f"reviewer must be a non-empty string, got {reviewer!r}")
    _no_nul("reviewer", reviewer)
    if len(reviewer.strip()) > MAX_REVIEWER:
        raise ValueError(f"reviewer must be at most {MAX_REVIEWER} characters, got {len(reviewer.strip()):,}")
    if note is None or (isinstance(note, float) and np.isnan(note)):
        note = ""
    if not isinstance(note, str):
        raise ValueError(f"note must be a string, got {note!r}")
    _no_nul("note", note)
    _bounded("note", note, MAX_NOTE)
    if isinstance(config_fingerprint, float) and np.isnan(config_fingerprint):
        config_fingerprint = None
    if config_fingerprint is not None and not isinstance(config_fingerprint, str):
        raise ValueError(f"config_fingerprint must be a string or None, got {config_fingerprint!r}")
    if config_fingerprint is not None:
        _bounded("config_fingerprint", config_fingerprint, MAX_SHORT)
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return a, b, decision, reviewer.strip(), note, config_fingerprint, kind


def _insert_values(row: tuple) -> tuple:
    """A validated row (:func:`_validated`) as the values of ``_INSERT``: created_at stamped now."""
    *fields, kind = row
    return (*fields, _now(), kind)


_INSERT = f"INSERT INTO decisions ({', '.join(_INSERTED)}) VALUES ({', '.join('?' * len(_INSERTED))})"


def check_schema(where: str, columns: set[str], version: int | None) -> None:
    """Refuse, with one line naming ``where``, a ``decisions`` table that is not a review store's
    (another application's table of that name) or a schema newer than this code."""
    if not set(COLUMNS) <= columns:
        raise ValueError(f"{where}: not a review store (its decisions table has no column "
                         f"{sorted(set(COLUMNS) - columns)[0]!r})")
    if version is not None and version > SCHEMA_VERSION:
        raise ValueError(f"{where}: schema version {version} is newer than this code ({SCHEMA_VERSION}); "
                         "upgrade calib to use this review store")


class DecisionStore:
    """The public interface every review store backend shares: validation, the
    writes, the SQL of the reads. A backend (:class:`calib.review.sqlite.ReviewStore` for SQLite,
    :class:`calib.review.postgres.PostgresReviewStore`) provides ``where`` (its name
    in messages, never a password), ``_transaction()`` (a cursor for one
    transaction; a ``ValueError`` when the store cannot be written),
    ``_rows(sql, params)`` (``[]`` before the store exists), ``_has_kind``
    (False only for a version-1 SQLite file read read-only) and ``close()``.
    SQL here uses ``?`` placeholders; ``_PLACEHOLDER`` is the backend's.
    """

    _PLACEHOLDER = "?"
    where: str = ""
    _has_kind = True

    def _q(self, sql: str) -> str:
        return sql if self._PLACEHOLDER == "?" else sql.replace("?", self._PLACEHOLDER)

    def _frame(self, sql: str, params: tuple = (), columns: tuple[str, ...] = COLUMNS) -> pd.DataFrame:
        df = pd.DataFrame(self._rows(self._q(sql), params), columns=list(columns))
        df["id"] = df["id"].astype(np.int64)
        return df

    # -- writes
    def record(self, id_a: str, id_b: str | None, decision: str, reviewer: str,
               note: str = "", config_fingerprint: str | None = None, *, kind: str = "review") -> int:
        """Append one decision (its own transaction); returns its row id. ``kind``:
        'review' (a reviewer's decision) or 'adjudication' (settles a contested pair)."""
        values = _insert_values(_validated(id_a, id_b, decision, reviewer, note, config_fingerprint, kind))
        with self._transaction() as cur:
            cur.execute(self._q(_INSERT + " RETURNING id"), values)
            return int(cur.fetchone()[0])

    def record_many(self, rows: Iterable[Mapping] | pd.DataFrame) -> int:
        """Append many decisions in one transaction (all or nothing); returns how many.

        Each row is a mapping (or DataFrame row) with id_a, id_b, decision,
        reviewer and optional note, config_fingerprint, kind.
        """
        if isinstance(rows, pd.DataFrame):
            rows = rows.to_dict("records")
        values = []
        for k, r in enumerate(rows):
            try:
                values.append(_insert_values(_validated(
                    r.get("id_a"), r.get("id_b"), r.get("decision"), r.get("reviewer"), r.get("note", ""),
                    r.get("config_fingerprint"), r.get("kind", "review"))))
            except ValueError as e:
                raise ValueError(f"row {k}: {e}") from None
        with self._transaction() as cur:
            self._insert_many(cur, values)
        return len(values)

    def _insert_many(self, cur, values: list[tuple]) -> None:
        """Insert validated rows (:data:`INSERTED` order) in the transaction of ``cur``."""
        cur.executemany(self._q(_INSERT), values)

    # -- reads
    def all(self) -> pd.DataFrame:
        """Every decision ever recorded, in insertion order (the COLUMNS, without kind; notes cut at :data:`MAX_NOTE`)."""
        return self._frame(f"SELECT {_READ} FROM decisions ORDER BY id")

    def all_decisions(self, *, notes: bool = True) -> pd.DataFrame:
        """Every decision row (not only the latest per pair): COLUMNS plus ``kind``, in insertion order, notes
        cut at :data:`MAX_NOTE`. ``notes=False``: only :data:`VOTE_COLUMNS`, what the label rule and agreement
        read (a store's notes never cross the network for them)."""
        kind = "kind" if self._has_kind else "'review' AS kind"
        if not notes:
            return self._frame(f"SELECT {', '.join(VOTE_COLUMNS[:-1])}, {kind} FROM decisions ORDER BY id",
                               columns=VOTE_COLUMNS)
        return self._frame(f"SELECT {_READ}, {kind} FROM decisions ORDER BY id", columns=ALL_COLUMNS)

    def history(self, id_a: str, id_b: str | None = None) -> pd.DataFrame:
        """All decisions on one pair (or one single removal), oldest first."""
        a = _doc_id("id_a", id_a)
        if id_b is None:
            return self._frame(f"SELECT {_READ} FROM decisions WHERE id_a = ? AND id_b IS NULL"
                               " ORDER BY id", (a,))
        b = _doc_id("id_b", id_b)
        a, b = min(a, b), max(a, b)
        return self._frame(f"SELECT {_READ} FROM decisions WHERE id_a = ? AND id_b = ?"
                           " ORDER BY id", (a, b))

    def latest(self) -> pd.DataFrame:
        """The decision in force per pair / single removal: the last one inserted (max row id)."""
        return self._frame(_LATEST)

    def as_pair_labels(self) -> pd.DataFrame:
        """Pair labels from the reviews: ``id_a, id_b, label, category='review'``.

        A pair is labeled when its latest decision is duplicate or
        not_duplicate; a latest 'unsure' withdraws the label.
        Single-document decisions give no pair label.
        """
        lat = self.latest()
        lat = lat[lat["id_b"].notna() & (lat["decision"] != "unsure")]
        return pd.DataFrame({"id_a": lat["id_a"].astype(str).to_numpy(),
                             "id_b": lat["id_b"].astype(str).to_numpy(),
                             "label": lat["decision"].astype(str).to_numpy(),
                             "category": "review"})

    def __len__(self) -> int:
        rows = self._rows("SELECT count(*) FROM decisions", ())
        return int(rows[0][0]) if rows else 0

    # -- lifetime
    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
