"""Output folders are atomic as a set (a reader never sees half of two runs): an export or an apply proposal
replaces the previous one whole. A writer SIGKILLed before each of its file-system
steps leaves the old set or the new one, byte for byte; stale temp folders are
cleaned by the next writer; a folder holding foreign files is never replaced."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from calib.base import atomic
from calib.production import export as E
from calib.production.engines.local import ApplyError, apply_config, write_apply
from calib.search.config import Config
from calib.reading.sample import from_frames
from calib.reading.samples import load_sample
from calib.search.sweep import evaluate

ROOT = Path(__file__).resolve().parents[1]

# The writer's parent: imports calib and loads the pickled result once, then for each K read from
# stdin forks a child that counts the writer's file-system steps and SIGKILLs itself just before step
# K (K = 0: run to the end), and prints the child's exit status and step count. Forking from this
# one-thread process (never from pytest's) keeps the kill exact and saves an interpreter start per
# step. FALLBACK=1 disables renameat2 so the two-rename swap is exercised too.
WRITER = r"""
import os, pickle, shutil, signal, sys, traceback
from calib.base import atomic
from calib.production.engines.local import write_apply
result = pickle.load(open(sys.argv[1], "rb"))
out, fallback = sys.argv[2], sys.argv[3]
for line in sys.stdin:
    K = int(line)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            n = [0]
            def counted(fn):
                def step(*a, **k):
                    n[0] += 1
                    if n[0] == K:
                        os.kill(os.getpid(), signal.SIGKILL)
                    return fn(*a, **k)
                return step
            if fallback == "1":
                atomic._exchange = lambda a, b: False
            for name in ("open", "fsync", "replace", "rename", "unlink", "mkdir", "rmdir", "chmod"):
                setattr(os, name, counted(getattr(os, name)))
            shutil.rmtree = counted(shutil.rmtree)
            atomic._exchange = counted(atomic._exchange)
            write_apply(out, result, corpus="corpus.jsonl")
            os.write(w, str(n[0]).encode())
            os._exit(0)
        except BaseException:
            traceback.print_exc()
            os._exit(1)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    steps = os.read(r, 64).decode() or "-"
    os.close(r)
    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    print(code, steps, flush=True)
