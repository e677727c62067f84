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

import numpy as np
import pandas as pd
import pytest

from calib import export as E
from calib import lsh
from calib.config import Config
from calib.minhash import signatures
from calib.represent import Representation
from calib.review import ReviewStore
from calib.samples import load_sample
from calib.shingles import shingle_hashes
from calib.sweep import Workspace, evaluate

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sample():
    return load_sample(REPO / "data" / "sample")


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
        from calib.config import Config
        from calib.represent import Representation
        from calib import export as E
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
    assert out.split()[:2] == ["bb8f7be452ce", "e303eefd4946"]  # pinned: a change here breaks old exports


# -- targets ----------------------------------------------------------------------------

def _fields(t):
    return {u["field"] for u in t["unsupported"]}


def test_targets_default_config_hand_computed():
    t = E.targets(Config())  # word5, num_perm 128, b=16, r=8, exact J >= 0.8
    m = t["milvus"]
    assert m["index_params"] == {"index_type": "MINHASH_LSH", "metric_type": "MHJACCARD",
                                 "params": {"mh_element_bit_width": 32, "mh_lsh_band": 16, "with_raw_data": True}}
    assert m["schema"]["vector_field"] == {"datatype": "BINARY_VECTOR", "dim": 4096}  # 128 * 32
    assert m["minhash_function"]["params"] == {"num_hashes": 128, "shingle_size": 5, "token_level": "word",
                                               "hash_function": "xxhash", "seed": 1}
    assert m["search_params"]["params"]["mh_search_with_jaccard"] is True
    assert m["search_params"]["params"]["refine_k"] >= m["search_limit"]
    assert "/verification/rule" in _fields(m) and "/clustering" in _fields(m) and "/lsh" not in _fields(m)
    d = t["datasketch"]
    assert d["lsh"]["params"] == [16, 8] and d["minhash"]["num_perm"] == 128 and d["minhash"]["seed"] == 1
    assert d["shingling"]["unit"] == "word" and d["shingling"]["k"] == 5 and d["shingling"]["encoding"] == "utf-8"
    assert _fields(d) == {"/clustering"}
    dt = t["datatrove"]["MinhashConfig"]
    assert (dt["n_grams"], dt["num_buckets"], dt["hashes_per_bucket"], dt["seed"]) == (5, 16, 8, 1)
    assert dt["hash_config"] == {"precision": 32, "hash_fc": "xxhash"}
    assert "/verification/rule" in _fields(t["datatrove"]) and "/representation/nfkc" in _fields(t["datatrove"])
    td = t["text_dedup"]["args"]
    assert (td["ngram"], td["num_perm"], td["b"], td["r"], td["threshold"]) == (5, 128, 16, 8, 0.8)
    nc = t["nemo_curator"]["FuzzyDeduplicationWorkflow"]
    assert (nc["char_ngrams"], nc["num_bands"], nc["minhashes_per_band"], nc["seed"]) == (5, 16, 8, 1)
    assert "/representation/shingle" in _fields(t["nemo_curator"])  # word shingles
    json.dumps(t)  # plain JSON


def test_targets_char_mmh3_star():
    rep = Representation(shingle="char", k=4, hashfunc="mmh3", num_perm=256, seed=7, scheme="datasketch")
    t = E.targets(Config(rep, b=32, r=8, verify="estimated", threshold=0.7, policy="star", representative="longest"))
    m = t["milvus"]
    assert m["schema"]["vector_field"]["dim"] == 8192 and m["index_params"]["params"]["mh_lsh_band"] == 32
    assert m["minhash_function"]["params"]["token_level"] == "char"
    assert m["minhash_function"]["params"]["num_hashes"] == 256
    assert {"/representation/hashfunc", "/representation"} <= _fields(m)
    assert "/verification/rule" not in _fields(m)  # estimated: mh_search_with_jaccard is an estimate too
    assert {"/representation/shingle", "/representation/hashfunc", "/clustering/policy",
            "/clustering/representative", "/verification/rule"} <= _fields(t["datatrove"])
    assert "/representation/shingle" not in _fields(t["nemo_curator"])  # char n-grams are NeMo's own
    assert t["datasketch"]["minhash"]["permutations"] is None  # datasketch scheme: plain MinHash(num_perm, seed)


def test_targets_partial_split_and_no_verification():
    t = E.targets(Config(b=10, r=12, verify="none"))  # 120 of 128 rows
    m = t["milvus"]
    assert "/lsh" in _fields(m) and m["index_params"]["params"]["mh_lsh_band"] == 10
    assert m["search_params"]["params"]["mh_search_with_jaccard"] is False
    assert m["index_params"]["params"]["with_raw_data"] is False
    assert "/verification/rule" not in _fields(t["datatrove"])
    assert "/lsh/b" in _fields(E.targets(Config(b=1, r=8))["datasketch"])  # MinHashLSH needs b >= 2


