"""The workspace's steps kept on disk (calib.search.stored): a re-run in a new process computes nothing and
gives the same table; a budget change redoes the ceilings alone; a bad, planted or foreign file is refused
and recomputed; another code digest or other labels miss; CALIB_CACHE=off writes nothing; the size cap holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _steep import steep_sample

from calib.base import diskstore
from calib.search import stored
from calib.search.config import Config
from calib.search.explore import ceiling, setting_of
from calib.search.grid import grid_from_sample
from calib.search.sweep import sweep_configs
from calib.search.workspace import Workspace

ROOT = Path(__file__).resolve().parents[1]
STEPS = ("shingle_sets", "signatures", "joins", "candidates", "ceilings", "rows")  # and the cuts, in a search


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """The store on, in a folder of this test's own."""
    monkeypatch.setenv("CALIB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CALIB_CACHE", "on")
    monkeypatch.delenv("CALIB_CACHE_MAX", raising=False)
    diskstore._SAID.clear()
    return tmp_path / "cache"


def small():
    return steep_sample(0, pairs=30, hard=6, singletons=20)


def files(cache: Path) -> list[Path]:
    return sorted(p for p in cache.rglob("*.npz"))


def run(folder: Path, cache: Path, out: Path, *args: str) -> dict:
    """tests/_disk_run.py in its own process: the search on the sample at ``folder``."""
    env = {**os.environ, "CALIB_CACHE_DIR": str(cache), "CALIB_CACHE": "on", "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, str(ROOT / "tests" / "_disk_run.py"), str(folder), str(out), *args],
                   check=True, env=env, cwd=ROOT, timeout=900)
    got = json.loads(Path(str(out) + ".json").read_text())
    got["results"] = pd.read_pickle(str(out) + ".pkl")
    return got


@pytest.mark.slow
def test_a_rerun_in_a_new_process_computes_nothing_and_a_budget_change_only_ceilings(tmp_path):
    folder, cache = tmp_path / "sample", tmp_path / "cache"
    folder.mkdir()
    small().docs[["id", "text", "group"]].to_json(folder / "docs.jsonl", orient="records", lines=True)
    first = run(folder, cache, tmp_path / "first")
    assert all(first["computed"].get(s, 0) > 0 for s in STEPS + ("cuts",)), first["computed"]
    again = run(folder, cache, tmp_path / "again")
    assert sum(again["computed"].values()) == 0, again["computed"]  # every step loaded
    assert again["loaded"]["rows"] == len(first["results"])
    pd.testing.assert_frame_equal(again["results"], first["results"])
    assert again["best"] == first["best"]
    # a tighter budget: every ceiling scanned again (its scan stops by the budget), no set, signature or join
    tight = run(folder, cache, tmp_path / "tight", "0.002")
    assert tight["computed"].get("ceilings", 0) > 0
    assert {s: tight["computed"].get(s, 0) for s in ("shingle_sets", "signatures", "joins", "stripped")} == {
        "shingle_sets": 0, "signatures": 0, "joins": 0, "stripped": 0}, tight["computed"]
    assert tight["loaded"]["joins"] > 0 and tight["loaded"]["shingle_sets"] > 0


def steps(ws: Workspace):
    """A few configurations of every step: their rows, a ceiling, a join, the sets."""
    grid, _ = grid_from_sample(ws)
    configs = list(grid.configs())[:12]
    rows = sweep_configs(ws, configs, grid.max_pairs, default_floor=min(grid.thresholds))
    ceil = ceiling(ws, setting_of(configs[0]), 0.01)
    return rows, ceil, ws.reference_pairs(configs[0].rep, 0.5), ws.sets(configs[0].rep)


def same(a, b) -> None:
    pd.testing.assert_frame_equal(a[0], b[0])
    np.testing.assert_allclose(a[1].recall, b[1].recall)
    np.testing.assert_array_equal(a[1].thresholds, b[1].thresholds)
    for x, y in zip(a[2], b[2]):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a[3].hashes, b[3].hashes)


def test_a_fresh_workspace_loads_every_step_and_agrees(cache):
    sample = small()
    ws = Workspace(sample)  # the store on: CALIB_CACHE=on
    first = steps(ws)
    assert all(ws.computed[s] > 0 for s in STEPS) and not ws.loaded, (ws.computed, ws.loaded)
    ws2 = Workspace(sample)
    second = steps(ws2)
    assert sum(ws2.computed.values()) == 0, ws2.computed
    assert ws2.cache_info()["loaded"]["rows"] == 12 and ws2.cache_info()["on_disk"]
    same(first, second)
    without = Workspace(sample, disk=False)
    same(first, steps(without))  # the store changes no figure
    assert without.computed["rows"] == 12 and not without.loaded


