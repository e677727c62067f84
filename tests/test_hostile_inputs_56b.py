"""Hostile input, round six (second half): a shared cache that is trusted, a drawn set's design
without its digests, edited evidence in config.json, a grid with nothing left to sweep, and shares
that cannot be measured. Each test reproduces its case first."""

from __future__ import annotations

import io
import json
import math
import os
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from test_hostile_inputs_28 import one_line, run, write_corpus, write_labeled  # calib in-process

REPO = Path(__file__).resolve().parents[1]
TINY_GRID = ["--shingles", "word3", "--num-perm", "32", "--splits", "8x4", "--thresholds", "0.7"]
BASE = "the quick brown fox jumps over the lazy dog near the river bank today and tomorrow again"


def write_sample(folder: Path, docs: list[tuple[str, str]], pairs: list[tuple[str, str, str]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "docs.jsonl").write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in docs))
    (folder / "pairs.csv").write_text("id_a,id_b,label\n" + "".join(f"{a},{b},{lab}\n" for a, b, lab in pairs))
    return folder


# ------------------------------------------------------------------ a grid with nothing left to sweep

def _long_text(rng, words: int) -> list[str]:
    return [f"w{rng.randrange(5000)}" for _ in range(words)]


def _exact_copy_nonduplicate(folder: Path) -> Path:
    """The duplicates differ by a word; the pair labeled not-duplicate is an exact copy (J = 1)."""
    other = "completely different words about cats and mice living in old houses by the sea"
    return write_sample(folder, [("a", BASE), ("b", BASE + " indeed"), ("c", other), ("d", other)],
                        [("a", "b", "duplicate"), ("c", "d", "not_duplicate")])


def _near_one_nonduplicates(folder: Path) -> Path:
    """Long documents: the duplicates share 90% of their words, the non-duplicates all but one word."""
    rng = random.Random(1)
    a = _long_text(rng, 4000)
    b = a[:3600] + _long_text(rng, 400)
    c = _long_text(rng, 4000)
    d = c[:-1] + ["changed"]
    return write_sample(folder, [("a", " ".join(a)), ("b", " ".join(b)), ("c", " ".join(c)), ("d", " ".join(d))],
                        [("a", "b", "duplicate"), ("c", "d", "not_duplicate")])


@pytest.mark.parametrize("make", [_exact_copy_nonduplicate, _near_one_nonduplicates])
def test_an_empty_grid_ends_with_the_nothing_fits_message(tmp_path, capsys, make):
    """Every configuration of the chosen grid sits below the non-duplicates' floor and is skipped: the
    default search says nothing fits (exit status 0, as when nothing fits the budget), with the reason,
    and writes the table (no row) rather than ending in KeyError: 'status'."""
    sample = make(tmp_path / "s")
    out = tmp_path / "r.csv"
    code, lines = run(capsys, "sweep", "--sample", sample, "--out", out)
    text = "\n".join(lines)
    assert code == 0, text
    assert "Traceback" not in text and "KeyError" not in text
    assert lines[-1] == "no configuration keeps the false-removal rate <= 0.01", text
    assert "configurations of the grid were skipped, so none was measured" in text
    assert out.exists() and pd.read_csv(out).empty and "recommended" in pd.read_csv(out).columns
    code, lines = run(capsys, "export", "--sample", sample, "--from-sweep", out, "--out", tmp_path / "e")
    one_line((code, lines), "no recommended row")


def test_the_recommendation_of_an_empty_table_is_none():
    from calib.search.recommend import closest, ranked, recommend
    empty = pd.DataFrame()
    assert ranked(empty).empty and recommend(empty) is None
    assert closest(empty) == (None, "no configuration was swept")


# ------------------------------------------------------------------ shares not measured, in words

def test_a_share_no_half_measures_is_said_in_words(tmp_path, capsys):
    """Two documents, one pair: no half of the sample removes anything; the CLI said 'nan%'."""
    sample = write_sample(tmp_path / "s", [("a", BASE), ("b", BASE + " indeed")], [("a", "b", "duplicate")])
    code, lines = run(capsys, "sweep", "--sample", sample, "--out", tmp_path / "r.csv", *TINY_GRID,
                      "--thresholds", "0.5")
    assert code == 0, lines
    chaining = [x for x in lines if x.startswith("chaining:")]
    assert chaining == ["chaining: 0 of 1 removals by chaining alone (0.0%; not measured on half the sample: "
                        "no half of it removes anything)"], lines
    assert not any("nan" in x.lower().replace("nanos", "") for x in lines), lines


