"""`calib apply --engine spark`: the same manifest rows as the local engine, on a local Spark (local[2]).

The Spark tests are slow (a JVM starts once per module, then one job per case).
They skip only when pyspark or Java is absent and CALIB_REQUIRE_SPARK is unset;
.ci/run sets it, so CI never skips them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calib.production import export as E
from calib.production.engines.spark import apply as SA
from calib.production.engines.spark import io as spark_io
from calib.production.engines.spark.components import connected_components
from calib.production.engines.local import ApplyError, apply_config
from calib.cli import main
from calib.search.config import Config
from calib.sketches.represent import Representation
from calib.reading.samples import load_sample

REPO = Path(__file__).resolve().parents[1]
SLICES = ("domain", "language", "variant", "length")


def _spark_missing() -> str | None:
    try:
        spark_io.check_environment()
    except spark_io.SparkApplyError as exc:
        return str(exc)
    return None


@pytest.fixture(scope="module")
def spark():
    why = _spark_missing()
    if why:
        if os.environ.get("CALIB_REQUIRE_SPARK"):
            pytest.fail(f"CALIB_REQUIRE_SPARK is set but {why}")
        pytest.skip(why)
    s = spark_io.session("local[2]")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The shipped sample's first 1,000 documents (real near-duplicates of 9 kinds), JSONL and Parquet."""
    docs = load_sample(REPO / "data" / "sample").docs.iloc[:1000][["id", "text", *SLICES]]
    d = tmp_path_factory.mktemp("spark-corpus")
    docs.to_json(d / "corpus.jsonl", orient="records", lines=True, force_ascii=False)
    docs.to_parquet(d / "corpus.parquet", index=False)
    return d


CONFIGS = {
    "exact-connected-first": Config(),
    "none-medoid-chained": Config(verify="none", b=32, r=4, representative="medoid"),
    "char-star-longest-datasketch": Config(Representation(shingle="char", k=5, scheme="datasketch"), b=32, r=4,
                                           threshold=0.6, policy="star", representative="longest"),
    "estimated-giant-guard": Config(verify="estimated", threshold=0.3, b=64, r=2, max_component=3),
}


def _same_rows(out: Path, expected: pd.DataFrame) -> pd.DataFrame:
    got = pd.read_parquet(out / "manifest.parquet")
    assert list(got.columns) == list(expected.columns)
    pd.testing.assert_frame_equal(got.astype(expected.dtypes.to_dict()), expected)
    return got


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CONFIGS))
def test_spark_manifest_equals_local(spark, corpus, tmp_path, name):
    cfg = CONFIGS[name]
    local = apply_config(cfg, corpus / "corpus.jsonl", slice_fields=SLICES)
    # max_pairs at the local engine's distinct candidate count: accepted (the limit is on distinct pairs,
    # not on the sum over bands, which is larger wherever a pair collides in several bands)
    # one config takes the large-graph path (components and cluster ids in Spark), the others the driver's
    summary = SA.apply_spark(cfg, str(corpus / "corpus.jsonl"), str(tmp_path), spark=spark, slice_fields=SLICES,
                             batch_size=128, max_pairs=local.summary()["candidate_pairs"],
                             driver_edges=0 if name == "none-medoid-chained" else SA.DRIVER_EDGES)
    got = _same_rows(tmp_path, local.manifest)
    assert len(got) > 10
    assert summary == local.summary()
    written = json.loads((tmp_path / "summary.json").read_text())
    assert written["engine"] == "spark" and written["proposed_removals"] == len(got)
    if name == "none-medoid-chained":
        assert got["chained"].any() and got["via_id"].ne(got["representative_id"]).any()
    if name == "estimated-giant-guard":
        assert got["flagged_giant"].any() and not got["flagged_giant"].all()


