"""Minimum length (calib.verification.short) and boilerplate stripping through the sweep, export and calib apply:
against brute force, and the local apply against the sweep's own verified pairs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from calib.production.engines.local import ApplyError, apply_config
from calib.cli import main
from calib.search.config import Config
from calib.production.export import write_export
from calib.production.document import ExportError, load_config, load_stoplist
from calib.sketches.represent import Representation, normalize, shingle_strings
from calib.reading.sample import from_frames
from calib.reading.samples import load_sample
from calib.search.sweep import evaluate
from calib.search.workspace import Workspace

REPO = Path(__file__).resolve().parents[1]


def short_corpus() -> pd.DataFrame:
    """The shipped sample's first 400 documents (boilerplate pages among them) and 60 short records built
    from real titles: each first line of 20 documents, again in capitals (equal normalized text) and with
    a suffix (a near, not equal, title)."""
    docs = load_sample(REPO / "data" / "sample").docs.iloc[:400][["id", "text"]]
    titles = [t.splitlines()[0][:60] for t in docs["text"].iloc[::20]]
    short = [(f"s{k}a", t) for k, t in enumerate(titles)] + [(f"s{k}b", t.upper()) for k, t in enumerate(titles)] \
        + [(f"s{k}c", f"{t} (part 2)") for k, t in enumerate(titles)]
    return pd.concat([docs, pd.DataFrame(short, columns=["id", "text"])], ignore_index=True)


@pytest.fixture(scope="module")
def docs():
    return short_corpus()


@pytest.fixture(scope="module")
def ws(docs):
    return Workspace(from_frames(docs))


@pytest.fixture(scope="module")
def corpus(docs, tmp_path_factory):
    path = tmp_path_factory.mktemp("short") / "corpus.jsonl"
    docs.to_json(path, orient="records", lines=True, force_ascii=False)
    return path


REP = Representation(shingle="word", k=3)
CONFIGS = {
    "plain": Config(REP, threshold=0.5),
    "exclude": Config(REP, threshold=0.5, min_shingles=12),
    "exact": Config(REP, threshold=0.5, min_shingles=12, short_docs="exact"),
    "strip-exact": Config(REP.with_(strip_lines=0.02), threshold=0.5, min_shingles=12, short_docs="exact"),
    "strip-estimated": Config(REP.with_(strip_lines=0.02), verify="estimated", threshold=0.5, b=32, r=4,
                              min_shingles=8),
}


def brute_short(texts, rep, m):
    """Indices with 1 <= |distinct shingle strings| < m."""
    return {d for d, t in enumerate(texts) if 0 < len(set(shingle_strings(t, rep))) < m}


@pytest.mark.parametrize("name", ["exclude", "exact"])
def test_short_rule_against_brute_force(ws, docs, name):
    cfg = CONFIGS[name]
    ev = evaluate(ws, cfg)
    texts = docs["text"].tolist()
    short = brute_short(texts, cfg.rep, cfg.min_shingles)
    assert ev.row["short_documents"] == len(short) >= 50  # most of the 60 titles (a long title is not short)
    pairs = set(zip(ev.verified.i.tolist(), ev.verified.j.tolist()))
    with_short = {(i, j) for i, j in pairs if i in short or j in short}
    if name == "exclude":
        assert not with_short
    else:
        want = {(i, j) for i in short for j in short
                if i < j and normalize(texts[i], cfg.rep) == normalize(texts[j], cfg.rep)}
        assert with_short == want and len(want) >= 20  # each title and its capitals, at least
    # the long documents' pairs are those of no minimum length
    plain = evaluate(ws, CONFIGS["plain"])
    assert pairs - with_short == {(i, j) for i, j in zip(plain.verified.i.tolist(), plain.verified.j.tolist())
                                  if i not in short and j not in short}
    # nothing dropped: every document is in the outcomes, short ones never removed under exclude
    assert len(ev.outcomes) == len(docs)
    if name == "exclude":
        assert not ev.outcomes["removed"].to_numpy()[sorted(short)].any()


@pytest.mark.parametrize("name", list(CONFIGS))
def test_apply_verifies_the_pairs_the_sweep_verifies(ws, corpus, name):
    """calib apply (banding every document, short ones left out) and the sweep (reference pairs, the rule
    applied to verified pairs) reach the same verified pairs and the same removals."""
    cfg = CONFIGS[name]
    stop = ws.stripped(cfg.rep)[0]
    res = apply_config(cfg, corpus, stoplist=stop)
    ev = evaluate(ws, cfg)
    assert sorted(zip(res.vi.tolist(), res.vj.tolist())) == sorted(zip(ev.verified.i.tolist(), ev.verified.j.tolist()))
    assert len(res.vi) >= 5
    assert res.clustering.removed.tolist() == ev.clustering.removed.tolist()
    s = res.summary()
    if cfg.min_shingles:
        assert s["short_documents"] == ev.row["short_documents"] and cfg.short_docs in s["short_documents_rule"]
    else:
        assert "short_documents" not in s


def test_apply_refuses_a_stripping_config_without_its_stoplist(corpus):
    with pytest.raises(ApplyError, match="no stoplist"):
        apply_config(CONFIGS["strip-exact"], corpus)


def test_export_carries_the_stoplist_and_apply_reads_it(ws, corpus, tmp_path):
    cfg = CONFIGS["strip-exact"]
    out = tmp_path / "export"
    write_export(out, cfg, evaluation=evaluate(ws, cfg), sample=ws.sample, workspace=ws)
    config, doc = load_config(out / "config.json")
    assert config == cfg and doc["short_docs"] == {"min_shingles": 12, "rule": "exact"}
    text = (out / "stoplist.json").read_text(encoding="utf-8")
    assert doc["stoplist"] == {"file": "stoplist.json", "sha256": hashlib.sha256(text.encode()).hexdigest(),
                               "lines": len(json.loads(text)["lines"])}
    stop = load_stoplist(doc, lambda name: (out / name).read_text(encoding="utf-8"), "config.json")
    assert stop.lines == ws.stripped(cfg.rep)[0].lines and len(stop) >= 3
    assert doc["evidence"]["metrics"]["short_documents"] >= 50
    # the CLI applies it with the stoplist beside it ...
    code = main(["apply", "--config", str(out / "config.json"), "--corpus", str(corpus), "--out", str(tmp_path / "a")])
    assert code == 0
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["proposed_removals"] == int(apply_config(cfg, corpus, stoplist=stop).clustering.removed.sum())
    # ... and refuses an edited one, naming the file and the field
    (out / "stoplist.json").write_text(text.replace('"documents": ', '"documents": 1'), encoding="utf-8")
    with pytest.raises(ExportError, match="stoplist.json has sha256"):
        load_stoplist(doc, lambda name: (out / name).read_text(encoding="utf-8"), "config.json")
    (out / "stoplist.json").unlink()
    assert main(["apply", "--config", str(out / "config.json"), "--corpus", str(corpus), "--out",
                 str(tmp_path / "b")]) == 2


def test_line_counts_from_a_named_corpus(tmp_path):
    """--line-counts: the stoplist comes from the named corpus's lines, not the sample's. A footer that two
    of the sample's four documents hold (50%, not more) is in 8 of the corpus's 10 (80%): at strip_lines
    0.6 it is stripped with the corpus's counts only."""
    from calib.sketches.boilerplate import Stoplist
    from calib.production.document import write_config
    footer = "Cookie notice: this site stores cookies"
    bodies = [" ".join(f"w{k}{j}" for j in range(30)) for k in range(10)]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"c{k}", "text": b + (f"\n{footer}" if k < 8 else "")}) + "\n"
                              for k, b in enumerate(bodies)), encoding="utf-8")
    sample = tmp_path / "sample"
    sample.mkdir()
    (sample / "docs.jsonl").write_text("".join(json.dumps({"id": f"d{k}", "text": bodies[k] + (
        f"\n{footer}" if k < 2 else "")}) + "\n" for k in range(4)), encoding="utf-8")
    (sample / "pairs.csv").write_text("id_a,id_b,label\nd0,d1,not_duplicate\nd2,d3,not_duplicate\n")
    cfg = Config(Representation(strip_lines=0.6))
    write_config(tmp_path / "given.json", cfg, stoplist=Stoplist(0.6, 1, (), ()))
    for extra, want in (([], []), (["--line-counts", str(corpus)], [normalize(footer, cfg.rep)])):
        out = tmp_path / f"export{len(extra)}"
        assert main(["export", "--sample", str(sample), "--config", str(tmp_path / "given.json"), "--out", str(out),
                     *extra]) == 0
        stop = json.loads((out / "stoplist.json").read_text(encoding="utf-8"))
        assert [x["text"] for x in stop["lines"]] == want and stop["n_docs"] == (10 if extra else 4)
    assert main(["export", "--sample", str(sample), "--config", str(tmp_path / "given.json"), "--out",
                 str(tmp_path / "bad"), "--line-counts", str(tmp_path / "none.jsonl")]) == 2


