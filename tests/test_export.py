"""Config JSON (schema, fingerprints, determinism), production targets,
datasketch round trip, manifest, atomic writes."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from calib.production import export as E
from calib.production import manifest as M
from calib.search.config import Config
from calib.sketches.represent import Representation
from calib.review.sqlite import ReviewStore
from calib.search.sweep import evaluate
from calib.search.workspace import Workspace

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def ws(sample):
    return Workspace(sample)


@pytest.fixture(scope="module")
def ev(ws):
    return evaluate(ws, Config())


@pytest.fixture(scope="module")
def doc(ev, sample):
    return E.build_config_doc(Config(), evaluation=ev, sample=sample)


# -- schema and fingerprints ---------------------------------------------------------

def test_valid_document_passes_and_round_trips(tmp_path, ev, sample):
    out = tmp_path / "config.json"
    d = E.write_config(out, Config(), evaluation=ev, sample=sample)
    cfg, loaded = E.load_config(out)
    assert cfg == Config() and cfg.fingerprint() == d["config_fingerprint"] == "e303eefd4946"
    assert loaded["representation_fingerprint"] == Representation().fingerprint() == "bb8f7be452ce"
    assert loaded["lsh"] == {"b": 16, "r": 8, "rows_used": 128, "lsh_threshold": pytest.approx(2 ** -0.5),
                             "s50": pytest.approx(Config().s50)}
    assert loaded["evidence"]["sample"]["content_hash"] == sample.content_hash()
    assert loaded["evidence"]["sample"]["label_counts"]["duplicate"] == int(sample.pairs["is_duplicate"].sum())
    m = loaded["evidence"]["metrics"]
    for k in ("pair_recall", "false_removal_rate", "candidate_recall"):
        assert {k, f"{k}_low", f"{k}_high"} <= set(m)
        assert m[f"{k}_low"] <= m[k] <= m[f"{k}_high"]
    assert "never deletes" in loaded["notice"]
    assert not list(tmp_path.glob(".*.tmp"))


def test_config_without_evidence_is_valid():
    d = E.build_config_doc(Config(verify="none", threshold=0))
    E.validate_doc(d)
    assert d["evidence"] is None and d["verification"]["threshold"] is None  # no threshold: null


def _set(d, pointer, value):
    parts = pointer.strip("/").split("/")
    for p in parts[:-1]:
        d = d[p]
    if value is _DELETE:
        del d[parts[-1]]
    else:
        d[parts[-1]] = value


_DELETE = object()

CORRUPTIONS = [
    ("wrong type", "/lsh/b", "16", "/lsh/b"),
    ("wrong type (bool)", "/representation/lowercase", "yes", "/representation/lowercase"),
    ("out of range", "/verification/threshold", 1.5, "/verification/threshold"),
    ("bad enum", "/clustering/policy", "chain", "/clustering/policy"),
    ("missing field", "/verification/threshold", _DELETE, "/verification/threshold"),
    ("missing section", "/lsh", _DELETE, "/lsh"),
    ("missing format_version", "/format_version", _DELETE, "/format_version"),
    ("unknown format_version", "/format_version", 2, "/format_version"),
    ("unknown field", "/representation/stem", True, "/representation/stem"),
    ("tampered config fingerprint", "/config_fingerprint", "000000000000", "/config_fingerprint"),
    ("tampered representation", "/representation/k", 4, "/representation_fingerprint"),
    ("tampered split", "/lsh/r", 4, "/config_fingerprint"),
    ("inconsistent derived value", "/lsh/s50", 0.5, "/lsh/s50"),
]


@pytest.mark.parametrize("what,pointer,value,named", CORRUPTIONS, ids=[c[0] for c in CORRUPTIONS])
def test_each_corruption_fails_naming_the_field(tmp_path, doc, what, pointer, value, named):
    bad = copy.deepcopy(doc)
    _set(bad, pointer, value)
    with pytest.raises(E.ExportError) as exc:
        E.validate_doc(bad)
    assert exc.value.pointer == named
    assert named in str(exc.value)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(bad))
    with pytest.raises(E.ExportError, match=str(p).replace("/", ".")):
        E.load_config(p)


def test_not_json_and_missing_file(tmp_path):
    p = tmp_path / "c.json"
    p.write_text("{ not json")
    with pytest.raises(E.ExportError, match="not valid JSON"):
        E.load_config(p)
    with pytest.raises(E.ExportError, match="no such file"):
        E.load_config(tmp_path / "absent.json")


def test_schema_is_draft_2020_12_and_shipped():
    import jsonschema
    s = E.schema()
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(s)
    assert E.SCHEMA_PATH.parent == Path(E.__file__).parent


def test_same_inputs_same_bytes(tmp_path, ev, sample):
    a = E.write_config(tmp_path / "a.json", Config(), evaluation=ev, sample=sample)
    b = E.write_config(tmp_path / "b.json", Config(), evaluation=ev, sample=sample)
    assert a == b
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    # integer threshold and float threshold are the same configuration
    assert E.build_config_doc(Config(threshold=1))["config_fingerprint"] == \
        E.build_config_doc(Config(threshold=1.0))["config_fingerprint"]


def test_fingerprints_stable_across_processes():
    code = textwrap.dedent("""
        import hashlib
        from calib.search.config import Config
        from calib.sketches.represent import Representation
        from calib.production import export as E
        cfgs = [Config(), Config(Representation(shingle='char', k=7, hashfunc='mmh3', num_perm=256, seed=9,
                                                scheme='datasketch'), b=32, r=8, verify='estimated',
                                 threshold=0.65, policy='star', representative='medoid')]
        for c in cfgs:
            print(c.rep.fingerprint(), c.fingerprint(), hashlib.sha256(E.dumps(E.build_config_doc(c)).encode()).hexdigest())
    """)
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONHASHSEED="12345")  # another hash seed than ours
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True,
                         check=True).stdout
    cfgs = [Config(), Config(Representation(shingle="char", k=7, hashfunc="mmh3", num_perm=256, seed=9,
                                            scheme="datasketch"), b=32, r=8, verify="estimated", threshold=0.65,
                             policy="star", representative="medoid")]
    here = "".join(f"{c.rep.fingerprint()} {c.fingerprint()} "
                   f"{hashlib.sha256(E.dumps(E.build_config_doc(c)).encode()).hexdigest()}\n" for c in cfgs)
    assert out == here
    # pinned: a change here breaks old exports (the rename of the scheme 'fast' to 'prefix' kept them:
    # fingerprints hash the first name)
    assert out.split()[:2] == ["bb8f7be452ce", "e303eefd4946"]


def test_config_written_under_old_scheme_name_loads(tmp_path):
    # A config.json written before 'fast' was renamed 'prefix' (pinned: the fingerprints the old
    # release wrote for Config()) loads as the prefix scheme with the same fingerprints.
    doc = E.build_config_doc(Config())
    assert doc["representation"]["scheme"] == "prefix"
    doc["representation"]["scheme"] = "fast"
    doc["representation_fingerprint"] = "bb8f7be452ce"
    doc["config_fingerprint"] = "e303eefd4946"
    path = tmp_path / "old.json"
    path.write_text(E.dumps(doc))
    cfg, _ = E.load_config(path)
    assert cfg == Config() and cfg.rep.scheme == "prefix" and cfg.fingerprint() == "e303eefd4946"
    assert E.build_config_doc(cfg)["representation_fingerprint"] == "bb8f7be452ce"
    # a wrong fingerprint is still refused
    for field in ("representation_fingerprint", "config_fingerprint"):
        bad = copy.deepcopy(doc)
        bad[field] = "000000000000"
        with pytest.raises(E.ExportError, match=field):
            E.validate_doc(bad)


# -- manifest -------------------------------------------------------------------------------

EXPECTED_COLUMNS = ["doc_id", "cluster_id", "representative_id", "sim_to_representative_estimated",
                    "sim_to_representative_exact", "via_id", "via_exact", "via_estimated", "chained",
                    "flagged_giant", "label", "domain", "language", "variant", "length", "review_status",
                    "config_fingerprint"]


def test_manifest_columns_and_content(ev, sample):
    m = M.manifest(ev, sample)
    assert list(m.columns) == EXPECTED_COLUMNS
    assert len(m) == ev.row["removed"] == ev.clustering.n_removed
    assert (m["review_status"] == "unreviewed").all() and (m["config_fingerprint"] == "e303eefd4946").all()
    assert (m["doc_id"] != m["representative_id"]).all()
    # removed directly: a pair with the representative verified at J >= 0.8; chained (the shipped
    # sample's edit families): below it, hanging on a verified neighbour
    direct = m[~m["chained"]]
    assert (direct["sim_to_representative_exact"] >= 0.8).all()
    assert 0 < m["chained"].sum() == ev.row["chained_removals"]
    assert (m.loc[m["chained"], "sim_to_representative_exact"] < 0.8).all()
    assert (m["via_exact"] >= 0.8).all() and m["via_estimated"].notna().all()
    assert (m["label"] == "duplicate").sum() == ev.row["true_removals"]
    assert m.equals(m.sort_values(["cluster_id"], kind="stable").reset_index(drop=True))


def test_manifest_chained_rows_name_their_connecting_pair(ws, sample):
    cfg = Config(verify="none", b=32, r=4)
    ev2 = evaluate(ws, cfg)
    m = M.manifest(ev2, sample)
    ch = m[m["chained"]]
    assert len(ch) == ev2.row["chained_removals"] > 0
    assert (ch["via_id"] != ch["representative_id"]).all()
    v = ev2.verified
    edges = {(min(a, b), max(a, b)) for a, b in zip(sample.ids[v.i], sample.ids[v.j])}
    for d, via in zip(m["doc_id"], m["via_id"]):
        assert (min(d, via), max(d, via)) in edges
    assert m["via_exact"].notna().all()
    direct = m[~m["chained"]]
    assert (direct["via_id"] == direct["representative_id"]).all()


def test_manifest_review_status(tmp_path, ev, sample):
    m0 = M.manifest(ev, sample)
    d0, r0 = m0.loc[0, "doc_id"], m0.loc[0, "representative_id"]
    d1, r1 = m0.loc[1, "doc_id"], m0.loc[1, "representative_id"]
    with ReviewStore(tmp_path / "r.sqlite") as store:
        store.record(d0, r0, "duplicate", "ana")
        store.record(r0, d0, "not_duplicate", "bo")  # later decision, pair given the other way round
        store.record(d1, r1, "unsure", "ana")
        m = M.manifest(ev, sample, review_store=store)
    assert m.loc[0, "review_status"] == "not_duplicate"
    assert m.loc[1, "review_status"] == "unsure"
    assert (m.loc[2:, "review_status"] == "unreviewed").all()


@pytest.mark.slow
def test_export_is_deterministic_bytes(tmp_path, ev, sample):
    a = E.write_export(tmp_path / "a", Config(), evaluation=ev, sample=sample)
    b = E.write_export(tmp_path / "b", Config(), evaluation=ev, sample=sample)
    assert sorted(a) == sorted(b)
    assert {"targets.json", "datasketch_target.py", "milvus_target.py", "datatrove_target.py",
            "text_dedup_target.sh", "nemo_curator_target.py"} <= set(a)
    for key in a:
        assert a[key].read_bytes() == b[key].read_bytes(), key
    readme = (tmp_path / "a" / "README.txt").read_text()
    assert "never deletes" in readme
    back = pd.read_parquet(a["manifest.parquet"])
    assert list(back.columns) == EXPECTED_COLUMNS and len(back) == ev.row["removed"]


# -- atomic writes ---------------------------------------------------------------------------

def test_failed_write_leaves_no_temp_and_keeps_old_file(tmp_path):
    out = tmp_path / "x.csv"
    out.write_text("old\n")
    with pytest.raises(TypeError):
        E.write_bytes_atomic(out, "not bytes")  # fails inside the write
    assert out.read_text() == "old\n"
    assert not list(tmp_path.glob(".*.tmp"))


_CHILD = textwrap.dedent("""
    import os, sys, time
    import numpy as np, pandas as pd
    from calib.production import export as E
    n = 400_000
    frame = pd.DataFrame({"doc_id": [f"doc{i:07d}" for i in range(n)], "cluster_id": np.arange(n) // 3,
                          "sim": np.linspace(0, 1, n)})
    real_fsync = os.fsync
    def slow_fsync(fd):  # the kill must land while the temp file is written and not yet renamed
        print("writing", flush=True)
        time.sleep(60)
        real_fsync(fd)
    os.fsync = slow_fsync
    E.write_frame_atomic(frame, sys.argv[1])
