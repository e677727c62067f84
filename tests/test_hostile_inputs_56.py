"""Hostile inputs, round six (first half): files written beside the results, a gzip bomb and
corrupt deflate data, ids no review store keeps, a libpq key=value connection string with its
password, and an empty base file. Each test reproduces its case first."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import pandas as pd
import pytest

from calib.base.inputs import LINE_MAX_BYTES
from calib.reading.records import MAX_ID
from calib.review.schema import MAX_ID as STORE_MAX_ID
from test_hostile_inputs_28 import one_line, run, write_labeled

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample"
TINY_GRID = ["--shingles", "word3", "--num-perm", "32", "--splits", "8x4", "--thresholds", "0.7"]
SECOND = [*TINY_GRID, "--second-pass", "--search-effort", "0.25"]
SECRET = "S3cret-pw"


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return write_labeled(tmp_path_factory.mktemp("s56") / "s", groups=12)


# ------------------------------------------------------------------ files written beside the results

def test_an_existing_knobs_table_is_refused_before_the_work(sample, tmp_path, capsys):
    knobs = tmp_path / "r.knobs.csv"
    knobs.write_text("mine\n")
    one_line(run(capsys, "sweep", "--sample", sample, "--out", tmp_path / "r.csv", *SECOND),
             str(knobs), "already exists", "--overwrite")
    assert knobs.read_text() == "mine\n" and not (tmp_path / "r.csv").exists()


@pytest.mark.parametrize("flag", ["--review-queue", "--by-slice"])
def test_an_output_named_as_the_knobs_table_is_refused(sample, tmp_path, capsys, flag):
    other = tmp_path / "q.knobs.csv"
    one_line(run(capsys, "sweep", "--sample", sample, "--out", tmp_path / "q.csv", flag, other, *SECOND),
             flag, str(other), "same file", "knobs")
    assert not other.exists() and not (tmp_path / "q.csv").exists()


def test_a_folder_where_the_knobs_table_goes_is_refused_before_the_work(sample, tmp_path, capsys):
    (tmp_path / "f.knobs.csv").mkdir()
    one_line(run(capsys, "sweep", "--sample", sample, "--out", tmp_path / "f.csv", *SECOND),
             str(tmp_path / "f.knobs.csv"), "folder")
    assert not (tmp_path / "f.csv").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_an_output_named_as_the_across_seed_table_is_refused(sample, tmp_path, capsys):
    agg = tmp_path / "r.across_seeds.csv"
    one_line(run(capsys, "sweep", "--sample", sample, "--out", tmp_path / "r.csv", "--seeds", "1,2",
                 "--review-queue", agg, *TINY_GRID), "--review-queue", "same file", "across-seed")
    agg.write_text("mine\n")
    one_line(run(capsys, "sweep", "--sample", sample, "--out", tmp_path / "r.csv", "--seeds", "1,2", *TINY_GRID),
             str(agg), "already exists")
    assert agg.read_text() == "mine\n" and not (tmp_path / "r.csv").exists()


@pytest.mark.slow
def test_the_knobs_table_is_written_beside_the_results_with_overwrite_and_not_checked_when_not_written(
        sample, tmp_path, capsys):
    knobs = tmp_path / "r.knobs.csv"
    knobs.write_text("mine\n")
    code, lines = run(capsys, "sweep", "--sample", sample, "--out", tmp_path / "r.csv", *TINY_GRID, "--no-second-pass")
    assert code == 0, lines
    assert knobs.read_text() == "mine\n"  # no second pass: no knobs table, nothing of the user's touched
    code, lines = run(capsys, "sweep", "--sample", sample, "--out", tmp_path / "r.csv", *SECOND, "--overwrite")
    assert code == 0, lines
    table = pd.read_csv(knobs)
    assert len(table) > 0 and "mine" not in table.columns
    assert any(str(knobs) in line for line in lines)


# ------------------------------------------------------------------ a gzip bomb, corrupt deflate data

def _bomb(path: Path, megabytes: int) -> Path:
    """One JSONL line of ``megabytes`` MiB of one repeated byte, gzipped in chunks (a few hundred KB on disk)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"a" * 2**20
    with open(path, "wb") as fh:
        fh.write(z.compress(b'{"id": "d0", "text": "'))
        for _ in range(megabytes):
            fh.write(z.compress(chunk))
        fh.write(z.compress(b'"}\n{"id": "d1", "text": "two"}\n'))
        fh.write(z.flush())
    return path


@pytest.fixture(scope="module")
def bomb(tmp_path_factory):
    path = _bomb(tmp_path_factory.mktemp("bomb") / "bomb.jsonl.gz", LINE_MAX_BYTES // 2**20 + 16)
    assert path.stat().st_size < 2**20
    return path


def _config(tmp_path) -> Path:
    from calib.production.document import build_config_doc
    from calib.search.config import Config
    from calib.sketches.represent import Representation
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(build_config_doc(Config(rep=Representation(shingle="char", k=5), b=16, r=8,
                                                      threshold=0.5))))
    return cfg


