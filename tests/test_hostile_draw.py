"""Hostile input to the corpus draw and its files: a drawn set edited after the draw, a
corpus changed under ``--more``, options beyond reason, corrupt corpora, odd ids and values.

Every drawn set here is made by the real ``calib draw --design corpus`` on the shipped
corpus (``data/corpus/docs.jsonl.gz``, 3,005 documents) or on a small corpus written by
the test; each hostile edit must give exit status 2 and one line naming the file (and
line and field), before any estimate is written.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calib.cli import main
from tests.test_cli import SMALL_GRID

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "data" / "corpus" / "docs.jsonl.gz"


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def _label(folder: Path) -> None:
    """Label pairs.csv by a rule (J >= 0.7 duplicate), as a person editing the label column would."""
    p = pd.read_csv(folder / "pairs.csv", dtype=str, keep_default_na=False)
    p["label"] = np.where(p["similarity"].astype(float) >= 0.7, "duplicate", "not_duplicate")
    p.to_csv(folder / "pairs.csv", index=False)


def _config(tmp_path) -> Path:
    from calib.production.document import build_config_doc
    from calib.search.config import Config
    from calib.sketches.represent import Representation
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(build_config_doc(Config(rep=Representation(shingle="char", k=5), b=16, r=8,
                                                      threshold=0.5))))
    return cfg


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> Path:
    """A labeled corpus draw of the shipped corpus, drawn from a copy of it."""
    base = tmp_path_factory.mktemp("drawn")
    corpus = base / "docs.jsonl.gz"
    shutil.copy(CORPUS, corpus)
    out = base / "set"
    assert main(["draw", "--design", "corpus", "--corpus", str(corpus), "--out", str(out), "--pairs", "200"]) == 0
    _label(out)
    return out


def _copy(drawn: Path, tmp_path: Path) -> Path:
    out = tmp_path / "set"
    shutil.copytree(drawn, out)
    return out


def _sweep(folder: Path, tmp_path: Path) -> int:
    return main(["sweep", "--sample", str(folder), "--out", str(tmp_path / "sweep.csv"), *SMALL_GRID])


def _edit_design(folder: Path, edit) -> None:
    d = json.loads((folder / "design.json").read_text())
    edit(d)
    (folder / "design.json").write_text(json.dumps(d, indent=2))


def _band(d: dict, name: str) -> int:
    return d["strata"].index(name)


def _raise_population(d):
    d["population"][_band(d, "J0.90-1.00")] = 14300


def _times_1000(d):
    d["population"][:-1] = [p * 1000 for p in d["population"][:-1]]


DESIGN_EDITS = {  # edit -> (file named, text in the line)
    "population raised": (_raise_population, "design.json", "field 'population'"),
    "populations x1000": (_times_1000, "design.json", "field 'population'"),
    "verify_hashes 0": (lambda d: d.update(verify_hashes=0), "design.json", "verify_hashes"),
    "verify_hashes 10**9": (lambda d: d.update(verify_hashes=10**9), "design.json", "verify_hashes"),
    "verify_hashes 64": (lambda d: d.update(verify_hashes=64), "candidates.npy", "verify_hashes 64"),
    "b and r 1": (lambda d: d.update(b=1, r=1), "design.json", "not those calib draw wrote"),
    "rep.k changed": (lambda d: d["rep"].update(k=3), "design.json", "not those calib draw wrote"),
    "later emptied": (lambda d: d.update(later={}), "design.json", "field 'later'"),
    "later strings": (lambda d: d.update(later={k: ["x"] for k in d["later"]}), "design.json", "later"),
    "doc_index text": (lambda d: d.update(doc_index="0,1,2"), "design.json", "doc_index"),
    "doc_index shifted": (lambda d: d.update(doc_index=[x + 1 for x in d["doc_index"]]), "pairs.csv",
                          "no candidate of candidates.npy"),
    "corpus a number": (lambda d: d.update(corpus=7), "design.json", "corpus"),
    "corpus_docs halved": (lambda d: d.update(corpus_docs=d["corpus_docs"] // 2), "design.json", "uniform stratum"),
}


@pytest.mark.parametrize("name", list(DESIGN_EDITS))
def test_an_edited_design_json_is_refused_by_the_sweep_in_one_line(drawn, tmp_path, capsys, name):
    edit, file, text = DESIGN_EDITS[name]
    folder = _copy(drawn, tmp_path)
    _edit_design(folder, edit)
    assert _sweep(folder, tmp_path) == 2
    line = _one_line(capsys)
    assert file in line and text in line, line
    assert not (tmp_path / "sweep.csv").exists()


def _rows_to_one_band(p: pd.DataFrame) -> pd.DataFrame:
    band = p["stratum"] != "uniform"
    p.loc[band, "stratum"] = "J0.30-0.40"
    return p


def _one_row_next_band(p: pd.DataFrame) -> pd.DataFrame:
    k = int(np.flatnonzero(p["stratum"].eq("J0.90-1.00"))[0])
    p.loc[k, "stratum"] = "J0.80-0.90"
    return p


def _similarity_edited(p: pd.DataFrame) -> pd.DataFrame:
    k = int(np.flatnonzero(p["stratum"].eq("uniform"))[0])
    p.loc[k, "similarity"] = "0.95"
    return p


PAIR_EDITS = {
    "every band row in one stratum": (_rows_to_one_band, "field 'stratum'"),
    "one row's stratum": (_one_row_next_band, "field 'stratum'"),
    "a similarity": (_similarity_edited, "later"),
}


@pytest.mark.parametrize("name", list(PAIR_EDITS))
def test_an_edited_pairs_csv_is_refused_by_the_sweep(drawn, tmp_path, capsys, name):
    edit, text = PAIR_EDITS[name]
    folder = _copy(drawn, tmp_path)
    p = pd.read_csv(folder / "pairs.csv", dtype=str, keep_default_na=False)
    edit(p).to_csv(folder / "pairs.csv", index=False)
    assert _sweep(folder, tmp_path) == 2
    line = _one_line(capsys)
    assert text in line and ("pairs.csv" in line or "design.json" in line), line


def test_a_drawn_documents_text_replaced_is_refused(drawn, tmp_path, capsys):
    folder = _copy(drawn, tmp_path)
    p = pd.read_csv(folder / "pairs.csv", dtype=str, keep_default_na=False)
    top = p[p["stratum"].eq("J0.90-1.00")].iloc[0]
    docs = [json.loads(x) for x in (folder / "documents.jsonl").read_text().splitlines()]
    other = next(d["text"] for d in docs if d["id"] not in (top["id_a"], top["id_b"]))
    for d in docs:
        if d["id"] == top["id_b"]:
            d["text"] = other
    (folder / "documents.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    assert _sweep(folder, tmp_path) == 2
    assert "documents.jsonl" in _one_line(capsys)
    assert main(["draw", "--more", "5", "--out", str(folder), "--config", str(_config(tmp_path))]) == 2
    assert "documents.jsonl" in _one_line(capsys)


def test_a_replaced_text_under_recomputed_digests_is_refused_by_its_similarity(drawn, tmp_path, capsys):
    """A forger who also rewrites design.json's digests: each row's J is recomputed from its texts."""
    from calib.reading.corpus_design import load_design
    from calib.reading.drawn_check import digests
    folder = _copy(drawn, tmp_path)
    p = pd.read_csv(folder / "pairs.csv", dtype=str, keep_default_na=False)
    top = p[p["stratum"].eq("J0.90-1.00")].iloc[0]
    docs = [json.loads(x) for x in (folder / "documents.jsonl").read_text().splitlines()]
    for d in docs:
        if d["id"] == top["id_b"]:
            d["text"] = "a text put in its place"
    (folder / "documents.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    design = load_design((folder / "design.json").read_text())
    pairs = p.assign(similarity=p["similarity"].astype(float))
    cand = np.load(folder / "candidates.npy")
    sealed = json.loads((folder / "design.json").read_text())
    sealed["digests"] = digests(design, [d["id"] for d in docs], [d["text"] for d in docs], pairs, cand)
    (folder / "design.json").write_text(json.dumps(sealed))
    assert _sweep(folder, tmp_path) == 2
    line = _one_line(capsys)
    assert "pairs.csv" in line and "field 'similarity'" in line and "documents.jsonl texts give J" in line, line
    assert main(["draw", "--more", "5", "--out", str(folder), "--config", str(_config(tmp_path))]) == 2
    assert "documents.jsonl texts give J" in _one_line(capsys)


def test_labels_alone_may_change_and_the_estimate_stays_within_the_corpus(drawn, tmp_path, capsys):
    folder = _copy(drawn, tmp_path)
    assert _sweep(folder, tmp_path) == 0
    res = pd.read_csv(tmp_path / "sweep.csv")
    assert res["documents_removed_high"].le(3005).all() and res["documents_removed_share_high"].le(1).all()


def test_documents_removed_is_clipped_to_the_corpus():
    """A rare uniform pair weighs N(N-1)/2 / m: a Horvitz-Thompson total above the corpus's N, clipped to N."""
    from calib.estimates.corpus_weighted import corpus_total, rates
    from calib.reading.corpus_design import CorpusDesign
    N = 10
    design = CorpusDesign({"shingle": "char", "k": 5}, (0.3, 0.6, 1.0), N, 2, (0, 0, 45), (0, 0, 1), 0, 120, 5)
    frame = pd.DataFrame({"h": [2], "similarity": [0.0], "duplicate": [False], "candidate": [True],
                          "verified": [True], "removal": [1.0]})
    assert corpus_total(frame, design, frame["removal"].to_numpy(float))[0] == pytest.approx(45.0)
    row = rates(frame, design)
    assert row["documents_removed"] == N and row["documents_removed_high"] == N
    assert row["documents_removed_share"] == 1.0
    # per slice: at most the slice's documents (design.json's slice_docs)
    from dataclasses import replace
    from calib.estimates.corpus_slices import slice_table
    design = replace(design, slice_docs={"lang": {"en": 4, "de": 6}})
    t = slice_table(frame.assign(i=[0], j=[1]), design, pd.DataFrame({"lang": ["en", "en"]}))
    en = t[t["value"] == "en"].iloc[0]
    assert en["documents_removed"] == 4 and en["documents_removed_high"] == 4 and en["documents_removed_share"] == 1


