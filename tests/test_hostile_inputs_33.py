"""Hostile inputs, round four. Secrets in PostgreSQL URLs (decided by libpq's own
parse), access checks, special files and sizes (one input check for every reader), the
review queue's round trip, and what an export stands on. Each test reproduces its case first."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calib.base.atomic import write_frame_atomic
from calib.review.urls import redact_url, scrub
from test_hostile_inputs_28 import run, write_labeled  # calib in-process; groups of near-copies plus singletons

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample"
WORDS = [f"w{k}" for k in range(300)]
TINY_GRID = ["--shingles", "word3", "--num-perm", "32", "--splits", "8x4", "--thresholds", "0.7"]
SECRET = "S3cret"
# passwords libpq reads whole (an unencoded # or ?, a port-like start) and ones it cannot (/ and @)
READ_WHOLE = ("ha#sh-S3cret", "qu?est-S3cret", "5432#S3cret")
AMBIGUOUS = ("sl/ash-S3cret", "at@sign-S3cret")


def run_limited(argv, limit_bytes: int = 3 * 2**30) -> tuple[int, list[str]]:
    """``calib ARGV`` in a child process under an address-space limit (a read that would fill memory fails there)."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
    p = subprocess.run([sys.executable, "-m", "calib", *map(str, argv)], capture_output=True, text=True, timeout=300,
                       cwd=REPO, preexec_fn=limit)
    return p.returncode, [line for line in p.stderr.splitlines() if line.strip()]


def one_line(result, *needles, status=2) -> str:
    code, lines = result
    assert code == status, lines
    assert len(lines) == 1, lines
    assert "error:" in lines[0] and "Traceback" not in lines[0]
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def no_hang():
    """A blocking open() (a FIFO without a writer) fails the test after 30 s instead of hanging it."""
    def alarm(signum, frame):
        raise TimeoutError("blocked: an input was opened without the non-blocking check")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


# ------------------------------------------------------------------ secrets in URLs

@pytest.mark.parametrize("password", READ_WHOLE + AMBIGUOUS)
def test_display_form_never_shows_a_password_libpq_or_a_person_would_read(password):
    url = f"postgresql://pw_user:{password}@127.0.0.1:55432/calib_reviews"
    shown = redact_url(url)
    assert SECRET not in shown and password not in shown
    if password in READ_WHOLE:  # libpq reads the whole password: the rest is shown as libpq parses it
        assert shown == "postgresql://pw_user:***@127.0.0.1:55432/calib_reviews"
    else:  # libpq would connect elsewhere (host 'sign-S3cret@127.0.0.1', port 'sl'): nothing is shown
        assert shown == "postgresql://(URL not shown)"
    # libpq's own messages quote what it parsed: scrubbed of every piece of the password
    for message in (f"failed to resolve host '{password.split('@')[-1]}@127.0.0.1'",
                    f'invalid integer value "{password.split("/")[0]}" for connection option "port"',
                    f'database "{password.split("/")[-1]}@127.0.0.1:55432/calib_reviews" does not exist'):
        assert SECRET not in scrub(message, url)


def test_the_store_refuses_an_ambiguous_url_before_connecting_and_never_echoes_it(capsys):
    from calib.review.postgres import PostgresReviewStore
    from calib.review.postgres import main as create_store
    for password in AMBIGUOUS:
        url = f"postgresql://pw_user:{password}@127.0.0.1:1/calib_reviews"
        with pytest.raises(ValueError, match="percent-encode") as err:
            PostgresReviewStore(url)
        assert SECRET not in str(err.value) and "\n" not in str(err.value)
        assert create_store([url]) == 2
        err = capsys.readouterr().err
        assert SECRET not in err and err.startswith("calib.review.postgres: ") and err.count("\n") == 1
        assert one_line(run(capsys, "sweep", "--sample", SAMPLE, "--out", "never.csv", "--reviews", url, *TINY_GRID))
        assert not Path("never.csv").exists()


