"""Per-slice answers of a corpus draw (calib draw --design corpus --slice-fields).

A generated corpus (bench.corpora.rare) with two slice fields and known truth:
each duplicate family and look-alike group takes one language (a few members
another, so some pairs cross two values) and a source that is sometimes
missing. The loose pass runs once per module; each seed repeats the draw, the
labels come from the truth, and the sweep's own path (load_sample, Workspace,
evaluate) gives the per-slice estimates checked against the brute-force truth.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench.corpora.rare import build
from calib.candidates import lsh
from calib.estimates.corpus_slices import corpus_slice_table, slice_table
from calib.labeling.corpus_draw import draw_scan, scan
from calib.labeling.corpus_slices import count_slices, with_slices
from calib.labeling.draw import DEFAULT_REP, read_drawn, write_drawn
from calib.reading.corpus_design import CorpusDesign, load_design
from calib.reading.samples import load_sample
from calib.search.config import Config
from calib.search.sweep import evaluate
from calib.search.workspace import Workspace
from calib.sketches.minhash import signatures
from calib.sketches.shingles import shingle_hashes
from calib.verification.jaccard import pairs_jaccard

CONFIG = Config(rep=DEFAULT_REP, b=16, r=8, threshold=0.5)
LANGS = np.array(["de", "en", "fr"])
SEEDS = 10


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return _sliced(tmp_path_factory, 6_000, 900)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return _sliced(tmp_path_factory, 800, 150)


def _sliced(tmp_path_factory, n_docs: int, dup_pairs: int):
    corpus = build(n_docs, seed=11, dup_pairs=dup_pairs, lookalikes=0.6)
    rng = np.random.default_rng(4)
    n = len(corpus.ids)
    group = np.where(corpus.family >= 0, corpus.family, np.where(corpus.lookalike >= 0, 10_000 + corpus.lookalike, -1))
    lang_of_group = LANGS[rng.choice(3, size=20_000, p=[0.3, 0.55, 0.15])]
    lang = np.where(group >= 0, lang_of_group[np.maximum(group, 0)], LANGS[rng.choice(3, size=n, p=[0.3, 0.55, 0.15])])
    lang = np.where(rng.random(n) < 0.1, LANGS[rng.integers(0, 3, n)], lang)  # some pairs cross two languages
    source = np.where(rng.random(n) < 0.2, None, np.where(rng.random(n) < 0.5, "web", "books"))
    path = tmp_path_factory.mktemp("sliced") / "docs.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for d, t, la, so in zip(corpus.ids, corpus.texts, lang, source):
            fh.write(json.dumps({"id": d, "text": t, "lang": str(la), **({} if so is None else {"source": so})}) + "\n")
    return corpus, path, scan(path), count_slices(path, ("lang", "source")), lang


def truth(corpus, lang) -> dict:
    """CONFIG's figures per language over every pair of the corpus (brute force over the planted
    groups: the other pairs have J near 0, no configuration verifies them)."""
    gi, gj, dup = corpus.group_pairs()
    rows = np.unique(np.r_[gi, gj])
    sets = shingle_hashes([corpus.texts[k] for k in rows], CONFIG.rep, unique=True)
    a, b = np.searchsorted(rows, gi), np.searchsorted(rows, gj)
    J = pairs_jaccard(sets, a, b)
    sig = signatures(sets, CONFIG.rep.num_perm, CONFIG.rep.seed, CONFIG.rep.scheme)
    verified = lsh.collides(sig, a, b, CONFIG.b, CONFIG.r) & (J >= CONFIG.threshold)
    d = pd.Series(J >= CONFIG.threshold).groupby(gj).transform("sum").to_numpy()
    x = verified / np.maximum(d, 1)
    out = {}
    for v in LANGS:
        both, rem = (lang[gi] == v) & (lang[gj] == v), lang[gj] == v
        out[v] = {"pair_recall": (verified & dup & both).sum() / (dup & both).sum(),
                  "false_removal_rate": (x * ~dup * rem).sum() / (x * rem).sum(),
                  "documents_removed": (x * rem).sum(), "duplicates": int((dup & both).sum())}
    return out


def _labeled(drawn, corpus):
    fam = dict(zip(corpus.ids, corpus.family))
    a = np.array([fam[x] for x in drawn.pairs["id_a"]])
    b = np.array([fam[x] for x in drawn.pairs["id_b"]])
    return drawn.__class__(drawn.docs, drawn.pairs.assign(label=np.where((a >= 0) & (a == b), "duplicate",
                                                                         "not_duplicate")),
                           drawn.design, drawn.candidates)


@pytest.mark.slow
def test_per_slice_intervals_cover_the_truth_over_seeds(world, tmp_path):
    corpus, _, sc, counts, lang = world
    t = truth(corpus, lang)
    assert all(t[v]["duplicates"] >= 40 and 0.02 < t[v]["false_removal_rate"] < 0.6 for v in LANGS), t
    assert len({round(t[v]["pair_recall"], 2) for v in LANGS}) > 1  # the values differ: the slices tell something
    hits, checks, widths = {}, {}, []
    for seed in range(SEEDS):
        drawn = with_slices(draw_scan(sc, pairs=500, seed=seed, fetch=lambda idx: [corpus.texts[k] for k in idx]),
                            counts)
        write_drawn(tmp_path / "d", _labeled(drawn, corpus))
        ws = Workspace(load_sample(tmp_path / "d"))
        ev = evaluate(ws, CONFIG)
        table = corpus_slice_table(ws, CONFIG, ev.clustering)
        lang_rows = table[table["column"] == "lang"].set_index("value")
        for v in LANGS:
            row = lang_rows.loc[v]
            assert row["documents"] == int((lang == v).sum())
            for name in ("pair_recall", "false_removal_rate", "documents_removed"):
                lo, hi = row[f"{name}_low"], row[f"{name}_high"]
                assert lo - 1e-9 <= row[name] <= hi + 1e-9, (seed, v, name, lo, row[name], hi)
                hits[name] = hits.get(name, 0) + (lo - 1e-9 <= t[v][name] <= hi + 1e-9)
                checks[name] = checks.get(name, 0) + 1
            widths.append(row["pair_recall_high"] - row["pair_recall_low"])
            share = row["documents_removed_share"] * row["documents"]
            assert share == pytest.approx(row["documents_removed"])
    # 95% intervals: each figure holds the truth in at least 85% of the seeds x languages
    assert all(hits[k] >= 0.85 * checks[k] for k in hits), (hits, checks, t)
    assert np.median(widths) < 0.5, widths


def test_a_slice_holding_every_document_gives_the_overall_figures(small, tmp_path):
    """Domain estimation restricted to the whole corpus is the overall estimate, to the last digit."""
    from calib.estimates.corpus_weighted import rates
    corpus, _, sc, counts, _ = small
    drawn = _labeled(draw_scan(sc, pairs=150, seed=3, fetch=lambda idx: [corpus.texts[k] for k in idx]), corpus)
    write_drawn(tmp_path / "one", drawn)
    ws = Workspace(load_sample(tmp_path / "one"))
    ev = evaluate(ws, CONFIG)
    from calib.estimates.design_weighted import design_pairs
    frame = design_pairs(ws, CONFIG, ev.clustering)
    every = pd.DataFrame({"all": np.full(ws.sample.n, "x", dtype=object)})
    design = replace(ws.sample.design, slice_docs={"all": {"x": ws.sample.design.corpus_docs}})
    row = slice_table(frame, design, every).iloc[0]
    overall = rates(frame, design)
    for name in ("pair_recall", "pair_precision", "false_removal_rate", "documents_removed", "documents_removed_share"):
        for s in ("", "_low", "_high"):
            assert row[f"{name}{s}"] == pytest.approx(overall[f"{name}{s}"], rel=1e-12, nan_ok=True), (name, s)


def test_slice_counts_are_recorded_and_old_designs_still_load(small, tmp_path):
    corpus, path, sc, counts, lang = small
    drawn = with_slices(draw_scan(sc, pairs=60, seed=1, fetch=lambda idx: [corpus.texts[k] for k in idx]), counts)
    d = drawn.design
    assert d.slice_docs["lang"] == {v: int((lang == v).sum()) for v in LANGS}
    assert sum(d.slice_docs["source"].values()) == d.corpus_docs and "(missing)" in d.slice_docs["source"]
    write_drawn(tmp_path / "s", drawn)
    back = read_drawn(tmp_path / "s")
    assert back.design == d and back.design.slice_docs == d.slice_docs
    pos = {x: k for k, x in enumerate(corpus.ids)}
    assert list(back.docs["lang"]) == [lang[pos[x]] for x in back.docs["id"]]
    s = load_sample(tmp_path / "s")
    assert set(s.slice_columns) == {"lang", "source"}
    # a design.json written before slice_docs existed loads, with none
    old = json.loads(d.to_json())
    del old["slice_docs"]
    assert load_design(json.dumps(old)).slice_docs == {}
    bad = json.loads(d.to_json())
    bad["slice_docs"]["lang"]["en"] += 1
    with pytest.raises(ValueError, match="slice_docs\\['lang'\\] counts"):
        load_design(json.dumps(bad))


def test_slice_field_errors_are_one_line(tmp_path, capsys, monkeypatch):
    from calib.cli import main
    from calib.labeling import corpus_slices
    from calib.labeling.drawn import DrawError
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "a", "text": "one two three four", "lang": "en"}\n'
                      '{"id": "b", "text": "five six seven", "lang": "NA"}\n{"id": "c", "text": " "}\n')
    counts = count_slices(corpus, ("lang",))
    assert counts.docs() == {"lang": {"en": 1, "(missing)": 1}}  # NA is missing; the blank document is not counted
    monkeypatch.setattr(corpus_slices, "MAX_VALUES", 1)
    with pytest.raises(DrawError, match="'lang' has more than 1 distinct values: not a slice"):
        count_slices(corpus, ("lang",))
    monkeypatch.undo()
    for extra, want in ((["--slice-fields", "lnag"], "c.jsonl:1: --slice-fields: no field 'lnag' (fields: id, text, "
                                                     "lang)"),
                        (["--slice-fields", "lang,lang"], "--slice-fields: 'lang' is named twice"),
                        (["--slice-fields", "text"], "--slice-fields: 'text' is the text field, not a slice"),
                        (["--design", "sample", "--slice-fields", "lang"], "--slice-fields needs --design corpus")):
        args = ["draw", "--corpus", str(corpus), "--out", str(tmp_path / "o"), "--overwrite"]
        assert main(args + (["--design", "corpus"] if "--design" not in extra else []) + extra) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and want in err[0], (extra, err)


def test_more_rereads_the_corpus_by_the_fields_it_was_drawn_by(small, tmp_path):
    """A corpus with other id and text fields: design.json keeps them, --more's re-read uses them."""
    from calib.cli import main
    from calib.labeling.draw import more
    corpus, _, _, _, lang = small
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"doc_id": d, "body": t, "lang": str(la)}) + "\n"
                            for d, t, la in zip(corpus.ids, corpus.texts, lang)))
    assert main(["draw", "--design", "corpus", "--corpus", str(path), "--out", str(tmp_path / "d"), "--pairs", "30",
                 "--id-field", "doc_id", "--text-field", "body", "--slice-fields", "lang"]) == 0
    drawn = read_drawn(tmp_path / "d")
    assert (drawn.design.id_field, drawn.design.text_field) == ("doc_id", "body")
    grown = more(drawn, [2] * (len(drawn.design.strata) - 1) + [3])
    assert len(grown.pairs) > len(drawn.pairs) and grown.docs["lang"].notna().all()
    pos = {x: k for k, x in enumerate(corpus.ids)}
    assert list(grown.docs["lang"]) == [lang[pos[x]] for x in grown.docs["id"]]