# -- draw --more: the corpus by its path and digest, documents by id ------------------------------

def _prepend(src: Path, dst: Path, line: dict) -> None:
    with gzip.open(src, "rb") as fh:
        body = fh.read()
    with gzip.open(dst, "wb") as fh:
        fh.write((json.dumps(line) + "\n").encode() + body)


def test_more_reads_the_corpus_by_its_absolute_path_from_any_folder(tmp_path, capsys, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "data").mkdir(parents=True)
    (b / "data").mkdir(parents=True)
    shutil.copy(CORPUS, a / "data" / "docs.jsonl.gz")
    monkeypatch.chdir(a)
    assert main(["draw", "--design", "corpus", "--corpus", "data/docs.jsonl.gz", "--out", "set", "--pairs",
                 "120"]) == 0
    _label(a / "set")
    # another folder holding another corpus of the same name and ids: never read
    _prepend(CORPUS, b / "data" / "docs.jsonl.gz", {"id": "planted", "text": "a planted document"})
    monkeypatch.chdir(b)
    capsys.readouterr()
    assert main(["draw", "--more", "6", "--out", str(a / "set"), "--config", str(_config(tmp_path))]) == 0
    assert "new pairs" in capsys.readouterr().err
    docs = pd.read_json(a / "set" / "documents.jsonl", lines=True, dtype=False)
    assert "planted" not in set(docs["id"]) and docs["id"].is_unique
    assert json.loads((a / "set" / "design.json").read_text())["corpus"] == str(a / "data" / "docs.jsonl.gz")
    assert _sweep(a / "set", tmp_path) == 0


