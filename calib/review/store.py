"""Append-only review store for proposed removals (stdlib sqlite3), and the review queue.

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
when opened read-only. :func:`open_review_store` opens this SQLite store for a
path and the PostgreSQL one (:mod:`calib.review_pg`) for a ``postgresql://`` URL.
"""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from calib.reading.sample import Sample

SCHEMA_VERSION = 2
DECISIONS = ("duplicate", "not_duplicate", "unsure")
KINDS = ("review", "adjudication")
COLUMNS = ("id", "id_a", "id_b", "decision", "reviewer", "note", "config_fingerprint", "created_at")
ALL_COLUMNS = COLUMNS + ("kind",)
_INSERTED = ("id_a", "id_b", "decision", "reviewer", "note", "config_fingerprint", "created_at", "kind")
_KIND_COLUMN = f"kind TEXT NOT NULL DEFAULT 'review' CHECK (kind IN {KINDS!r})"


def decision_columns_sql(id_type: str = "TEXT") -> str:
    """The decisions table after its id column, the same in every backend but for the type of
    the document ids: it must compare by code point, as Python's ``min``/``max`` that sort a
    pair do (SQLite's TEXT does; PostgreSQL passes ``TEXT COLLATE "C"``, else the database's
    collation could order 'B' after 'a' and refuse the pair)."""
    return f"""
    id_a {id_type} NOT NULL,
    id_b {id_type},
    decision TEXT NOT NULL CHECK (decision IN {DECISIONS!r}),
    reviewer TEXT NOT NULL CHECK (length(reviewer) > 0),
    note TEXT NOT NULL DEFAULT '',
    config_fingerprint TEXT,
    created_at TEXT NOT NULL,
    {_KIND_COLUMN},
    CHECK (id_b IS NULL OR id_a < id_b)"""


DECISIONS_INDEX_SQL = "CREATE INDEX IF NOT EXISTS decisions_pair ON decisions (id_a, id_b, created_at, id)"
APPEND_ONLY = "decisions are append-only"

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY,{decision_columns_sql()}
);
{DECISIONS_INDEX_SQL};
CREATE TRIGGER IF NOT EXISTS decisions_no_update BEFORE UPDATE ON decisions
    BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}'); END;
CREATE TRIGGER IF NOT EXISTS decisions_no_delete BEFORE DELETE ON decisions
    BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}'); END;
"""

_LATEST = """
SELECT id, id_a, id_b, decision, reviewer, note, config_fingerprint, created_at FROM (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY id_a, id_b ORDER BY id DESC) AS rn
    FROM decisions) AS ranked
