"""calib apply on corpora larger than one batch; the export/apply CLI and its error paths."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from calib.production import export as E
from calib.production import manifest as M
from calib.production.engines.local import ApplyError, apply_config
from calib.reading.corpus import iter_corpus
from calib.cli import main
from calib.search.config import Config
from calib.sketches.represent import Representation
from calib.reading.sample import from_frames
from calib.search.sweep import evaluate
from calib.production.targets import targets

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sub(sample):
    """The first 1,000 documents as their own (unlabeled-pairs) sample."""
    return from_frames(sample.docs.iloc[:1000].copy(), None, name="first1000")


@pytest.fixture(scope="module")
def corpus(sub, tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    docs = sub.docs[["id", "text", "domain", "language", "variant", "length"]]
    jsonl = d / "corpus.jsonl"
    docs.to_json(jsonl, orient="records", lines=True, force_ascii=False)
    parquet = d / "corpus.parquet"
    docs.to_parquet(parquet, index=False)
    return {"jsonl": jsonl, "parquet": parquet}


CONFIGS = {
    "default-exact": Config(),
    "estimated": Config(verify="estimated", threshold=0.7, b=32, r=4),
    "none-chained": Config(verify="none", b=32, r=4, representative="medoid"),
    "char-star-longest-datasketch": Config(Representation(shingle="char", k=5, scheme="datasketch"), b=32, r=4,
                                           threshold=0.6, policy="star", representative="longest"),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_apply_in_batches_matches_evaluate(sub, corpus, name):
    cfg = CONFIGS[name]
    expected = M.manifest(evaluate(sub, cfg), sub).drop(columns="label")
    slices = ("domain", "language", "variant", "length")
    res = apply_config(cfg, corpus["jsonl"], batch_size=128, slice_fields=slices)
    assert res.n == 1000
    assert len(expected) > 10
    pd.testing.assert_frame_equal(res.manifest, expected)
    if name == "none-chained":
        assert res.manifest["chained"].any()


def test_apply_parquet_equals_jsonl(corpus):
    cfg = CONFIGS["estimated"]
    a = apply_config(cfg, corpus["jsonl"], batch_size=97)
    b = apply_config(cfg, corpus["parquet"], batch_size=128)
    pd.testing.assert_frame_equal(a.manifest, b.manifest)
    assert a.summary() == b.summary()
    assert list(a.manifest.columns) == [c for c in M.MANIFEST_COLUMNS] + ["review_status", "config_fingerprint"]


def test_batches_are_bounded(corpus):
    sizes = [len(ids) for ids, _, _ in iter_corpus(corpus["jsonl"], batch_size=128)]
    assert max(sizes) == 128 and sum(sizes) == 1000 and len(sizes) == 8
    sizes = [len(ids) for ids, _, _ in iter_corpus(corpus["parquet"], batch_size=128)]
    assert max(sizes) <= 128 and sum(sizes) == 1000


def test_apply_progress_bars_cover_both_passes(corpus):
    seen = {}

    class Bar:
        def __init__(self, desc, total):
            self.desc, self.total, self.n = desc, total, 0
            seen[desc] = self

        def update(self, k=1):
            self.n += k

        def close(self):
            pass

    res = apply_config(Config(), corpus["jsonl"], batch_size=128, bar=Bar)
    p1, p2 = seen["pass 1/2 signatures"], seen["pass 2/2 verification"]
    assert p1.n == p1.total == 1000
    assert 0 < p2.n == p2.total < 1000  # pass 2 re-reads only documents in candidate pairs
    assert res.n_candidates > 0


def test_apply_corpus_errors(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "x"}\n\n{"id": "b", "text": 3}\n')
    with pytest.raises(ApplyError, match=r"bad.jsonl:3: field 'text' must be a string"):
        apply_config(Config(), bad)
    bad.write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n')
    with pytest.raises(ApplyError, match="duplicate document id 'a'"):
        apply_config(Config(), bad)
    with pytest.raises(ApplyError, match="priority"):
        apply_config(Config(representative="priority"), bad)


# -- CLI ----------------------------------------------------------------------------------

def _run(capsys, argv):
    code = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return code, cap.err


@pytest.mark.slow
def test_cli_export_default_sweep_then_apply(tmp_path, capsys, corpus, sub):
    out = tmp_path / "exp"
    code, err = _run(capsys, ["export", "--sample", REPO / "data" / "sample", "--out", out])
    assert code == 0, err
    names = {p.name for p in out.iterdir()}
    assert {"config.json", "targets.json", "manifest.csv", "manifest.parquet", "README.txt",
            *(t.file for t in targets(Config()).values())} <= names
    assert not [n for n in names if n.endswith(".tmp")]
    cfg, doc = E.load_config(out / "config.json")
    assert doc["evidence"]["selection"]["method"] == "recommend"
    assert doc["evidence"]["metrics"]["false_removal_rate"] <= 0.01
    # re-export from the config: same config, same bytes for the config file
    out2 = tmp_path / "exp2"
    code, err = _run(capsys, ["export", "--sample", REPO / "data" / "sample", "--config", out / "config.json",
                              "--out", out2])
    assert code == 0, err
    assert E.load_config(out2 / "config.json")[0] == cfg
    assert (out / "manifest.csv").read_bytes() == (out2 / "manifest.csv").read_bytes()
    # apply it on the 1,000-document corpus, several batches
    app = tmp_path / "app"
    code, err = _run(capsys, ["apply", "--config", out / "config.json", "--corpus", corpus["jsonl"],
                              "--out", app, "--batch-size", 128])
    assert code == 0, err
    m = pd.read_csv(app / "manifest.csv", dtype={"doc_id": str})
    expected = M.manifest(evaluate(sub, cfg), sub)
    assert m["doc_id"].tolist() == expected["doc_id"].tolist()
    assert m["representative_id"].tolist() == expected["representative_id"].tolist()
    summary = json.loads((app / "summary.json").read_text())
    assert summary["proposed_removals"] == len(expected)
    # the printed line says what summary.json says: clusters, exact copies and removals by chaining alone too
    assert summary["clusters_with_removals"] == expected["cluster_id"].nunique()
    assert summary["chained_removals"] == int(expected["chained"].sum())
    line = [x for x in err.splitlines() if x.startswith("applied ")][-1]
    assert (f"{summary['proposed_removals']:,} proposed removals (report only) in "
            f"{summary['clusters_with_removals']:,} clusters, {summary['exact_copies']:,} exact copies, "
            f"{summary['chained_removals']:,} by chaining alone -> ") in line, line


def _one_line_error(code, err, *needles):
    assert code == 2
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, err
    for n in needles:
        assert n in lines[0], lines[0]


def test_cli_error_paths(tmp_path, capsys, corpus):
    cfg_path = tmp_path / "config.json"
    E.write_config(cfg_path, Config())
    good = ["--config", cfg_path, "--out", tmp_path / "o"]
    # corpus problems
    _one_line_error(*_run(capsys, ["apply", "--corpus", tmp_path / "absent.jsonl", *good]), "does not exist")
    txt = tmp_path / "c.txt"
    txt.write_text("x")
    _one_line_error(*_run(capsys, ["apply", "--corpus", txt, *good]), "unknown corpus format")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "hello"}\n{"id": "b", "text": "x"\n')
    _one_line_error(*_run(capsys, ["apply", "--corpus", bad, *good]), "bad.jsonl:2", "invalid JSON")
    bad.write_text('{"id": "a", "body": "hello"}\n')
    _one_line_error(*_run(capsys, ["apply", "--corpus", bad, *good]), "missing field 'text'")
    pq = tmp_path / "c.parquet"
    pd.DataFrame({"id": ["a"], "body": ["x"]}).to_parquet(pq)
    _one_line_error(*_run(capsys, ["apply", "--corpus", pq, *good]), "missing column 'text'")
    _one_line_error(*_run(capsys, ["apply", "--corpus", corpus["jsonl"], *good, "--batch-size", 0]), "--batch-size")
    # config problems
    doc = json.loads(cfg_path.read_text())
    doc["config_fingerprint"] = "0123456789ab"
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(doc))
    _one_line_error(*_run(capsys, ["apply", "--config", tampered, "--corpus", corpus["jsonl"], "--out", tmp_path / "o2"]),
                    "/config_fingerprint")
    doc = json.loads(cfg_path.read_text())
    doc["format_version"] = 99
    future = tmp_path / "future.json"
    future.write_text(json.dumps(doc))
    _one_line_error(*_run(capsys, ["apply", "--config", future, "--corpus", corpus["jsonl"], "--out", tmp_path / "o2"]),
                    "/format_version", "99")
    _one_line_error(*_run(capsys, ["export", "--sample", REPO / "data" / "sample", "--config", future,
                                   "--out", tmp_path / "e"]), "/format_version")
    # sample problems and budget
    _one_line_error(*_run(capsys, ["export", "--sample", tmp_path / "nosample", "--out", tmp_path / "e"]),
                    "nosample")
    _one_line_error(*_run(capsys, ["export", "--sample", REPO / "data" / "sample", "--out", tmp_path / "e",
                                   "--budget", "2"]), "--budget")
    assert not (tmp_path / "o").exists() and not (tmp_path / "e").exists()


def test_corpus_ids_follow_the_loaders_rule(tmp_path):
    from calib.reading.corpus import _as_id
    assert _as_id(7, "c.jsonl:1", "id") == "7"
    assert _as_id(7.0, "c.jsonl:1", "id") == "7"  # as load_sample reads it
    for bad in (None, True, "  ", 1.5, [1]):
        with pytest.raises(ApplyError, match=r"c.jsonl:1: field 'id'"):
            _as_id(bad, "c.jsonl:1", "id")


@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
def test_cli_apply_keep_fields_carries_the_corpus_columns(tmp_path, capsys, corpus, sub, kind):
    cfg_path = tmp_path / "config.json"
    E.write_config(cfg_path, Config(verify="none", b=32, r=4))
    out = tmp_path / "o"
    code, err = _run(capsys, ["apply", "--config", cfg_path, "--corpus", corpus[kind], "--out", out,
                              "--batch-size", 300, "--keep-fields", "variant,domain"])
    assert code == 0, err
    m = pd.read_csv(out / "manifest.csv", dtype=str, keep_default_na=False)
    assert list(m.columns) == list(M.MANIFEST_COLUMNS) + ["variant", "domain", "review_status", "config_fingerprint"]
    assert len(m) > 10
    docs = sub.docs.set_index("id")
    assert m["variant"].tolist() == docs.loc[m["doc_id"], "variant"].astype(str).tolist()
    assert m["domain"].tolist() == docs.loc[m["doc_id"], "domain"].astype(str).tolist()
    # without --keep-fields: no column of the sample the config was chosen on (no empty columns)
    code, err = _run(capsys, ["apply", "--config", cfg_path, "--corpus", corpus[kind], "--out", tmp_path / "p"])
    assert code == 0, err
    m = pd.read_csv(tmp_path / "p" / "manifest.csv")
    assert list(m.columns) == list(M.MANIFEST_COLUMNS) + ["review_status", "config_fingerprint"]


def test_cli_apply_keep_fields_errors_before_work(tmp_path, capsys, corpus):
    cfg_path = tmp_path / "config.json"
    E.write_config(cfg_path, Config())
    out = tmp_path / "o"
    _one_line_error(*_run(capsys, ["apply", "--config", cfg_path, "--corpus", corpus["jsonl"], "--out", out,
                                   "--keep-fields", "domain,nope"]), "corpus.jsonl:1", "'nope'", "--keep-fields")
    _one_line_error(*_run(capsys, ["apply", "--config", cfg_path, "--corpus", corpus["parquet"], "--out", out,
                                   "--keep-fields", "nope"]), "corpus.parquet", "'nope'")
    _one_line_error(*_run(capsys, ["apply", "--config", cfg_path, "--corpus", corpus["jsonl"], "--out", out,
                                   "--keep-fields", "text"]), "text field")
    assert not out.exists()  # refused before any work


def test_cli_apply_pair_budget_counts_distinct_pairs(tmp_path, capsys):
    """--max-pairs bounds the distinct candidate pairs (a pair colliding in all
    16 bands counts once), and the refusal names distinct counts."""
    import re

    import numpy as np

    from calib.candidates.lsh import candidate_pairs
    from calib.sketches.minhash import signatures_from_texts

    rng = np.random.default_rng(3)
    words = [f"w{k}" for k in range(500)]
    base = list(rng.choice(words, 80))
    texts = [" ".join(base[:-1] + [f"end{k}"]) for k in range(40)]  # near-duplicates, J = 75/77
    texts += [" ".join(rng.choice(words, 60)) for _ in range(40)]
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d{k}", "text": t}) + "\n" for k, t in enumerate(texts)))
    cfg = Config()
    sig = signatures_from_texts(texts, cfg.rep)
    distinct = len(candidate_pairs(sig, cfg.b, cfg.r, max_pairs=None)[0])
    assert distinct >= 780  # the 40 near-duplicates all collide, most of them in several bands
    cfg_path = tmp_path / "config.json"
    E.write_config(cfg_path, cfg)
    args = ["apply", "--config", cfg_path, "--corpus", corpus, "--out", tmp_path / "o"]
    code, err = _run(capsys, [*args, "--max-pairs", distinct - 1])
    _one_line_error(code, err, "distinct pairs", f"max_pairs={distinct - 1:,}", "c.jsonl")
    reported = int(re.search(r"at least ([\d,]+) distinct", err).group(1).replace(",", ""))
    assert distinct - 1 < reported <= distinct
    assert not (tmp_path / "o").exists()
    code, err = _run(capsys, [*args, "--max-pairs", distinct])
    assert code == 0 and f"{distinct} candidate pairs" in err
    _one_line_error(*_run(capsys, [*args, "--max-pairs", -1]), "--max-pairs")


@pytest.mark.parametrize("name", list(CONFIGS))
def test_apply_with_many_copies_equals_uncollapsed(sub, tmp_path, name):
    """200 exact copies (some equal only after normalization), each with its
    own slice value: the collapsed apply gives the uncollapsed apply's
    manifest and counts, and the uncollapsed evaluate()'s manifest."""
    import numpy as np

    from calib.search.workspace import Workspace
    cfg = CONFIGS[name]
    docs = sub.docs[["id", "text", "domain", "language"]].iloc[:300].copy()
    rng = np.random.default_rng(5)
    src = rng.choice(300, 12, replace=False)
    extra = docs.iloc[[int(src[k % 12]) for k in range(200)]].reset_index(drop=True)
    extra["id"] = [f"copy{k}" for k in range(200)]
    extra["domain"] = [f"copydomain{k}" for k in range(200)]
    extra.loc[extra.index[::4], "text"] = extra["text"].iloc[::4].str.upper() + "  "
    docs = pd.concat([docs, extra]).sample(frac=1.0, random_state=1).reset_index(drop=True)
    path = tmp_path / "copies.jsonl"
    docs.to_json(path, orient="records", lines=True, force_ascii=False)
    slices = ("domain", "language")
    got = apply_config(cfg, path, batch_size=64, slice_fields=slices)
    ref = apply_config(cfg, path, batch_size=64, slice_fields=slices, collapse=False)
    pd.testing.assert_frame_equal(got.manifest, ref.manifest)
    assert got.summary()["exact_copies"] >= 200 and ref.summary()["exact_copies"] == 0
    assert {**got.summary(), "exact_copies": 0} == ref.summary()
    assert got.summary()["proposed_removals"] >= 200
    assert got.manifest["slice_domain" if "slice_domain" in got.manifest else "domain"].str.startswith(
        "copydomain").any()
    sample = from_frames(docs, None, name="copies")
    expected = M.manifest(evaluate(Workspace(sample, collapse=False), cfg), sample).drop(columns="label")
    pd.testing.assert_frame_equal(got.manifest, expected)