def test_targets_list_the_settings_and_are_evaluated_without_them():
    from calib.production import targets as T
    cfg = CONFIGS["strip-exact"]
    for name, t in T.targets(cfg).items():
        fields = {u["field"] for u in t.unsupported}
        assert "/short_docs" in fields, name  # the 'exact' short rule runs in no tool's snippet
        assert t.engine_config is not None and t.engine_config.min_shingles == 0, name
        # stripping is either the snippet's pre-step (kept where the tool is evaluated) or listed and dropped
        kept = t.engine_config.rep.strip_lines == cfg.rep.strip_lines
        assert kept != ("/representation/strip_lines" in fields), name
        assert ("boilerplate stripping run before MinHash by the snippet" in t.engine_note) == kept, name
    assert T.targets(cfg)["datasketch"].engine_config.rep.strip_lines == cfg.rep.strip_lines  # a filter in its script
    assert not any(u["field"] == "/short_docs" for t in T.targets(CONFIGS["plain"]).values() for u in t.unsupported)


def test_expected_pair_recall_follows_the_short_rule():
    """Exclude: a short document's duplicate pairs are expected found by no one; the measured and the
    expected pair recall agree within the band luck on the titles' exact-text pairs."""
    ws = Workspace(from_frames(short_corpus().assign(group=lambda d: d["id"].str.extract(r"^(s\d+)[ab]$")[0])))
    rows = {name: evaluate(ws, CONFIGS[name]).row for name in ("plain", "exclude", "exact")}
    assert rows["exclude"]["pair_recall"] == rows["exclude"]["expected_pair_recall"] == 0.0
    for name in ("plain", "exact"):  # the capitals re-posts have equal sets: found, and expected found, surely
        assert rows[name]["pair_recall"] == pytest.approx(rows[name]["expected_pair_recall"], abs=1e-9) == 1.0
