"""`calib apply --engine spark` on a real cluster: a standalone master and two workers on loopback whose
Python has no calib (tests/_spark_cluster.py), the code shipped with the job; plus the parts that need no
cluster (the job's size, the executors' check, the packed environment's contents)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calib.production.document import build_config_doc, validate_doc, weights_entry, write_text_atomic
from calib.production.engines.spark import check as spark_check, ship as spark_ship
from calib.reading.corpus import ApplyError
from calib.production.engines.local import apply_config
from calib.production.engines.spark.plan import size_job
from calib.search.config import Config
from calib.sketches.boilerplate import stoplist
from calib.sketches.represent import Representation
from calib.sketches.weighted_minhash import DocumentFrequencies, document_frequencies
from calib.base.jsondoc import dumps

REPO = Path(__file__).resolve().parents[1]
# strips boilerplate lines (stoplist.json) and weighs shingles by idf (document_frequencies.bin)
STRIP_IDF = Config(Representation(shingle="word", k=3, strip_lines=0.02, scheme="icws", weighting="idf", num_perm=32),
                   b=8, r=4, threshold=0.5, measure="weighted_jaccard")


def _export(folder: Path, cfg: Config, texts: list[str]):
    """An export's three files: config.json naming stoplist.json and document_frequencies.bin by sha256."""
    from calib.production.document import STOPLIST_FILE, WEIGHTS_FILE
    stop = stoplist(texts, cfg.rep, cfg.rep.strip_lines)
    table = DocumentFrequencies.from_bytes(document_frequencies(stop.strip_all(texts, cfg.rep), cfg.rep).to_bytes())
    doc = build_config_doc(cfg, weights=weights_entry(table, "corpus"), stoplist=stop)
    validate_doc(doc)
    folder.mkdir()
    write_text_atomic(folder / STOPLIST_FILE, stop.to_json(cfg.rep))
    (folder / WEIGHTS_FILE).write_bytes(table.to_bytes())
    write_text_atomic(folder / "config.json", dumps(doc))
    return stop, table


@pytest.mark.slow
def test_apply_on_a_standalone_cluster_without_calib(spark_cluster, tmp_path):
    """The workers' Python cannot import calib or numpy; `calib apply --engine spark` ships the driver's
    environment and writes the local engine's manifest rows and summary, for an export whose config strips
    the stoplist beside it and weighs by its document-frequency table; the driver prints its own progress
    (job size, each stage with its rows), not Spark's progress bars, log lines or pandas warnings."""
    for module in ("calib", "numpy", "numba"):
        bare = subprocess.run([spark_cluster.python, "-c", f"import {module}"], capture_output=True, text=True,
                              env=spark_cluster.node_env(), cwd=tmp_path)
        assert bare.returncode == 1 and f"No module named '{module}'" in bare.stderr

    from test_short_docs import short_corpus
    docs = short_corpus()
    corpus = tmp_path / "corpus.jsonl"
    docs.to_json(corpus, orient="records", lines=True, force_ascii=False)
    stop, table = _export(tmp_path / "export", STRIP_IDF, docs["text"].tolist())
    assert len(stop) >= 3
    local = apply_config(STRIP_IDF, corpus, stoplist=stop, frequencies=table)
    assert len(local.manifest) >= 10

    out = tmp_path / "out"
    run = subprocess.run([str(Path(sys.executable).parent / "calib"), "apply", "--engine", "spark", "--config",
                          str(tmp_path / "export" / "config.json"), "--corpus", str(corpus), "--out", str(out)],
                         capture_output=True, text=True, env=spark_cluster.driver_env(), cwd=tmp_path, timeout=600)
    assert run.returncode == 0, (run.stderr[-3000:], spark_cluster.logs())
    got = pd.read_parquet(out / "manifest.parquet")
    pd.testing.assert_frame_equal(got.astype(local.manifest.dtypes.to_dict()), local.manifest)
    summary = json.loads((out / "summary.json").read_text())
    assert {k: summary[k] for k in local.summary()} == local.summary() and summary["engine"] == "spark"
    # the manifest came back to the driver's folder: one part file written there
    assert [p.name for p in (out / "manifest.parquet").iterdir()] == ["part-00000.parquet"]
    err = run.stderr
    assert "job size: " in err and "on 2 cores: 2 shuffle partitions" in err, err
    assert f"calib spark: signatures done in" in err and f"({len(docs):,} rows)" in err
    assert f"write done in" in err and f"({len(local.manifest):,} rows)" in err
    # the JVM's own start-up lines (NativeCodeLoader's WARN, the log4j profile) come before the session
    # exists and calib can set the log level; from the job's first line on, only calib's progress
    job = err[err.index("calib spark: job size"):]
    assert "[Stage " not in err and "FutureWarning" not in err, err
    assert " WARN " not in job and " INFO " not in job, job