def test_a_dead_server_with_a_read_whole_password_is_one_line_without_it(capsys):
    from calib.review.postgres import main as create_store
    for password in READ_WHOLE:
        url = f"postgresql://pw_user:{password}@127.0.0.1:1/calib_reviews"
        assert create_store([url]) == 2
        err = capsys.readouterr().err
        assert SECRET not in err and "postgresql://pw_user:***@127.0.0.1:1/calib_reviews" in err


def _raw(url: str, sql: str) -> None:
    import psycopg
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(sql)


def test_sweep_reviews_with_unencoded_characters_in_the_password(postgres_db, tmp_path, capsys):
    """The case of the issue on a real server: a role whose password holds # or ? (or starts like a
    port) reads the store, and nothing the sweep prints shows the password; a wrong database too."""
    from urllib.parse import urlsplit

    from calib.reading.samples import load_sample
    from calib.review.stores import open_review_store
    s = load_sample(SAMPLE)
    singles = s.docs[s.docs["group"].isna()]["id"].tolist()[:2]
    with open_review_store(postgres_db) as store:
        store.record(singles[0], singles[1], "duplicate", "ana")
    parts = urlsplit(postgres_db)
    db = parts.path.lstrip("/")
    for k, password in enumerate(READ_WHOLE):
        role = f"calib_pw{k}_{uuid.uuid4().hex[:8]}"
        _raw(postgres_db, f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        _raw(postgres_db, f"GRANT SELECT ON decisions, schema_version TO {role}")
        try:
            url = f"postgresql://{role}:{password}@{parts.hostname}:{parts.port}/{db}"
            code, lines = run(capsys, "sweep", "--sample", SAMPLE, "--out", tmp_path / f"r{k}.csv", "--reviews", url,
                              *TINY_GRID)
            assert code == 0 and not any(SECRET in line for line in lines), lines
            assert f"reviews: 1 pair label(s) from postgresql://{role}:***@{parts.hostname}:{parts.port}/{db}" \
                in "\n".join(lines)
            wrong = f"postgresql://{role}:{password}@{parts.hostname}:{parts.port}/no_such_db"
            line = one_line(run(capsys, "sweep", "--sample", SAMPLE, "--out", tmp_path / "w.csv", "--reviews", wrong,
                                *TINY_GRID), "does not exist")
            assert SECRET not in line
        finally:
            _raw(postgres_db, f"DROP OWNED BY {role}")
            _raw(postgres_db, f"DROP ROLE {role}")


def test_app_decides_a_typed_url_on_what_libpq_will_use(monkeypatch):
    from appui import reviews
    for password in READ_WHOLE:  # a password libpq reads (5432#S3cret was taken for a port by urlsplit)
        with pytest.raises(ValueError, match="leave the password out") as err:
            reviews.check_db_url(f"postgresql://pw_num:{password}@127.0.0.1:55432/calib_reviews")
        assert SECRET not in str(err.value)
    for password in AMBIGUOUS:
        with pytest.raises(ValueError, match="not a usable URL") as err:
            reviews.check_db_url(f"postgresql://pw_num:{password}@127.0.0.1:55432/calib_reviews")
        assert SECRET not in str(err.value)
    # a Unix-socket folder as host, however it is written: local trust would log in as anyone
    for url in ("postgresql://calib_su@%2Ftmp%2Fpg:55432/calib_reviews", "postgresql://calib_su@h/r?host=/tmp",
                "postgresql://calib_su@db.example,%2Ftmp/r"):
        with pytest.raises(ValueError, match="Unix-socket folder"):
            reviews.check_db_url(url)
    with pytest.raises(ValueError, match="'hostaddr' is not accepted"):
        reviews.check_db_url("postgresql://ana@db.example/r?hostaddr=127.0.0.1")
    assert reviews.check_db_url("postgresql://ana@db.example:5433/r?sslmode=require") == \
        "postgresql://ana@db.example:5433/r?sslmode=require"
    # set by whoever starts the app: the box shows the display form, which gives the URL back
    secret = "postgresql://pw_num:5432#S3cret@127.0.0.1:55432/calib_reviews"
    monkeypatch.setenv("CALIB_REVIEW_DB", secret)
    assert reviews.shown(reviews.default_db()) == "postgresql://pw_num:***@127.0.0.1:55432/calib_reviews"
    assert reviews.check_db_target(reviews.shown(reviews.default_db())) == secret


@pytest.mark.slow
def test_review_page_box_never_shows_an_environment_password(monkeypatch):
    from streamlit.testing.v1 import AppTest
    monkeypatch.setenv("CALIB_REVIEW_DB", "postgresql://pw_num:5432#S3cret@127.0.0.1:1/calib_reviews")
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=90).run()
    at.switch_page("pages/5_Review.py").run()
    assert not at.exception
    texts = [str(getattr(el, a, "") or "") for kind in ("text_input", "caption", "error", "markdown", "info")
             for el in getattr(at, kind) for a in ("value", "label", "help", "body")]
    assert at.text_input(key="review_db_input").value == "postgresql://pw_num:***@127.0.0.1:1/calib_reviews"
    assert not any(SECRET in t for t in texts)