def test_chain_text_never_writes_nan():
    from calib.clusters.growth import ChainGrowth
    from calib.estimates.figures import chain_text
    assert chain_text(ChainGrowth(float("nan"), float("nan"), 0, 0)) == "chaining: nothing removed"
    assert chain_text(ChainGrowth(0.5, 0.25, 1, 2)) == ("chaining: 1 of 2 removals by chaining alone (50.0%; 25.0% "
                                                       "on half the sample); chains lengthen with the collection: "
                                                       "on the whole corpus expect a larger share, and compare calib "
                                                       "apply's chained share (or use the star policy, which removes "
                                                       "no document by chaining alone)")
    for whole, half in ((float("nan"), 0.1), (0.1, float("nan")), (float("inf"), float("nan"))):
        assert "nan" not in chain_text(ChainGrowth(whole, half, 1, 3)) and "inf" not in chain_text(
            ChainGrowth(whole, half, 1, 3))


# ------------------------------------------------------------------ edited evidence in config.json

@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    """config.json with evidence, exported from a small labeled sample (connected clusters)."""
    from calib.production.document import write_config
    from calib.reading.samples import load_sample
    from calib.search.config import Config
    from calib.search.sweep import evaluate
    from calib.search.workspace import Workspace
    from calib.sketches.represent import Representation
    base = tmp_path_factory.mktemp("exported")
    sample = load_sample(write_labeled(base / "s"))
    cfg = Config(rep=Representation(shingle="word", k=3, num_perm=32), b=8, r=4, threshold=0.7)
    write_config(base / "config.json", cfg, evaluation=evaluate(Workspace(sample), cfg), sample=sample)
    m = json.loads((base / "config.json").read_text())["evidence"]["metrics"]
    assert m["removed"] > 0 and m["chained_removals"] >= 0
    return base / "config.json"


EVIDENCE_EDITS = {  # name -> (edit of config.json's text, the field named)
    "chained Infinity": (lambda t: _metric(t, "chained_removals", "Infinity"), "chained_removals"),
    "removed 1e400": (lambda t: _metric(t, "removed", "1e400"), "removed"),
    "chained -1000": (lambda t: _metric(t, "chained_removals", "-1000"), "chained_removals"),
    "chained NaN": (lambda t: _metric(t, "chained_removals", "NaN"), "chained_removals"),
    "chained above removed": (lambda t: _metric(t, "chained_removals", "100000"), "chained_removals"),
    "removed a fraction": (lambda t: _metric(t, "removed", "2.5"), "removed"),
    "recall above 1": (lambda t: _metric(t, "pair_recall", "3.0"), "pair_recall"),
}


def _metric(text: str, key: str, value: str) -> str:
    doc = json.loads(text)
    doc["evidence"]["metrics"][key] = "@@"
    return json.dumps(doc, indent=2).replace('"@@"', value)


@pytest.mark.parametrize("name", list(EVIDENCE_EDITS))
def test_edited_evidence_is_refused_before_apply_reads_the_corpus(exported, tmp_path, capsys, name):
    """apply wrote the manifest, then crashed on Infinity or 1e400 (OverflowError) or printed
    'against -205.8% on the sample': the figures are checked when config.json is read."""
    edit, field = EVIDENCE_EDITS[name]
    cfg = tmp_path / "config.json"
    text = exported.read_text()
    cfg.write_text(edit(text))
    assert cfg.read_text() != text
    out = tmp_path / "out"
    line = one_line(run(capsys, "apply", "--config", cfg, "--corpus", write_corpus(tmp_path / "c.jsonl"),
                        "--out", out), str(cfg), f"/evidence/metrics/{field}")
    assert "Traceback" not in line and "%" not in line
    assert not (out / "manifest.csv").exists() and not (out / "manifest.parquet").exists()


def test_unedited_evidence_still_applies(exported, tmp_path, capsys):
    code, lines = run(capsys, "apply", "--config", exported, "--corpus", write_corpus(tmp_path / "c.jsonl"),
                      "--out", tmp_path / "out")
    assert code == 0, lines


def test_the_chaining_warning_never_overflows():
    from calib.clusters.growth import chained_share_warning
    for metrics in ({"chained_removals": math.inf, "removed": 10}, {"chained_removals": 1, "removed": 1e400},
                    {"chained_removals": -1000, "removed": 485}, {"chained_removals": 50, "removed": 10}):
        assert chained_share_warning({"metrics": metrics}, 30, 100) is None


# ------------------------------------------------------------------ a Unicode table planted in a shared cache

CYRILLIC = [chr(c) for c in range(0x430, 0x450)]
OTHER_USER = 65534


