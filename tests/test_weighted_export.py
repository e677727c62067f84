"""A weighted (idf) config exported and applied: the document-frequency table travels
beside config.json with its sha256, `calib apply` reproduces the export's removals from
it, and targets that cannot weigh shingles say so."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from _weighted import write_boiler_sample
from calib.production import export as E
from calib.production.engines.local import ApplyError, apply_config
from calib.cli import main
from calib.search.config import Config
from calib.sketches.represent import Representation
from calib.reading.samples import load_sample
from calib.search.sweep import evaluate
from calib.search.workspace import Workspace
from calib.sketches.weighted_minhash import DocumentFrequencies

WEIGHTED = Config(Representation(shingle="char", k=5, scheme="icws", weighting="idf", num_perm=64), b=16, r=4,
                  threshold=0.5, measure="weighted_jaccard")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    d = write_boiler_sample(tmp_path_factory.mktemp("boiler"))
    sample = load_sample(d)
    ws = Workspace(sample)
    ev = evaluate(ws, WEIGHTED)
    out = tmp_path_factory.mktemp("export") / "exp"
    E.write_export(out, WEIGHTED, evaluation=ev, sample=sample, workspace=ws)
    return d, out, ws


def test_export_carries_the_table_and_its_hash(exported):
    d, out, ws = exported
    cfg, doc = E.load_config(out / "config.json")
    assert cfg == WEIGHTED
    entry = doc["weights"]
    table = ws.frequencies(WEIGHTED.rep)
    data = (out / entry["file"]).read_bytes()
    assert entry["sha256"] == table.sha256() and data == table.to_bytes()
    assert entry["documents"] == 12 and entry["source"] == "sample"
    back = E.load_frequencies(doc, out / "config.json")
    assert (back.weights(table.hashes) == table.weights(table.hashes)).all()
    assert "document_frequencies.bin" in (out / "README.txt").read_text()


def test_a_changed_or_missing_table_is_refused(exported, tmp_path):
    _, out, _ = exported
    doc = json.loads((out / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(doc))
    with pytest.raises(E.ExportError, match="missing"):
        E.load_frequencies(doc, tmp_path / "config.json")
    data = bytearray((out / "document_frequencies.bin").read_bytes())
    data[-1] ^= 1
    (tmp_path / "document_frequencies.bin").write_bytes(bytes(data))
    with pytest.raises(E.ExportError, match="sha256"):
        E.load_frequencies(doc, tmp_path / "config.json")
    del doc["weights"]
    with pytest.raises(E.ExportError, match="/weights"):
        E.validate_doc(doc)


def test_cli_apply_reproduces_the_exports_removals(exported, tmp_path, capsys):
    d, out, _ = exported
    code = main(["apply", "--config", str(out / "config.json"), "--corpus", str(d / "docs.jsonl"),
                 "--out", str(tmp_path / "app"), "--batch-size", "5"])
    assert code == 0, capsys.readouterr().err
    got = pd.read_csv(tmp_path / "app" / "manifest.csv", dtype=str)
    want = pd.read_csv(out / "manifest.csv", dtype=str)
    assert len(want) >= 2
    assert got["doc_id"].tolist() == want["doc_id"].tolist()
    assert got["representative_id"].tolist() == want["representative_id"].tolist()
    with pytest.raises(ApplyError, match="document-frequency table"):
        apply_config(WEIGHTED, d / "docs.jsonl")


def test_weighting_changes_what_is_removed(exported):
    # the boilerplate pairs share a footer: J >= 0.5 unweighted for some, J_w well below
    _, _, ws = exported
    plain = Config(Representation(shingle="char", k=5, num_perm=64), b=16, r=4, threshold=0.5)
    assert evaluate(ws, WEIGHTED).row["pair_precision"] >= evaluate(ws, plain).row["pair_precision"]


def test_targets_list_weighting_as_unsupported(exported):
    _, out, _ = exported
    targets = json.loads((out / "targets.json").read_text())
    for name, t in targets["targets"].items():
        fields = [u["field"] for u in t["unsupported"]]
        assert "/representation/weighting" in fields, name
        if t["evaluated_as"] is not None:
            assert " idf" not in t["evaluated_as"]["config"], name   # evaluated as the tool runs it: unweighted


def test_table_round_trips_through_bytes(exported):
    _, _, ws = exported
    table = ws.frequencies(WEIGHTED.rep)
    again = DocumentFrequencies.from_bytes(table.to_bytes())
    assert again.documents == table.documents and again.to_bytes() == table.to_bytes()


def test_idf_corpus_supplies_the_frequencies(tmp_path, capsys):
    """--idf-corpus: the weights come from the named corpus; the export says so and carries its table."""
    d = write_boiler_sample(tmp_path)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text((d / "docs.jsonl").read_text() + json.dumps({"id": "extra", "text": "w1 w2 w3 w4 w5 w6"}) + "\n")
    out = tmp_path / "exp"
    code = main(["export", "--sample", str(d), "--config", str(_config_file(tmp_path)), "--out", str(out),
                 "--idf-corpus", str(corpus)])
    assert code == 0, capsys.readouterr().err
    doc = json.loads((out / "config.json").read_text())
    assert doc["weights"]["documents"] == 13 and doc["weights"]["source"] == "corpus corpus.jsonl"
    code = main(["export", "--sample", str(d), "--config", str(_config_file(tmp_path)), "--out", str(tmp_path / "x"),
                 "--idf-corpus", str(tmp_path / "absent.jsonl")])
    assert code == 2 and "--idf-corpus" in capsys.readouterr().err


def _config_file(tmp_path):
    """A saved weighted config (export --config re-evaluates it and writes its own table)."""
    path = tmp_path / "given.json"
    doc = E.build_config_doc(WEIGHTED, weights=E.weights_entry(DocumentFrequencies(1, np.zeros(0, np.uint32),
                                                                                   np.zeros(0, np.int64)), "x"))
    path.write_text(json.dumps(doc))
    return path