# ------------------------------------------------------------------ access checks

@pytest.mark.skipif(os.getuid() != 0, reason="only root can give a folder to another user")
def test_shared_root_planted_by_another_user_beside_a_clone_in_a_sticky_folder(tmp_path, monkeypatch):
    import appui.paths as paths
    parent = tmp_path / "tmp"  # like /tmp: world-writable with the sticky bit
    clone, mine = parent / "clone", tmp_path / "theirs"
    (clone / "data").mkdir(parents=True)
    mine.mkdir()
    (mine / "docs.csv").write_text("id,text\n1,a b c\n")
    parent.chmod(0o1777)
    shared = parent / "shared"
    shared.mkdir()
    (shared / "corpora").symlink_to(mine)  # the link's target and its parent are this user's
    monkeypatch.setattr(paths, "REPO_ROOT", clone)
    assert paths.trust_problem(shared / "corpora") is None  # made by this user in a sticky folder: fine
    os.chown(shared, 65534, 65534)  # ... made by another user: not a root
    os.lchown(shared / "corpora", 65534, 65534)
    assert "belongs to another user (uid 65534)" in paths.trust_problem(shared / "corpora")
    assert mine.resolve() not in paths.allowed_roots()
    with pytest.raises(paths.PathNotAllowed, match="outside the allowed folders"):
        paths.resolve_allowed("../shared/corpora/docs.csv")
    os.chown(shared, 0, 0)
    assert "belongs to another user" in paths.trust_problem(shared / "corpora")  # the link itself is theirs
    os.lchown(shared / "corpora", 0, 0)
    parent.chmod(0o777)  # no sticky bit: anyone could replace shared
    assert "writable by every user" in paths.trust_problem(shared / "corpora")


def test_a_symlink_loop_in_the_app_is_one_clear_line(tmp_path, monkeypatch):
    from appui import paths, reviews
    monkeypatch.setenv("CALIB_ALLOWED_DIRS", str(tmp_path))
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(paths.PathNotAllowed, match="symbolic link loop"):
        paths.resolve_allowed(str(tmp_path / "a"))
    (tmp_path / "r.sqlite").symlink_to(tmp_path / "r.sqlite")
    with pytest.raises(ValueError, match="symbolic link loop"):
        reviews.check_db_path(str(tmp_path / "r.sqlite"))
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "docs.csv").write_text("id,text\n1,a b c\n")
    (folder / "x").symlink_to(folder / "x")
    with pytest.raises(paths.PathNotAllowed, match="symbolic link loop"):
        paths.resolve_allowed(str(folder))


# ------------------------------------------------------------------ special files and sizes