@pytest.mark.slow
def test_spark_parquet_folder_and_cli(spark, corpus, tmp_path):
    """A folder of Parquet parts reads in path order; the CLI runs the exported config.json, both given as
    file:// URIs (passed to Spark's reader, not refused by the local path check), and --overwrite replaces a
    previous run's output set."""
    cfg = CONFIGS["exact-connected-first"]
    parts = tmp_path / "parts"
    parts.mkdir()
    docs = pd.read_parquet(corpus / "corpus.parquet")
    docs.iloc[:400].to_parquet(parts / "part-0.parquet", index=False)
    docs.iloc[400:].to_parquet(parts / "part-1.parquet", index=False)
    local = apply_config(cfg, corpus / "corpus.parquet")
    E.write_config(tmp_path / "config.json", cfg)
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json").write_text('{"stale": true}')
    (out / "README.txt").write_text("stale")
    code = main(["apply", "--engine", "spark", "--config", (tmp_path / "config.json").as_uri(), "--corpus",
                 parts.as_uri(), "--out", str(out), "--overwrite"])
    assert code == 0
    _same_rows(out, local.manifest)
    assert sorted(p.name for p in out.iterdir()) == ["README.txt", "manifest.parquet", "summary.json"]
    assert json.loads((out / "summary.json").read_text())["proposed_removals"] == len(local.manifest)
    assert not list(tmp_path.glob(".out.calib-*"))  # the set was swapped in whole, no temp folder left