@pytest.mark.parametrize("missing", [None, ""])
def test_cli_apply_slice_values_spelled_missing_are_missing(tmp_path, capsys, missing):
    # the loaders' rule in the manifest's slice columns: NA, nan, NULL, None, N/A and "" are missing
    # unless --missing-values '' keeps the spellings (the empty string stays missing)
    spellings = ["NA", "nan", "NULL", "None", "N/A", "", "web"]
    text = "the same short text of a few words that every copy repeats here"
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{k}", "text": text, "source": s}) + "\n"
                            for k, s in enumerate(["first"] + spellings)), encoding="utf-8")
    cfg_path = tmp_path / "config.json"
    E.write_config(cfg_path, Config())
    args = ["apply", "--config", str(cfg_path), "--corpus", str(path), "--out", str(tmp_path / "out"),
            "--keep-fields", "source"] + ([] if missing is None else ["--missing-values", missing])
    assert main(args) == 0
    m = pd.read_parquet(tmp_path / "out" / "manifest.parquet").set_index("doc_id")
    assert list(m.index) == [f"d{k}" for k in range(1, 8)]  # every copy goes, in favour of d0
    got = [None if pd.isna(v) else v for v in m["source"]]
    if missing is None:
        assert got == [None] * 6 + ["web"]
    else:
        assert got == ["NA", "nan", "NULL", "None", "N/A", None, "web"]