def _plant(path: Path, owner: int | None = OTHER_USER) -> None:
    """A table file as calib writes it (its sha256 recomputed, as a forger would) whose lowercase map sends
    every Cyrillic letter to one letter: every Cyrillic document becomes a copy of every other."""
    from calib.sketches import unicode_tables as u
    tables = {k: v.copy() for k, v in u.base().items()}
    tables["lower"][0x400:0x530] = 0x430
    pack = getattr(u, "_pack", None)
    if pack is not None:
        path.write_bytes(pack(tables))
    else:  # a table file without a sha256, as calib wrote before
        np.savez(path.with_suffix(""), **tables)
    if owner is not None:
        os.chown(path, owner, owner)


def _shared(tmp_path: Path) -> Path:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # sticky and world-writable, as /tmp: the Spark cache's folder check accepts it
    return shared


def _cyrillic_corpus(path: Path, n: int = 400) -> Path:
    rng = random.Random(3)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            words = ["".join(rng.choice(CYRILLIC) for _ in range(6)) for _ in range(20)]  # one length: one text once mapped
            f.write(json.dumps({"id": i, "text": " ".join(words)}, ensure_ascii=False) + "\n")
    return path


@pytest.mark.slow
@pytest.mark.skipif(os.getuid() != 0, reason="placing a file as another user needs root")
def test_a_table_another_user_planted_in_a_shared_cache_changes_nothing(tmp_path, monkeypatch):
    """Another user's table in a sticky 1777 cache folder made apply report 399 of 400 Cyrillic documents as
    exact copies, without a word: it is now refused, named on stderr, and the tables rebuilt."""
    import subprocess
    import sys

    from calib.production.document import build_config_doc
    from calib.search.config import Config
    from calib.sketches import unicode_tables as u
    from calib.sketches.represent import Representation
    shared = _shared(tmp_path)
    env = {**os.environ, "CALIB_CACHE_DIR": str(shared)}
    monkeypatch.setenv("CALIB_CACHE_DIR", str(shared))
    planted = u._cache_file()
    _plant(planted)
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(build_config_doc(Config(rep=Representation(shingle="word", k=2, lowercase=True),
                                                      b=16, r=8, threshold=0.8))))
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "-m", "calib", "apply", "--config", str(cfg), "--corpus",
                        str(_cyrillic_corpus(tmp_path / "c.jsonl")), "--out", str(out)],
                       capture_output=True, text=True, cwd=REPO, env=env, timeout=600)
    assert p.returncode == 0, p.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["exact_copies"] == 0 and summary["proposed_removals"] == 0, summary
    assert f"not using the Unicode tables cached at {planted}" in p.stderr
    assert f"belongs to another user (uid {OTHER_USER})" in p.stderr


@pytest.fixture
def tables_in(tmp_path, monkeypatch):
    """base() without its in-process cache, on a cache folder of the test's, with the scan replaced by a
    marker (a scan takes seconds): base() returning the marker means the cached file was not used."""
    from calib.sketches import unicode_tables as u
    real = u.base()
    marker = {"scanned": np.zeros(1, np.uint8)}
    monkeypatch.setattr(u, "scan", lambda: marker)

    def use(folder: Path):
        monkeypatch.setenv("CALIB_CACHE_DIR", str(folder))
        return u.base.__wrapped__()
    return use, marker, real


def _refused(capsys, path) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"not using the Unicode tables cached at {path}" in err[0], err
    return err[0]


@pytest.mark.skipif(os.getuid() != 0, reason="placing a file as another user needs root")
def test_another_users_table_is_never_read(tables_in, tmp_path, capsys, monkeypatch):
    from calib.sketches import unicode_tables as u
    use, marker, _ = tables_in
    shared = _shared(tmp_path)
    monkeypatch.setenv("CALIB_CACHE_DIR", str(shared))
    _plant(u._cache_file())
    assert use(shared) is marker
    assert "belongs to another user (uid 65534)" in _refused(capsys, u._cache_file())


@pytest.mark.parametrize("damage", ["one_value_changed", "cut_short", "no_sha256", "world_writable", "a_link",
                                    "a_table_missing"])