WHERE rn = 1 ORDER BY id_a, id_b NULLS FIRST
"""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def _doc_id(name: str, value) -> str:
    if not isinstance(value, str) or value == "":
        raise ValueError(f"{name} must be a non-empty string document id, got {value!r}")
    return value


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
    if note is None or (isinstance(note, float) and np.isnan(note)):
        note = ""
    if not isinstance(note, str):
        raise ValueError(f"note must be a string, got {note!r}")
    if isinstance(config_fingerprint, float) and np.isnan(config_fingerprint):
        config_fingerprint = None
    if config_fingerprint is not None and not isinstance(config_fingerprint, str):
        raise ValueError(f"config_fingerprint must be a string or None, got {config_fingerprint!r}")
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
    writes, the SQL of the reads. A backend (:class:`ReviewStore` for SQLite,
    :class:`calib.review_pg.PostgresReviewStore`) provides ``where`` (its name
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
            cur.executemany(self._q(_INSERT), values)
        return len(values)

    # -- reads
    def all(self) -> pd.DataFrame:
        """Every decision ever recorded, in insertion order (the COLUMNS, without kind)."""
        return self._frame(f"SELECT {', '.join(COLUMNS)} FROM decisions ORDER BY id")

    def all_decisions(self) -> pd.DataFrame:
        """Every decision row (not only the latest per pair): COLUMNS plus ``kind``, in insertion order."""
        kind = "kind" if self._has_kind else "'review' AS kind"
        return self._frame(f"SELECT {', '.join(COLUMNS)}, {kind} FROM decisions ORDER BY id", columns=ALL_COLUMNS)

    def history(self, id_a: str, id_b: str | None = None) -> pd.DataFrame:
        """All decisions on one pair (or one single removal), oldest first."""
        a = _doc_id("id_a", id_a)
        if id_b is None:
            return self._frame(f"SELECT {', '.join(COLUMNS)} FROM decisions WHERE id_a = ? AND id_b IS NULL"
                               " ORDER BY id", (a,))
        b = _doc_id("id_b", id_b)
        a, b = min(a, b), max(a, b)
        return self._frame(f"SELECT {', '.join(COLUMNS)} FROM decisions WHERE id_a = ? AND id_b = ?"
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
                cur.execute(f"ALTER TABLE decisions ADD COLUMN {_KIND_COLUMN}")
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


def open_review_store(target: str | Path, *, readonly: bool = False) -> DecisionStore:
    """The review store named by ``target``: PostgreSQL for a ``postgresql://`` or
    ``postgres://`` URL (:mod:`calib.review_pg`), else the SQLite file at that path.
    ``readonly``: reads work, every write raises a one-line ``ValueError``."""
    from calib.review.postgres import is_postgres_url
    if is_postgres_url(target):
        from calib.review.postgres import PostgresReviewStore
        return PostgresReviewStore(str(target), readonly=readonly)
    return ReviewStore(target, readonly=readonly)


def _sorted_pair(a: pd.Series, b: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    a = a.astype(str).to_numpy(dtype=object)
    b = b.astype(str).to_numpy(dtype=object)
    swap = a > b
    return np.where(swap, b, a), np.where(swap, a, b)


def review_queue(pairs: pd.DataFrame, threshold: float | None, *, reviewed: pd.DataFrame | None = None,
                 limit: int | None = None) -> pd.DataFrame:
    """Pairs to review, most informative first.

    ``pairs``: id_a, id_b, sim[, chained][, label]. Order: pairs without a
    sample label first (label -1: a decision there is new information; a
    labeled pair only checks the label), then chained pairs (only chaining
    justifies the removal), then by distance = |sim - threshold| ascending
    (closest to the decision boundary), then by ids. Pairs present in
    ``reviewed`` (e.g. ``ReviewStore.latest()``) are dropped, in either order.
    """
    missing = [c for c in ("id_a", "id_b", "sim") if c not in pairs.columns]
    if missing:
        raise ValueError(f"pairs is missing column(s) {missing}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    out = pairs.copy()
    out["id_a"], out["id_b"] = _sorted_pair(pairs["id_a"], pairs["id_b"])
    out["chained"] = pairs["chained"].fillna(False).astype(bool) if "chained" in pairs.columns else False
    # No threshold (rule none: every candidate is removed): the boundary is 0, weakest pairs first.
    out["distance"] = (pairs["sim"].astype(float) - float(threshold or 0.0)).abs()
    out["_unlabeled"] = (pairs["label"] == -1) if "label" in pairs.columns else True
    if reviewed is not None and len(reviewed):
        r = reviewed[reviewed["id_b"].notna()]
        done = pd.MultiIndex.from_arrays(_sorted_pair(r["id_a"], r["id_b"]))
        out = out[~pd.MultiIndex.from_arrays([out["id_a"], out["id_b"]]).isin(done)]
    out = out.sort_values(
        ["_unlabeled", "chained", "distance", "id_a", "id_b"], ascending=[False, False, True, True, True],
        kind="stable").drop(columns="_unlabeled").reset_index(drop=True)
    return out if limit is None else out.head(limit)


def contradicts(decision, label) -> np.ndarray:
    """True where a review decision says the opposite of the sample's label
    (duplicate vs label 0, not_duplicate vs label 1); unsure and unlabeled
    (-1) pairs never contradict."""
    d = np.asarray(decision, dtype=object)
    lab = np.asarray(label)
    return ((d == "duplicate") & (lab == 0)) | ((d == "not_duplicate") & (lab == 1))


def with_review_labels(sample: Sample, labels: pd.DataFrame) -> tuple[Sample, int, int]:
    """The sample with review labels (``ReviewStore.as_pair_labels()``: id_a,
    id_b, label, category) added, so the next sweep uses them; a review
    overrides an existing label of the same pair. Returns (new sample, labels
    used, labels skipped because an id is not in the sample)."""
    if labels is None or len(labels) == 0:
        return sample, 0, 0
    ids = pd.Series(np.arange(sample.n), index=sample.docs["id"].astype(str))
    known = labels["id_a"].astype(str).isin(ids.index) & labels["id_b"].astype(str).isin(ids.index)
    lab = labels[known & (labels["id_a"].astype(str) != labels["id_b"].astype(str))]
    skipped = int(len(labels) - len(lab))
    if lab.empty:
        return sample, 0, skipped
    a = ids[lab["id_a"].astype(str)].to_numpy(np.int64)
    b = ids[lab["id_b"].astype(str)].to_numpy(np.int64)
    new = pd.DataFrame({"i": np.minimum(a, b), "j": np.maximum(a, b),
                        "is_duplicate": (lab["label"].astype(str) == "duplicate").to_numpy(bool),
                        "category": lab["category"].astype(str).to_numpy() if "category" in lab else "review"})
    old = sample.pairs
    codes_new = set(zip(new["i"].tolist(), new["j"].tolist()))
    keep = [(x, y) not in codes_new for x, y in zip(old["i"].tolist(), old["j"].tolist())]
    pairs = pd.concat([old[keep], new], ignore_index=True)
    pairs = pairs.sort_values(["i", "j"], kind="stable").reset_index(drop=True)
    pairs["i"] = pairs["i"].astype("int64")
    pairs["j"] = pairs["j"].astype("int64")
    pairs["is_duplicate"] = pairs["is_duplicate"].astype(bool)
    name = sample.name if sample.name.endswith("+reviews") else f"{sample.name}+reviews"
    return replace(sample, pairs=pairs, name=name), int(len(new)), skipped


def unlabeled_removal_queue(evaluation, ws) -> pd.DataFrame:
    """The removals of ``evaluation`` whose pair with the kept representative has no label, as a
    review queue (:func:`review_queue` order): id_a, id_b, sim (the config's exact measure),
    chained, distance, and an empty ``decision`` column to fill with duplicate / not_duplicate /
    unsure (``calib sweep --reviews QUEUE.csv`` then uses the decisions as labels)."""
    from calib.verification.measures import get_measure
    cfg, out = evaluation.config, evaluation.outcomes
    rows = np.flatnonzero(out["unlabeled_removal"].to_numpy()) if out is not None else np.zeros(0, np.int64)
    rep = out["representative"].to_numpy(np.int64)[rows] if len(rows) else rows
    i, j = np.minimum(rows, rep), np.maximum(rows, rep)
    sim = get_measure(cfg.measure).exact(ws.sets(cfg.rep), i, j) if len(i) else np.zeros(0)
    ids = ws.sample.ids
    pairs = pd.DataFrame({"id_a": ids[i], "id_b": ids[j], "sim": sim,
                          "chained": out["chained"].to_numpy(bool)[rows] if len(rows) else np.zeros(0, bool),
                          "label": -1})
    q = review_queue(pairs, cfg.threshold).drop(columns="label")
    return q.assign(decision="", config_fingerprint=cfg.fingerprint())


def queue_labels(path) -> pd.DataFrame:
    """Pair labels (as :meth:`ReviewStore.as_pair_labels`) from a filled review-queue CSV: rows whose
    ``decision`` is duplicate or not_duplicate; empty and 'unsure' rows give none. Any other
    decision is a ValueError naming the file, line and field."""
    q = pd.read_csv(path, dtype={"id_a": str, "id_b": str, "decision": str}, keep_default_na=False)
    missing = [c for c in ("id_a", "id_b", "decision") if c not in q.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing} (a queue written by calib sweep --review-queue)")
    d = q["decision"].str.strip()
    bad = ~d.isin(("", *DECISIONS))
    if bad.any():
        k = int(np.flatnonzero(bad.to_numpy())[0])
        raise ValueError(f"{path}: line {k + 2}: field decision: {q['decision'].iloc[k]!r} is not one of "
                         f"{', '.join(DECISIONS)} or empty")
    keep = d.isin(("duplicate", "not_duplicate")).to_numpy()
    return pd.DataFrame({"id_a": q["id_a"][keep].to_numpy(), "id_b": q["id_b"][keep].to_numpy(),
                         "label": d[keep].to_numpy(), "category": "review"})
