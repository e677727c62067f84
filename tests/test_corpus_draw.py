"""calib draw --design corpus: pairs from every document of a corpus with rare duplicates.

The corpus (bench.corpora.rare: 100,000 documents, duplicate pairs about one in
a million, look-alike groups that are not duplicates) has known truth. The
loose pass runs once per module; each seed repeats only the sampling, the
labels come from the truth, and the sweep's own path (load_sample, Workspace,
evaluate) gives the weighted intervals that are checked against the truth.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench.corpora.rare import build
from calib.candidates import lsh
from calib.labeling.corpus_draw import draw_scan, scan
from calib.labeling.draw import DEFAULT_REP, more, read_drawn, write_drawn
from calib.reading.corpus_design import CorpusDesign, load_design, loose_curve, verify_pass
from calib.reading.samples import load_sample
from calib.search.config import Config
from calib.search.sweep import evaluate
from calib.search.workspace import Workspace
from calib.sketches.minhash import signatures
from calib.sketches.shingles import shingle_hashes
from calib.verification.jaccard import pairs_jaccard

ROOT = Path(__file__).resolve().parents[1]
CONFIG = Config(rep=DEFAULT_REP, b=16, r=8, threshold=0.5)
SEEDS = 20


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    corpus = build(100_000, seed=3)
    path = corpus.write(tmp_path_factory.mktemp("rare") / "docs.jsonl")
    return corpus, path, scan(path)


def truth(corpus) -> dict:
    """CONFIG's pair recall and document false-removal rate over every pair of the corpus
    (the pairs outside the planted groups have J near 0: no configuration verifies them)."""
    gi, gj, dup = corpus.group_pairs()
    rows = np.unique(np.r_[gi, gj])
    texts = [corpus.texts[k] for k in rows]
    a, b = np.searchsorted(rows, gi), np.searchsorted(rows, gj)
    J = pairs_jaccard(shingle_hashes(texts, CONFIG.rep, unique=True), a, b)
    sig = signatures(shingle_hashes(texts, CONFIG.rep, unique=True), CONFIG.rep.num_perm, CONFIG.rep.seed,
                     CONFIG.rep.scheme)
    verified = lsh.collides(sig, a, b, CONFIG.b, CONFIG.r) & (J >= CONFIG.threshold)
    # document j of a verified pair (i < j) is removed, shared by its d links >= threshold to earlier documents
    d = pd.Series(J >= CONFIG.threshold).groupby(gj).transform("sum").to_numpy()
    x = verified / np.maximum(d, 1)
    return {"pair_recall": (verified & dup).sum() / dup.sum(), "false_removal_rate": (x * ~dup).sum() / x.sum(),
            "documents_removed": x.sum(), "duplicate_pairs": int(dup.sum())}


def _labeled(drawn, corpus) -> pd.DataFrame:
    fam = dict(zip(corpus.ids, corpus.family))
    a = np.array([fam[x] for x in drawn.pairs["id_a"]])
    b = np.array([fam[x] for x in drawn.pairs["id_b"]])
    p = drawn.pairs.copy()
    p["label"] = np.where((a >= 0) & (a == b), "duplicate", "not_duplicate")
    return p


@pytest.mark.slow
def test_weighted_intervals_cover_the_corpus_truth_over_seeds(world, tmp_path):
    corpus, _, sc = world
    t = truth(corpus)
    assert 0.4 < t["pair_recall"] < 0.95 and 0.02 < t["false_removal_rate"] < 0.5  # a corpus that tests something
    assert 0.5e-6 < t["duplicate_pairs"] / (corpus_pairs := 100_000 * 99_999 / 2) < 2e-6, corpus_pairs
    hits = {"pair_recall": 0, "false_removal_rate": 0}
    for seed in range(SEEDS):
        drawn = draw_scan(sc, pairs=500, seed=seed, fetch=lambda idx: [corpus.texts[k] for k in idx])
        assert len(drawn.pairs) == 500
        write_drawn(tmp_path / "d", drawn.__class__(drawn.docs, _labeled(drawn, corpus), drawn.design,
                                                     drawn.candidates))
        row = evaluate(Workspace(load_sample(tmp_path / "d")), CONFIG).row
        for r in hits:
            lo, hi = row[f"{r}_low"], row[f"{r}_high"]
            assert row[r] - lo <= 0.10 and hi - row[r] <= 0.10, (seed, r, lo, row[r], hi)
            hits[r] += lo <= t[r] <= hi
        assert row["documents_removed_low"] <= row["documents_removed"] <= row["documents_removed_high"]
    assert hits["pair_recall"] >= 0.9 * SEEDS and hits["false_removal_rate"] >= 0.9 * SEEDS, (hits, t)


@pytest.mark.slow
def test_the_draw_reaches_every_document_and_states_its_probabilities(world):
    corpus, _, sc = world
    drawn = draw_scan(sc, pairs=500, seed=0, fetch=lambda idx: [corpus.texts[k] for k in idx])
    d = drawn.design
    assert d.corpus_docs == 100_000 and d.population[-1] == 100_000 * 99_999 // 2
    # the kept candidates hold almost every duplicate pair above 0.5 (P(0.5) = 0.98 for 120x5)
    gi, gj, dup = corpus.group_pairs()
    cand = set(zip(sc.ci.tolist(), sc.cj.tolist()))
    rows = np.unique(np.r_[gi, gj])
    J = pairs_jaccard(shingle_hashes([corpus.texts[k] for k in rows], DEFAULT_REP, unique=True),
                      np.searchsorted(rows, gi), np.searchsorted(rows, gj))
    high = J >= 0.6
    assert np.mean([(a, b) in cand for a, b in zip(gi[high], gj[high])]) > 0.99
    # inclusion probability as the design states it, pair by pair: the band is that of the verify
    # estimate Jv = K / 128, K ~ Binomial(128, J) independent of the collision (J exact, hand-summed)
    from scipy.stats import binom
    p = drawn.pairs
    J = p["similarity"].to_numpy()
    frac = np.asarray(d.drawn) / np.asarray(d.population)
    k = np.arange(129)
    band_of_k = d.stratum_index(k / 128)
    f_k = np.where(band_of_k < len(frac) - 1, frac[np.minimum(band_of_k, len(frac) - 2)], 0.0)
    pl = loose_curve(J, d.b, d.r) * np.array([(binom.pmf(k, 128, x) * f_k).sum() for x in J])
    assert np.allclose(p["inclusion_probability"], 1 - (1 - pl) * (1 - frac[-1]), rtol=1e-9)
    # each band row is a kept candidate whose Jv lies in its band
    pos = {x: k for k, x in enumerate(sc.ids)}
    key = {(a, b): e for a, b, e in zip(sc.ci.tolist(), sc.cj.tolist(), sc.ce.tolist())}
    band = (p["stratum"] != "uniform").to_numpy()
    ce = [key[tuple(sorted((pos[a], pos[b])))] for a, b in zip(p["id_a"][band], p["id_b"][band])]
    assert (np.asarray(d.strata, dtype=object)[d.stratum_index(np.asarray(ce))] == p["stratum"][band]).all()
    # the exact J is the pair's (not the estimate)
    idx = [pos[x] for x in p["id_a"]], [pos[x] for x in p["id_b"]]
    rows_ab = np.unique(np.r_[idx[0], idx[1]])
    exact = pairs_jaccard(shingle_hashes([corpus.texts[k] for k in rows_ab], DEFAULT_REP, unique=True),
                          np.searchsorted(rows_ab, idx[0]), np.searchsorted(rows_ab, idx[1]))
    assert np.allclose(J, exact)
    # documents.jsonl holds the drawn pairs' documents, texts as in the corpus
    pos = {x: k for k, x in enumerate(corpus.ids)}
    assert set(drawn.docs["id"]) == set(p["id_a"]) | set(p["id_b"])
    assert all(corpus.texts[pos[x]] == t for x, t in zip(drawn.docs["id"], drawn.docs["text"]))


def test_loose_curve_and_verify_pass_are_the_textbook_formulas():
    s = np.array([0.0, 0.3, 0.5, 0.8, 1.0])
    assert np.allclose(loose_curve(s, 120, 5), 1 - (1 - s ** 5) ** 120)
    assert np.allclose(loose_curve(s, 120, 5), lsh.s_curve(s, 120, 5))
    from scipy.stats import binom
    assert np.allclose(verify_pass(s, 128, 0.15), 1 - binom.cdf(np.ceil(128 * 0.15) - 1, 128, s))
    assert verify_pass(np.array([0.5]), 128, 0.15)[0] > 0.999999


def test_old_design_json_still_loads_as_the_document_sample_design():
    from calib.reading.design import Design
    old = Design({"shingle": "char", "k": 5}, (0.1, 0.5, 1.0), 10, 4, (1, 1, 4), (1, 1, 2), 0)
    back = load_design(old.to_json())
    assert type(back) is Design and back == old and "kind" not in json.loads(old.to_json())


def test_corpus_design_round_trips_and_refuses_bad_fields():
    d = CorpusDesign({"shingle": "char", "k": 5}, (0.3, 0.6, 1.0), 5, 2, (3, 1, 10), (1, 1, 1), 0, 120, 5,
                     later={"a\tb": [0.9]}, doc_index=(0, 4))
    back = load_design(d.to_json())
    assert back == d and back.later == d.later and back.doc_index == (0, 4)
    bad = json.loads(d.to_json())
    bad["population"][-1] = 11
    with pytest.raises(ValueError, match="uniform stratum holds 11"):
        load_design(json.dumps(bad))
    bad = json.loads(d.to_json())
    bad["bogus"] = 1
    with pytest.raises(ValueError, match="unknown field 'bogus'"):
        load_design(json.dumps(bad))


@pytest.mark.slow
def test_cli_corpus_draw_more_and_sweep_on_the_shipped_corpus(tmp_path, capsys):
    from calib.cli import main
    from tests.test_cli import SMALL_GRID
    corpus = str(ROOT / "data" / "corpus" / "docs.jsonl.gz")
    out, again = tmp_path / "drawn", tmp_path / "again"
    for o in (out, again):
        assert main(["draw", "--design", "corpus", "--corpus", corpus, "--out", str(o), "--pairs", "120",
                     "--seed", "2", "--slice-fields", "source"]) == 0
    err = capsys.readouterr().err
    assert "corpus draw: 120 pairs from all 3,005 documents" in err and "P(candidate) at lower edge" in err
    assert "documents per source:" in err and sum(read_drawn(out).design.slice_docs["source"].values()) == 3005
    for name in ("pairs.csv", "design.json", "documents.jsonl", "candidates.npy"):  # same seed, same bytes
        assert (again / name).read_bytes() == (out / name).read_bytes()
    # label by a rule (J >= 0.7 duplicate); more() draws per stratum; --more plans; the sweep reads the set
    drawn = read_drawn(again)
    p = drawn.pairs.copy()
    p["label"] = np.where(p["similarity"] >= 0.7, "duplicate", "not_duplicate")
    write_drawn(again, drawn.__class__(drawn.docs, p, drawn.design, drawn.candidates))
    grown = more(read_drawn(again), [5, 0, 0, 0, 0, 0, 0, 3])
    room = drawn.design.population[0] - drawn.design.drawn[0]
    assert len(grown.pairs) == 123 + min(5, room) and grown.design.drawn[0] == drawn.design.drawn[0] + min(5, room)
    assert set(grown.docs["id"]) == set(grown.pairs["id_a"]) | set(grown.pairs["id_b"])
    assert grown.docs["source"].notna().all()  # the new documents' slice values re-read
    assert grown.pairs.iloc[:120]["label"].tolist() == p["label"].tolist()
    write_drawn(again, grown)
    s = load_sample(again)
    assert s.design.draws == 2 and len(s.pairs) == 120 and s.n == len(grown.docs)
    assert main(["draw", "--more", "10", "--out", str(again), "--config", str(_config(tmp_path))]) == 0
    err = capsys.readouterr().err
    assert "\npair recall " in err and "(95% interval " in err and "new pairs" in err  # rates as sweep and export write them
    assert main(["sweep", "--sample", str(again), "--out", str(tmp_path / "sw.csv"), *SMALL_GRID,
                 "--by-slice", str(tmp_path / "slices.csv")]) == 0
    res = pd.read_csv(tmp_path / "sw.csv")
    assert res["pair_recall_interval"].eq("stratified").all() and res["documents_removed"].ge(0).all()
    by = pd.read_csv(tmp_path / "slices.csv", keep_default_na=False, na_values=[""])
    assert by["documents"].sum() == 3005 and set(by["column"]) == {"source"}
    assert "weighted to the corpus" in capsys.readouterr().err


def _config(tmp_path) -> Path:
    from calib.production.document import build_config_doc
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(build_config_doc(CONFIG)))
    return cfg


@pytest.mark.slow
def test_label_page_labels_a_corpus_draw_and_keeps_its_candidates(monkeypatch, tmp_path):
    import streamlit as st
    from streamlit.testing.v1 import AppTest
    from calib.labeling.corpus_draw import draw_corpus
    from calib.labeling.corpus_slices import count_slices, with_slices
    st.cache_data.clear()
    st.cache_resource.clear()
    monkeypatch.setenv("CALIB_REVIEW_DB", str(tmp_path / "reviews" / "r.sqlite"))
    monkeypatch.setenv("CALIB_ALLOWED_DIRS", str(tmp_path))
    folder = tmp_path / "drawn"
    corpus = ROOT / "data" / "corpus" / "docs.jsonl.gz"
    write_drawn(folder, with_slices(draw_corpus(corpus, pairs=40, seed=1), count_slices(corpus, ("source",))))
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
        at.switch_page("pages/7_Label.py").run()
        at.text_input(key="label_folder_input").input(str(folder)).run()
        at.text_input(key="label_reviewer").input("ann").run()
        assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
        assert any("0 of 40 drawn pairs decided" in s.value for s in at.subheader)
        for key in ("label_duplicate", "label_not_duplicate", "label_duplicate"):
            at.button(key=key).click().run()
        at.button(key="label_use").click().run()
        assert not at.exception, at.exception
        s = at.session_state["calib_sample"]
        assert isinstance(s.design, CorpusDesign) and len(s.pairs) == 3
        assert (folder / "candidates.npy").is_file() and read_drawn(folder).candidates is not None
        assert read_drawn(folder).docs["source"].notna().all() and s.slice_columns == ("source",)
        at.switch_page("pages/4_Clusters.py").run()  # the per-slice figures, weighted to the corpus
        assert not at.exception, at.exception
        assert any(h.value == "Who is removed: the corpus per slice" for h in at.subheader) and not at.error
        shown = next(d.value for d in at.dataframe if "documents_removed_share_95" in d.value.columns)
        assert sorted(shown["value"]) == ["numpy", "pandas", "scipy", "stdlib"] and shown["documents"].sum() == 3005
        at.switch_page("pages/1_Sample.py").run()  # the slice counts: drawn documents and the corpus's
        assert not at.exception, at.exception
        t = next(t.value for t in at.table if "in the corpus" in t.value.columns)
        assert t["in the corpus"].str.replace(",", "").astype(int).sum() == 3005
    finally:
        st.cache_data.clear()
        st.cache_resource.clear()


def test_corpus_draw_refuses_bad_input_in_one_line(tmp_path, capsys):
    from calib.cli import main
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "a", "text": "one two three four"}\n{"id": "a", "text": "five six seven"}\n')
    assert main(["draw", "--design", "corpus", "--corpus", str(corpus), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "duplicate document id 'a'" in err[0]
    corpus.write_text('{"id": "a", "text": "one two three four"}\n{"id": "b"}\n')
    assert main(["draw", "--design", "corpus", "--corpus", str(corpus), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "c.jsonl:2: missing field 'text'" in err[0]
    assert main(["draw", "--design", "corpus", "--corpus", str(corpus), "--out", str(tmp_path / "o"),
                 "--loose", "12by5"]) == 2
    assert "--loose '12by5': expected BxR" in capsys.readouterr().err


def test_route_probabilities_by_estimate_and_by_exact_j_are_the_hand_formulas():
    from scipy.stats import binom
    kw = dict(rep={"shingle": "char", "k": 5}, edges=(0.3, 0.6, 1.0), corpus_docs=5, sample_docs=2,
              population=(4, 2, 10), drawn=(1, 2, 1), seed=0, b=120, r=5)
    J = np.array([0.1, 0.32, 0.55, 0.62, 0.95])
    P, f = loose_curve(J, 120, 5), np.array([0.25, 1.0, 0.1])
    # by exact J (every design.json before): P Q f_h of the band of J, the old loose variance term
    old = CorpusDesign(**kw)
    pq = P * verify_pass(J, 128, 0.15)
    fh = np.array([0.0, f[0], f[0], f[1], f[1]])
    assert np.allclose(old.pair_probability(J), 1 - (1 - pq * fh) * (1 - f[2]))
    band = J >= 0.3
    assert np.allclose(old.loose_term(J)[band], (1 - pq[band]) / (pq[band] ** 2 * fh[band]))
    # by the estimate: K ~ Binomial(128, J), band of K / 128; the term is (sum p_h f_h^2 - pi_L^2) / pi_L^3
    new = CorpusDesign(**kw, strata_by="estimate")
    lo = np.array([binom.cdf(np.ceil(0.6 * 128) - 1, 128, x) - binom.cdf(np.ceil(0.3 * 128) - 1, 128, x) for x in J])
    hi = np.array([binom.sf(np.ceil(0.6 * 128) - 1, 128, x) for x in J])
    pl = P * (lo * f[0] + hi * f[1])
    assert np.allclose(new.pair_probability(J), 1 - (1 - pl) * (1 - f[2]))
    assert np.allclose(new.loose_term(J), (P * (lo * f[0] ** 2 + hi * f[1] ** 2) - pl ** 2) / pl ** 3)
    assert load_design(new.to_json()) == new and load_design(old.to_json()).strata_by == "exact"


def test_a_draw_with_bands_taken_whole_writes_probabilities_the_loader_reads(tmp_path):
    """The own-corpus tutorial's path on the shipped corpus: 500 pairs, labels, --more 200. After --more every
    band is taken whole, so many pairs have an inclusion probability of 1 up to rounding; pairs.csv never
    says more than 1 (it said 1.0000000000000002, which the loader refuses) and the folder loads."""
    from calib.cli import main

    def label() -> None:
        p = pd.read_csv(out / "pairs.csv", dtype=str, keep_default_na=False)
        p["label"] = np.where(p["similarity"].astype(float) >= 0.7, "duplicate", "not_duplicate")
        p.to_csv(out / "pairs.csv", index=False)

    out = tmp_path / "drawn"
    assert main(["draw", "--corpus", str(ROOT / "data" / "corpus" / "docs.jsonl.gz"), "--out", str(out),
                 "--pairs", "500", "--seed", "0"]) == 0
    label()
    assert main(["draw", "--more", "200", "--out", str(out), "--width", "0.05"]) == 0
    label()
    pi = pd.read_csv(out / "pairs.csv", dtype={"inclusion_probability": str})["inclusion_probability"]
    assert (pi.astype(float) <= 1).all() and not pi.str.startswith("1.00000000000000").any(), pi.max()
    assert load_sample(out).n > 0