def test_a_table_not_as_written_is_rebuilt(tables_in, tmp_path, capsys, monkeypatch, damage):
    """This user's own cache file, damaged or altered: refused (named), rebuilt, written again."""
    from calib.sketches import unicode_tables as u
    use, marker, real = tables_in
    folder = tmp_path / "cache"
    folder.mkdir()
    monkeypatch.setenv("CALIB_CACHE_DIR", str(folder))
    path = u._cache_file()
    good = u._pack(real)
    path.write_bytes(good)
    assert use(folder)["lower"][0x416] == 0x436 and capsys.readouterr().err == ""  # whole: used, nothing said
    if damage == "one_value_changed":  # the bytes of one entry, the sha256 kept
        tables = {k: v.copy() for k, v in real.items()}
        tables["lower"][0x416] = 0x430
        with np.load(io.BytesIO(good)) as z:
            seal = z["sha256"]
        buf = io.BytesIO()
        np.savez(buf, sha256=seal, **tables)
        path.write_bytes(buf.getvalue())
    elif damage == "cut_short":
        path.write_bytes(good[: len(good) // 2])
    elif damage == "no_sha256":  # a file of the layout before
        buf = io.BytesIO()
        np.savez(buf, **real)
        path.write_bytes(buf.getvalue())
    elif damage == "world_writable":
        os.chmod(path, 0o666)
    elif damage == "a_link":
        other = folder / "elsewhere.npz"
        other.write_bytes(good)
        path.unlink()
        path.symlink_to(other)
    else:
        tables = {k: v for k, v in real.items() if k != "ccc"}
        path.write_bytes(u._pack(tables))
    assert use(folder) is marker
    _refused(capsys, path)
    assert not path.is_symlink() and os.stat(path).st_mode & 0o777 == 0o644  # written again, as the scan gave


def test_a_folder_others_can_swap_files_in_is_neither_read_nor_written(tables_in, tmp_path, capsys, monkeypatch):
    from calib.sketches import unicode_tables as u
    use, marker, real = tables_in
    folder = tmp_path / "open"
    folder.mkdir()
    os.chmod(folder, 0o777)  # world-writable, no sticky bit
    monkeypatch.setenv("CALIB_CACHE_DIR", str(folder))
    path = u._cache_file()
    path.write_bytes(u._pack(real))
    os.chmod(path, 0o644)
    before = path.read_bytes()
    assert use(folder) is marker
    assert "its folder is writable by other users and has no sticky bit" in _refused(capsys, path)
    assert path.read_bytes() == before


def test_a_missing_cache_is_made_owner_only_and_then_used(tables_in, tmp_path, capsys, monkeypatch):
    from calib.sketches import unicode_tables as u
    use, marker, real = tables_in
    monkeypatch.setattr(u, "scan", lambda: real)
    folder = tmp_path / "new" / "cache"
    assert use(folder) is real and capsys.readouterr().err == ""
    assert os.stat(folder).st_mode & 0o777 == 0o700 and os.stat(u._cache_file()).st_mode & 0o777 == 0o644
    monkeypatch.setattr(u, "scan", lambda: marker)
    again = use(folder)
    assert again is not marker and all(np.array_equal(again[k], real[k]) for k in real)
    assert capsys.readouterr().err == ""


# ------------------------------------------------------------------ a drawn set's design without its digests

def _small_corpus(path: Path) -> Path:
    """60 texts of 60 words, each with versions changed at 10%, 30% and 50% of their words: pairs at every J."""
    rng = random.Random(5)
    words = [f"v{k}" for k in range(2000)]
    rows = []
    for g in range(60):
        base = [rng.choice(words) for _ in range(60)]
        rows.append(base)
        for share in (0.1, 0.3, 0.5):
            text = list(base)
            for k in rng.sample(range(60), int(60 * share)):
                text[k] = rng.choice(words)
            rows.append(text)
    rng.shuffle(rows)
    path.write_text("".join(json.dumps({"id": f"d{k}", "text": " ".join(t)}) + "\n" for k, t in enumerate(rows)))
    return path


@pytest.fixture(scope="module")
def small_draw(tmp_path_factory) -> Path:
    from calib.cli import main
    base = tmp_path_factory.mktemp("draw56")
    out = base / "set"
    assert main(["draw", "--design", "corpus", "--corpus", str(_small_corpus(base / "c.jsonl")), "--out", str(out),
                 "--pairs", "80"]) == 0
    p = pd.read_csv(out / "pairs.csv", dtype=str, keep_default_na=False)
    p["label"] = np.where(p["similarity"].astype(float) >= 0.6, "duplicate", "not_duplicate")
    p.to_csv(out / "pairs.csv", index=False)
    return out


def _set_copy(small_draw: Path, tmp_path: Path) -> Path:
    import shutil
    shutil.copytree(small_draw, tmp_path / "set")
    return tmp_path / "set"


def _design_edit(folder: Path, edit, reseal: bool = False) -> None:
    """Edit design.json; with ``reseal``, write its digests again as a forger would (they are unkeyed)."""
    from calib.reading.corpus_design import load_design
    from calib.reading.drawn_check import digests
    d = json.loads((folder / "design.json").read_text())
    edit(d)
    if reseal:
        design = load_design(json.dumps(d))
        docs = [json.loads(x) for x in (folder / "documents.jsonl").read_text().splitlines()]
        p = pd.read_csv(folder / "pairs.csv", dtype=str, keep_default_na=False)
        d["digests"] = digests(design, [x["id"] for x in docs], [x["text"] for x in docs],
                               p.assign(similarity=p["similarity"].astype(float)), np.load(folder / "candidates.npy"))
    (folder / "design.json").write_text(json.dumps(d, indent=2))


def _sweep_set(capsys, folder: Path, tmp_path: Path):
    from tests.test_cli import SMALL_GRID
    return run(capsys, "sweep", "--sample", folder, "--out", tmp_path / "r.csv", *SMALL_GRID)


def test_the_drawn_set_as_drawn_sweeps(small_draw, tmp_path, capsys):
    code, lines = _sweep_set(capsys, _set_copy(small_draw, tmp_path), tmp_path)
    assert code == 0, lines


def _no_digests(d):
    d.pop("digests")


def _no_digests_b1_r1(d):
    d.pop("digests")
    d.update(b=1, r=1)


@pytest.mark.parametrize("edit", [_no_digests, _no_digests_b1_r1])
def test_a_design_without_digests_is_refused_saying_how_to_redraw(small_draw, tmp_path, capsys, edit):
    """Digests deleted (what a set written before them looks like) and b=1, r=1: the sweep estimated on
    the edited S-curve (documents removed 207.6 -> 220.6 on the shipped corpus) and exited 0."""
    folder = _set_copy(small_draw, tmp_path)
    _design_edit(folder, edit)
    line = one_line(_sweep_set(capsys, folder, tmp_path), "design.json", "no 'digests'",
                    "calib draw --design corpus")
    assert "b, r and representation" in line
    assert not (tmp_path / "r.csv").exists()


def test_a_design_missing_one_digest_is_refused(small_draw, tmp_path, capsys):
    folder = _set_copy(small_draw, tmp_path)
    _design_edit(folder, lambda d: d["digests"].pop("candidates.npy"))
    one_line(_sweep_set(capsys, folder, tmp_path), "design.json", "no digest of candidates.npy")


RESEALED = {  # edits under digests written again to match: the loose pass is recomputed
    "b and r 1": lambda d: d.update(b=1, r=1),
    "b halved": lambda d: d.update(b=d["b"] // 2),
    "r one less": lambda d: d.update(r=d["r"] - 1),
    "seed changed": lambda d: d["rep"].update(seed=d["rep"]["seed"] + 1),
    "scheme prefix": lambda d: d.update(scheme="prefix" if d["scheme"] == "oph" else "oph"),
}


@pytest.mark.parametrize("name", list(RESEALED))
def test_an_edited_split_under_resealed_digests_is_refused_by_the_loose_pass(small_draw, tmp_path, capsys, name):
    """The digests are unkeyed and kept in the file they protect: a forger writes them again. The rows'
    places in the loose pass are recomputed from their documents' signatures under design.json's b, r and
    representation, so the edit is refused all the same, by the sweep and by --more."""
    from calib.cli import main
    folder = _set_copy(small_draw, tmp_path)
    _design_edit(folder, RESEALED[name], reseal=True)
    one_line(_sweep_set(capsys, folder, tmp_path), "design.json", "loose pass", "is not the draw's")
    code = main(["draw", "--more", "5", "--out", str(folder)])
    assert code == 2
    assert "is not the draw's" in capsys.readouterr().err


@pytest.mark.slow
def test_the_sweep_page_says_nothing_fits(tmp_path, monkeypatch):
    """The app's Sweep page on the same sample: it sweeps its form's grid whole (nothing skipped) and says
    nothing fits, without an error."""
    from test_app import start
    folder = _exact_copy_nonduplicate(tmp_path / "s")
    monkeypatch.setenv("CALIB_ALLOWED_DIRS", str(tmp_path))
    at = start()
    at.switch_page("pages/1_Sample.py").run()
    at.radio(key="sample_source_choice").set_value("Path on this machine").run()
    at.text_input(key="sample_path").set_value(str(folder)).run()
    at.button(key="load_path").click().run()
    assert at.session_state["calib_sample"].n == 4
    at.switch_page("pages/2_Sweep.py").run()
    at.button(key="run_sweep").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    warnings = [w.value for w in at.warning]
    assert len(warnings) == 1 and warnings[0].startswith("No configuration keeps the false-removal rate"), warnings
