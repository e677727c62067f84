import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from calib.review.labels import contradicts
from calib.review.queue import review_queue
from calib.review.schema import ALL_COLUMNS, COLUMNS
from calib.review.sqlite import ReviewStore
from calib.review.stores import open_review_store



def test_round_trip_and_sorted_pairs(tmp_path):
    path = tmp_path / "nested" / "reviews.sqlite"
    with ReviewStore(path) as s:
        rid = s.record("doc-9", "doc-1", "duplicate", "ana", note="same text", config_fingerprint="abc123")
        s.record("doc-5", None, "not_duplicate", "bo")
        h = s.history("doc-1", "doc-9")
        assert len(h) == 1
        row = h.iloc[0]
        assert (row["id"], row["id_a"], row["id_b"]) == (rid, "doc-1", "doc-9")  # stored sorted
        assert (row["decision"], row["reviewer"], row["note"], row["config_fingerprint"]) == \
               ("duplicate", "ana", "same text", "abc123")
        ts = pd.Timestamp(row["created_at"])
        assert ts.tz is not None and ts.utcoffset().total_seconds() == 0
        assert len(row["created_at"].split(".")[1]) >= 6  # microseconds
        assert s.history("doc-9", "doc-1").equals(h)  # either order
        assert s.history("doc-5")["decision"].tolist() == ["not_duplicate"]
        assert len(s) == 2
    assert path.exists()


def test_append_only_latest_wins(tmp_path):
    with ReviewStore(tmp_path / "r.sqlite") as s:
        s.record("a", "b", "duplicate", "ana")
        s.record("b", "a", "not_duplicate", "bo")
        s.record("c", "d", "duplicate", "ana")
        assert s.history("a", "b")["decision"].tolist() == ["duplicate", "not_duplicate"]
        lat = s.latest().set_index(["id_a", "id_b"])
        assert len(lat) == 2
        assert lat.loc[("a", "b"), "decision"] == "not_duplicate"
        assert lat.loc[("a", "b"), "reviewer"] == "bo"
        assert len(s.all()) == 3
        # the file itself refuses updates and deletes
        con = sqlite3.connect(s.path)
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            con.execute("UPDATE decisions SET decision = 'unsure'")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            con.execute("DELETE FROM decisions")
        con.close()


def test_pair_labels_and_unsure(tmp_path):
    with ReviewStore(tmp_path / "r.sqlite") as s:
        s.record_many([
            {"id_a": "a", "id_b": "b", "decision": "duplicate", "reviewer": "ana"},
            {"id_a": "c", "id_b": "d", "decision": "not_duplicate", "reviewer": "ana"},
            {"id_a": "e", "id_b": "f", "decision": "unsure", "reviewer": "ana"},
            {"id_a": "g", "id_b": None, "decision": "duplicate", "reviewer": "ana"},
        ])
        s.record("d", "c", "unsure", "bo")  # a later 'unsure' withdraws the label
        s.record("f", "e", "duplicate", "bo")
        labels = s.as_pair_labels().sort_values("id_a").reset_index(drop=True)
        assert labels.to_dict("records") == [
            {"id_a": "a", "id_b": "b", "label": "duplicate", "category": "review"},
            {"id_a": "e", "id_b": "f", "label": "duplicate", "category": "review"},
        ]


def test_record_many_from_frame(tmp_path):
    df = pd.DataFrame({"id_a": ["b", "c"], "id_b": ["a", None], "decision": ["duplicate", "unsure"],
                       "reviewer": ["ana", "bo"], "note": ["x", None]})
    with ReviewStore(tmp_path / "r.sqlite") as s:
        assert s.record_many(df) == 2
        got = s.all()
    assert got["id_a"].tolist() == ["a", "c"] and got["note"].tolist() == ["x", ""]
    assert got["id_b"].iloc[0] == "b" and pd.isna(got["id_b"].iloc[1])


