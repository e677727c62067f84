"""The command line: outputs, and one readable line for user errors."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from calib.cli import main

ROOT = Path(__file__).resolve().parents[1]
SMALL_GRID = ["--shingles", "word3", "--num-perm", "64", "--splits", "16x4,8x8", "--thresholds", "0.7,0.9"]


@pytest.mark.parametrize("ext", ["parquet", "csv"])
def test_sweep_writes_results(tmp_path, ext):
    out = tmp_path / f"r.{ext}"
    assert main(["sweep", "--sample", str(ROOT / "data" / "sample"), "--out", str(out), *SMALL_GRID]) == 0
    res = pd.read_parquet(out) if ext == "parquet" else pd.read_csv(out)
    assert len(res) == 4
    assert {"candidate_recall_low", "false_removal_rate_high", "config_fingerprint"} <= set(res.columns)
    assert not list(tmp_path.glob(".*.tmp"))  # no temp file left behind


@pytest.mark.slow
def test_sweep_is_byte_identical_across_processes(tmp_path):
    outs = []
    for n in range(2):
        out = tmp_path / f"r{n}.csv"
        subprocess.run([sys.executable, "-m", "calib", "sweep", "--sample", str(ROOT / "data" / "sample"),
                        "--out", str(out), *SMALL_GRID], check=True, capture_output=True, cwd=ROOT)
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


@pytest.mark.parametrize("args,needle", [
    (["--sample", "/nonexistent/docs.jsonl"], "docs.jsonl"),
    (["--shingles", "word0"], "shingle size"),
    (["--shingles", "wurd3"], "wurd3"),
    (["--normalizations", "lower+stem"], "stem"),
    (["--splits", "16x16", "--num-perm", "64"], "b*r"),
    (["--out", "results.txt"], ".parquet or .csv"),
])
def test_user_errors_are_one_line_and_exit_2(tmp_path, args, needle):
    base = {"--sample": str(ROOT / "data" / "sample"), "--out": str(tmp_path / "r.csv")}
    argv = ["sweep"]
    for k, v in base.items():
        if k not in args:
            argv += [k, v]
    argv += [*SMALL_GRID[:2], *args] if "--shingles" not in args else [*args]
    proc = subprocess.run([sys.executable, "-m", "calib", *argv], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    lines = [l for l in proc.stderr.strip().splitlines() if l.strip()]
    assert "Traceback" not in proc.stderr
    assert needle in lines[-1]


def test_bad_sample_file_names_file_and_line(tmp_path):
    bad = tmp_path / "docs.jsonl"
    bad.write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n')
    proc = subprocess.run([sys.executable, "-m", "calib", "sweep", "--sample", str(bad), "--out",
                           str(tmp_path / "r.csv")], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert "docs.jsonl line 2" in proc.stderr and "Traceback" not in proc.stderr


def test_sweep_uses_review_decisions_as_labels(tmp_path):
    from calib.review.sqlite import ReviewStore
    from calib.reading.samples import load_sample
    s = load_sample(ROOT / "data" / "sample")
    # Two unrelated singletons (no group): reviewers call them duplicates.
    singles = s.docs[s.docs["group"].isna()]["id"].tolist()[:2]
    db = tmp_path / "r.sqlite"
    with ReviewStore(db) as store:
        store.record(singles[0], singles[1], "duplicate", "ana", note="same page")
    base, reviewed = tmp_path / "a.csv", tmp_path / "b.csv"
    assert main(["sweep", "--sample", str(ROOT / "data" / "sample"), "--out", str(base), *SMALL_GRID]) == 0
    assert main(["sweep", "--sample", str(ROOT / "data" / "sample"), "--out", str(reviewed), "--reviews", str(db),
                 *SMALL_GRID]) == 0
    a, b = pd.read_csv(base), pd.read_csv(reviewed)
    assert (b["n_positive"] == a["n_positive"] + 1).all()  # the reviewed pair is now a true duplicate
    assert main(["sweep", "--sample", str(ROOT / "data" / "sample"), "--out", str(tmp_path / "c.csv"),
                 "--reviews", str(tmp_path / "missing.sqlite"), *SMALL_GRID]) == 2


@pytest.mark.slow
def test_interrupted_sweep_leaves_previous_results_intact(tmp_path):
    import os
    import signal
    import time
    out = tmp_path / "r.parquet"
    assert main(["sweep", "--sample", str(ROOT / "data" / "sample"), "--out", str(out), *SMALL_GRID]) == 0
    before = out.read_bytes()
    # A long sweep into the same file, killed mid-run.
    proc = subprocess.Popen([sys.executable, "-m", "calib", "sweep", "--sample", str(ROOT / "data" / "sample"),
                             "--out", str(out), "--overwrite", "--shingles", "word3,word5,char5",
                             "--num-perm", "64,128,256"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(4)
    assert proc.poll() is None, "the sweep should still be running"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert out.read_bytes() == before  # the earlier results are untouched
    # no partial file; a killed writer's lock file may stay (the kernel released its lock with the process)
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".calib-lock")) == ["r.parquet"]
    assert main(["sweep", "--sample", str(ROOT / "data" / "sample"), "--out", str(out), "--overwrite",
                 *SMALL_GRID]) == 0
