"""Hostile input, round three:
concurrent writers, spreadsheet formulas in CSV outputs, foreign review
databases, and the one-line messages of the smaller cases."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calib.base import atomic
from calib.production import export as E
from calib.cli import main
from calib.search.config import Config
from calib.labeling.draw import draw, read_drawn, write_drawn
from calib.review.sqlite import ReviewStore
from calib.reading.samples import SampleError, load_sample
from calib.clusters.truth import label_names

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample"
SMALL = ["--shingles", "word3", "--num-perm", "16", "--splits", "4x4", "--thresholds", "0.7"]
PAYLOADS = ('=HYPERLINK("http://evil.example/x","click")', "+1+1", "@SUM(A1)", '=cmd|"/c calc"!A1')
ENV = dict(os.environ, PYTHONPATH=str(ROOT))

# A child that holds an output (calib.base.atomic.claim_output) until its stdin closes.
HOLDER = r"""
import sys
from calib.base.atomic import claim_output
with claim_output(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.read()
"""


def cli(*argv) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "calib", *map(str, argv)], cwd=ROOT, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def one_line_error(capsys, *argv) -> str:
    """Run the CLI in-process; it must exit 2 with exactly one line on stderr."""
    capsys.readouterr()
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


class Holder:
    """Another process holding ``path`` as its output."""

    def __init__(self, path: Path):
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], cwd=ROOT, env=ENV,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "held"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0


def docs_file(path: Path, n: int = 12, ids=None) -> Path:
    """n documents in near-duplicate pairs (2k, 2k+1 share all but the last word)."""
    ids = ids or [f"d{k}" for k in range(n)]
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho".split()
    with open(path, "w", encoding="utf-8") as f:
        for k, d in enumerate(ids):
            base = " ".join(words[(k // 2 + m) % len(words)] + str(k // 2) for m in range(12))
            f.write(json.dumps({"id": d, "text": f"{base} end{k % 2}"}) + "\n")
    return path


def labeled_sample(tmp_path: Path) -> Path:
    d = tmp_path / "s"
    d.mkdir()
    docs_file(d / "docs.jsonl")
    (d / "pairs.csv").write_text("id_a,id_b,label\nd0,d1,duplicate\nd2,d3,duplicate\nd0,d2,not_duplicate\n")
    return d


# ---------------------------------------------------------------------------
# Items 7 and 8: one writer per output
# ---------------------------------------------------------------------------

def test_claim_is_exclusive_across_processes_and_threads(tmp_path):
    out = tmp_path / "r.csv"
    with Holder(out) as h:
        with pytest.raises(atomic.OutputBusy, match=rf"r.csv: process {h.proc.pid} is writing it now"):
            with atomic.claim_output(out):
                pass
    with atomic.claim_output(out):
        with atomic.claim_output(out):  # nested in one thread: free
            pass
        seen = []

        def other():
            try:
                with atomic.claim_output(out):
                    seen.append("took it")
            except atomic.OutputBusy:
                seen.append("busy")
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert seen == ["busy"]
    assert not atomic.lock_path(out).exists()  # released and removed
    with atomic.claim_output(out):  # free again after release
        pass
    h = Holder(out)
    h.proc.kill()  # SIGKILL: the kernel drops the flock; the lock file left behind holds nothing
    h.proc.wait(timeout=30)
    assert atomic.lock_path(out).exists()
    with atomic.claim_output(out):
        pass


def test_a_held_output_refuses_every_cli_writer_before_work(tmp_path, capsys):
    """Each writer, with --overwrite even, refuses an output another process holds, in one line, before work."""
    sample = labeled_sample(tmp_path)
    cfg = tmp_path / "config.json"
    E.write_config(cfg, Config(verify="none", b=16, r=2))
    drawn = tmp_path / "drawn"
    write_drawn(drawn, draw(sample / "docs.jsonl", docs=12, pairs=10, seed=0))
    before = {p.name: p.read_bytes() for p in drawn.iterdir()}
    cases = {
        "sweep": (tmp_path / "r.csv", ["sweep", "--sample", sample, *SMALL, "--overwrite"]),
        "export": (tmp_path / "x", ["export", "--sample", sample, "--config", cfg, "--overwrite"]),
        "apply": (tmp_path / "a", ["apply", "--config", cfg, "--corpus", sample / "docs.jsonl", "--overwrite"]),
        "draw": (tmp_path / "d", ["draw", "--corpus", sample / "docs.jsonl", "--overwrite"]),
        "draw --more": (drawn, ["draw", "--more", "5", "--config", cfg]),
        "samples build": (tmp_path / "built", ["samples", "build"]),
    }
    for name, (out, argv) in cases.items():
        with Holder(out) as h:
            line = one_line_error(capsys, *argv, "--out", out)
        assert f"--out {out}: process {h.proc.pid} is writing it now" in line, (name, line)
        assert out == drawn or not out.exists(), name
    assert {p.name: p.read_bytes() for p in drawn.iterdir()} == before


@pytest.mark.slow
def test_two_sweeps_to_one_file_at_once(tmp_path):
    sample = labeled_sample(tmp_path)
    out = tmp_path / "r.csv"
    procs = [cli("sweep", "--sample", sample, "--out", out, *SMALL, "--thresholds", t) for t in ("0.5", "0.7")]
    done = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    codes = sorted(c for c, _ in done)
    assert codes == [0, 2], done
    err = next(e for c, e in done if c == 2).strip()
    assert len(err.splitlines()) == 1 and ("is writing it now" in err or "already exists" in err), err
    winner = next(k for k, (c, _) in enumerate(done) if c == 0)
    assert pd.read_csv(out)["threshold"].tolist() == [(0.5, 0.7)[winner]]


@pytest.mark.slow
def test_two_applies_to_one_new_folder_at_once(tmp_path):
    corpus = docs_file(tmp_path / "corpus.jsonl", 400)
    cfg = tmp_path / "config.json"
    E.write_config(cfg, Config(verify="none", b=16, r=2))
    out = tmp_path / "new"
    procs = [cli("apply", "--config", cfg, "--corpus", corpus, "--out", out, "--batch-size", b) for b in (50, 70)]
    done = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    assert sorted(c for c, _ in done) == [0, 2], done
    err = next(e for c, e in done if c == 2).strip()
    assert len(err.splitlines()) == 1 and ("is writing it now" in err or "not empty" in err), err
    assert sorted(p.name for p in out.iterdir()) == ["README.txt", "manifest.csv", "manifest.parquet", "summary.json"]
    assert len(pd.read_csv(out / "manifest.csv")) == 200  # one of each near-duplicate pair


@pytest.mark.slow
def test_two_draw_more_at_once_lose_no_rows(tmp_path):
    """draw --more 50 and --more 70 at once on 300 labeled pairs: every row either run reports is in
    pairs.csv (420 when they ran one after the other), or the second is refused in one line."""
    d = tmp_path / "d"
    write_drawn(d, draw(SAMPLE / "docs.jsonl", docs=600, pairs=300, seed=3))
    p = pd.read_csv(d / "pairs.csv", dtype=str, keep_default_na=False)
    p["label"] = label_names(load_sample(SAMPLE), p["id_a"], p["id_b"])
    p.to_csv(d / "pairs.csv", index=False)
    cfg = tmp_path / "config.json"
    E.write_config(cfg, Config(b=16, r=8, threshold=0.8))
    procs = [cli("draw", "--more", k, "--out", d, "--config", cfg, "--width", "0.01") for k in (50, 70)]
    done = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    added = 0
    for code, err in done:
        if code == 0:
            added += int(err.split("wrote ")[-1].split(" new pairs")[0].replace(",", ""))
        else:
            assert code == 2 and len(err.strip().splitlines()) == 1 and "is writing it now" in err, err
    assert any(code == 0 for code, _ in done), done
    grown = read_drawn(d)
    assert len(grown.pairs) == 300 + added
    assert grown.pairs.iloc[:300][["id_a", "id_b", "label"]].equals(p[["id_a", "id_b", "label"]])
    assert sum(grown.design.drawn) == len(grown.pairs) and not grown.pairs.duplicated(["id_a", "id_b"]).any()
    if all(code == 0 for code, _ in done):
        assert added == 120 and len(grown.pairs) == 420


def test_label_write_back_keeps_rows_added_since_the_read(tmp_path):
    """The Label page writes labels through write_labels: the set is re-read under the folder's claim,
    so pairs a `draw --more` added after the page read the folder are kept, and labelled."""
    from calib.labeling.draw import more, write_labels
    d = tmp_path / "d"
    write_drawn(d, draw(docs_file(tmp_path / "c.jsonl", 40), docs=40, pairs=20, seed=0))
    seen = read_drawn(d)  # what the page read
    add = np.zeros(len(seen.design.strata), dtype=int)
    add[-1] = 15
    write_drawn(d, more(seen, add))  # another writer, in between
    grown = read_drawn(d)
    db = tmp_path / "r.sqlite"
    with ReviewStore(db) as store:
        store.record(seen.pairs["id_a"][0], seen.pairs["id_b"][0], "duplicate", "ana")
        store.record(grown.pairs["id_a"][30], grown.pairs["id_b"][30], "not_duplicate", "ana")
        written = write_labels(d, store.latest())
    back = read_drawn(d)
    assert len(back.pairs) == len(written.pairs) == 35
    assert back.pairs[["id_a", "id_b"]].equals(grown.pairs[["id_a", "id_b"]])
    assert back.pairs["label"][0] == "duplicate" and back.pairs["label"][30] == "not_duplicate"
    assert (back.pairs["label"].drop([0, 30]) == "").all()
    with Holder(d):
        with pytest.raises(atomic.OutputBusy):
            write_labels(d, None)


# ---------------------------------------------------------------------------
# Item 9: CSV injection
# ---------------------------------------------------------------------------

def test_csv_cells_are_neutralized_and_read_back_exactly():
    values = [*PAYLOADS, "\tx", "\rx", "-x", "'quoted", "plain", "-0.5", "+3", "1e-3", "", None]
    frame = pd.DataFrame({"text": values, "number": np.arange(len(values)) - 5.5})
    text = atomic.frame_bytes(frame, "csv").decode()
    back = pd.read_csv(pd.io.common.StringIO(text), dtype={"text": str}, keep_default_na=False)
    cells = back["text"].tolist()
    assert cells[:4] == ["'" + v for v in PAYLOADS]
    assert cells[4:9] == ["'\tx", "'\rx", "'-x", "''quoted", "plain"]
    assert cells[9:12] == ["-0.5", "+3", "1e-3"]  # plain numbers cannot run: untouched
    assert back["number"].tolist() == frame["number"].tolist()  # negative numbers untouched
    assert atomic.csv_values(back)["text"].tolist()[:12] == values[:12]  # exact after dropping one '
    for v in cells[:8]:  # nothing a spreadsheet runs is left at the start of a cell
        assert v[0] == "'"


def test_manifest_csv_neutralizes_corpus_ids_and_kept_fields(tmp_path, capsys):
    ids = [f"{p}#{k}" for k in range(2) for p in PAYLOADS]
    corpus = docs_file(tmp_path / "c.jsonl", ids=ids)
    rows = [json.loads(line) for line in corpus.read_text().splitlines()]
    for k, r in enumerate(rows):
        r["source"] = PAYLOADS[k % 4]
        r["score"] = -1.5 * k
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = tmp_path / "config.json"
    E.write_config(cfg, Config(verify="none", b=16, r=2))
    assert main(["apply", "--config", str(cfg), "--corpus", str(corpus), "--out", str(tmp_path / "o"),
                 "--keep-fields", "source,score"]) == 0
    pq = pd.read_parquet(tmp_path / "o" / "manifest.parquet")
    csv_ = pd.read_csv(tmp_path / "o" / "manifest.csv", dtype={"doc_id": str, "representative_id": str,
                                                                "source": str}, keep_default_na=False)
    assert len(pq) == 4
    for col in ("doc_id", "representative_id", "source"):
        assert all(v[0] in "=+@" for v in pq[col])  # Parquet verbatim
        assert all(v.startswith("'") and v[1] in "=+@" for v in csv_[col])
        assert atomic.csv_values(csv_)[col].tolist() == pq[col].tolist()
    # a kept numeric field (carried as its text) keeps its minus sign: a plain number runs nothing
    score = csv_["score"].astype(str).tolist()
    assert score == pq["score"].astype(str).tolist() and any(v.startswith("-") for v in score)


def test_drawn_pairs_csv_neutralizes_ids_and_loads_back(tmp_path):
    ids = [f"{p}#{k}" for k in range(3) for p in PAYLOADS]
    corpus = docs_file(tmp_path / "c.jsonl", ids=ids)
    d = tmp_path / "d"
    write_drawn(d, draw(corpus, docs=12, pairs=20, seed=0))
    raw = pd.read_csv(d / "pairs.csv", dtype=str, keep_default_na=False)
    assert all(v.startswith("'") for v in pd.concat([raw["id_a"], raw["id_b"]]))
    back = read_drawn(d)
    assert set(back.pairs["id_a"]) | set(back.pairs["id_b"]) <= set(ids)
    raw["label"] = "not_duplicate"
    raw.to_csv(d / "pairs.csv", index=False)
    s = load_sample(d)
    assert len(s.pairs) == 20 and set(s.docs["id"]) == set(ids)


def test_sweep_csv_round_trips_through_from_sweep(tmp_path, capsys):
    """The results CSV is read back by export --from-sweep through the same rule."""
    sample = labeled_sample(tmp_path)
    assert main(["sweep", "--sample", str(sample), "--out", str(tmp_path / "r.csv"), *SMALL,
                 "--budget", "1"]) == 0
    from calib.cli.export import row_from_sweep
    row = row_from_sweep(str(tmp_path / "r.csv"), None)
    assert row["config_fingerprint"] == pd.read_csv(tmp_path / "r.csv")["config_fingerprint"].iloc[0]


# ---------------------------------------------------------------------------
# Item 10: the review store
# ---------------------------------------------------------------------------

def _foreign(path: Path, sql: str) -> Path:
    con = sqlite3.connect(path)
    con.executescript(sql)
    con.commit()
    con.close()
    return path


@pytest.mark.parametrize("sql, needle", [
    ("CREATE TABLE notes (x TEXT); INSERT INTO notes VALUES ('keep me');", "no decisions table"),
    ("CREATE TABLE decisions (who TEXT); CREATE TABLE schema_version (version INTEGER);", "has no column"),
])
def test_foreign_sqlite_is_refused_untouched(tmp_path, capsys, sql, needle):
    db = _foreign(tmp_path / "other.sqlite", sql)
    before = db.read_bytes()
    with pytest.raises(ValueError, match=needle):
        ReviewStore(db)
    line = one_line_error(capsys, "sweep", "--sample", labeled_sample(tmp_path), "--out", tmp_path / "r.csv",
                          "--reviews", db, *SMALL)
    assert f"--reviews {db}: not a review store" in line and needle in line
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.sqlite", "s"]  # no -wal, -shm, r.csv
    con = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    con.close()


def test_opening_a_store_creates_nothing_until_the_first_decision(tmp_path):
    db = tmp_path / "sub" / "r.sqlite"
    with ReviewStore(db) as s:
        assert len(s) == 0 and s.latest().empty and s.as_pair_labels().empty
        assert not db.exists() and not db.parent.exists()
        s.record("a", "b", "duplicate", "ana")
        assert db.exists() and len(s) == 1
    with ReviewStore(db) as s:
        assert s.latest()["decision"].tolist() == ["duplicate"]


def test_app_review_field_creates_no_database_before_a_decision(tmp_path, monkeypatch):
    import streamlit as st
    from streamlit.testing.v1 import AppTest
    st.cache_data.clear()
    st.cache_resource.clear()
    monkeypatch.setenv("CALIB_REVIEW_DB", str(tmp_path / "reviews" / "r.sqlite"))
    monkeypatch.delenv("CALIB_ALLOWED_DIRS", raising=False)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("pages/5_Review.py").run()
    typed = tmp_path / "reviews" / "typed.sqlite"
    at.text_input(key="review_db_input").set_value(str(typed)).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert not typed.exists() and not (tmp_path / "reviews").exists()
    at.text_input(key="reviewer_input").set_value("ana").run()
    at.button(key="decide_not_duplicate").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    with ReviewStore(typed) as s:
        assert s.latest()["decision"].tolist() == ["not_duplicate"]
    st.cache_data.clear()
    st.cache_resource.clear()


# ---------------------------------------------------------------------------
# The smaller list
# ---------------------------------------------------------------------------

def test_draw_budget_error_names_real_options(tmp_path, capsys):
    corpus = docs_file(tmp_path / "c.jsonl", 30)
    line = one_line_error(capsys, "draw", "--design", "sample", "--corpus", corpus, "--out", tmp_path / "o", "--docs", "30",
                          "--edges", "0.01,1", "--max-pairs", "3")
    assert "more than the pair budget 3" in line and "--floor" not in line
    assert "first of --edges" in line and "--docs" in line and "--max-pairs" in line
    from calib.cli.draw import add_parser
    import argparse
    sub = argparse.ArgumentParser().add_subparsers()
    add_parser(sub)
    flags = {s for a in sub.choices["draw"]._actions for s in a.option_strings}
    assert {"--edges", "--docs", "--max-pairs"} <= flags and "--floor" not in flags


def test_control_character_message_reads_once(tmp_path, capsys):
    docs = tmp_path / "c.jsonl"
    docs.write_bytes(b'{"id": "a", "text": "x\x01y"}\n{"id": "b", "text": "z"}\n')
    line = one_line_error(capsys, "sweep", "--sample", docs, "--out", tmp_path / "r.csv", *SMALL)
    assert "Invalid control character at column 23" in line and "at at" not in line
    line = one_line_error(capsys, "draw", "--corpus", docs, "--out", tmp_path / "o")
    assert "c.jsonl:1: invalid JSON (Invalid control character at column 23)" in line


@pytest.mark.parametrize("text, needle", [
    ('{"format": 2}', "design format 2 is not 1, the format this calib reads (written by a newer calib"),
    ("[1, 2]", "a design is a JSON object, got an array"),
    ('"design"', "a design is a JSON object, got a string"),
    ("{}", "no 'format' field"),
    ('{"format": 1, "rep": {}, "edges": [0.1, 1], "corpus_docs": 2, "sample_docs": 2, "population": [0, 0], '
     '"drawn": [0, 0], "seed": 0, "colour": 1}', "unknown field 'colour'"),
    ('{"format": 1, "edges": [0.1, 1]}', "no 'rep' field"),
])
def test_hand_edited_design_json(tmp_path, capsys, text, needle):
    d = tmp_path / "d"
    write_drawn(d, draw(docs_file(tmp_path / "c.jsonl"), docs=12, pairs=5, seed=0))
    (d / "design.json").write_text(text)
    with pytest.raises(SampleError, match=f"design.json.*{needle[:30]}"):
        load_sample(d)
    line = one_line_error(capsys, "sweep", "--sample", d, "--out", tmp_path / "r.csv", *SMALL)
    assert needle in line and "design.json" in line
    line = one_line_error(capsys, "draw", "--more", "5", "--out", d)
    assert needle in line and "design.json" in line


def test_sweep_reviews_directory(tmp_path, capsys):
    (tmp_path / "reviews").mkdir()
    line = one_line_error(capsys, "sweep", "--sample", labeled_sample(tmp_path), "--out", tmp_path / "r.csv",
                          "--reviews", tmp_path / "reviews", *SMALL)
    assert f"--reviews {tmp_path / 'reviews'}: is a folder, not a review store" in line
    assert not (tmp_path / "r.csv").exists()


def test_disk_full_names_the_file(tmp_path, capsys, monkeypatch):
    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(atomic.os, "fsync", full)
    out = tmp_path / "r.csv"
    capsys.readouterr()
    assert main(["sweep", "--sample", str(labeled_sample(tmp_path)), "--out", str(out), *SMALL]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == f"calib sweep: error: {out}: No space left on device" and "Traceback" not in err
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    cfg = tmp_path / "config.json"
    monkeypatch.undo()
    E.write_config(cfg, Config(verify="none", b=16, r=2))
    monkeypatch.setattr(atomic.os, "fsync", full)
    line = one_line_error(capsys, "apply", "--config", cfg, "--corpus", tmp_path / "s" / "docs.jsonl",
                          "--out", tmp_path / "o")
    assert line.startswith(f"calib apply: error: {tmp_path / 'o'}/") and line.endswith(": No space left on device")
    assert not (tmp_path / "o").exists()


def test_sweep_to_an_unwritable_place_fails_before_the_grid(tmp_path, capsys, monkeypatch):
    """/proc passes os.access for root; only creating a file there tells."""
    if not Path("/proc/self").is_dir():
        pytest.skip("no /proc")
    out = "/proc/calib-x.csv"

    def no_grid(*a, **k):
        raise AssertionError("the grid ran before the output was checked")
    monkeypatch.setattr("calib.search.sweep.sweep", no_grid)
    monkeypatch.setattr("calib.reading.samples.load_sample", no_grid)
    line = one_line_error(capsys, "sweep", "--sample", SAMPLE, "--out", out, *SMALL)
    assert line.startswith(f"calib sweep: error: --out {out}: cannot write there")


def test_an_all_over_budget_sweep_says_nothing_was_measured(tmp_path, capsys):
    capsys.readouterr()
    assert main(["sweep", "--sample", str(labeled_sample(tmp_path)), "--out", str(tmp_path / "r.csv"), *SMALL,
                 "--max-pairs", "0"]) == 0
    err = capsys.readouterr().err
    r = pd.read_csv(tmp_path / "r.csv")
    assert set(r["status"]) <= {"too_many_pairs", "too_many_candidates"} and len(r)
    assert "nothing was measured: every configuration exceeded the pair budget" in err
    assert "--max-pairs" in err and "no configuration keeps" not in err
