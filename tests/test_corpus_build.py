"""The shipped unlabeled corpus (data/corpus/docs.jsonl.gz): rebuilt byte for
byte from the committed base file, the fields the README names, and the
near-duplicates it promises, found by brute force over exact Jaccard."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from calib.shipped.corpus import CORPUS_FILE, FIELDS, build_corpus
from calib.verification.jaccard import brute_force_all_pairs
from calib.sketches.represent import Representation
from calib.sketches.shingles import shingle_hashes

ROOT = Path(__file__).resolve().parents[1]


def _records(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _jsonl(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes())


def test_corpus_is_rebuilt_byte_for_byte_and_committed_up_to_date(tmp_path):
    """Same JSONL bytes on every build and as committed (compared decompressed: the
    gzip stream may differ with the zlib library's version; on one machine it does not)."""
    counts = build_corpus(tmp_path / "a.jsonl.gz")
    build_corpus(tmp_path / "b.jsonl.gz")
    assert (tmp_path / "a.jsonl.gz").read_bytes() == (tmp_path / "b.jsonl.gz").read_bytes()
    assert _jsonl(tmp_path / "a.jsonl.gz") == _jsonl(CORPUS_FILE), \
        "data/corpus/docs.jsonl.gz is stale: run calib samples corpus"
    assert counts["documents"] == 3005 and counts["bytes"] < 3_000_000
    assert build_corpus(tmp_path / "c.jsonl.gz", seed=1)["documents"] == 3005
    assert _jsonl(tmp_path / "c.jsonl.gz") != _jsonl(CORPUS_FILE)


def test_corpus_fields_and_sizes():
    recs = _records(CORPUS_FILE)
    assert len(recs) == 3005 and all(tuple(r) == FIELDS for r in recs)
    assert len({r["id"] for r in recs}) == len(recs)
    assert set(Counter(r["source"] for r in recs)) == {"stdlib", "numpy", "pandas", "scipy"}  # no licence text
    words = [len(r["text"].split()) for r in recs]
    assert min(words) >= 25 and max(words) <= 1500


@pytest.mark.slow
def test_corpus_holds_the_promised_near_duplicates():
    """60 exact copies; neighbours in the 25 edit chains at char 5-gram J >= 0.8
    with their ends below it: connected components of the J >= 0.8 graph of
    three or more documents in which not every pair passes (chaining)."""
    recs = _records(CORPUS_FILE)
    texts = [r["text"] for r in recs]
    exact = sum(c - 1 for c in Counter(texts).values() if c > 1)
    assert exact >= 60
    sets = shingle_hashes(texts, Representation(shingle="char", k=5))
    i, j, sim = brute_force_all_pairs(sets, 0.5)
    strong = sim >= 0.8
    parent = list(range(len(texts)))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for a, b in zip(i[strong], j[strong]):
        parent[find(a)] = find(b)
    comps = Counter(find(x) for x in range(len(texts)))
    big = {c for c, n in comps.items() if n >= 3}
    passing = {(int(a), int(b)) for a, b in zip(i[strong], j[strong])}
    chained = 0
    for c in big:
        members = sorted(x for x in range(len(texts)) if find(x) == c)
        pairs = [(a, b) for k, a in enumerate(members) for b in members[k + 1:]]
        chained += any(p not in passing for p in pairs)
    assert chained >= 15, (len(big), chained)
    assert np.count_nonzero((sim >= 0.8) & (sim < 1.0)) >= 150


def test_corpus_command_refuses_an_existing_file_without_overwrite(tmp_path, capsys):
    from calib.cli.samples import main
    out = tmp_path / "docs.jsonl.gz"
    out.write_bytes(b"keep me")
    assert main(["corpus", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: --out {out}: already exists (pass --overwrite to replace it)"
    assert out.read_bytes() == b"keep me"