def write_corpus(path: Path, n: int = 40, seed: int = 1) -> Path:
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            lines = ["header line", " ".join(rng.choice(WORDS) for _ in range(25))]
            f.write(json.dumps({"id": i, "text": "\n".join(lines)}) + "\n")
    return path


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory):
    """An export of an idf-weighted, boilerplate-stripping configuration: config.json, stoplist.json
    and document_frequencies.bin."""
    from calib.production.export import write_export
    from calib.reading.samples import load_sample
    from calib.search.config import Config
    from calib.search.sweep import evaluate
    from calib.search.workspace import Workspace
    from calib.sketches.represent import Representation
    root = tmp_path_factory.mktemp("export33")
    sample = load_sample(write_labeled(root / "sample"))
    rep = Representation(shingle="word", k=3, num_perm=32, weighting="idf", scheme="icws", strip_lines=0.5)
    config = Config(rep=rep, b=8, r=4, threshold=0.5, measure="weighted_jaccard")
    ws = Workspace(sample)
    write_export(root / "out", config, evaluation=evaluate(ws, config), sample=sample, workspace=ws)
    assert {"config.json", "stoplist.json", "document_frequencies.bin"} <= {p.name for p in (root / "out").iterdir()}
    write_corpus(root / "corpus.jsonl")
    return root


def _copy_export(export_dir: Path, tmp_path: Path) -> Path:
    out = tmp_path / "exp"
    shutil.copytree(export_dir / "out", out)
    return out


@pytest.mark.parametrize("name", ["stoplist.json", "document_frequencies.bin"])
@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "huge"])
@pytest.mark.parametrize("engine", ["local", "spark"])
def test_files_beside_an_exported_config_are_checked_before_they_are_read(export_dir, tmp_path, capsys, no_hang,
                                                                          name, kind, engine, monkeypatch):
    if engine == "spark":
        pytest.importorskip("pyspark")
        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            pytest.skip("no Java runtime")
    exp = _copy_export(export_dir, tmp_path)
    (exp / name).unlink()
    if kind == "fifo":
        os.mkfifo(exp / name)
    elif kind == "dev_zero":
        (exp / name).symlink_to("/dev/zero")
    else:  # a sparse file past the bound: refused by its size, not read
        if name.endswith(".bin"):  # document frequencies: bounded by a quarter of the memory calib may use
            monkeypatch.setenv("CALIB_MAX_MEMORY", "256M")
        with open(exp / name, "wb") as f:
            f.truncate(300 * 2**20)
    argv = ["apply", "--config", exp / "config.json", "--corpus", export_dir / "corpus.jsonl", "--out", tmp_path / "o",
            "--engine", engine, "--max-pairs", 1000]
    if kind == "dev_zero":  # read unchecked, /dev/zero fills memory (5.4 GB, 21.4 GB on Spark): a bounded child
        line = one_line(run_limited(argv), name)
    else:
        line = one_line(run(capsys, *argv), name)
    assert {"fifo": "FIFO", "dev_zero": "character device", "huge": "MiB"}[kind] in line
    assert not (tmp_path / "o" / "manifest.parquet").exists()


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_a_fifo_or_device_as_the_config_is_refused(tmp_path, capsys, no_hang, engine, export_dir):
    os.mkfifo(tmp_path / "config.json")
    one_line(run(capsys, "apply", "--config", tmp_path / "config.json", "--corpus", export_dir / "corpus.jsonl",
                 "--out", tmp_path / "o", "--engine", engine), "--config", "FIFO")
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    one_line(run(capsys, "apply", "--config", tmp_path / "zero.json", "--corpus", export_dir / "corpus.jsonl",
                 "--out", tmp_path / "o", "--engine", engine), "character device")