def test_more_refuses_a_corpus_that_changed_since_the_draw(drawn, tmp_path, capsys):
    folder = _copy(drawn, tmp_path)
    corpus = Path(json.loads((folder / "design.json").read_text())["corpus"])
    saved = tmp_path / "saved.jsonl.gz"
    shutil.copy(corpus, saved)
    try:
        _prepend(saved, corpus, {"id": "new-first", "text": "a document added at the start since the draw"})
        assert main(["draw", "--more", "10", "--out", str(folder), "--config", str(_config(tmp_path))]) == 2
        line = _one_line(capsys)
        assert str(corpus) in line and "not the corpus this set was drawn from" in line
    finally:
        shutil.copy(saved, corpus)
    # the corpus moved: --corpus names where it is now, checked by its bytes
    moved = tmp_path / "moved.jsonl.gz"
    shutil.copy(saved, moved)
    assert main(["draw", "--more", "10", "--out", str(folder), "--config", str(_config(tmp_path)),
                 "--corpus", str(moved)]) == 0
    assert "new pairs" in capsys.readouterr().err


def test_more_addresses_documents_by_id_when_the_design_has_no_corpus_digest(drawn, tmp_path, capsys):
    """A set written before corpus digests: the drawn documents must still be at their places."""
    from calib.labeling.draw import read_drawn, write_drawn
    from dataclasses import replace
    folder = _copy(drawn, tmp_path)
    corpus = tmp_path / "c.jsonl.gz"
    _prepend(CORPUS, corpus, {"id": "new-first", "text": "a document added at the start since the draw"})
    d = read_drawn(folder)
    write_drawn(folder, replace(d, design=replace(d.design, corpus=str(corpus), corpus_sha256="")))
    assert main(["draw", "--more", "10", "--out", str(folder), "--config", str(_config(tmp_path))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "error:" in err[-1] and "the corpus changed since the draw" in err[-1] and "new-first" in err[-1]


# -- candidates.npy ------------------------------------------------------------------------------

def _edit_candidates(folder: Path, edit) -> None:
    c = np.load(folder / "candidates.npy")
    np.save(folder / "candidates.npy", edit(c.copy()), allow_pickle=False)


def _out_of_range(c):
    c["j"][-1] = 10**7
    return c


def _nan(c):
    c["J"][::2] = np.nan
    return c


CANDIDATE_EDITS = {"indices out of range": (_out_of_range, "corpus_docs"), "emptied": (lambda c: c[:0], "population"),
                   "NaN estimates": (_nan, "not a number")}


@pytest.mark.parametrize("name", list(CANDIDATE_EDITS))
def test_an_edited_candidates_file_is_refused_naming_it(drawn, tmp_path, capsys, name):
    edit, text = CANDIDATE_EDITS[name]
    folder = _copy(drawn, tmp_path)
    _edit_candidates(folder, edit)
    assert main(["draw", "--more", "10", "--out", str(folder), "--config", str(_config(tmp_path))]) == 2
    line = _one_line(capsys)
    assert "candidates.npy" in line and text in line, line
    assert _sweep(folder, tmp_path) == 2
    assert "candidates.npy" in _one_line(capsys)


# -- crashes, hangs, options ------------------------------------------------------------------

def test_a_bucket_of_a_million_identical_documents_is_refused_without_walking_its_pairs():
    """1,000,000 identical documents share every band key: 5e11 pairs in one bucket, counted as
    n(n-1)/2, not walked (the walk took past 900 s)."""
    import subprocess
    import sys
    code = (
        "import numpy as np\n"
        "from calib.labeling.loose_pass import LoosePass, TooManyLoosePairs, candidates\n"
        "n = 1_000_000\n"
        "lp = LoosePass([str(k) for k in range(n)], np.arange(n), np.zeros((4, n), np.uint32),\n"
        "               np.zeros((n, 8), np.uint32), np.ones(n, bool), 0)\n"
        "try:\n"
        "    candidates(lp, 0.15, 50_000_000)\n"
        "except TooManyLoosePairs as exc:\n"
        "    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert "collides 499,999,500,000 pairs in band 1 of 4" in out.stdout, out.stderr[-2000:]


def _small_corpus(path: Path, n: int = 60, extra=None, blank_at=None) -> Path:
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    lines = []
    for k in range(n):
        rec = {"id": f"d{k}", "text": " ".join(words[(k + t) % len(words)] for t in range(8)) + f" doc {k}"}
        rec.update((extra or {}).get(k, {}))
        lines.append(json.dumps(rec))
    if blank_at is not None:
        lines.insert(blank_at - 1, "")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("argv, text", [
    (["--pairs", "1000000000000"], "--pairs must be in [1, 1,000,000]"),
    (["--max-pairs", "-5"], "--max-pairs must be >= 1"),
    (["--max-pairs", "0"], "--max-pairs must be >= 1"),
])
def test_draw_options_are_refused_before_any_pass(tmp_path, capsys, argv, text):
    corpus = _small_corpus(tmp_path / "c.jsonl", extra={k: {"lang": "en"} for k in range(60)})
    # the slice pass reads the corpus first: an option refused after it would be refused after a pass
    assert main(["draw", "--design", "corpus", "--corpus", str(corpus), "--out", str(tmp_path / "o"),
                 "--slice-fields", "lang", *argv]) == 2
    assert text in _one_line(capsys)


def test_more_refuses_its_options_and_files_before_the_sweep(drawn, tmp_path, capsys):
    folder = _copy(drawn, tmp_path)
    for budget in ("nan", "-1"):
        assert main(["draw", "--more", "10", "--out", str(folder), "--budget", budget]) == 2
        assert "--budget must be a rate in [0, 1]" in _one_line(capsys)
    (folder / "candidates.npy").unlink()
    assert main(["draw", "--more", "10", "--out", str(folder)]) == 2
    line = _one_line(capsys)  # refused before the recommendation's sweep printed anything
    assert "candidates.npy" in line and "no such file" in line


def _corrupt_gz(path: Path) -> Path:
    raw = bytearray(CORPUS.read_bytes())
    for k in range(1000, 1064):  # inside the first deflate block: zlib's "invalid distance too far back"
        raw[k] ^= 0xFF
    path.write_bytes(bytes(raw))
    return path


def test_a_corrupt_gzip_corpus_is_one_line_with_the_byte_offset(tmp_path, capsys):
    bad = _corrupt_gz(tmp_path / "bad.jsonl.gz")
    assert main(["draw", "--design", "corpus", "--corpus", str(bad), "--out", str(tmp_path / "o")]) == 2
    line = _one_line(capsys)
    assert str(bad) in line and "corrupt gzip data at compressed byte 1,0" in line, line
    assert main(["apply", "--config", str(_config(tmp_path)), "--corpus", str(bad), "--out",
                 str(tmp_path / "a")]) == 2
    line = _one_line(capsys)
    assert str(bad) in line and "corrupt gzip data at compressed byte 1,0" in line, line


@pytest.mark.parametrize("value, text", [("(missing)", "names the documents without a value"),
                                         (["en", "de"], "a list, not one value"),
                                         ({"a": 1}, "an object, not one value")])
def test_a_slice_value_that_is_not_one_value_is_refused_before_the_draw(tmp_path, capsys, value, text):
    extra = {k: {"lang": "en" if k % 2 else "de"} for k in range(60)}
    extra[41] = {"lang": value}
    corpus = _small_corpus(tmp_path / "c.jsonl", extra=extra)
    assert main(["draw", "--design", "corpus", "--corpus", str(corpus), "--out", str(tmp_path / "o"),
                 "--slice-fields", "lang"]) == 2
    line = _one_line(capsys)
    assert f"{corpus}:42: field 'lang'" in line and text in line, line
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("design", ["corpus", "sample"])
def test_an_id_holding_nul_is_refused_when_drawing(tmp_path, capsys, design):
    corpus = _small_corpus(tmp_path / "c.jsonl", extra={7: {"id": "d\u00007"}})
    assert main(["draw", "--design", design, "--corpus", str(corpus), "--out", str(tmp_path / "o")]) == 2
    line = _one_line(capsys)
    assert f"{corpus}:8: field 'id'" in line and "NUL" in line, line


def test_export_from_sweep_refuses_a_recommended_row_over_the_budget(tmp_path, capsys):
    sample = str(ROOT / "data" / "sample")
    res = tmp_path / "r.csv"
    assert main(["sweep", "--sample", sample, "--out", str(res), *SMALL_GRID]) == 0
    t = pd.read_csv(res)
    other = int(np.flatnonzero(~t["recommended"] & t["status"].eq("ok"))[0])
    t["recommended"] = False
    t.loc[other, "recommended"] = True
    t.loc[other, "false_removal_rate"] = 0.074  # the edit the probe made: a row over the budget marked
    t.to_csv(res, index=False)
    capsys.readouterr()
    assert main(["export", "--sample", sample, "--from-sweep", str(res), "--out", str(tmp_path / "e")]) == 2
    line = _one_line(capsys)
    assert "marked recommended" in line and "0.0740 exceeds --budget 0.01" in line, line
    assert not (tmp_path / "e").exists()


def test_a_duplicate_id_is_named_by_its_lines(tmp_path, capsys):
    corpus = _small_corpus(tmp_path / "c.jsonl", extra={48: {"id": "d3"}}, blank_at=2)
    assert main(["draw", "--design", "corpus", "--corpus", str(corpus), "--out", str(tmp_path / "o")]) == 2
    assert "duplicate document id 'd3' (lines 5 and 50)" in _one_line(capsys)
    assert main(["apply", "--config", str(_config(tmp_path)), "--corpus", str(corpus), "--out",
                 str(tmp_path / "a")]) == 2
    assert "duplicate document id 'd3' (lines 5 and 50)" in _one_line(capsys)


def test_a_corrupt_parquet_corpus_names_the_file(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq
    docs = [json.loads(x) for x in gzip.open(CORPUS, "rt")][:2000]
    path = tmp_path / "c.parquet"
    pq.write_table(pa.table({"id": [d["id"] for d in docs], "text": [d["text"] for d in docs]}), path,
                   compression="snappy")
    raw = bytearray(path.read_bytes())
    for k in range(2000, 2400):
        raw[k] ^= 0x5A
    path.write_bytes(bytes(raw))
    assert main(["draw", "--design", "corpus", "--corpus", str(path), "--out", str(tmp_path / "o")]) == 2
    line = _one_line(capsys)
    assert str(path) in line and "not a readable Parquet file" in line, line


def test_a_corpus_design_of_a_newer_format_says_so(drawn, tmp_path, capsys):
    folder = _copy(drawn, tmp_path)
    _edit_design(folder, lambda d: d.update(format=2))
    assert _sweep(folder, tmp_path) == 2
    assert "written by a newer calib" in _one_line(capsys)


@pytest.mark.slow
def test_the_label_page_refuses_an_edited_drawn_set_in_one_line(drawn, tmp_path, monkeypatch):
    import streamlit as st
    from streamlit.testing.v1 import AppTest
    st.cache_data.clear()
    st.cache_resource.clear()
    monkeypatch.setenv("CALIB_REVIEW_DB", str(tmp_path / "reviews" / "r.sqlite"))
    monkeypatch.setenv("CALIB_ALLOWED_DIRS", str(tmp_path))
    folder = _copy(drawn, tmp_path)
    _edit_design(folder, _raise_population)
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
        at.switch_page("pages/7_Label.py").run()
        at.text_input(key="label_folder_input").input(str(folder)).run()
        assert not at.exception, at.exception
        errors = [e.value for e in at.error]
        assert any("design.json" in e and "population" in e for e in errors), errors
        assert not any("drawn pairs decided" in s.value for s in at.subheader)
    finally:
        st.cache_data.clear()
        st.cache_resource.clear()