def test_survives_reopen(tmp_path):
    path = tmp_path / "r.sqlite"
    s = ReviewStore(path)
    s.record("a", "b", "duplicate", "ana")
    s.close()
    with pytest.raises(ValueError, match="closed"):
        s.latest()
    with ReviewStore(path) as s2:
        s2.record("a", "b", "not_duplicate", "bo")
        assert s2.history("a", "b")["decision"].tolist() == ["duplicate", "not_duplicate"]
        assert s2._con.execute("SELECT version FROM schema_version").fetchall() == [(2,)]
        assert s2._con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.parametrize("args, field", [
    (("a", "b", "maybe", "ana"), "decision"),
    (("a", "b", "duplicate", ""), "reviewer"),
    (("a", "b", "duplicate", "  "), "reviewer"),
    (("a", "a", "duplicate", "ana"), "id_b"),
    (("", "b", "duplicate", "ana"), "id_a"),
    (("a", 3, "duplicate", "ana"), "id_b"),
])
def test_validation(tmp_path, args, field):
    with ReviewStore(tmp_path / "r.sqlite") as s:
        with pytest.raises(ValueError, match=field):
            s.record(*args)
        # record_many is all or nothing
        with pytest.raises(ValueError, match=f"row 1: {field}"):
            s.record_many([{"id_a": "x", "id_b": "y", "decision": "duplicate", "reviewer": "ana"},
                           dict(zip(("id_a", "id_b", "decision", "reviewer"), args))])
        assert len(s) == 0


def test_review_queue_order_and_reviewed(tmp_path):
    pairs = pd.DataFrame({
        "id_a": ["a", "c", "f", "g", "i"],
        "id_b": ["b", "d", "e", "h", "j"],
        "sim": [0.50, 0.79, 0.95, 0.60, 0.81],
        "chained": [False, False, True, False, False],
    })
    q = review_queue(pairs, 0.8)
    assert list(zip(q["id_a"], q["id_b"])) == [("e", "f"), ("c", "d"), ("i", "j"), ("g", "h"), ("a", "b")]
    assert q["distance"].iloc[1] == pytest.approx(0.01)
    with ReviewStore(tmp_path / "r.sqlite") as s:
        s.record("f", "e", "duplicate", "ana")
        s.record("c", "d", "unsure", "ana")
        q2 = review_queue(pairs, 0.8, reviewed=s.latest(), limit=2)
    assert list(zip(q2["id_a"], q2["id_b"])) == [("i", "j"), ("g", "h")]
    no_chain = review_queue(pairs.drop(columns="chained"), 0.8)
    assert no_chain["id_a"].iloc[0] == "c"
    with pytest.raises(ValueError, match="sim"):
        review_queue(pairs.drop(columns="sim"), 0.8)



def test_review_queue_puts_unlabeled_pairs_first():
    pairs = pd.DataFrame({"id_a": ["a", "c", "f", "g", "i"], "id_b": ["b", "d", "e", "h", "j"],
                          "sim": [0.50, 0.79, 0.95, 0.60, 0.81], "chained": [False, False, True, False, False],
                          "label": [-1, 1, 0, -1, -1]})
    q = review_queue(pairs, 0.8)
    # unlabeled (i-j 0.01 away, g-h, a-b) before labeled (chained e-f, then c-d); each part in the usual order
    assert list(zip(q["id_a"], q["id_b"])) == [("i", "j"), ("g", "h"), ("a", "b"), ("e", "f"), ("c", "d")]
    assert list(q["label"]) == [-1, -1, -1, 0, 1]
    # with every pair labeled alike, the usual order (chained, then distance)
    same = review_queue(pairs.assign(label=1), 0.8)
    assert list(same["id_a"]) == ["e", "c", "i", "g", "a"]
    # every pair reviewed: an empty queue with the same columns
    done = pd.DataFrame({"id_a": pairs["id_b"], "id_b": pairs["id_a"]})
    empty = review_queue(pairs, 0.8, reviewed=done)
    assert empty.empty and list(empty.columns) == list(q.columns)
    # no threshold (rule none): the weakest unlabeled pairs first
    none = review_queue(pairs.assign(chained=False), None)
    assert list(zip(none["id_a"], none["id_b"])) == [("a", "b"), ("g", "h"), ("i", "j"), ("c", "d"), ("e", "f")]