def test_the_line_bound_is_stated_and_a_line_within_it_is_read():
    import io

    from calib.reading.files import SampleError, iter_lines
    assert 2**20 <= LINE_MAX_BYTES <= 2**30
    text = b"x" * 100
    assert [c for _, _, c in iter_lines(io.BytesIO(text + b"\n" + text), "f", max_bytes=100)] == [text, text]
    with pytest.raises(SampleError, match=r"f line 2: .*longer than 100 bytes"):
        list(iter_lines(io.BytesIO(b"a\r\n" + text + b"y\n"), "f", max_bytes=100))


def test_a_gzip_bomb_is_refused_in_one_line_by_apply(bomb, tmp_path, capsys, monkeypatch):
    import tracemalloc
    tracemalloc.start()
    try:
        line = one_line(run(capsys, "apply", "--config", _config(tmp_path), "--corpus", bomb, "--out", tmp_path / "a"),
                        f"{bomb}:1", "longer than")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "MemoryError" not in line and not (tmp_path / "a").exists()
    assert peak < 3 * LINE_MAX_BYTES  # the line is never read whole (it is LINE_MAX_BYTES + 16 MiB)


@pytest.mark.slow
@pytest.mark.parametrize("design", ["corpus", "sample"])
def test_a_gzip_bomb_is_refused_in_one_line_by_draw(bomb, tmp_path, capsys, design):
    one_line(run(capsys, "draw", "--design", design, "--corpus", bomb, "--out", tmp_path / "o"),
             f"{bomb}:1", "longer than")
    assert not (tmp_path / "o").exists()


def _small_gz(path: Path, n: int = 80) -> bytes:
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    lines = [json.dumps({"id": f"d{k}", "text": " ".join(words[(k * t) % 12] for t in range(12)) + f" {k}"})
             for k in range(n)]
    data = gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0)
    path.write_bytes(data)
    return data