""")


def test_sigkill_mid_write_never_leaves_a_partial_file(tmp_path):
    out = tmp_path / "manifest.csv"
    out.write_text("doc_id\nold\n")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(out)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "writing"
        tmps = list(tmp_path.glob(".manifest.csv.*.tmp"))
        assert len(tmps) == 1 and tmps[0].stat().st_size > 1_000_000
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    assert out.read_text() == "doc_id\nold\n"  # the final path holds the previous complete file
    # a retry removes the dead writer's temp file (cleanup_temp_files) and writes the new one
    E.write_frame_atomic(pd.DataFrame({"doc_id": ["new"]}), out)
    assert out.read_text() == "doc_id\nnew\n"
    assert not tmps[0].exists() and not list(tmp_path.glob(".*.tmp"))


@pytest.mark.slow
def test_export_evidence_records_the_reviews_agreement(tmp_path, ev, sample):
    """An export with a review store records the label rule, the label counts (contested excluded)
    and the reviewers' kappa; the document still validates."""
    from dataclasses import replace
    with ReviewStore(tmp_path / "r.sqlite") as store:
        for k in range(6):  # ana and bo agree on 4 of 6 pairs, one of the two conflicts is adjudicated
            a, b = sample.ids[2 * k], sample.ids[2 * k + 1]
            store.record(a, b, "duplicate" if k % 2 else "not_duplicate", "ana")
            store.record(a, b, "duplicate" if (k % 2) != (k >= 4) else "not_duplicate", "bo")
        store.record(sample.ids[8], sample.ids[9], "duplicate", "cy", kind="adjudication")
        paths = E.write_export(tmp_path / "out", Config(), evaluation=ev, sample=replace(sample, name="s+reviews"),
                               review_store=store)
    doc = json.loads(paths["config"].read_text())
    r = doc["evidence"]["reviews"]
    assert r["labels_from_reviews"] is True and "adjudication" in r["label_rule"]
    assert r["labels"] == {"used": 5, "adjudicated": 1, "unanimous": 4, "contested": 1, "undecided": 0,
                           "unsure": 0, "double_reviewed": 6}
    # 2x2 table of the 6 double-reviewed pairs: both not 2, both dup 2, ana not/bo dup 1, ana dup/bo not 1
    # p_o = 4/6, p_e = .5*.5 + .5*.5 = .5 -> kappa = 1/3
    assert r["agreement"]["method"] == "cohen" and r["agreement"]["kappa"] == pytest.approx(1 / 3, abs=1e-6)
    assert r["agreement"]["pairs_rated"] == r["agreement"]["double_reviewed"] == 6
    E.validate_doc(doc)