def test_a_fifo_as_the_sweep_table_or_a_review_store_is_refused(tmp_path, capsys, no_hang):
    os.mkfifo(tmp_path / "r.csv")
    one_line(run(capsys, "export", "--sample", SAMPLE, "--from-sweep", tmp_path / "r.csv", "--out", tmp_path / "e"),
             "--from-sweep", "FIFO")
    for name in ("q.csv", "x.sqlite"):  # x.sqlite was read as an empty store (0 labels)
        os.mkfifo(tmp_path / name)
        one_line(run(capsys, "sweep", "--sample", SAMPLE, "--out", tmp_path / "o.csv", "--reviews", tmp_path / name,
                     *TINY_GRID), name, "FIFO")
    from calib.review.sqlite import ReviewStore
    with pytest.raises(ValueError, match="FIFO"):
        ReviewStore(tmp_path / "x.sqlite")
    assert not (tmp_path / "o.csv").exists()


def test_a_huge_queue_or_results_table_is_refused_by_its_size_before_reading(tmp_path, capsys):
    q = tmp_path / "q.csv"
    with open(q, "wb") as f:  # 1 GiB (sparse): the reader would need ~5 GB
        f.write(b"id_a,id_b,decision\n")
        f.truncate(2**30)
    line = one_line(run(capsys, "sweep", "--sample", SAMPLE, "--out", tmp_path / "o.csv", "--reviews", q, *TINY_GRID),
                    "q.csv", "1,024 MiB", "64 MiB", "review queue")
    assert "nothing was read" in line
    r = tmp_path / "r.parquet"
    with open(r, "wb") as f:
        f.truncate(2**30)
    one_line(run(capsys, "export", "--sample", SAMPLE, "--from-sweep", r, "--out", tmp_path / "e"), "256 MiB")


# ------------------------------------------------------------------ the review queue