@pytest.mark.slow
def test_shipped_sample_review_queue_starts_with_unlabeled_pairs():
    """On the shipped sample the recommended configuration (char5, b=16 r=8, exact J >= 0.8) acts on
    pairs without a sample label: exactly its verified pairs with a not-judged document (group '?'),
    checked against Python-set Jaccard of those documents with every other one; they lead the queue
    and count as unlabeled removals, not as false ones."""
    from appui.reviews import action_pairs
    from calib.search.config import Config
    from calib.sketches.represent import Representation, shingle_strings
    from calib.reading.sample import NOT_JUDGED, SAMPLE_DIR
    from calib.reading.samples import load_sample
    from calib.search.sweep import evaluate
    from calib.search.workspace import Workspace
    rep = Representation(shingle="char", k=5)
    ws = Workspace(load_sample(SAMPLE_DIR))
    ev = evaluate(ws, Config(rep=rep, b=16, r=8, threshold=0.8))
    pairs = action_pairs(ev, ws.sample, lambda i, j: [0.0] * len(i))
    pairs["label"] = ws.truth.label(pairs["i"].to_numpy(), pairs["j"].to_numpy())
    q = review_queue(pairs, 0.8)
    unlabeled = q[q["label"] == -1]
    assert 10 <= len(unlabeled) <= 40 and (q["label"].iloc[:len(unlabeled)] == -1).all()
    # brute force: every pair with a not-judged document at exact char5 J >= 0.8
    docs = ws.sample.docs
    sets = [set(shingle_strings(t, rep)) for t in docs["text"]]
    unjudged = set(docs.index[docs["group"] == NOT_JUDGED])
    similar = {tuple(sorted((docs["id"].iat[u], docs["id"].iat[k]))) for u in unjudged for k in range(len(docs))
               if k != u and len(sets[u] & sets[k]) >= 0.8 * len(sets[u] | sets[k])}
    got = set(zip(unlabeled["id_a"], unlabeled["id_b"]))
    assert got <= similar and len(got) >= 0.9 * len(similar), (sorted(similar - got), sorted(got - similar))
    assert all(ws.sample.docs.set_index("id").loc[[a, b], "group"].eq(NOT_JUDGED).any() for a, b in got)
    assert ev.row["unlabeled_removals"] == len(unlabeled) and ev.row["verified_unlabeled"] == len(unlabeled)


def test_contradicts_only_opposite_labels():
    decisions = ["duplicate", "duplicate", "duplicate", "not_duplicate", "not_duplicate", "not_duplicate",
                 "unsure", "unsure"]
    labels = [1, 0, -1, 1, 0, -1, 0, 1]
    assert contradicts(decisions, labels).tolist() == [False, True, False, True, False, False, False, False]

# concurrency and a killed writer: tests/test_review_store.py (both backends)


# ------------------------------------------------------- schema version 2: kind, all_decisions, upgrade

# The version-1 schema exactly as calib wrote it before `kind` (calib/review.py at 982aad4).
_V1_SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY,
    id_a TEXT NOT NULL,
    id_b TEXT,
    decision TEXT NOT NULL CHECK (decision IN ('duplicate', 'not_duplicate', 'unsure')),
    reviewer TEXT NOT NULL CHECK (length(reviewer) > 0),
    note TEXT NOT NULL DEFAULT '',
    config_fingerprint TEXT,
    created_at TEXT NOT NULL,
    CHECK (id_b IS NULL OR id_a < id_b)
);
CREATE INDEX IF NOT EXISTS decisions_pair ON decisions (id_a, id_b, created_at, id);
CREATE TRIGGER IF NOT EXISTS decisions_no_update BEFORE UPDATE ON decisions
    BEGIN SELECT RAISE(ABORT, 'decisions are append-only'); END;
CREATE TRIGGER IF NOT EXISTS decisions_no_delete BEFORE DELETE ON decisions
    BEGIN SELECT RAISE(ABORT, 'decisions are append-only'); END;
INSERT INTO schema_version (version) VALUES (1);
INSERT INTO decisions (id_a, id_b, decision, reviewer, note, config_fingerprint, created_at) VALUES
    ('a', 'b', 'duplicate', 'ana', 'v1 row', 'fp1', '2026-01-01T00:00:00.000000+00:00'),
    ('c', NULL, 'unsure', 'bo', '', NULL, '2026-01-02T00:00:00.000000+00:00');