def test_bad_planted_and_foreign_files_are_refused_once_and_recomputed(cache, capsys):
    sample = small()
    want = steps(Workspace(sample))
    found = files(cache)
    assert len(found) > 20
    bad = {}
    for k, p in enumerate(found):  # every file spoiled a way of its own, in turn
        how = k % 6
        if how == 0:  # cut short
            p.write_bytes(p.read_bytes()[:len(p.read_bytes()) // 2])
        elif how == 1:  # a byte changed, the sha256 line kept
            b = bytearray(p.read_bytes())
            b[-40] ^= 0xFF
            p.write_bytes(bytes(b))
        elif how == 2:  # planted by another user
            os.chown(p, 12345, 12345) if os.getuid() == 0 else p.chmod(0o664)
        elif how == 3:  # writable by the group
            p.chmod(0o664)
        elif how == 4:  # another entry's whole, sealed file under this name (its key differs)
            p.write_bytes(diskstore.pack("another key", {"x": np.arange(3)}))
        else:  # a link to a file of the same bytes
            target = p.with_name(p.name + ".elsewhere")
            p.rename(target)
            p.symlink_to(target)
        bad[p] = how
    capsys.readouterr()
    ws = Workspace(sample)
    got = steps(ws)
    same(want, got)  # nothing refused was used
    assert all(ws.computed[s] > 0 for s in STEPS), ws.computed
    err = capsys.readouterr().err
    named = [line for line in err.splitlines() if line.startswith("calib: not using the cached")]
    assert len(named) == len(set(named)) and named, err  # each once
    assert any("sha256" in line for line in named) and any("writable by other users" in line for line in named)
    if os.getuid() == 0:
        assert any("belongs to another user (uid 12345)" in line for line in named)
    assert any("holds another entry" in line for line in named) and any("a link?" in line for line in named)


def test_another_code_digest_or_other_labels_miss(cache, monkeypatch):
    sample = small()
    steps(Workspace(sample))
    monkeypatch.setattr(stored, "code_digest", lambda: "0" * 64)
    other_code = Workspace(sample)
    steps(other_code)
    assert all(other_code.computed[s] > 0 for s in STEPS) and not other_code.loaded
    monkeypatch.undo()
    monkeypatch.setenv("CALIB_CACHE_DIR", str(cache))
    monkeypatch.setenv("CALIB_CACHE", "on")
    # other labels (a duplicate moved to a group of its own): the rows and ceilings miss, the label-free steps load
    docs = sample.docs.copy()
    dup = docs["group"].duplicated(keep=False)
    docs.loc[docs.index[dup][0], "group"] = "moved"
    relabeled = Workspace(replace(sample, docs=docs))
    steps(relabeled)
    assert relabeled.computed["rows"] == 12 and relabeled.computed["ceilings"] == 1
    assert {s: relabeled.computed[s] for s in ("shingle_sets", "signatures", "joins", "candidates")} == {
        "shingle_sets": 0, "signatures": 0, "joins": 0, "candidates": 0}, relabeled.computed


def test_off_writes_nothing(cache, monkeypatch):
    monkeypatch.setenv("CALIB_CACHE", "off")
    ws = Workspace(small(), disk=True)  # asked for, and turned off
    steps(ws)
    assert not (cache / "workspace").exists() and not ws.loaded
    monkeypatch.delenv("CALIB_CACHE")
    steps(Workspace(small()))  # a library workspace keeps nothing unless asked (disk=True) or CALIB_CACHE=on
    assert not (cache / "workspace").exists()


def test_the_cap_keeps_the_most_recently_used(cache, monkeypatch):
    ws = Workspace(small())
    steps(ws)
    total = sum(p.stat().st_size for p in files(cache))
    monkeypatch.setenv("CALIB_CACHE_MAX", str(total // 3))
    ws2 = Workspace(small())
    rep = Config().rep.with_(k=1)  # a new entry: the write that passes the cap
    ws2.sets(rep)
    left = files(cache)
    assert sum(p.stat().st_size for p in left) <= total // 3
    assert any(p.name.startswith("shingle_sets-") and p.stat().st_mtime >= max(q.stat().st_mtime for q in left)
               for p in left)  # the one just written stays
    monkeypatch.setenv("CALIB_CACHE_MAX", "lots")
    with pytest.raises(ValueError, match="CALIB_CACHE_MAX"):
        Workspace(small())


def test_calib_sweep_keeps_its_steps_unless_no_cache(cache, tmp_path, monkeypatch, capsys):
    from calib.cli import main
    monkeypatch.delenv("CALIB_CACHE")  # calib sweep keeps its steps by default
    docs = tmp_path / "docs.jsonl"
    small().docs[["id", "text", "group"]].to_json(docs, orient="records", lines=True)
    typed = ["--shingles", "word2", "--num-perm", "64", "--splits", "16x4", "--thresholds", "0.5,0.7",
             "--no-second-pass", "--no-seed-check", "--budget", "0.2"]
    assert main(["sweep", "--sample", str(docs), "--out", str(tmp_path / "a.csv"), "--no-cache", *typed]) == 0
    assert not (cache / "workspace").exists()
    assert main(["sweep", "--sample", str(docs), "--out", str(tmp_path / "b.csv"), *typed]) == 0
    kinds = {p.name.split("-")[0] for p in files(cache)}
    assert {"shingle_sets", "signatures", "joins", "rows"} <= kinds, kinds
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    assert main(["sweep", "--sample", str(docs), "--out", str(tmp_path / "c.csv"), *typed]) == 0  # loaded
    assert (tmp_path / "c.csv").read_bytes() == (tmp_path / "a.csv").read_bytes()