def test_snippets_render_and_compile(tmp_path):
    cfg = Config(Representation(shingle="char", k=5, strip_punct=True), b=32, r=4, verify="estimated", threshold=0.7)
    files = E.write_targets(tmp_path, cfg)
    names = {p.name for p in files}
    assert names == {"targets.json", *E.SNIPPET_FILES.values()}
    for p in files:
        if p.suffix == ".py":
            compile(p.read_text(), str(p), "exec")
        assert cfg.fingerprint() in p.read_text()
    assert "https://milvus.io/docs/minhash-lsh.md" in (tmp_path / "milvus_target.py").read_text()


# -- datasketch round trip ---------------------------------------------------------------

def _round_trip_docs(sample, k=320):
    pos = sample.pairs[sample.pairs["is_duplicate"]]
    rows = np.unique(np.r_[pos["i"].to_numpy()[:100], pos["j"].to_numpy()[:100], np.arange(120)])[:k]
    return rows


@pytest.mark.parametrize("rep,b,r", [
    (Representation(), 16, 8),                                                       # fast scheme
    (Representation(scheme="datasketch", hashfunc="mmh3", shingle="char", k=5), 20, 5),  # b*r < num_perm
    (Representation(scheme="datasketch", hashfunc="sha1", k=3, strip_punct=True, num_perm=64), 16, 4),
], ids=["fast-xxhash-word5", "datasketch-mmh3-char5", "datasketch-sha1-word3"])
def test_datasketch_round_trip_same_candidates(sample, rep, b, r):
    cfg = Config(rep, b=b, r=r)
    ns: dict = {}
    exec(compile(E.render_datasketch(cfg), "datasketch_target.py", "exec"), ns)
    rows = _round_trip_docs(sample)
    texts = [sample.texts[k] for k in rows]
    ids = [str(sample.ids[k]) for k in rows]
    sets = shingle_hashes(texts, rep, unique=True)
    sig = signatures(sets, rep.num_perm, rep.seed, rep.scheme)
    for t in range(0, len(texts), 40):  # MinHash values are calib's signature rows
        assert np.array_equal(np.asarray(ns["minhash"](texts[t]).hashvalues, dtype=np.uint32), sig[t])
    ci, cj = lsh.candidate_pairs(sig, b, r, active=sets.sizes() > 0)
    ours = sorted((min(ids[i], ids[j]), max(ids[i], ids[j])) for i, j in zip(ci, cj))
    theirs = ns["candidate_pairs"](zip(ids, texts))
    assert len(ours) > 20
    assert theirs == ours


# -- manifest -------------------------------------------------------------------------------

EXPECTED_COLUMNS = ["doc_id", "cluster_id", "representative_id", "sim_to_representative_estimated",
                    "sim_to_representative_exact", "via_id", "via_exact", "via_estimated", "chained",
                    "flagged_giant", "label", "domain", "language", "variant", "length", "review_status",
                    "config_fingerprint"]


def test_manifest_columns_and_content(ev, sample):
    m = E.manifest(ev, sample)
    assert list(m.columns) == EXPECTED_COLUMNS
    assert len(m) == ev.row["removed"] == ev.clustering.n_removed
    assert (m["review_status"] == "unreviewed").all() and (m["config_fingerprint"] == "e303eefd4946").all()
    assert (m["doc_id"] != m["representative_id"]).all()
    assert (m["sim_to_representative_exact"] >= 0.8).all()  # direct pairs verified at J >= 0.8
    assert m["via_exact"].notna().all() and m["via_estimated"].notna().all()
    assert (m["label"] == "duplicate").sum() == ev.row["true_removals"]
    assert m.equals(m.sort_values(["cluster_id"], kind="stable").reset_index(drop=True))


def test_manifest_chained_rows_name_their_connecting_pair(ws, sample):
    cfg = Config(verify="none", b=32, r=4)
    ev2 = evaluate(ws, cfg)
    m = E.manifest(ev2, sample)
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
    m0 = E.manifest(ev, sample)
    d0, r0 = m0.loc[0, "doc_id"], m0.loc[0, "representative_id"]
    d1, r1 = m0.loc[1, "doc_id"], m0.loc[1, "representative_id"]
    with ReviewStore(tmp_path / "r.sqlite") as store:
        store.record(d0, r0, "duplicate", "ana")
        store.record(r0, d0, "not_duplicate", "bo")  # later decision, pair given the other way round
        store.record(d1, r1, "unsure", "ana")
        m = E.manifest(ev, sample, review_store=store)
    assert m.loc[0, "review_status"] == "not_duplicate"
    assert m.loc[1, "review_status"] == "unsure"
    assert (m.loc[2:, "review_status"] == "unreviewed").all()


def test_export_is_deterministic_bytes(tmp_path, ev, sample):
    a = E.write_export(tmp_path / "a", Config(), evaluation=ev, sample=sample)
    b = E.write_export(tmp_path / "b", Config(), evaluation=ev, sample=sample)
    assert sorted(a) == sorted(b)
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
    from calib import export as E
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
    # a retry ignores the stale temp file; cleanup removes it
    E.write_frame_atomic(pd.DataFrame({"doc_id": ["new"]}), out)
    assert out.read_text() == "doc_id\nnew\n"
    assert [p.name for p in E.cleanup_temp_files(tmp_path)] == [tmps[0].name]
    assert not list(tmp_path.glob(".*.tmp"))
