"""Production targets (calib.production.targets): each snippet run against the real tool where it
installs here (datasketch, datatrove, pymilvus client objects) and compared with the
engine; each finding of the review of the targets one by one; the union-find kept-document rules."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calib.candidates import lsh
from calib.production import targets as T
from calib.clusters.clustering import cluster_pairs, union_roots
from calib.search.config import Config
from calib.sketches.minhash import signatures
from calib.sketches.represent import Representation, shingle_strings
from calib.reading.sample import from_frames
from calib.sketches.shingles import shingle_hashes
from calib.search.sweep import evaluate
from calib.search.workspace import Workspace
from calib.production.targets._source import shingling_source

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sub(sample):
    """~350 documents with many near-duplicates among them (both sides of labeled duplicate
    pairs, plus the first 100 documents), as their own unlabeled sample."""
    pos = sample.pairs[sample.pairs["is_duplicate"]]
    rows = np.unique(np.r_[pos["i"].to_numpy()[:150], pos["j"].to_numpy()[:150], np.arange(100)])[:350]
    return from_frames(sample.docs.iloc[rows].reset_index(drop=True), None, name="dups350")


def _first(sub, n):
    return from_frames(sub.docs.iloc[:n].copy(), None, name=f"first{n}")


def _fields(t):
    return {u["field"] for u in t.unsupported}


def _reasons(t):
    return " ".join(u["reason"] for u in t.unsupported)


# -- the shipped shingling source is calib's --------------------------------------------

REPS = [Representation(strip_punct=True), Representation(shingle="char", k=4, strip_punct=True),
        Representation(nfkc=False, lowercase=False, collapse_ws=False, shingle="char", k=3),
        Representation(k=2)]
_NS = {}
for _k, _rep in enumerate(REPS):
    _NS[_k] = {}
    exec(compile("from __future__ import annotations\n" + shingling_source(_rep), f"shingling{_k}", "exec"), _NS[_k])

# combining marks, ZWNJ/ZWJ, controls, compatibility forms, punctuation and symbols, CJK, whitespace kinds
SPECIALS = "\u0301\u0308\u200c\u200d\u0000\u0007\u001f\u007f\u0085\u00a0\u2028\ufe49\uff01\u2160\u00bd_-.,;:!?'\"«»—…€$👍 \t\n\r" \
           "\u4e2d\u6587\u0627\u0644\u05d0\u00e9e\u0065\u0301ﬁ"
TEXTS = st.text(alphabet=st.one_of(st.characters(codec="utf-8"), st.sampled_from(SPECIALS)), max_size=60)


@pytest.mark.slow  # ~45 s: 300 texts, each shingled and hashed by calib's vectorized path
@settings(max_examples=300, deadline=None)
@given(text=TEXTS, k=st.integers(0, len(REPS) - 1))
def test_snippet_shingles_equal_calibs_on_arbitrary_unicode(text, k):
    ns = _NS[k]
    assert ns["shingle_strings"](text, ns["REP"]) == shingle_strings(text, REPS[k])
    got = sorted(ns["shingle_hash"](b) for b in ns["shingles"](text))
    assert got == sorted(np.unique(shingle_hashes([text], REPS[k]).hashes).tolist())


def test_shingling_source_is_calibs_own_code():
    import inspect

    from calib.sketches import represent
    src = shingling_source(Representation())
    for f in (represent.punct_re, represent.normalize, represent.shingle_strings):
        assert inspect.getsource(f) in src  # inserted verbatim, never a hand copy


# -- datasketch: run the snippet ------------------------------------------------------------

def _exec(t):
    ns: dict = {}
    exec(compile(t.snippet, t.file, "exec"), ns)
    return ns


@pytest.mark.slow  # 3-10 s each: runs the snippet and evaluates 300 documents
@pytest.mark.parametrize("cfg", [
    Config(Representation(), b=16, r=8),
    Config(Representation(scheme="datasketch", hashfunc="mmh3", shingle="char", k=5), b=20, r=5, verify="estimated",
           threshold=0.6),
    Config(Representation(scheme="datasketch", hashfunc="sha1", k=3, strip_punct=True, num_perm=64), b=16, r=4,
           verify="none"),
], ids=["prefix-xxhash-word5-exact", "datasketch-mmh3-char5-estimated", "datasketch-sha1-word3-none"])
def test_datasketch_snippet_reproduces_the_engine(sub, cfg):
    t = T.targets(cfg)["datasketch"]
    ns = _exec(t)
    rows = np.arange(300)
    texts = [sub.texts[k] for k in rows]
    ids = [str(sub.ids[k]) for k in rows]
    rep = cfg.rep
    sets = shingle_hashes(texts, rep, unique=True)
    sig = signatures(sets, rep.num_perm, rep.seed, rep.scheme)
    for k in range(0, len(texts), 30):  # MinHash values are calib's signature rows
        assert np.array_equal(np.asarray(ns["minhash"](texts[k]).hashvalues, dtype=np.uint32), sig[k])
    ci, cj = lsh.candidate_pairs(sig, cfg.b, cfg.r, active=sets.sizes() > 0)
    assert ns["candidate_pairs"](zip(ids, texts)) == sorted((ids[i], ids[j]) for i, j in zip(ci, cj))
    # removals: the engine's evaluation of the target's own config on these documents
    ev = evaluate(_first(sub, 300), t.engine_config)
    engine = {ids[r]: ids[ev.clustering.representative[r]] for r in np.flatnonzero(ev.clustering.removed)}
    assert len(engine) > 5
    assert ns["proposed_removals"](zip(ids, texts)) == engine


# -- datatrove: run its real pipeline steps ------------------------------------------------

@pytest.mark.slow  # ~10 s: datatrove's four pipeline steps on 350 documents
def test_datatrove_snippet_runs_and_matches_the_engine(sub, tmp_path):
    pytest.importorskip("datatrove")
    cfg = Config(Representation(strip_punct=True), b=16, r=8)
    t = T.targets(cfg)["datatrove"]
    ns = _exec(t)
    texts = [sub.texts[k] for k in range(sub.n)]
    pairs, removed = ns["run_local"](texts, str(tmp_path / "dt"))
    assert len(pairs) > 10 and len(removed) > 5
    step = ns["CalibMinhashSignature"](str(tmp_path / "probe"))
    # 1. its shingles are calib's shingle hashes
    sets = shingle_hashes(texts, cfg.rep, unique=True)
    for k in range(0, sub.n, 20):
        got = np.unique(step.get_shingles(texts[k]).ravel()).astype(np.uint32)
        assert np.array_equal(got, sets.hashes[sets.offsets[k]:sets.offsets[k + 1]])
    # 2. its buckets are calib's banding: on datatrove's own signatures, calib's candidate pairs
    #    have the same connected components as datatrove's .dups pairs
    sig = np.zeros((len(texts), cfg.rep.num_perm), dtype=np.uint32)
    active = sets.sizes() > 0
    for k in np.flatnonzero(active):
        sig[k] = np.concatenate(step.get_signature(step.get_shingles(texts[k])))
    ci, cj = lsh.candidate_pairs(sig, cfg.b, cfg.r, active=active)
    di = np.array([min(p) for p in pairs]), np.array([max(p) for p in pairs])
    ours = cluster_pairs(len(texts), ci, cj).component
    theirs = cluster_pairs(len(texts), *di).component
    assert np.array_equal(ours, theirs)
    # 3. its kept document is calib's union_size rule replayed on its pairs in its order
    roots = union_roots(len(texts), [p[0] for p in pairs], [p[1] for p in pairs], "size")
    assert np.flatnonzero(roots != np.arange(len(texts))).tolist() == removed
    # 4. the engine evaluates the target's config (no verification, union_size)
    assert t.engine_config.verify == "none" and t.engine_config.representative == "union_size"
    ev = evaluate(sub, t.engine_config)
    n_engine = int(ev.clustering.removed.sum())
    assert abs(n_engine - len(removed)) <= max(3, 0.1 * len(removed))  # other permutations, same S-curve


# -- Milvus: the snippet imports and builds its client-side objects ---------------------------

@pytest.fixture()
def milvus_module(tmp_path):
    pytest.importorskip("pymilvus")

    def load(cfg):
        for name, text in T.render(cfg).items():
            (tmp_path / name).write_text(text)
        sys.path.insert(0, str(tmp_path))
        try:
            for m in ("milvus_target", "datasketch_target"):
                sys.modules.pop(m, None)
            return importlib.import_module("milvus_target")
        finally:
            sys.path.remove(str(tmp_path))
    yield load
    for m in ("milvus_target", "datasketch_target"):
        sys.modules.pop(m, None)


class LoopbackMinhashLSH:
    """A stand-in for a Milvus server with a MINHASH_LSH index, in this process: hits are the
    inserted signatures colliding in one of mh_lsh_band bands (num_hashes / band rows each),
    scored by the MinHash estimate (mh_search_with_jaccard), best first, at most `limit`."""

    def __init__(self, band):
        self.band, self.rows, self.tables = band, {}, [{} for _ in range(band)]

    def _bands(self, sig):
        r = len(sig) // self.band
        return [sig[b * r:(b + 1) * r].tobytes() for b in range(self.band)]

    def search(self, collection_name, data, anns_field, search_params, limit, consistency_level):
        q = np.frombuffer(data[0], dtype="<u4")
        near = {key for table, band in zip(self.tables, self._bands(q)) for key in table.get(band, ())}
        hits = [{"id": key, "distance": float(np.mean(q == self.rows[key]))} for key in near]
        return [sorted(hits, key=lambda h: (-h["distance"], h["id"]))[:limit]]

    def insert(self, collection_name, data):
        for rec in data:
            sig = np.frombuffer(rec["signature"], dtype="<u4")
            self.rows[rec["id"]] = sig
            for table, band in zip(self.tables, self._bands(sig)):
                table.setdefault(band, []).append(rec["id"])


@pytest.mark.slow  # ~18 s: search-before-insert over 300 documents
def test_milvus_snippet_builds_its_objects_and_keeps_as_the_engine(sub, milvus_module):
    cfg = Config(Representation(strip_punct=True), b=16, r=8, threshold=0.7, verify="estimated")
    mod = milvus_module(cfg)  # finding 1: it imports (no JSON `true` in Python)
    schema = mod.collection_schema().to_dict()
    fields = {f["name"]: f for f in schema["fields"]}
    assert fields["signature"]["params"]["dim"] == 128 * 32 and fields["id"]["is_primary"]
    with_fn = mod.collection_schema(server_side_minhash=True).to_dict()
    assert with_fn["functions"][0]["params"] == {"num_hashes": 128, "shingle_size": 5, "token_level": "word",
                                                 "hash_function": "xxhash", "seed": 1}
    idx = list(mod.index_params())[0].to_dict()
    assert (idx["index_type"], idx["metric_type"], idx["mh_lsh_band"], idx["mh_element_bit_width"],
            idx["with_raw_data"]) == ("MINHASH_LSH", "MHJACCARD", 16, 32, True)
    assert mod.SEARCH_PARAMS["params"]["mh_search_with_jaccard"] is True
    # finding 2: distance is the similarity (positively related): high distance is a duplicate
    assert mod.is_duplicate_hit({"distance": 0.9}) and not mod.is_duplicate_hit({"distance": 0.3})
    # the signature bytes are calib's signature
    texts = [sub.texts[k] for k in range(300)]
    ids = [str(sub.ids[k]) for k in range(300)]
    sig = signatures(shingle_hashes(texts, cfg.rep), 128, 1, "prefix")
    assert np.frombuffer(mod.signature_bytes(texts[7]), dtype="<u4").tolist() == sig[7].tolist()
    # search-before-insert keeps what the engine's star/first with estimated verification keeps
    removed = mod.dedup(LoopbackMinhashLSH(16), "dedup", zip(ids, texts))
    t = T.targets(cfg)["milvus"]
    ev = evaluate(_first(sub, 300), t.engine_config)
    c = ev.clustering
    engine = {ids[r]: ids[c.representative[r]] for r in np.flatnonzero(c.removed)}
    assert len(engine) > 5 and removed == engine


# -- the targets' findings, target by target-------------------------------------------------

def test_every_target_is_pinned_and_states_what_it_keeps():
    for cfg in (Config(), Config(Representation(shingle="char", k=7), b=32, r=4, verify="estimated")):
        found = T.targets(cfg)
        assert list(found) == list(T.REGISTRY_NAMES)
        for name, t in found.items():
            assert "==" in t.tool, name
            assert len(t.kept) > 20, name
            assert t.engine_config is not None and t.engine_config.rep.num_perm == cfg.rep.num_perm
            d = t.to_dict()
            assert d["kept_document"] == t.kept and d["evaluated_as"]["config_fingerprint"]
        doc = T.targets_doc(cfg)
        assert set(doc["targets"]) == set(found)


def test_non_verifying_targets_are_evaluated_without_verification():
    cfg = Config()  # exact J >= 0.8
    found = T.targets(cfg)
    assert found["datasketch"].engine_config == cfg
    assert found["milvus"].engine_config.verify == "exact"  # the snippet checks each hit's exact Jaccard itself
    assert found["milvus"].parameters["search_params"]["params"]["mh_search_with_jaccard"] is True
    for name in ("datatrove", "text_dedup", "nemo_curator"):
        assert found[name].engine_config.verify == "none", name
        assert "/verification/rule" in _fields(found[name])


def test_text_dedup_pinned_040_with_each_difference():
    t = T.targets(Config())["text_dedup"]
    assert t.tool == "text-dedup==0.4.0"
    assert "--ngram 5" in t.snippet and "--b 16" in t.snippet and "--r 8" in t.snippet and "--local" in t.snippet
    command = [ln for ln in t.snippet.splitlines() if not ln.startswith("#")]
    assert not any("--seed" in ln for ln in command)  # 0.4.0 ignores it: not written as if it mattered
    assert "--min_length 0" in t.snippet and "save_to_disk" in t.snippet
    r = _reasons(t)
    assert "ignores --seed" in r and "RandomState(42)" in r
    assert "larger index" in r and "larger" in t.kept
    assert "empty text" in r and "one cluster" in r
    assert "0.4.1" in t.snippet  # says which form it is not
    assert t.engine_config.representative == "union_rank" and not t.engine_config.rep.nfkc


def test_nemo_curator_findings():
    t = T.targets(Config())["nemo_curator"]  # word5
    assert "/representation/shingle" in _fields(t) and "cannot be expressed" in _reasons(t)
    assert t.parameters["FuzzyDeduplicationWorkflow"]["char_ngrams"] == 24
    assert t.parameters["FuzzyDeduplicationWorkflow"]["perform_removal"] is False
    assert "random" in t.kept and t.engine_config.representative == "random"
    assert "cache_dir" in _reasons(t) and "anchor" in _reasons(t)
    assert "def normalize(" in t.snippet  # calib's normalization, shipped with the snippet
    assert t.engine_config.rep.shingle == "char" and t.engine_config.rep.k == 24
    tc = T.targets(Config(Representation(shingle="char", k=5)))["nemo_curator"]
    assert tc.parameters["FuzzyDeduplicationWorkflow"]["char_ngrams"] == 5 and "/representation/k" in _fields(tc)


def test_datatrove_findings():
    t = T.targets(Config())["datatrove"]
    assert "union by size" in t.kept and "lower document index of a lone pair" in t.kept
    assert t.engine_config.representative == "union_size" and t.engine_config.verify == "none"
    mc = t.parameters["MinhashConfig"]
    assert (mc["num_buckets"], mc["hashes_per_bucket"], mc["seed"]) == (16, 8, 1)


def test_milvus_partial_split_is_evaluated_as_milvus_bands_it():
    t = T.targets(Config(b=10, r=12))["milvus"]
    assert "/lsh/b" in _fields(t) and t.engine_config is None  # 128 hashes do not split into 10 bands
    t = T.targets(Config(b=16, r=4))["milvus"]  # calib bands 64 of 128 values, Milvus all 128
    assert "/lsh" in _fields(t) and (t.engine_config.b, t.engine_config.r) == (16, 8)
    t = T.targets(Config(verify="none"))["milvus"]
    assert t.parameters["search_params"]["params"]["mh_search_with_jaccard"] is False
    assert t.engine_config.verify == "none"


# -- kept-document rules ------------------------------------------------------------------------

def test_union_roots_hand_computed():
    # text-dedup 0.4.0 UnionFind docstring: union(1,2), union(2,3), union(4,5), then union(3,4): all root 1
    assert union_roots(6, [1, 2, 4], [2, 3, 5], "rank").tolist() == [0, 1, 1, 1, 4, 4]
    assert union_roots(6, [1, 2, 4, 3], [2, 3, 5, 4], "rank").tolist() == [0, 1, 1, 1, 1, 1]
    # datatrove: the larger set's root wins; ties keep the first member's root
    assert union_roots(5, [3, 0, 1], [4, 1, 3], "size").tolist() == [0, 0, 2, 0, 0]  # row 2 in no pair
    assert union_roots(5, [3, 1, 0], [4, 2, 1], "size").tolist() == [1, 1, 1, 3, 3]  # {0} joins {1, 2}


def test_union_rules_on_a_lone_pair():
    # datatrove keeps the lower row of a lone pair, text-dedup the higher one
    size = cluster_pairs(3, [0], [2], representative="union_size")
    rank = cluster_pairs(3, [0], [2], representative="union_rank")
    assert size.removed.tolist() == [False, False, True]
    assert rank.removed.tolist() == [True, False, False]
    with pytest.raises(ValueError, match="connected"):
        cluster_pairs(3, [0], [2], policy="star", representative="union_size")


def test_random_rule_is_fixed_and_not_first():
    i, j = np.arange(0, 400, 2), np.arange(1, 400, 2)  # 200 pairs
    a = cluster_pairs(400, i, j, representative="random")
    b = cluster_pairs(400, i, j, representative="random")
    assert np.array_equal(a.representative, b.representative)
    kept_second = int((a.representative[i] == j).sum())
    assert 70 < kept_second < 130  # about half the pairs keep their second member


# -- each target's own evidence on the shipped sample -------------------------------------------

@pytest.mark.slow
def test_target_evidence_on_the_shipped_sample(sample):
    ws = Workspace(sample)
    cfg = Config()
    ev = evaluate(ws, cfg)
    got = T.evidence(ws, cfg, evaluation=ev)
    # 21 of the removals are documents nobody judged (group '?'): unlabeled, never counted false
    assert (got["datasketch"]["removed"], got["datasketch"]["false_removals"]) == (219, 0)
    assert got["datasketch"]["unlabeled_removals"] == 21
    # the tool's own default: the same LSH without verification removes 297 documents, 32 of them false removals
    assert (got["datatrove"]["removed"], got["datatrove"]["false_removals"]) == (297, 32)
    for name in ("datatrove", "text_dedup", "nemo_curator"):
        assert got[name]["false_removal_rate"] > ev.row["false_removal_rate"], name


@pytest.mark.slow
def test_evidence_lets_each_targets_representation_go_and_keeps_its_figures(sub):
    """Targets with their own shingling (text-dedup's normalization, NeMo's char 24-grams) are scored
    one group at a time and dropped after (Workspace.transient): the workspace ends holding the
    config's representation only, and the figures are those of a workspace that kept everything."""
    cfg = Config()
    ws = Workspace(sub)
    ev = evaluate(ws, cfg)
    held = ("shingle_sets", "signature_matrices", "reference_sets", "candidate_sets")  # not the counts of steps
    before = {k: ws.cache_info()[k] for k in held}
    got = T.evidence(ws, cfg, evaluation=ev)
    assert {k: ws.cache_info()[k] for k in held} == before
    keep = Workspace(sub)
    for name, t in T.targets(cfg).items():
        if t.engine_config is not None:
            row = evaluate(keep, t.engine_config).row
            assert got[name]["removed"] == row["removed"] and got[name]["pair_recall"] == row["pair_recall"], name
    assert keep.cache_info()["shingle_sets"] > before["shingle_sets"]   # those did keep the other shinglings