"""


def snapshot(folder: Path) -> dict[str, bytes] | None:
    if not folder.exists():
        return None
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    s = load_sample(ROOT / "data" / "sample")
    sub = from_frames(s.docs.iloc[:400].copy(), None, name="first400")
    d = tmp_path_factory.mktemp("corpus")
    corpus = d / "corpus.jsonl"
    sub.docs[["id", "text"]].to_json(corpus, orient="records", lines=True, force_ascii=False)
    old = apply_config(Config(threshold=0.9), corpus)
    new = apply_config(Config(threshold=0.3, b=32, r=4), corpus)
    assert len(old.manifest) != len(new.manifest)
    return old, new


@pytest.mark.parametrize("fallback", ["0", "1"])
@pytest.mark.slow  # about 25 forked writers per swap mode
def test_sigkill_at_every_step_leaves_the_old_set_or_the_new(tmp_path, results, fallback):
    old_res, new_res = results
    ref_old, ref_new = tmp_path / "ref_old", tmp_path / "ref_new"
    write_apply(ref_old, old_res, corpus="corpus.jsonl")
    write_apply(ref_new, new_res, corpus="corpus.jsonl")
    old, new = snapshot(ref_old), snapshot(ref_new)
    assert old != new and set(old) == set(new) == {"manifest.csv", "manifest.parquet", "summary.json", "README.txt"}
    pkl = tmp_path / "new.pkl"
    pkl.write_bytes(pickle.dumps(new_res))
    work = tmp_path / "work"
    out = work / "proposal"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    seen = {"old": 0, "new": 0, "restored": 0}
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(pkl), str(out), fallback], cwd=ROOT, env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    k = 1
    try:
        while True:
            shutil.rmtree(work, ignore_errors=True)
            shutil.copytree(ref_old, out)
            writer.stdin.write(f"{k}\n")
            writer.stdin.flush()
            reply = writer.stdout.readline().split()
            assert len(reply) == 2 and int(reply[0]) in (0, -9), (k, reply)  # the traceback is on stderr
            code = int(reply[0])
            state = snapshot(out)
            if state is None:  # only between the two renames of the fallback swap
                assert fallback == "1"
                atomic.cleanup_temp_files(work)
                state = snapshot(out)
                assert state == old
                seen["restored"] += 1
            assert state in (old, new), f"step {k}: a mixed set {sorted(state)}"
            seen["old" if state == old else "new"] += 1
            if code == 0:
                assert state == new
                steps = int(reply[1])
                break
            # the next writer cleans what the killed one left, and writes the new set
            write_apply(out, new_res, corpus="corpus.jsonl")
            assert snapshot(out) == new
            assert sorted(q.name for q in work.iterdir()) == ["proposal"], f"step {k}: leftovers"
            k += 1
    finally:
        writer.stdin.close()
        writer.wait(60)
    assert k == steps + 1 and steps >= 15  # every step was a kill point
    assert seen["old"] >= 10 and seen["new"] >= 2
    assert (seen["restored"] >= 1) == (fallback == "1")


@pytest.mark.slow
def test_export_set_is_replaced_whole_or_not_at_all(tmp_path, monkeypatch):
    s = load_sample(ROOT / "data" / "sample")
    sub = from_frames(s.docs.iloc[:300].copy(), None, name="first300")
    out = tmp_path / "export"
    E.write_export(out, Config(threshold=0.9), evaluation=evaluate(sub, Config(threshold=0.9)), sample=sub)
    before = snapshot(out)
    cfg = Config(threshold=0.3, b=32, r=4)
    ev = evaluate(sub, cfg)

    real = E.write_frame_atomic

    def boom(frame, path):
        if str(path).endswith(".parquet"):  # the last file of the set fails
            raise OSError(28, "No space left on device")
        return real(frame, path)
    monkeypatch.setattr(E, "write_frame_atomic", boom)
    with pytest.raises(OSError):
        E.write_export(out, cfg, evaluation=ev, sample=sub)
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]  # no temp folder left
    monkeypatch.undo()
    E.write_export(out, cfg, evaluation=ev, sample=sub)
    after = snapshot(out)
    assert after != before and set(after) == set(before)
    assert E.load_config(out / "config.json")[0].fingerprint() == cfg.fingerprint()


def test_a_folder_with_foreign_files_is_not_replaced(tmp_path, results, capsys):
    old_res, _ = results
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    with pytest.raises(ApplyError, match="holds 'notes.txt'"):
        write_apply(out, old_res, corpus="c.jsonl")
    assert snapshot(out) == {"notes.txt": b"my notes"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


def test_stale_temp_files_of_dead_writers_are_cleaned(tmp_path):
    p = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(p.stdout)
    stale = [tmp_path / f".results.csv.pid{dead}-abc.tmp", tmp_path / f".out.calib-tmp-pid{dead}-xyz"]
    stale[0].write_text("partial")
    stale[1].mkdir()
    (stale[1] / "manifest.csv").write_text("partial")
    live = tmp_path / f".results.csv.pid{os.getpid()}-def.tmp"  # a writer still running keeps its file
    live.write_text("in progress")
    mine = tmp_path / "keep.tmp"  # not a calib temp name
    mine.write_text("user file")
    atomic.write_frame_atomic(pd.DataFrame({"a": [1]}), tmp_path / "results.csv")
    assert not stale[0].exists() and stale[1].exists()  # only this file's temps are cleaned by a file write
    atomic.cleanup_temp_files(tmp_path)
    assert not stale[1].exists() and live.exists() and mine.exists()