"""


def _v1_file(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.executescript(_V1_SCHEMA)
    con.close()
    return path


def _columns(path) -> list[str]:
    con = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    try:
        return [r[1] for r in con.execute("PRAGMA table_info(decisions)")]
    finally:
        con.close()


def test_kind_round_trip_and_all_decisions(tmp_path):
    with ReviewStore(tmp_path / "r.sqlite") as s:
        s.record("b", "a", "duplicate", "ana")
        s.record("a", "b", "not_duplicate", "bo")
        s.record("a", "b", "not_duplicate", "cy", kind="adjudication")
        s.record_many([{"id_a": "c", "id_b": "d", "decision": "unsure", "reviewer": "ana"},
                       {"id_a": "d", "id_b": "c", "decision": "duplicate", "reviewer": "cy", "kind": "adjudication"}])
        every = s.all_decisions()
        assert list(every.columns) == list(ALL_COLUMNS) == [*COLUMNS, "kind"]
        assert every["id"].tolist() == sorted(every["id"]) and every["id"].is_unique
        assert list(zip(every["reviewer"], every["kind"])) == [
            ("ana", "review"), ("bo", "review"), ("cy", "adjudication"), ("ana", "review"), ("cy", "adjudication")]
        assert every[list(COLUMNS)].equals(s.all())  # the same rows, plus kind
        assert len(s.latest()) == 2  # latest-wins readers unchanged
        with pytest.raises(ValueError, match="kind"):
            s.record("a", "b", "duplicate", "ana", kind="final")
        with pytest.raises(ValueError, match="row 0: kind"):
            s.record_many([{"id_a": "x", "id_b": "y", "decision": "duplicate", "reviewer": "ana", "kind": ""}])
        assert len(s) == 5
        # the file itself refuses a kind outside the two
        con = sqlite3.connect(s.path)
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
            con.execute("INSERT INTO decisions (id_a, id_b, decision, reviewer, created_at, kind)"
                        " VALUES ('x', 'y', 'duplicate', 'ana', 't', 'vote')")
        con.close()


def test_v1_file_upgraded_in_place_on_first_write_open(tmp_path):
    path = _v1_file(tmp_path / "v1.sqlite")
    assert "kind" not in _columns(path)
    # read-only: readable, kind reads as 'review', the file is not changed
    before = path.read_bytes()
    with ReviewStore(path, readonly=True) as s:
        every = s.all_decisions()
        assert every["kind"].tolist() == ["review", "review"]
        assert every["note"].tolist() == ["v1 row", ""]
        with pytest.raises(ValueError, match="read-only \\(opened read-only\\); nothing recorded"):
            s.record("x", "y", "duplicate", "ana")
    assert path.read_bytes() == before and "kind" not in _columns(path)
    # the first writable open upgrades: column added with the default, version row updated, rows kept
    with ReviewStore(path) as s:
        assert s._con.execute("SELECT version FROM schema_version").fetchall() == [(2,)]
        s.record("a", "b", "not_duplicate", "cy", kind="adjudication")
        every = s.all_decisions()
    assert "kind" in _columns(path)
    assert list(zip(every["id_a"], every["reviewer"], every["kind"])) == [
        ("a", "ana", "review"), ("c", "bo", "review"), ("a", "cy", "adjudication")]
    with ReviewStore(path) as s:  # a second open finds version 2: nothing more to do
        assert s._con.execute("SELECT version FROM schema_version").fetchall() == [(2,)]
        con = sqlite3.connect(path)
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            con.execute("UPDATE decisions SET kind = 'adjudication'")
        con.close()


def test_newer_schema_refused(tmp_path):
    path = _v1_file(tmp_path / "v9.sqlite")
    con = sqlite3.connect(path)
    con.execute("UPDATE schema_version SET version = 9")
    con.commit()
    con.close()
    before = path.read_bytes()
    for readonly in (False, True):
        with pytest.raises(ValueError, match=r"v9.sqlite: schema version 9 is newer than this code \(2\)"):
            ReviewStore(path, readonly=readonly)
    assert path.read_bytes() == before


def test_read_only_store_never_creates_the_file(tmp_path):
    path = tmp_path / "new.sqlite"
    with open_review_store(path, readonly=True) as s:
        assert s.all_decisions().empty and len(s) == 0
        with pytest.raises(ValueError, match="read-only"):
            s.record("a", "b", "duplicate", "ana")
    assert not path.exists()


def test_database_without_tables_is_a_new_store(tmp_path):
    """What a writer creating the store leaves before its schema commits (a WAL database with
    no table): another process opening it then is not refused as 'not a review store'."""
    path = tmp_path / "r.sqlite"
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode = WAL")
    con.close()
    assert path.stat().st_size > 0
    with ReviewStore(path, readonly=True) as s:
        assert len(s) == 0 and s.all_decisions().empty
    with ReviewStore(path) as s:
        s.record("a", "b", "duplicate", "ana")
    assert _columns(path)[-1] == "kind"