# -- calib's pre-steps in the snippets: stripping with the exported stoplist, the minimum length ---------

PICK = Config(Representation(k=2, strip_punct=True, strip_lines=0.02, num_perm=256), b=64, r=4, threshold=0.57,
              policy="star")  # the default search's pick on the shipped sample


def _export_dir(folder, stop, rep):
    """A folder with what the pre-steps read of an export: config.json's stoplist entry and stoplist.json."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "stoplist.json").write_text(stop.to_json(rep), encoding="utf-8")
    (folder / "config.json").write_text(
        '{"stoplist": {"file": "stoplist.json", "sha256": "%s"}}' % stop.sha256(rep), encoding="utf-8")
    return folder


def _without_import(snippet, module):
    return "\n".join(ln for ln in snippet.splitlines() if not ln.startswith(f"from {module}"))


def test_every_snippets_pre_steps_are_calibs_stripping_and_minimum_length(sub, tmp_path):
    from calib.verification.short import short_mask
    from calib.sketches.represent import normalize
    rep = Representation(k=2, nfkc=False, strip_punct=True, strip_lines=0.01)  # text-dedup's normalization too
    cfg = Config(rep, b=16, r=8, min_shingles=30)
    ws = Workspace(sub)
    stop, stripped = ws.stripped(rep)
    short = short_mask(ws.sets(rep).sizes(), 30)
    assert len(stop) > 3 and sum(a != b for a, b in zip(stripped, sub.texts)) > 20 and 3 < short.sum() < sub.n / 2
    folder = _export_dir(tmp_path / "export", stop, rep)
    found = T.targets(cfg)
    for name in T.REGISTRY_NAMES:  # every target keeps both steps, and is evaluated with them
        assert {"/representation/strip_lines", "/short_docs"}.isdisjoint(_fields(found[name])), name
        ec = found[name].engine_config
        assert (ec.rep.strip_lines, ec.min_shingles) == (0.01, 30), name
    sources = {"datasketch": found["datasketch"].snippet,
               "nemo_curator": _without_import(found["nemo_curator"].snippet, "nemo_curator"),
               "text_dedup": found["text_dedup"].snippet.split("<<'CALIB_PRESTEPS'\n")[1].split("CALIB_PRESTEPS")[0]}
    for name, source in sources.items():
        ns: dict = {}
        exec(compile(source, name, "exec"), ns)
        ns["EXPORT_DIR"] = str(folder)
        got = [ns["prepare"](t) for t in sub.texts]
        assert [g[0] for g in got] == stripped, name  # Stoplist.strip, line for line
        # short as the target is evaluated: its own shingles (NeMo: character 24-grams) of the stripped text
        own = short if name == "datasketch" else short_mask(ws.sets(found[name].engine_config.rep).sizes(), 30)
        assert np.array_equal([g[1] for g in got], own) and (own.sum() > 0 or name == "nemo_curator"), name
        if name != "datasketch":  # a text with no shingle is never a candidate: a token of its own, not one shared
            empties = [ns["calib_text"](x, k) for k, x in enumerate(("", " .,; ", "", "\n"))]
            assert len(set(empties)) == 4 and all(e.startswith(("calibshort", "calib-short-")) for e in empties)
        if name == "nemo_curator":  # the column the workflow reads: normalized, a sentinel of its own if short
            cols = [ns["calib_text"](t, k) for k, t in enumerate(sub.texts)]
            assert cols == [normalize(x, rep) for x in stripped]  # no text has < 30 character 24-grams
            ns["MIN_SHINGLES"] = 10 ** 6  # every non-empty text short: each its own sentinel
            sentinels = [ns["calib_text"](t, k) for k, t in enumerate(sub.texts)]
            assert len(set(sentinels)) == sub.n and all(c.startswith("calib-short-") for c in sentinels)
    ns = {}
    exec(compile(found["datasketch"].snippet, "ds", "exec"), ns)
    ns["EXPORT_DIR"] = str(tmp_path)  # no config.json there
    with pytest.raises(FileNotFoundError):
        ns["prepare"](sub.texts[0])
    (folder / "stoplist.json").write_text(stop.to_json(rep).replace('"share"', '"share" '), encoding="utf-8")
    ns["EXPORT_DIR"], ns["_STOPLIST"] = str(folder), None
    with pytest.raises(ValueError, match="sha256"):  # an edited stoplist is refused
        ns["prepare"](sub.texts[0])


def test_datatrove_pre_step_is_a_pipeline_step_that_leaves_short_documents_out(sub, tmp_path):
    pytest.importorskip("datatrove")
    from datatrove.data import Document
    rep = Representation(k=2, strip_punct=True, strip_lines=0.01)
    cfg = Config(rep, b=16, r=8, min_shingles=30)
    ws = Workspace(sub)
    stop, stripped = ws.stripped(rep)
    t = T.targets(cfg)["datatrove"]
    ns = _exec(t)
    ns["EXPORT_DIR"] = str(_export_dir(tmp_path / "export", stop, rep))
    docs = [Document(text=x, id=str(k)) for k, x in enumerate(sub.texts)]
    out = list(ns["CalibPreSteps"]().run(iter(docs)))
    short = np.asarray([d.text == "" and s != "" for d, s in zip(out, stripped)])
    assert [d.text for d, sh in zip(out, short) if not sh] == [s for s, sh in zip(stripped, short) if not sh]
    from calib.verification.short import short_mask
    assert np.array_equal(short, short_mask(ws.sets(rep).sizes(), 30)) and short.sum() > 3
    step = ns["CalibMinhashSignature"](str(tmp_path / "probe"))
    assert all(step.get_shingles(d.text).size == 0 for d, sh in zip(out, short) if sh)  # no signature: never removed


@pytest.mark.slow  # ~60 s: the export of the search's pick (every target's evidence), then two snippets on 2,396 documents
def test_datasketch_and_milvus_snippets_remove_what_the_export_states_on_the_shipped_sample(sample, tmp_path,
                                                                                        milvus_module):
    import json

    from calib.production.export import write_export
    ws = Workspace(sample)
    ev = evaluate(ws, PICK)
    out = tmp_path / "export"
    write_export(out, PICK, evaluation=ev, sample=sample, workspace=ws)
    evidence = {k: v["evidence"] for k, v in json.loads((out / "targets.json").read_text())["targets"].items()}
    ids, texts = [str(x) for x in sample.ids], list(sample.texts)
    engine = {ids[r]: ids[ev.clustering.representative[r]] for r in np.flatnonzero(ev.clustering.removed)}
    # both run the pick as calib does (stripping, exact J >= 0.57, star/first): calib's 360 removals, 2 false
    for name in ("datasketch", "milvus"):
        assert (evidence[name]["removed"], evidence[name]["false_removals"]) == (360, 2), name
        assert evidence[name]["config_fingerprint"] == PICK.fingerprint(), name
    sys.path.insert(0, str(out))
    try:
        sys.modules.pop("datasketch_target", None)
        ds = importlib.import_module("datasketch_target")
        assert ds.EXPORT_DIR == str(out) and ds.STRIP and ds.POLICY == "star"
        assert ds.proposed_removals(zip(ids, texts)) == engine
    finally:
        sys.path.remove(str(out))
        sys.modules.pop("datasketch_target", None)
    mod = milvus_module(PICK)
    import datasketch_target
    datasketch_target.EXPORT_DIR = str(out)  # the export's stoplist, whose sha256 its config.json holds
    assert mod.dedup(LoopbackMinhashLSH(64), "dedup", zip(ids, texts)) == engine


# -- the export never hides a loss -------------------------------------------------------------------------

def test_loss_lines_name_each_target_whose_figures_differ_hand_made():
    from calib.production.targets.losses import loss_lines
    row = {"removed": 360, "false_removals": 2, "false_removal_rate": 2 / 330, "false_removal_rate_low": 0.0,
           "false_removal_rate_high": 0.0149}
    same = dict(row)
    worse = {"removed": 480, "false_removals": 113, "false_removal_rate": 113 / 446}
    lines = loss_lines(row, {"datasketch": same, "datatrove": worse, "milvus": None},
                       {"datasketch": "datasketch", "datatrove": "datatrove", "milvus": "Milvus MINHASH_LSH"})
    assert len(lines) == 2  # datasketch runs it as calib does: not named
    assert lines[0] == ("datatrove: false-removal rate 25.34%, 480 removals (113 false); "
                        "calib: 360 removals (2 false) at 0.61%")
    assert lines[1].startswith("Milvus MINHASH_LSH: no figures") and "milvus.unsupported" in lines[1]
    # the same removals with other wrong ones, or another rate, differ too
    assert len(loss_lines(row, {"x": {**row, "false_removals": 3}})) == 1
    assert len(loss_lines(row, {"x": {**row, "false_removal_rate": 0.02}})) == 1
    assert loss_lines(row, {"x": {**row, "false_removal_rate": row["false_removal_rate"] + 1e-12}}) == []
