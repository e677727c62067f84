"""calib draw: the document reservoir, the strata, the files, and the loader reading them."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calib.cli import main
from calib.reading.design import Design
from calib.labeling.draw import DrawError, allocate, draw, more, read_drawn, representation, reservoir, write_drawn
from calib.verification.jaccard import brute_force_all_pairs
from calib.reading.samples import SampleError, load_sample
from calib.search.workspace import Workspace
from calib.sketches.shingles import shingle_hashes
from calib.clusters.truth import label_names

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample"
SMALL_GRID = ["--shingles", "char5", "--num-perm", "128", "--splits", "16x8", "--thresholds", "0.6,0.8"]


def _corpus(path: Path, n: int, empty=()) -> Path:
    with open(path, "w") as f:
        for k in range(n):
            f.write(json.dumps({"id": f"d{k}", "text": "" if k in empty else f"text number {k} " * 3}) + "\n")
    return path


def _labeled(directory: Path, oracle) -> int:
    """Fill pairs.csv's labels from the shipped sample's (its groups: same group = duplicate; a pair
    with a not-judged document stays unlabeled); returns the number of labeled pairs."""
    p = pd.read_csv(directory / "pairs.csv", dtype=str, keep_default_na=False)
    p["label"] = label_names(oracle, p["id_a"], p["id_b"])
    p.to_csv(directory / "pairs.csv", index=False)
    return int((p["label"] != "").sum())


@pytest.fixture(scope="module")
def oracle():
    return load_sample(SAMPLE)


def test_reservoir_is_uniform_and_batch_free(tmp_path):
    corpus = _corpus(tmp_path / "c.jsonl", 12, empty={3})
    counts = np.zeros(12)
    for seed in range(600):
        ids, texts, n_docs, skipped = reservoir(corpus, 4, seed, batch_size=5)
        assert (n_docs, skipped, len(ids)) == (11, 1, 4)
        assert ids == sorted(ids, key=lambda d: int(d[1:]))  # corpus order
        counts[[int(d[1:]) for d in ids]] += 1
        if seed < 20:  # the batch size never changes the sample
            assert reservoir(corpus, 4, seed, batch_size=10_000)[0] == ids
    assert counts[3] == 0  # the empty text is outside the population
    share = np.delete(counts, 3) / 600
    # each document is kept with probability 4/11; binomial sd over 600 draws is 0.0196
    assert np.all(np.abs(share - 4 / 11) < 4 * 0.0196), share


def test_allocate_fills_and_caps():
    a = allocate(100, [1000, 3, 50, 10 ** 6], uniform_share=0.2)
    assert a.sum() == 100 and a[1] == 3 and a[3] >= 20 and a[0] > 26
    assert list(allocate(10, [2, 1, 0])) == [2, 1, 0]  # more asked than there is: everything


def test_draw_strata_match_brute_force(tmp_path):
    d = draw(SAMPLE / "docs.jsonl", docs=300, pairs=120, seed=5)
    design = d.design
    assert design.sample_docs == 300 and design.corpus_docs == 2396
    sets = shingle_hashes(d.docs["text"].tolist(), representation(design), unique=True)
    _, _, s = brute_force_all_pairs(sets, design.floor)
    h = design.stratum_index(s)
    bands = np.bincount(h, minlength=len(design.strata))[:-1]
    assert list(design.population[:-1]) == list(bands)
    assert design.population[-1] == 300 * 299 // 2 - len(s)
    assert sum(design.drawn) == 120 == len(d.pairs)
    # every drawn pair is in the stratum its similarity says, with pi = pi1 m_h / N_h
    assert list(design.stratum_index(d.pairs["similarity"].to_numpy())) == [design.strata.index(x) for x in d.pairs["stratum"]]
    pi1 = 300 * 299 / (2396 * 2395)
    want = [pi1 * design.drawn[design.strata.index(x)] / design.population[design.strata.index(x)] for x in d.pairs["stratum"]]
    assert np.allclose(d.pairs["inclusion_probability"], want, rtol=1e-12)
    pairs = set(zip(d.pairs["id_a"], d.pairs["id_b"]))
    assert len(pairs) == len(d.pairs) and all(a != b for a, b in pairs)
    assert (d.pairs["label"] == "").all()


def test_files_are_deterministic_and_load(tmp_path, oracle):
    a, b = tmp_path / "a", tmp_path / "b"
    for out in (a, b):
        assert main(["draw", "--design", "sample", "--corpus", str(SAMPLE / "docs.jsonl"), "--out", str(out), "--docs", "400",
                     "--pairs", "150", "--seed", "2"]) == 0
    for name in ("documents.jsonl", "pairs.csv", "design.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert (a / "pairs.csv").read_text().splitlines()[0] == "id_a,id_b,stratum,inclusion_probability,similarity,label"
    unlabeled = load_sample(a)  # empty labels = unlabeled: nothing labeled, every row reported
    assert len(unlabeled.pairs) == 0 and (unlabeled.exclusions["reason"] == "missing label").sum() == 150
    labeled = _labeled(a, oracle)
    s = load_sample(a)
    assert 140 <= labeled < 150  # a few pairs with a not-judged document stay unlabeled, and are listed
    assert len(s.pairs) == labeled and (s.exclusions["reason"] == "missing label").sum() == 150 - labeled
    assert s.design == Design.from_json((a / "design.json").read_text())
    assert set(s.pairs["stratum"]) <= set(s.design.strata)
    out = tmp_path / "r.csv"
    assert main(["sweep", "--sample", str(a), "--out", str(out), *SMALL_GRID]) == 0
    r = pd.read_csv(out)
    assert (r["pair_recall_interval"] == "stratified").all() and r["estimates"].str.startswith("weighted").all()


def test_more_keeps_labels_and_design(tmp_path, oracle):
    d = draw(SAMPLE / "docs.jsonl", docs=500, pairs=100, seed=1)
    write_drawn(tmp_path / "d", d)
    _labeled(tmp_path / "d", oracle)
    drawn = read_drawn(tmp_path / "d")
    add = np.zeros(len(d.design.strata), dtype=int)
    add[[0, -1]] = (7, 5)
    grown = more(drawn, add)
    assert len(grown.pairs) == 112 and grown.design.drawn[0] == d.design.drawn[0] + 7
    assert grown.pairs.iloc[:100][["id_a", "id_b", "label"]].equals(drawn.pairs[["id_a", "id_b", "label"]])
    assert (grown.pairs.iloc[100:]["label"] == "").all()
    assert not grown.pairs.duplicated(["id_a", "id_b"]).any()
    pi = grown.design.inclusion_probability()
    assert np.allclose(grown.pairs["inclusion_probability"], pi[[grown.design.strata.index(x) for x in grown.pairs["stratum"]]])


def test_design_keeps_the_representation_as_its_document(tmp_path):
    """design.json holds the representation's document: the loader (below the sketching stage) keeps it as
    written, the draw builds the Representation from it and refuses, in one line, one it cannot build."""
    from calib.sketches.represent import Representation
    rep = Representation(shingle="word", k=3)
    d = draw(SAMPLE / "docs.jsonl", docs=120, pairs=20, seed=4, rep=rep)
    assert d.design.rep == rep.to_dict() and representation(d.design) == rep
    assert str(d.design).endswith("pairs in 10 strata by word3 J (floor 0.1)")
    write_drawn(tmp_path / "d", d)
    doc = json.loads((tmp_path / "d" / "design.json").read_text())
    assert doc["rep"] == rep.to_dict()
    assert read_drawn(tmp_path / "d").design == d.design == load_sample(tmp_path / "d").design
    doc["rep"] = {}  # every field at its default: the draw reads it as Representation()
    (tmp_path / "d" / "design.json").write_text(json.dumps(doc))
    assert read_drawn(tmp_path / "d").design.rep == Representation().to_dict()
    doc["rep"] = {"k": 0}
    (tmp_path / "d" / "design.json").write_text(json.dumps(doc))
    with pytest.raises(DrawError, match=r"design.json: not a calib draw design \(Representation.k \(shingle size\) "
                                        r"must be an integer >= 1, got 0\)"):
        read_drawn(tmp_path / "d")
    # the sweep builds it too, before any work: one line naming design.json and its field, from the CLI as well
    with pytest.raises(SampleError, match=r"^design.json, field 'rep': not a calib draw design \(Representation.k "):
        Workspace(load_sample(tmp_path / "d"))
    doc["rep"] = {"bogus": 1}
    (tmp_path / "d" / "design.json").write_text(json.dumps(doc))
    run = _run("sweep", "--sample", str(tmp_path / "d"), "--out", str(tmp_path / "r.csv"))
    assert run.returncode != 0 and not (tmp_path / "r.csv").exists()
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "design.json, field 'rep': not a calib draw design (unknown Representation field(s): bogus)" in run.stderr


def _run(*argv):
    return subprocess.run([sys.executable, "-m", "calib", *argv], capture_output=True, text=True, cwd=ROOT)


def test_cli_errors_are_one_line(tmp_path):
    corpus = _corpus(tmp_path / "c.jsonl", 5)
    cases = [
        (["draw", "--corpus", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "o")], "does not exist"),
        (["draw", "--design", "sample", "--corpus", str(corpus), "--out", str(tmp_path / "o"), "--docs", "1"],
         "--docs must be >= 2"),
        (["draw", "--corpus", str(corpus), "--out", str(tmp_path / "o"), "--shingle", "para3"], "word<k> or char<k>"),
        (["draw", "--design", "sample", "--corpus", str(SAMPLE / "docs.jsonl"), "--out", str(tmp_path / "o"),
          "--docs", "2360", "--edges", "0.01,1", "--max-pairs", "1000"], "more than the pair budget"),
    ]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "x"}\n{"id": "b"}\n')
    cases.append((["draw", "--corpus", str(bad), "--out", str(tmp_path / "o")], "bad.jsonl:2: missing field 'text'"))
    for argv, msg in cases:
        proc = _run(*argv)
        assert proc.returncode == 2, (argv, proc.stderr)
        assert msg in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "o").exists()


def test_loader_names_bad_design_fields(tmp_path, oracle):
    write_drawn(tmp_path / "d", draw(SAMPLE / "docs.jsonl", docs=200, pairs=30, seed=0))
    _labeled(tmp_path / "d", oracle)
    p = pd.read_csv(tmp_path / "d" / "pairs.csv", dtype=str, keep_default_na=False)
    p.loc[4, "inclusion_probability"] = "2"
    p.to_csv(tmp_path / "d" / "pairs.csv", index=False)
    with pytest.raises(SampleError, match=r"pairs.csv line 6, field .inclusion_probability.: inclusion_probability.*\(0, 1\]"):
        load_sample(tmp_path / "d")
    p.loc[4, "inclusion_probability"] = "0.5"
    p.loc[7, "stratum"] = "J0.33-0.44"
    p.to_csv(tmp_path / "d" / "pairs.csv", index=False)
    with pytest.raises(SampleError, match=r"pairs.csv line 9.*stratum 'J0.33-0.44' is not one of design.json's"):
        load_sample(tmp_path / "d")
    with pytest.raises(DrawError, match="--docs must be >= 2"):
        draw(SAMPLE / "docs.jsonl", docs=1)


def test_more_cli_proposes_and_draws(tmp_path, oracle):
    from calib.search.config import Config
    from calib.production.document import build_config_doc
    from calib.sketches.represent import Representation
    d = tmp_path / "d"
    write_drawn(d, draw(SAMPLE / "docs.jsonl", docs=500, pairs=150, seed=1))
    _labeled(d, oracle)
    p = pd.read_csv(d / "pairs.csv", dtype=str, keep_default_na=False)
    p.loc[140:, "label"] = ""  # ten drawn pairs still unlabeled (and any with a not-judged document)
    p.to_csv(d / "pairs.csv", index=False)
    waiting = int((p["label"] == "").sum())
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(build_config_doc(Config(rep=Representation(shingle="char", k=5), b=16, r=8,
                                                       threshold=0.8))))
    from calib.estimates.figures import rate_text
    from calib.production.document import load_config
    from calib.search.sweep import evaluate
    row = evaluate(Workspace(load_sample(d)), load_config(cfg)[0]).row  # the figures sweep and export print
    proc = _run("draw", "--more", "40", "--out", f"{d}/", "--config", str(cfg), "--width", "0.1")
    assert proc.returncode == 0, proc.stderr
    # each rate as sweep and export write it (a percentage with its 95% interval), from the same row
    for name, words in (("pair_recall", "pair recall"), ("false_removal_rate", "false-removal rate")):
        assert f"{words} {rate_text(row, name)}; +/-0.1 needs" in proc.stderr, proc.stderr
    assert "+/- 0.0" not in proc.stderr
    assert "_rate" not in proc.stderr.split("stratum")[0] and "//" not in proc.stderr  # words, no doubled slash
    grown = read_drawn(d)
    new = len(grown.pairs) - 150
    assert 10 <= waiting <= 20 and 40 - waiting <= new <= 40  # 40 proposed, at most the waiting ones among them
    assert grown.pairs.iloc[:150]["label"].tolist() == p["label"].tolist() and grown.pairs.iloc[140:]["label"].eq("").all()
    assert sum(grown.design.drawn) == len(grown.pairs) and grown.design.draws == 2
    assert load_sample(d).design == grown.design
    proc = _run("draw", "--more", "5", "--out", str(tmp_path / "nowhere"))
    assert proc.returncode == 2 and "not a folder written by calib draw" in proc.stderr


def test_printed_inclusion_probability_says_it_holds_the_document_sample_factor(tmp_path, capsys):
    """Every pair drawn (--pairs above the 15 pairs of 6 documents): each stratum
    is taken whole, yet its inclusion probability is 6*5/(12*11) = 0.2273, the
    chance that a corpus pair is in the document sample; the output says so."""
    corpus = _corpus(tmp_path / "c.jsonl", 12)
    assert main(["draw", "--design", "sample", "--corpus", str(corpus), "--out", str(tmp_path / "o"), "--docs", "6",
                 "--pairs", "100"]) == 0
    err = capsys.readouterr().err
    assert ("inclusion probability = drawn share (drawn / pairs of the stratum in the document sample) x "
            "document-sample factor 0.2273 (the chance that both documents of a corpus pair are among the 6 of "
            "12 documents sampled: n(n-1)/(N(N-1)))") in err
    lines = err.splitlines()
    header = next(k for k, line in enumerate(lines) if line.split()[:1] == ["stratum"])
    assert lines[header].split() == ["stratum", "pairs", "drawn", "share", "drawn", "x", "document", "factor",
                                     "inclusion", "probability"]  # in words, no snake_case
    rows = [line.split() for line in lines[header + 1:]]
    assert sum(int(r[1]) for r in rows) == 15 and sum(int(r[2]) for r in rows) == 15
    for stratum, pairs, drawn, share, factor, pi in rows:  # 30/132 = 22.7%, in words
        assert factor == "22.7%" and int(drawn) == int(pairs)
        assert (share, pi) == (("all", "22.7%") if int(pairs) else ("0%", "0%"))


def test_fraction_words():
    from calib.cli.draw import fraction_words
    # one decimal everywhere, so side by side they compare (8.4% beside 10.5%, not 8.39% beside 10.5%);
    # 1 is 100% beside "> 99.9%", not "1"
    cases = {1.0: "100%", 0.0: "0%", 0.0259: "2.6%", 0.442893: "44.3%", 0.99994: "> 99.9%", 0.999: "99.9%",
             0.001: "0.1%", 0.105: "10.5%", 0.0839: "8.4%", 2.590674e-05: "1 in 38,600",
             1.020010e-08: "1 in 98,038,255"}
    assert {x: fraction_words(x) for x in cases} == cases
    assert fraction_words(1.0, "all") == "all"


@pytest.mark.parametrize("design", ["corpus", "sample"])
def test_draw_prints_counts_and_shares_readably(tmp_path, capsys, design):
    """The shipped corpus (3,005 documents: 4,513,510 pairs): counts with thousands separators, shares and
    probabilities in words (no 1.000000, no 2.590674e-02), and the corpus design's uniform stratum says why it
    has no candidate probability."""
    extra = ["--design", "sample", "--docs", "2000"] if design == "sample" else []
    corpus = ROOT / "data" / "corpus" / "docs.jsonl.gz"
    assert main(["draw", *extra, "--corpus", str(corpus), "--out", str(tmp_path / "o"), "--pairs", "300"]) == 0
    err = capsys.readouterr().err
    assert not re.search(r"\d\.\d{5,}|\de-\d", err), err
    uniform = next(line for line in err.splitlines() if line.split()[:1] == ["uniform"])
    if design == "corpus":
        assert uniform.split()[1] == "4,513,510" and uniform.endswith("none needed: drawn from every pair")
    else:
        assert uniform.split()[1] == "1,996,345" and re.search(r" 1 in [\d,]+ +44\.3% +1 in [\d,]+$", uniform)
    assert json.loads((tmp_path / "o" / "design.json").read_text()).get("kind") == (
        "corpus" if design == "corpus" else None)


def test_draw_defaults_to_the_corpus_design_and_refuses_docs_without_the_sample_design(tmp_path):
    """The corpus design is the default; --docs, which only the document-sample design reads, is refused
    without --design sample (in one line, before any work) rather than ignored."""
    proc = _run("draw", "--corpus", str(ROOT / "data" / "corpus" / "docs.jsonl.gz"), "--out", str(tmp_path / "o"),
                "--docs", "2000")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "--docs sizes the document sample of --design sample" in proc.stderr
    assert not (tmp_path / "o").exists()