@pytest.mark.slow
def test_corpus_draw_on_a_standalone_cluster(spark_cluster, tmp_path):
    """`calib draw --design corpus --engine spark` on the cluster whose Python has no calib: the executors read
    the corpus (its documents' texts too), the driver writes the drawn set; the local draw's files, byte for
    byte, for the same seed."""
    import shutil
    from calib.labeling.corpus_draw import draw_corpus
    from calib.labeling.draw import write_drawn
    corpus = tmp_path / "docs.jsonl.gz"
    shutil.copy(REPO / "data" / "corpus" / "docs.jsonl.gz", corpus)
    write_drawn(tmp_path / "local", draw_corpus(corpus, pairs=60, seed=3))
    run = subprocess.run([str(Path(sys.executable).parent / "calib"), "draw", "--design", "corpus", "--engine",
                          "spark", "--corpus", str(corpus), "--pairs", "60", "--seed", "3", "--out",
                          str(tmp_path / "spark")],
                         capture_output=True, text=True, env=spark_cluster.driver_env(), cwd=tmp_path, timeout=600)
    assert run.returncode == 0, (run.stderr[-3000:], spark_cluster.logs())
    for name in ("pairs.csv", "design.json", "documents.jsonl", "candidates.npy"):
        assert (tmp_path / "spark" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
    assert "on 2 cores" in run.stderr and "calib spark: texts done in" in run.stderr, run.stderr


def test_job_size_follows_the_input_and_the_cores():
    """A few thousand documents: one shuffle partition per core, not Spark's 200; 350 MB of text on 2 cores:
    whole waves of ~32 MB partitions and at least 3 read splits per core; a compressed file counts 4x."""
    small = size_job(780_000, True, 2)
    assert small.shuffle_partitions == 2 and small.split_bytes == 1 << 20
    big = size_job(350 << 20, False, 2)
    assert big.shuffle_partitions == 12 and big.shuffle_partitions % 2 == 0
    assert 350 << 20 <= 6 * big.split_bytes < (350 << 20) + 6 and big.split_bytes <= 128 << 20
    assert size_job(350 << 20, True, 2).shuffle_partitions == 44
    assert size_job(10 << 40, False, 64).split_bytes == 128 << 20
    assert size_job(0, False, 0).shuffle_partitions == 1


def test_an_executor_with_other_code_is_named_in_one_line():
    """The executor's check: the driver's fingerprint against another one names each differing field."""
    me = spark_check.fingerprint(STRIP_IDF.rep)
    assert spark_check.mismatch(me, dict(me), "node-1") is None
    other = {**me, "calib source": "0" * 12, "numba": "0.1"}
    why = spark_check.mismatch(me, other, "node-1")
    assert "\n" not in why and why.startswith("the executor on node-1 does not run the driver's calib")
    assert f"calib source {'0' * 12} (driver: {me['calib source']})" in why and "numba 0.1" in why
    spark_check.verify(spark_check.fingerprint())
    with pytest.raises(ApplyError, match=r"numba \S+ \(driver: 0.1\)"):
        spark_check.verify(other)
    # the probe is the kernels' own output: a different seed (another hashing) changes it
    rep = Representation(shingle="char", k=5)
    assert spark_check.fingerprint(rep)["kernel probe"] != spark_check.fingerprint(
        Representation(shingle="char", k=5, seed=rep.seed + 1))["kernel probe"]


@pytest.mark.slow
def test_the_packed_environment():
    """The archive holds calib (with its numba caches), the runtime requirements (not pyspark, Streamlit or tests),
    each .py file's time, and is reused while nothing changed (the cluster test's archive, once per content)."""
    names = {d.metadata["Name"].lower() for d in spark_ship.distributions()}
    assert {"numpy", "numba", "llvmlite", "pandas", "pyarrow", "scipy", "xxhash"} <= names
    assert not names & {"pyspark", "py4j", "streamlit", "altair", "pytest"}
    packed_now = not (spark_ship.cache_dir() / f"spark-env-{spark_ship.digest(spark_ship.describe())}.tar").is_file()
    first = spark_ship.archive()
    inode = first.stat().st_ino
    assert spark_ship.archive() == first and first.stat().st_ino == inode
    with tarfile.open(first) as tar:
        members = set(tar.getnames())
        times = tar.extractfile("times.tsv").read().decode()
    assert {"lib/calib/__init__.py", "lib/sitecustomize.py", "lib/numpy/__init__.py", "calib-env.json"} <= members
    assert not any("/tests/" in m for m in members) and not any(m.startswith("lib/pyspark/") for m in members)
    assert any(m.startswith("lib/calib/") and m.endswith(".nbi") for m in members)
    src = spark_ship.PACKAGE / "sketches" / "minhash.py"
    recorded = re.search(r"^(\d+)\tlib/calib/sketches/minhash\.py$", times, re.M)
    assert recorded
    if packed_now:
        assert int(recorded.group(1)) == src.stat().st_mtime_ns
    # else another checkout with the same content packed it: its times, which its numba caches were built against


def test_driver_graph_steps_against_brute_force():
    """The driver's cluster ids equal the rank of each cluster's smallest row among all n rows' clusters (rows
    outside the graph being singletons), and its groups hold whole components (a union-find's)."""
    from calib.production.engines.spark.driver import cluster_ids, component_groups
    rng = np.random.default_rng(7)
    for _ in range(50):
        n = int(rng.integers(1, 60))
        graph = rng.choice(n, size=int(rng.integers(0, n + 1)), replace=False)
        cluster = rng.integers(0, max(1, len(graph) // 2 + 1), size=len(graph))
        cmin = np.array([graph[cluster == c].min() for c in cluster], np.int64)
        mins = sorted(set(range(n)) - set(graph.tolist()) | set(cmin.tolist()))
        assert cluster_ids(graph, cmin).tolist() == [mins.index(m) for m in cmin]
        k = int(rng.integers(0, 2 * n))
        i, j = rng.integers(0, n, size=k), rng.integers(0, n, size=k)
        i, j = i[i != j], j[i != j]
        parent = list(range(n))

        def root(x):
            while parent[x] != x:
                x = parent[x]
            return x
        for a, b in zip(i.tolist(), j.tolist()):
            parent[root(a)] = root(b)
        nodes, grp = component_groups(i, j, 3)
        assert nodes.tolist() == sorted(set(i.tolist()) | set(j.tolist())) and ((0 <= grp) & (grp < 3)).all()
        by_root = {}
        for v, g in zip(nodes.tolist(), grp.tolist()):
            assert by_root.setdefault(root(v), g) == g