def test_queue_round_trips_ids_a_spreadsheet_would_run(tmp_path, capsys):
    """Ids starting with - = + @ ' are written behind the guard ' and read back as they are."""
    from calib.reading.samples import load_sample
    from calib.review.labels import queue_labels
    prefixes = ["-", "=", "+", "@", "'", "''"]
    sample_dir = tmp_path / "s"
    rows = []
    rng = random.Random(3)
    for k, p in enumerate(prefixes):
        base = [rng.choice(WORDS) for _ in range(30)]
        for c in range(2):
            rows.append({"id": f"{p}d{k}-{c}", "text": " ".join(base if c == 0 else base[:-1] + ["zz"])})
    (sample_dir).mkdir()
    (sample_dir / "docs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ids = [r["id"] for r in rows]
    queue = pd.DataFrame({"id_a": ids[0::2], "id_b": ids[1::2], "sim": 0.9, "chained": False, "distance": 0.1,
                          "decision": "duplicate", "config_fingerprint": "x"})
    write_frame_atomic(queue, tmp_path / "q.csv")  # the writer of sweep --review-queue
    assert (tmp_path / "q.csv").read_text().count("\n'") >= len(prefixes)  # guarded
    got = queue_labels(tmp_path / "q.csv")
    assert got["id_a"].tolist() == ids[0::2] and got["id_b"].tolist() == ids[1::2]
    code, lines = run(capsys, "sweep", "--sample", sample_dir, "--out", tmp_path / "r.csv", "--reviews",
                      tmp_path / "q.csv", *TINY_GRID)
    text = "\n".join(lines)
    assert f"reviews: {len(prefixes)} pair label(s) from" in text and "not in the sample" not in text, text
    assert load_sample(sample_dir).n == len(ids)


def test_queue_with_one_pair_twice_contradicting_is_refused_naming_both_lines(tmp_path, capsys):
    q = tmp_path / "q.csv"
    q.write_text("id_a,id_b,sim,decision\ng0-0,g0-1,0.9,duplicate\ng1-0,g1-1,0.9,duplicate\n"
                 "g0-1,g0-0,0.9,not_duplicate\n")
    line = one_line(run(capsys, "sweep", "--sample", SAMPLE, "--out", tmp_path / "o.csv", "--reviews", q, *TINY_GRID),
                    "q.csv", "lines 2 and 4", "contested")
    assert "'g0-0', 'g0-1'" in line
    q.write_text("id_a,id_b,sim,decision\ng0-0,g0-1,0.9,duplicate\ng0-1,g0-0,0.9,duplicate\n")  # agreeing: one label
    from calib.review.labels import queue_labels
    assert queue_labels(q)[["id_a", "id_b", "label"]].values.tolist() == [["g0-0", "g0-1", "duplicate"]]


@pytest.mark.parametrize("content", [b"", b"\x00\x01\x02\xff\xfe" * 100, "id_a,id_b,decision\nä,b,duplicate\n".encode("latin-1")])
def test_empty_binary_or_latin1_queue_is_one_line_naming_the_file(tmp_path, capsys, content):
    q = tmp_path / "q.csv"
    q.write_bytes(content)
    one_line(run(capsys, "sweep", "--sample", SAMPLE, "--out", tmp_path / "o.csv", "--reviews", q, *TINY_GRID), "q.csv")


def test_out_and_review_queue_naming_one_file_is_refused(tmp_path, capsys):
    same = tmp_path / "same.csv"
    one_line(run(capsys, "sweep", "--sample", SAMPLE, "--out", same, "--review-queue", same, *TINY_GRID),
             "--review-queue", "same file as --out")
    (tmp_path / "link.csv").symlink_to(same)
    one_line(run(capsys, "sweep", "--sample", SAMPLE, "--out", same, "--review-queue", tmp_path / "link.csv",
                 *TINY_GRID), "same file as --out")
    assert not same.exists()


# ------------------------------------------------------------------ what an export stands on

def test_export_from_sweep_refuses_other_idf_frequencies_or_stoplist(tmp_path, capsys):
    sample = write_labeled(tmp_path / "s")
    a, b = write_corpus(tmp_path / "a.jsonl", seed=1), write_corpus(tmp_path / "b.jsonl", n=30, seed=2)
    grid = ["--shingles", "word3", "--num-perm", "32", "--splits", "8x4", "--thresholds", "0.5", "--weighting", "idf",
            "--strip-lines", "0.3"]
    code, _ = run(capsys, "sweep", "--sample", sample, "--out", tmp_path / "r.csv", "--idf-corpus", a,
                  "--line-counts", a, "--budget", "1", *grid)
    assert code == 0
    table = pd.read_csv(tmp_path / "r.csv")
    fp = table["config_fingerprint"].iloc[0]
    assert (table["idf_source"] == f"corpus {a}").all() and table["idf_sha256"].str.len().eq(64).all()
    assert (table["stoplist_source"] == f"line counts of {a}").all() and table["stoplist_sha256"].notna().all()
    base = ["export", "--sample", sample, "--from-sweep", tmp_path / "r.csv", "--fingerprint", fp]
    for k, extra in enumerate((["--idf-corpus", b, "--line-counts", a], [], ["--line-counts", a])):
        one_line(run(capsys, *base, "--out", tmp_path / f"e{k}", *extra), "idf weights' document frequencies",
                 f"corpus {a}", "--idf-corpus")
        assert not (tmp_path / f"e{k}").exists()
    one_line(run(capsys, *base, "--out", tmp_path / "e3", "--idf-corpus", a, "--line-counts", b), "stoplist",
             "--line-counts")
    code, lines = run(capsys, *base, "--out", tmp_path / "ok", "--idf-corpus", a, "--line-counts", a)
    assert code == 0, lines


def test_empty_line_counts_corpus_is_refused_like_an_empty_idf_corpus(tmp_path, capsys):
    (tmp_path / "empty.jsonl").write_text("")
    one_line(run(capsys, "sweep", "--sample", SAMPLE, "--out", tmp_path / "o.csv", "--strip-lines", "0.01",
                 "--line-counts", tmp_path / "empty.jsonl", *TINY_GRID), "--line-counts", "no document")


def test_a_false_removal_rate_not_measured_is_never_recommended(tmp_path, capsys):
    from calib.search.recommend import recommend
    rows = pd.DataFrame({"status": "ok", "n_positive": 5, "config_fingerprint": ["a", "b"],
                         "pair_recall": [0.9, 0.5], "false_removal_rate": [np.nan, 0.0], "removed": [0, 3],
                         "candidates": [1, 2]})
    assert recommend(rows)["config_fingerprint"] == "b"
    assert recommend(rows.iloc[:1]) is None
    code, lines = run(capsys, "sweep", "--sample", SAMPLE, "--out", tmp_path / "r.csv", "--min-shingles", "1000000000",
                      *TINY_GRID)
    table = pd.read_csv(tmp_path / "r.csv")
    assert (table["removed"] == 0).all() and table["false_removal_rate"].isna().all()
    assert not table["recommended"].any() and any("no configuration keeps" in line for line in lines), lines
    base = ["export", "--sample", SAMPLE, "--from-sweep", tmp_path / "r.csv", "--out", tmp_path / "e"]
    one_line(run(capsys, *base), "no recommended row")  # not exported as recommended
    code, lines = run(capsys, *base, "--fingerprint", table["config_fingerprint"][0])  # chosen: said, not as 0
    assert code == 0 and "false-removal rate not measured" in lines[-1], lines
    metrics = json.loads((tmp_path / "e" / "config.json").read_text())["evidence"]["metrics"]
    assert metrics["false_removal_rate"] is None and metrics["removed"] == 0


# ------------------------------------------------------------------ messages and the review store

def test_store_usage_line_names_its_own_path(capsys):
    from calib.review.postgres import main as create_store
    assert create_store([]) == 2
    assert capsys.readouterr().err.startswith("usage: python -m calib.review.postgres ")


@pytest.fixture(params=["sqlite", "postgres"])
def store_target(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "r.sqlite")
    return request.getfixturevalue("postgres_db")


def test_review_stores_refuse_nul_and_huge_reviewer_names_alike(store_target):
    from calib.review.schema import MAX_REVIEWER
    from calib.review.stores import open_review_store
    with open_review_store(store_target) as s:
        for args, field in ((("a\x00b", "c", "duplicate", "ana"), "id_a"), (("a", "c\x00", "duplicate", "ana"), "id_b"),
                            (("a", "c", "duplicate", "an\x00a"), "reviewer"),
                            (("a", "c", "duplicate", "x" * 20_000_000), "at most 200")):
            with pytest.raises(ValueError, match=field):
                s.record(*args)
        s.record("a", "c", "duplicate", "x" * MAX_REVIEWER)
        assert len(s) == 1


def test_sqlite_schema_itself_refuses_nul_and_long_names(tmp_path):
    """The CHECK constraints hold for a writer that is not calib (raw SQL)."""
    import sqlite3

    from calib.review.sqlite import ReviewStore
    with ReviewStore(tmp_path / "r.sqlite") as s:
        s.record("a", "b", "duplicate", "ana")
    con = sqlite3.connect(tmp_path / "r.sqlite")
    insert = ("INSERT INTO decisions (id_a, id_b, decision, reviewer, note, created_at) "
              "VALUES (?, ?, 'duplicate', ?, '', 'now')")
    for values in (("a\x00", "z", "ana"), ("a", "z\x00", "ana"), ("a", "z", "a\x00na"), ("a", "z", "x" * 201)):
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
            con.execute(insert, values)
    con.close()


def test_postgres_schema_itself_refuses_long_names(postgres_db):
    import psycopg

    from calib.review.stores import open_review_store
    with open_review_store(postgres_db) as s:
        s.record("a", "b", "duplicate", "ana")
    with psycopg.connect(postgres_db, autocommit=True) as con:
        with pytest.raises(psycopg.errors.CheckViolation):
            con.execute("INSERT INTO decisions (id_a, id_b, decision, reviewer, note, created_at) "
                        "VALUES ('a', 'z', 'duplicate', %s, '', 'now')", ("x" * 201,))