def test_every_corrupt_byte_in_the_deflate_stream_is_reported_as_corrupt_gzip_data(tmp_path):
    from calib.reading.corpus import ApplyError, count_documents, iter_corpus
    good = _small_gz(tmp_path / "good.jsonl.gz")
    assert count_documents(tmp_path / "good.jsonl.gz") == 80
    bad = tmp_path / "bad.jsonl.gz"
    said = set()
    for at in range(12, len(good) - 8, max(1, (len(good) - 20) // 60)):
        raw = bytearray(good)
        raw[at] ^= 0x5A
        bad.write_bytes(bytes(raw))
        for read in (count_documents, lambda p: list(iter_corpus(p))):  # the draw's first pass, apply's batches
            with pytest.raises(ApplyError) as err:
                read(bad)
            message = str(err.value)
            assert "\n" not in message and message.startswith(f"{bad}: corrupt gzip data at compressed byte"), \
                (at, message)
            said.add(message.split(" (")[0])
    assert len(said) > 10
    bad.write_bytes(good[:len(good) // 2])  # cut short
    with pytest.raises(ApplyError, match=f"corrupt gzip data at compressed byte {len(good) // 2:,} .truncated"):
        count_documents(bad)
    bad.write_bytes(b"plain text, not gzip\n")
    with pytest.raises(ApplyError, match="Not a gzipped file"):
        count_documents(bad)


# ------------------------------------------------------------------ ids no review store keeps

def test_the_draw_bound_on_ids_is_the_stores_bound():
    assert MAX_ID == STORE_MAX_ID


@pytest.mark.parametrize("design", ["corpus", "sample"])
def test_an_id_longer_than_a_store_keeps_is_refused_when_drawing(tmp_path, capsys, design):
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    rows = [{"id": f"d{k}", "text": " ".join(words[(k + t) % 12] for t in range(8)) + f" doc {k}"} for k in range(60)]
    rows[6]["id"] = "x" * MAX_ID  # the longest a store keeps is drawn
    rows[7]["id"] = "y" * (MAX_ID + 1)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    line = one_line(run(capsys, "draw", "--design", design, "--corpus", corpus, "--out", tmp_path / "o"),
                    f"{corpus}:8: field 'id'", f"{MAX_ID + 1:,} characters", f"{MAX_ID:,}")
    assert "y" * 50 not in line and not (tmp_path / "o").exists()
    rows[7]["id"] = "d7"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, lines = run(capsys, "draw", "--design", design, "--corpus", corpus, "--out", tmp_path / "o")
    assert code == 0, lines


# ------------------------------------------------------------------ a libpq key=value connection string

CONNINFO = f"host=127.0.0.1 port=1 user=ana password={SECRET} connect_timeout=2"


def test_a_key_value_connection_string_is_a_postgres_store_shown_without_its_password():
    from calib.review.urls import is_postgres_url, redact_url, scrub, without_cleartext
    for text in (CONNINFO, f"  dbname = reviews password='{SECRET} x' host=db", f"password={SECRET}"):
        assert is_postgres_url(text)
        assert SECRET not in redact_url(text) and redact_url(text).startswith("postgresql")
        assert SECRET not in scrub(f"failed: password {SECRET} x refused", text)
    assert redact_url(CONNINFO) == "postgresql://ana:***@127.0.0.1:1/"
    assert "require_auth=%21password" in without_cleartext(CONNINFO)
    for path in ("reviews.sqlite", "a b=c.sqlite", "dir/x=y.sqlite", "=x"):
        assert not is_postgres_url(path)


@pytest.mark.parametrize("argv", [
    ["sweep", "--sample", SAMPLE, "--out", "{tmp}/r.csv", *TINY_GRID],
    ["export", "--sample", SAMPLE, "--out", "{tmp}/e"],
    ["apply", "--config", "{cfg}", "--corpus", REPO / "data" / "corpus" / "docs.jsonl.gz", "--out", "{tmp}/a"],
    ["reviews", "agreement"],
    ["reviews", "team", "show"],
    ["reviews", "team", "add", "bo", "--role", "reviewer"],
])
def test_a_key_value_connection_string_is_never_echoed_with_its_password(tmp_path, capsys, argv):
    cfg = _config(tmp_path)
    argv = [str(a).replace("{tmp}", str(tmp_path)).replace("{cfg}", str(cfg)) for a in argv]
    line = one_line(run(capsys, *argv, "--reviews", CONNINFO), "--reviews", "postgresql://ana:***@127.0.0.1:1/")
    assert SECRET not in line and "password=" not in line
    assert not [p for p in tmp_path.iterdir() if p.name != "config.json" and not p.name.startswith(".")]


# ------------------------------------------------------------------ calib samples build on a hostile base

@pytest.mark.parametrize("content", [b"", b'{"base_id": 1}\n', b"not gzip at all\n"])
@pytest.mark.parametrize("command", ["build", "corpus"])
def test_samples_build_on_an_unusable_base_is_one_line(tmp_path, capsys, content, command):
    base = tmp_path / "base.jsonl.gz"
    base.write_bytes(gzip.compress(content) if content.startswith(b"{") or not content else content)
    out = tmp_path / ("X" if command == "build" else "c.jsonl.gz")
    code, lines = run(capsys, "samples", command, "--out", out, "--base", base)
    assert code == 2, lines
    assert len(lines) == 1 and lines[0].startswith("error: --base") and str(base) in lines[0], lines
    assert "Traceback" not in lines[0] and not out.exists()


def _key_value(url: str, **changed) -> str:
    """``url`` as libpq's keyword=value string (values quoted, as psql users write them)."""
    from calib.review.urls import conninfo
    info = {**conninfo(url), **changed}
    quoted = {k: "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'" for k, v in info.items()}
    return " ".join(f"{k}={v}" for k, v in quoted.items())


def test_a_key_value_string_opens_the_store_on_a_real_server_and_never_shows_its_password(postgres_db, capsys):
    from calib.review.postgres import PostgresReviewStore
    from calib.review.urls import conninfo
    password = conninfo(postgres_db)["password"]
    with PostgresReviewStore(postgres_db) as s:
        for a, b, d in (("a", "b", "duplicate"), ("c", "d", "not_duplicate"), ("e", "f", "duplicate")):
            s.record(a, b, d, "ana")
            s.record(a, b, d, "bo")
    kv = _key_value(postgres_db)
    code, lines = run(capsys, "reviews", "agreement", "--reviews", kv, "--replicates", "50")
    assert code == 0, lines
    assert not [line for line in lines if password in line]
    wrong = _key_value(postgres_db, password=f"{SECRET} x'y")
    line = one_line(run(capsys, "reviews", "agreement", "--reviews", wrong), "--reviews", "***")
    assert SECRET not in line and password not in line


def test_the_app_box_checks_a_key_value_string_by_the_url_rules(monkeypatch, tmp_path):
    from appui import reviews
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CALIB_REVIEW_DB", raising=False)
    ok = "host=db.example port=5433 dbname=calib_reviews user=ana"
    assert reviews.check_db_target(ok) == ok
    for bad, needle in ((f"host=db.example user=ana password={SECRET}", "leave the password out"),
                        ("host=db.example dbname=r passfile=/etc/shadow", "'passfile' is not accepted"),
                        ("host=/var/run/postgresql dbname=r", "Unix-socket folder"),
                        ("dbname=r", "name the server")):
        with pytest.raises(ValueError, match=needle) as err:
            reviews.check_db_target(bad)
        assert SECRET not in str(err.value) and "\n" not in str(err.value)
    assert reviews.shown(f"host=db user=ana password={SECRET}") == "postgresql://ana:***@db/"