@pytest.mark.slow
def test_spark_submit_script_runs_calib_apply(spark, corpus, tmp_path):
    """``spark-submit calib/cli/spark_submit.py`` with ``calib apply``'s options, as the README submits it on a
    cluster (calib from the environment, the script given as a file): the local engine's manifest rows."""
    import subprocess
    import sys

    import calib.cli.spark_submit as script

    cfg = CONFIGS["exact-connected-first"]
    (tmp_path / "c.jsonl").write_text("".join((corpus / "corpus.jsonl").read_text().splitlines(True)[:300]))
    local = apply_config(cfg, tmp_path / "c.jsonl")
    E.write_config(tmp_path / "config.json", cfg)
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    run = subprocess.run([str(Path(sys.executable).parent / "spark-submit"), "--master", "local[1]",
                          "--conf", "spark.ui.enabled=false", script.__file__, "--config", str(tmp_path / "config.json"),
                          "--corpus", str(tmp_path / "c.jsonl"), "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    assert Path(script.__file__).parent == REPO / "calib" / "cli"
    _same_rows(tmp_path / "out", local.manifest)
    # spark-submit hands the Python driver's stderr to its own stdout
    assert f"{len(local.manifest)} proposed removals (report only)" in run.stdout


def _near_duplicates(path: Path) -> None:
    """Three documents, two of them near-duplicates (J = 38/42 on word 5-grams): one distinct candidate pair
    that collides in most of the 32 bands."""
    words = [f"w{k}" for k in range(40)]
    lines = [{"id": "a", "text": " ".join(words)}, {"id": "b", "text": " ".join(words[:-1] + ["other"])},
             {"id": "c", "text": " ".join(f"z{k}" for k in range(40))}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


@pytest.mark.slow
def test_spark_max_pairs_as_local(spark, tmp_path, capsys):
    """--max-pairs reaches the Spark engine and limits distinct candidate pairs as the local engine does:
    the same exit status and the same one-line refusal at each limit, although the pair collides in many
    bands (a limit on the sum over bands would refuse at 1)."""
    from calib.candidates import lsh
    from calib.sketches.minhash import signatures
    from calib.sketches.shingles import shingle_hashes
    cfg = Config(b=32, r=4)
    E.write_config(tmp_path / "config.json", cfg)
    _near_duplicates(tmp_path / "c.jsonl")
    texts = [json.loads(x)["text"] for x in (tmp_path / "c.jsonl").read_text().splitlines()]
    keys = lsh.band_keys(signatures(shingle_hashes(texts, cfg.rep, unique=True), cfg.rep.num_perm, cfg.rep.seed,
                                    cfg.rep.scheme), cfg.b, cfg.r)
    assert (keys[:, 0] == keys[:, 1]).sum() > 1 and not (keys[:, 2] == keys[:, 0]).any()
    for limit in (0, 1):
        got = {}
        for engine in ("local", "spark"):
            code = main(["apply", "--engine", engine, "--config", str(tmp_path / "config.json"), "--corpus",
                         str(tmp_path / "c.jsonl"), "--out", str(tmp_path / f"out-{engine}-{limit}"),
                         "--max-pairs", str(limit)])
            got[engine] = (code, [x for x in capsys.readouterr().err.splitlines() if "error" in x])
        assert got["spark"] == got["local"], limit
        if limit == 0:
            assert got["local"][0] == 2 and len(got["local"][1]) == 1
            assert "more than max_pairs=0" in got["local"][1][0] and "(--max-pairs)" in got["local"][1][0]
        else:
            assert got["local"] == (0, [])
            assert json.loads((tmp_path / "out-spark-1" / "summary.json").read_text())["candidate_pairs"] == 1


@pytest.mark.slow
def test_spark_object_storage_paths_reach_spark(spark, corpus, tmp_path, capsys):
    """s3a:// (and gs://) paths pass the CLI's local checks and reach Spark, whose file system layer refuses
    them here (no connector on the classpath) in one line; never the local "does not exist"."""
    E.write_config(tmp_path / "config.json", Config())
    cases = [("--corpus", "s3a://calib-test-bucket/corpus/*.jsonl", "Class org.apache.hadoop.fs.s3a.S3AFileSystem not found"),
             ("--out", "gs://calib-test-bucket/out", "GoogleHadoopFileSystem not found")]
    for flag, uri, why in cases:
        args = {"--config": str(tmp_path / "config.json"), "--corpus": str(corpus / "corpus.jsonl"),
                "--out": str(tmp_path / "out"), flag: uri}
        code = main(["apply", "--engine", "spark", *[x for kv in args.items() for x in kv]])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1, err
        assert why in err[0] and uri in err[0] and "connector" in err[0], err
        assert "does not exist" not in err[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_spark_errors_match_local(spark, tmp_path):
    """A bad record and a duplicate id: the local engine's one-line message (file, line, field)."""
    cfg = Config()
    cases = {
        "bad-id": ['{"id": 1, "text": "a b c"}', "", '{"id": [1], "text": "x"}'],
        "duplicate": ['{"id": "a", "text": "a b c"}', '{"id": "b", "text": "d e f"}', '{"id": "a", "text": "z"}'],
        "missing-field": ['{"id": "a", "text": "a b c"}', '{"id": "b"}'],
    }
    for name, lines in cases.items():
        p = tmp_path / f"{name}.jsonl"
        p.write_text("\n".join(lines) + "\n", encoding="utf-8")
        with pytest.raises(ApplyError) as want:
            apply_config(cfg, p)
        with pytest.raises(ApplyError) as got:
            SA.apply_spark(cfg, str(p), str(tmp_path / "out"), spark=spark)
        assert str(got.value) == str(want.value), name
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"id": 1, "text": "ok"}\n{"id": 2, "text": "\xff"}\n')
    with pytest.raises(ApplyError, match=r"bad\.jsonl:2: not UTF-8 text"):
        SA.apply_spark(cfg, str(bad), str(tmp_path / "out"), spark=spark)
    with pytest.raises(ApplyError, match="no such file"):
        SA.apply_spark(cfg, str(tmp_path / "absent.jsonl"), str(tmp_path / "out"), spark=spark)


@pytest.mark.slow
def test_connected_components_against_scipy(spark):
    """Large-star/small-star labels every node with its component's smallest node (random forests of paths,
    stars and cliques; checked against scipy)."""
    from scipy import sparse
    from scipy.sparse import csgraph
    rng = np.random.default_rng(7)
    n = 400
    i = rng.integers(0, n, 600)
    j = rng.integers(0, n, 600)
    path = np.arange(200, 260)  # a long path, the slow case for label propagation
    i, j = np.r_[i, path[:-1]], np.r_[j, path[1:]]
    keep = i != j
    i, j = i[keep], j[keep]
    df = spark.createDataFrame(pd.DataFrame({"i": i, "j": j}))
    got = connected_components(df).toPandas().set_index("node")["comp"]
    _, lab = csgraph.connected_components(sparse.coo_matrix((np.ones(len(i)), (i, j)), shape=(n, n)), directed=False)
    nodes = np.unique(np.r_[i, j])
    smallest = pd.Series(nodes, index=nodes).groupby(lab[nodes]).transform("min")
    assert got.sort_index().to_dict() == smallest.sort_index().to_dict()


# -- without a JVM -------------------------------------------------------------

def test_missing_pyspark_is_one_line(monkeypatch):
    import builtins
    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "pyspark" or name.startswith("pyspark."):
            raise ImportError("No module named 'pyspark'")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(spark_io.SparkApplyError, match=r"needs pyspark.*pip install 'calib\[spark\]'"):
        spark_io.check_environment()


def test_missing_java_exit_2(monkeypatch, tmp_path, capsys):
    pytest.importorskip("pyspark")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no java here
    E.write_config(tmp_path / "config.json", Config())
    (tmp_path / "c.jsonl").write_text('{"id": 1, "text": "a b c"}\n')
    code = main(["apply", "--engine", "spark", "--config", str(tmp_path / "config.json"), "--corpus",
                 str(tmp_path / "c.jsonl"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "needs a Java runtime" in err[0]


def test_other_format_version_exit_2(tmp_path, capsys):
    if _spark_missing():
        pytest.skip(_spark_missing())
    E.write_config(tmp_path / "config.json", Config())
    doc = json.loads((tmp_path / "config.json").read_text())
    doc["format_version"] = 2
    (tmp_path / "config.json").write_text(json.dumps(doc))
    (tmp_path / "c.jsonl").write_text('{"id": 1, "text": "a b c"}\n')
    code = main(["apply", "--engine", "spark", "--config", str(tmp_path / "config.json"), "--corpus",
                 str(tmp_path / "c.jsonl"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "unknown format_version 2" in err[0], err


def test_spark_out_folder_rules_before_any_work(tmp_path, capsys):
    """--out as the local engine checks it: a non-empty folder needs --overwrite, and --overwrite never
    deletes a file apply does not write; both refused in one line before Spark starts."""
    if _spark_missing():
        pytest.skip(_spark_missing())
    E.write_config(tmp_path / "config.json", Config())
    (tmp_path / "c.jsonl").write_text('{"id": 1, "text": "a b c"}\n')
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    base = ["apply", "--engine", "spark", "--config", str(tmp_path / "config.json"), "--corpus",
            str(tmp_path / "c.jsonl"), "--out", str(out)]
    for extra, want in (([], "folder exists and is not empty (pass --overwrite"), (["--overwrite"], "holds 'notes.txt'")):
        code = main(base + extra)
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and want in err[0], err
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_containment_refused_before_spark_starts(tmp_path, capsys):
    """A containment config (a measure this engine lacks) is refused in one line: this engine verifies Jaccard only."""
    if _spark_missing():
        pytest.skip(_spark_missing())
    from pyspark.sql import SparkSession
    active = SparkSession.getActiveSession()
    E.write_config(tmp_path / "config.json", Config(measure="containment", representative="longest"))
    (tmp_path / "c.jsonl").write_text('{"id": 1, "text": "a b c"}\n')
    code = main(["apply", "--engine", "spark", "--config", str(tmp_path / "config.json"), "--corpus",
                 str(tmp_path / "c.jsonl"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "measure 'containment'" in err[0] and "Jaccard only" in err[0], err
    assert SparkSession.getActiveSession() is active and not (tmp_path / "out").exists()



@pytest.mark.slow
@pytest.mark.parametrize("rule", ["exclude", "exact"])
def test_spark_strips_boilerplate_and_applies_the_minimum_length_as_locally(spark, tmp_path, rule):
    """Boilerplate and short documents: a corpus with boilerplate lines (the sample's site headers and footers) and short records
    (real titles, again in capitals): the Spark engine strips the exported stoplist and applies the minimum
    length as calib apply does: the same manifest rows and summary."""
    from test_short_docs import short_corpus
    from calib.sketches.boilerplate import stoplist
    docs = short_corpus()
    path = tmp_path / "corpus.jsonl"
    docs.to_json(path, orient="records", lines=True, force_ascii=False)
    cfg = Config(Representation(shingle="word", k=3, strip_lines=0.02), threshold=0.5, min_shingles=12,
                 short_docs=rule)
    stop = stoplist(docs["text"].tolist(), cfg.rep, cfg.rep.strip_lines)
    assert len(stop) >= 3
    local = apply_config(cfg, path, stoplist=stop)
    summary = SA.apply_spark(cfg, str(path), str(tmp_path / "out"), spark=spark, batch_size=64, stoplist=stop)
    got = _same_rows(tmp_path / "out", local.manifest)
    assert summary == local.summary() and summary["short_documents"] >= 50
    short_ids = set(local.ids[(local.sizes > 0) & (local.sizes < 12)])
    removed_short = set(got["doc_id"]) & short_ids
    assert (len(removed_short) >= 20) if rule == "exact" else not removed_short


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["dart", "icws"])
def test_spark_weighted_manifest_equals_local(spark, corpus, tmp_path, scheme):
    """weighting idf: both engines weigh by the same exported document-frequency table (dart or ICWS
    signatures, weighted-Jaccard verification) and propose the same removals."""
    from calib.sketches.weighted_minhash import DocumentFrequencies, document_frequencies
    cfg = Config(Representation(shingle="char", k=5, scheme=scheme, weighting="idf", num_perm=64), b=16, r=4,
                 threshold=0.5, measure="weighted_jaccard")
    texts = pd.read_json(corpus / "corpus.jsonl", lines=True)["text"].tolist()
    table = DocumentFrequencies.from_bytes(document_frequencies(texts, cfg.rep).to_bytes())  # as exported
    local = apply_config(cfg, corpus / "corpus.jsonl", slice_fields=SLICES, frequencies=table)
    summary = SA.apply_spark(cfg, str(corpus / "corpus.jsonl"), str(tmp_path), spark=spark, slice_fields=SLICES,
                             batch_size=128, frequencies=table)
    got = _same_rows(tmp_path, local.manifest)
    assert len(got) > 10 and summary == local.summary()
    with pytest.raises(ApplyError, match="document-frequency table"):
        SA.apply_spark(cfg, str(corpus / "corpus.jsonl"), str(tmp_path / "x"), spark=spark)


def test_spark_draw_is_the_corpus_design_only(tmp_path, capsys):
    assert main(["draw", "--engine", "spark", "--design", "sample", "--corpus",
                 str(REPO / "data" / "corpus" / "docs.jsonl.gz"), "--out", str(tmp_path / "o")]) == 2
    assert "--engine spark draws with --design corpus only" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_spark_corpus_draw_equals_local(spark, tmp_path, monkeypatch, capsys):
    """calib draw --design corpus --engine spark: the local engine's files, byte for byte, for the same seed, on
    a corpus with planted near-duplicates and look-alikes, a blank line, a blank text and a 2-character text,
    read in 4 splits (64 KB: documents numbered across them); a duplicate id: the local one-line refusal."""
    from bench.corpora.rare import build
    from calib.labeling.corpus_draw import draw_corpus
    from calib.labeling.corpus_draw_spark import draw_corpus_spark
    from calib.labeling.drawn import DrawError
    from calib.production.engines.spark import plan as spark_plan
    c = build(800, dup_pairs=100, seed=5)
    lines = [json.dumps({"id": d, "text": t}) for d, t in zip(c.ids, c.texts)]
    lines[300:300] = ['{"id": "blank", "text": " \\n "}', "", '{"id": "tiny", "text": "ab"}']
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(spark_plan, "size_job", lambda b, z, cores: spark_plan.JobSize(cores, b, z, 2, 64 << 10))
    args = ["draw", "--design", "corpus", "--corpus", str(corpus), "--pairs", "150", "--seed", "7"]
    assert main([*args, "--out", str(tmp_path / "local")]) == 0
    capsys.readouterr()
    assert main([*args, "--out", str(tmp_path / "spark"), "--engine", "spark"]) == 0
    err = capsys.readouterr().err
    assert "read splits of 0 MB" in err and "calib spark: candidates done in" in err, err
    for name in ("pairs.csv", "design.json", "documents.jsonl", "candidates.npy"):
        assert (tmp_path / "spark" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
    design = json.loads((tmp_path / "local" / "design.json").read_text())
    assert design["skipped_empty"] == 1 and design["corpus_docs"] == 801
    assert sum(x > 0 for x in design["drawn"][:-1]) >= 4 and design["drawn"][-1] > 0, design["drawn"]
    corpus.write_text('{"id": "a", "text": "one two three"}\n{"id": "b", "text": "four"}\n{"id": "a", "text": "x"}\n')
    with pytest.raises(DrawError) as want:
        draw_corpus(corpus, pairs=2)
    with pytest.raises(DrawError) as got:
        draw_corpus_spark(str(corpus), pairs=2, spark=spark)
    assert str(got.value) == str(want.value) and "duplicate document id 'a'" in str(want.value)
