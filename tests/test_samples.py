"""Loaders, validation errors, the shipped sample and the Clough adapter."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import sparse
from scipy.sparse import csgraph

from _util import needs_clough
from calib.sketches.represent import Representation, shingle_strings
from calib.shipped.sample import CATEGORIES, FAMILY_CATEGORIES, build_sample, write_docs_pairs
from calib.reading.clough import CLOUGH_DIR, load_clough
from calib.reading.sample import NOT_JUDGED, SAMPLE_DIR, Sample, from_frames, numeric_columns, summary
from calib.reading.samples import SampleError, load_sample
from calib.reading.writing import write_sample

ROOT = Path(__file__).resolve().parents[1]


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def jsonl(*records) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


DOCS = jsonl({"id": "a", "text": "alpha one", "domain": "x", "quality": 0.5},
             {"id": "b", "text": "beta two", "domain": "y", "quality": 2},
             {"id": "c", "text": "gamma three", "domain": "x", "quality": 1.5})


def small_sample() -> Sample:
    docs = pd.DataFrame({"id": ["a", "b", "c", "d"], "text": ["one two", "one two!", "three, \"four\"", "x\ny"],
                         "group": pd.Series(["g", "g", pd.NA, pd.NA], dtype="str"),
                         "domain": ["p", "q", "p", "q"]})
    pairs = pd.DataFrame({"id_a": ["a", "c"], "id_b": ["b", "d"], "label": ["duplicate", "not_duplicate"],
                          "category": ["light_edit", ""]})
    return from_frames(docs, pairs)


# ---------------------------------------------------------------- round trips

@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_round_trip_each_format(tmp_path, fmt):
    s = small_sample()
    write_sample(s, tmp_path, fmt=fmt)
    back = load_sample(tmp_path)
    assert back.content_hash() == s.content_hash()
    assert back.slice_columns == ("domain",)
    assert back.pairs["category"].tolist() == ["light_edit", ""]


def test_documents_file_plus_pairs_file_and_inline_pairs(tmp_path):
    s = small_sample()
    d, p = write_sample(s, tmp_path / "x", fmt="csv")
    assert load_sample(d, p).content_hash() == s.content_hash()
    inline = jsonl({"id_a": "a", "text_a": "one two", "id_b": "b", "text_b": "one two!", "label": "duplicate"},
                   {"id_a": "a", "text_a": "one two", "id_b": "c", "text_b": "other", "label": 0,
                    "category": "same_topic"})
    got = load_sample(write(tmp_path / "inline.jsonl", inline))
    assert got.ids.tolist() == ["a", "b", "c"]
    assert got.pairs["is_duplicate"].tolist() == [True, False]
    assert got.pairs["category"].tolist() == ["", "same_topic"]


texts = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=40).filter(lambda t: t.strip())
extras = st.sampled_from(["😀 emoji", "e\u0301 combining", 'quote " and \'', "comma, comma", "new\nline",
                          "cr\r\nlf", "tab\tsep", ""])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.lists(st.tuples(texts, texts, extras), min_size=1, max_size=6, unique_by=lambda t: t[0]))
def test_hypothesis_round_trip(tmp_path_factory, data):
    docs = pd.DataFrame({"id": [d[0] for d in data], "text": [d[1] + d[2] for d in data]})
    pairs = (pd.DataFrame({"id_a": [data[0][0]], "id_b": [data[-1][0]], "label": [False], "category": ["c,\"x\""]})
             if len(data) > 1 else None)
    s = from_frames(docs, pairs)
    for fmt in ("jsonl", "csv", "parquet"):
        out = tmp_path_factory.mktemp(fmt)
        write_sample(s, out, fmt=fmt)
        back = load_sample(out)
        assert back.ids.tolist() == s.ids.tolist(), fmt
        assert back.texts == s.texts, fmt
        assert back.content_hash() == s.content_hash(), fmt


def test_numeric_column_kept_numeric_not_a_slice(tmp_path):
    s = load_sample(write(tmp_path / "docs.jsonl", DOCS))
    assert s.slice_columns == ("domain",)
    assert numeric_columns(s) == ("quality",)
    assert s.docs["quality"].tolist() == [0.5, 2.0, 1.5]
    c = load_sample(write(tmp_path / "d.csv", "id,text,quality,source\n1,a b,0.5,web\n2,c d,,news\n"))
    assert numeric_columns(c) == ("quality",) and c.slice_columns == ("source",)


def test_integer_and_string_ids_are_the_same_id(tmp_path):
    s = load_sample(write(tmp_path / "docs.jsonl", jsonl({"id": 7, "text": "x"}, {"id": "8", "text": "y"})))
    assert s.ids.tolist() == ["7", "8"]
    with pytest.raises(SampleError) as e:
        load_sample(write(tmp_path / "d2.jsonl", jsonl({"id": 1, "text": "x"}, {"id": "1", "text": "y"})))
    assert (e.value.file, e.value.line, e.value.field) == ("d2.jsonl", 2, "id")


# ---------------------------------------------------------------- validation

def err(call) -> SampleError:
    with pytest.raises(SampleError) as e:
        call()
    return e.value


def test_missing_file_and_unknown_extension(tmp_path):
    e = err(lambda: load_sample(tmp_path / "nope.jsonl"))
    assert e.file == "nope.jsonl" and "not found" in str(e)
    e = err(lambda: load_sample(write(tmp_path / "docs.txt", "x")))
    assert e.file == "docs.txt" and "extension" in str(e)
    e = err(lambda: load_sample(tmp_path))  # a directory without docs.*
    assert "no docs.jsonl" in str(e)


def test_missing_column(tmp_path):
    e = err(lambda: load_sample(write(tmp_path / "docs.csv", "id,body\na,x\n")))
    assert (e.file, e.line, e.field) == ("docs.csv", 1, "text")
    e = err(lambda: load_sample(write(tmp_path / "docs.jsonl", DOCS), write(tmp_path / "p.csv", "id_a,id_b\na,b\n")))
    assert (e.file, e.field) == ("p.csv", "label")


def test_duplicate_id_message(tmp_path):
    recs = [{"id": f"a{k}", "text": "t"} for k in range(20)]
    recs[16]["id"] = "a2"
    e = err(lambda: load_sample(write(tmp_path / "docs.jsonl", jsonl(*recs))))
    assert str(e) == "docs.jsonl line 17, field 'id': duplicate id 'a2' (first seen on line 3)"
    assert (e.file, e.line, e.field) == ("docs.jsonl", 17, "id")


@pytest.mark.parametrize("bad", [None, "", "   "])
def test_empty_id(tmp_path, bad):
    e = err(lambda: load_sample(write(tmp_path / "docs.jsonl", jsonl({"id": "a", "text": "x"}, {"id": bad, "text": "y"}))))
    assert (e.line, e.field) == (2, "id") and "empty id" in str(e)


@pytest.mark.parametrize("bad", [3, ["a", "b"], None, {"x": 1}])
def test_non_text_text(tmp_path, bad):
    e = err(lambda: load_sample(write(tmp_path / "docs.jsonl", jsonl({"id": "a", "text": "x"}, {"id": "b", "text": bad}))))
    assert (e.file, e.line, e.field) == ("docs.jsonl", 2, "text") and "must be a string" in str(e)


def test_invalid_json_line(tmp_path):
    e = err(lambda: load_sample(write(tmp_path / "docs.jsonl", '{"id": "a", "text": "x"}\n\n{"id": "b", "text": \n')))
    assert (e.line, e.field) == (3, None) and "invalid JSON" in str(e)


def test_invalid_utf8_names_line_and_offset(tmp_path):
    data = b'{"id": "a", "text": "x"}\n{"id": "b", "text": "caf\xe9"}\n'
    e = err(lambda: load_sample(write(tmp_path / "docs.jsonl", data)))
    assert (e.file, e.line) == ("docs.jsonl", 2) and "byte offset 49" in str(e)
    e = err(lambda: load_sample(write(tmp_path / "docs.csv", b"id,text\na,ok\nb,caf\xe9\n")))
    assert (e.file, e.line) == ("docs.csv", 3)


def test_csv_line_numbers_count_header_and_multiline_fields(tmp_path):
    csv = 'id,text\na,"two\nlines"\nb,x\na,dup\n'
    e = err(lambda: load_sample(write(tmp_path / "docs.csv", csv)))
    assert (e.line, e.field) == (5, "id") and "first seen on line 2" in str(e)


def test_parquet_row_numbers(tmp_path):
    pd.DataFrame({"id": ["a", "b", "a"], "text": ["x", "y", "z"]}).to_parquet(tmp_path / "docs.parquet")
    e = err(lambda: load_sample(tmp_path / "docs.parquet"))
    assert (e.file, e.line, e.field) == ("docs.parquet", 3, "id")


PAIR_CASES = [
    ("a,b,maybe,\n", 2, "label", "not in duplicate"),
    ("a,zz,duplicate,\n", 2, "id_b", "unknown id 'zz'"),
    ("a,a,duplicate,\n", 2, "id_b", "itself"),
    ("a,b,duplicate,\nb,a,not_duplicate,\n", 3, "label", "contradictory labels"),
    ("c,b,false,\nb,c,1,\n", 3, "label", "contradictory labels"),
]


@pytest.mark.parametrize("rows,line,field,text", PAIR_CASES)
def test_pair_errors(tmp_path, rows, line, field, text):
    docs = write(tmp_path / "docs.jsonl", DOCS)
    pairs = write(tmp_path / "pairs.csv", "id_a,id_b,label,category\n" + rows)
    e = err(lambda: load_sample(docs, pairs))
    assert (e.file, e.line, e.field) == ("pairs.csv", line, field) and text in str(e)


def test_label_contradicting_group(tmp_path):
    docs = write(tmp_path / "docs.jsonl", jsonl({"id": "a", "text": "x", "group": "g"},
                                               {"id": "b", "text": "y", "group": "g"},
                                               {"id": "c", "text": "z", "group": None}))
    e = err(lambda: load_sample(docs, write(tmp_path / "p.csv", "id_a,id_b,label\na,b,not_duplicate\n")))
    assert (e.file, e.line, e.field) == ("p.csv", 2, "label") and "group" in str(e)
    e = err(lambda: load_sample(docs, write(tmp_path / "p2.csv", "id_a,id_b,label\nb,a,1\na,c,duplicate\n")))
    assert (e.line, e.field) == (3, "label")


def test_not_judged_group_is_no_group(tmp_path):
    """group '?' (NOT_JUDGED): no pair label contradicts it, it is not counted as a group (summary,
    warnings: three '?' of four documents are not a dominant group) and it survives a round trip."""
    docs = write(tmp_path / "docs.jsonl", jsonl({"id": "a", "text": "x", "group": "g"},
                                               {"id": "b", "text": "y", "group": "?"},
                                               {"id": "c", "text": "z", "group": "?"},
                                               {"id": "d", "text": "w", "group": "?"}))
    s = load_sample(docs, write(tmp_path / "p.csv", "id_a,id_b,label\na,b,duplicate\nb,c,not_duplicate\n"))
    assert s.not_judged().tolist() == [False, True, True, True] and s.warnings == ()
    assert summary(s)["groups"] == {"groups": 1, "in_groups_of_2_or_more": 0, "largest": 1, "without_group": 0,
                                    "not_judged": 3, "pairs_within_groups": 0, "pairs_within_groups_not_listed": 0}
    assert s.group_codes().tolist() == [0, -1, -1, -1]
    write_docs_pairs(s, tmp_path / "again")
    assert load_sample(tmp_path / "again").not_judged().tolist() == [False, True, True, True]
    plain = load_sample(write(tmp_path / "plain.jsonl", jsonl(*({"id": k, "text": k, "group": "G"} for k in "abc"),
                                                              {"id": "d", "text": "d", "group": None})))
    assert plain.warnings and summary(plain)["groups"]["not_judged"] == 0  # a real dominant group still warns


def test_inline_pairs_conflicting_text(tmp_path):
    inline = jsonl({"id_a": "a", "text_a": "x", "id_b": "b", "text_b": "y", "label": "duplicate"},
                   {"id_a": "c", "text_a": "z", "id_b": "a", "text_b": "other", "label": "duplicate"})
    e = err(lambda: load_sample(write(tmp_path / "inline.jsonl", inline)))
    assert (e.line, e.field) == (2, "text_b") and "different text than on line 1" in str(e)


def test_exclusions_recorded_not_dropped(tmp_path):
    docs = write(tmp_path / "docs.jsonl", jsonl({"id": "a", "text": "x"}, {"id": "b", "text": " \n"},
                                               {"id": "c", "text": ""}, {"id": "d", "text": "y"}))
    pairs = write(tmp_path / "pairs.csv", "id_a,id_b,label\na,b,duplicate\na,d,not_duplicate\n")
    s = load_sample(docs, pairs)
    assert s.ids.tolist() == ["a", "d"] and len(s.pairs) == 1
    ex = s.exclusions
    assert ex[["file", "line", "id"]].values.tolist() == [["docs.jsonl", 2, "b"], ["docs.jsonl", 3, "c"],
                                                          ["pairs.csv", 2, "a|b"]]
    assert summary(s)["excluded_by_reason"] == {"empty text": 1, "pair names excluded document": 1,
                                                "whitespace-only text": 1}


def test_empty_sample(tmp_path):
    e = err(lambda: load_sample(write(tmp_path / "docs.jsonl", jsonl({"id": "a", "text": " "}))))
    assert e.file == "docs.jsonl" and "empty sample" in str(e)
    e = err(lambda: load_sample(write(tmp_path / "docs.csv", "id,text\n")))
    assert "empty sample" in str(e)


# ---------------------------------------------------------------- shipped sample

@pytest.mark.slow
def test_build_is_deterministic_and_matches_shipped(tmp_path):
    build_sample(tmp_path / "one")
    build_sample(tmp_path / "two")
    for name in ("docs.jsonl", "pairs.csv"):
        one = (tmp_path / "one" / name).read_bytes()
        assert one == (tmp_path / "two" / name).read_bytes()
        assert one == (SAMPLE_DIR / name).read_bytes(), f"data/sample/{name} is stale: rerun build"


def test_shipped_sample_coverage():
    s = load_sample(ROOT / "data" / "sample")
    info = summary(s)
    assert 2000 <= info["documents"] <= 4000 and info["excluded"] == 0
    by_cat = info["pairs_by_category"]
    assert set(by_cat) == set(CATEGORIES)
    for cat, counts in by_cat.items():
        assert sum(counts.values()) >= (10 if cat in FAMILY_CATEGORIES else 30), cat
    assert info["pairs_by_label"]["duplicate"] > 0 and info["pairs_by_label"]["not_duplicate"] > 0
    assert {"domain", "language"} <= set(s.slice_columns)
    assert {"en", "en-Cyrl", "de"} <= set(info["slice_columns"]["language"])
    words = s.docs["text"].str.split().str.len()
    assert words.min() >= 20 and words.max() <= 1700
    # groups are exactly the connected components of the duplicate pairs
    dup = s.pairs[s.pairs["is_duplicate"]]
    g = s.docs["group"]
    comp = csgraph.connected_components(sparse.coo_matrix((np.ones(len(dup)), (dup["i"], dup["j"])),
                                                          shape=(s.n, s.n)), directed=False)[1]
    linked = np.isin(np.arange(s.n), np.r_[dup["i"], dup["j"]])
    assert (g.isna() | (g == NOT_JUDGED)).to_numpy().tolist() == (~linked).tolist()
    by_group = pd.Series(comp[linked]).groupby(g[linked].to_numpy()).nunique()
    by_comp = pd.Series(g[linked].to_numpy()).groupby(comp[linked]).nunique()
    assert (by_group == 1).all() and (by_comp == 1).all()


def test_shipped_families_chain_only_through_their_edits():
    """Each family (a group of 3+ documents, the chain and edit_tree categories) is
    linked by its labeled parent -> child edits, each 0.85-0.92 Jaccard to its parent;
    every other pair of the family is below 0.8, so at J >= 0.8 only chaining puts a
    family in one cluster. Under char 5-grams (the recommended configuration) and word
    5-grams (the default one), by Python sets, not the kernels."""
    s = load_sample(SAMPLE_DIR)
    fam = s.pairs[s.pairs["category"].isin(FAMILY_CATEGORIES)]
    assert fam["is_duplicate"].all()
    edges = set(zip(fam["i"], fam["j"]))
    sizes = s.named_groups().value_counts()
    big = sizes[sizes >= 3]
    assert set(sizes) == {2, *big} and big.min() >= 4 and len(big) >= 10
    for rep in (Representation(shingle="char", k=5), Representation(shingle="word", k=5)):
        n_far = 0
        for name in big.index:
            rows = np.flatnonzero((s.docs["group"] == name).to_numpy())
            assert sum((a, b) in edges for a in rows for b in rows if a < b) == len(rows) - 1  # a tree of edits
            sets = {r: set(shingle_strings(s.docs["text"].iat[r], rep)) for r in rows}
            for a, b in itertools.combinations(rows.tolist(), 2):
                j = len(sets[a] & sets[b]) / len(sets[a] | sets[b])
                if (a, b) in edges:
                    assert 0.85 <= j < 0.92, (rep.label(), a, b, j)
                else:
                    assert j < 0.8, (rep.label(), a, b, j)
                    n_far += 1
        assert n_far >= len(big)  # every family holds pairs that only chaining joins


# ---------------------------------------------------------------- Clough corpus

@needs_clough
def test_clough_adapter_counts():
    s = load_sample(CLOUGH_DIR)
    assert s.n == 100 and len(s.pairs) == 95
    assert s.docs["category"].value_counts().to_dict() == {"non": 38, "cut": 19, "light": 19, "heavy": 19, "orig": 5}
    cats = s.pairs.groupby("category")["is_duplicate"].agg(["size", "sum"])
    assert cats.to_dict("index") == {"cut": {"size": 19, "sum": 19}, "heavy": {"size": 19, "sum": 0},
                                     "light": {"size": 19, "sum": 19}, "non": {"size": 38, "sum": 0}}
    assert s.docs["domain"].nunique() == 5 and "g0pA_taska" in set(s.ids)


@needs_clough
@pytest.mark.parametrize("heavy,npairs,ndup", [("duplicate", 95, 57), ("exclude", 76, 38)])
def test_clough_heavy_option(heavy, npairs, ndup):
    s = load_clough(CLOUGH_DIR, heavy=heavy)
    assert len(s.pairs) == npairs and int(s.pairs["is_duplicate"].sum()) == ndup
    assert len(s.exclusions) == 95 - npairs
    with pytest.raises(ValueError):
        load_clough(CLOUGH_DIR, heavy="maybe")


def test_data_readme_counts_match_the_sample():
    """data/README.md's counts are the shipped files' (regenerated, not typed): the summary table,
    the pairs per category and the family pairs that only the group labels."""
    readme = (ROOT / "data" / "README.md").read_text(encoding="utf-8")
    s = load_sample(SAMPLE_DIR)
    d = s.docs

    def num(text: str) -> int:
        return int(text.replace(",", ""))

    def row(name: str) -> str:
        return re.search(rf"^\| {re.escape(name)} \| (.*) \|$", readme, flags=re.M).group(1)

    words = d["text"].str.split().str.len()
    m = re.fullmatch(r"([\d,]+) \(([\d,]+) without a duplicate; (\d+) to ([\d,]+) words, median (\d+)\)",
                     row("documents"))
    assert [num(x) for x in m.groups()] == [s.n, int(d["group"].isna().sum()), words.min(), words.max(),
                                            int(words.median())]
    m = re.fullmatch(r"([\d,]+) \(group `\?`\): ([\d,]+) exact copies, ([\d,]+) formatting, ([\d,]+) light and "
                     r"([\d,]+) heavy edits, ([\d,]+) excerpts", row("not judged"))
    unjudged = d[d["group"] == NOT_JUDGED]["variant"].value_counts()
    assert [num(x) for x in m.groups()] == [int(unjudged.sum()),
                                            *(int(unjudged.get(v, 0)) for v in ("exact_copy", "formatting", "light_edit",
                                                                               "heavy_edit", "excerpt"))]
    m = re.fullmatch(r"([\d,]+): ([\d,]+) `duplicate`, ([\d,]+) `not_duplicate`", row("labeled pairs"))
    assert [num(x) for x in m.groups()] == [len(s.pairs), int(s.pairs["is_duplicate"].sum()),
                                            int((~s.pairs["is_duplicate"]).sum())]
    sizes = s.named_groups().value_counts()
    fam = sizes[sizes > 2]
    m = re.fullmatch(r"([\d,]+): ([\d,]+) of 2 documents, (\d+) edit families of (\d+) to (\d+) \(([\d,]+) "
                     r"documents\)", row("groups"))
    assert [num(x) for x in m.groups()] == [len(sizes), int((sizes == 2).sum()), len(fam), fam.min(), fam.max(),
                                            fam.sum()]
    for col in ("domain", "language"):
        listed = {k: num(v) for k, v in re.findall(r"([\w-]+) ([\d,]+)", row(f"`{col}`"))}
        assert listed == d[col].value_counts().to_dict(), col
    listed = {k: num(v) for k, v in re.findall(r"(short|medium|long) \([^)]*\) ([\d,]+)", row("`length`"))}
    assert listed == d["length"].value_counts().to_dict()
    table = {c: (lab, int(n)) for c, lab, n in
             re.findall(r"^\| `(\w+)` \| (duplicate|not_duplicate) \| (\d+) \|", readme, flags=re.M)}
    counts = s.pairs.groupby("category")["is_duplicate"].agg(["first", "size"])
    assert table == {c: ("duplicate" if r["first"] else "not_duplicate", int(r["size"]))
                     for c, r in counts.iterrows()}
    in_fam = int((fam * (fam - 1) // 2).sum()) - int(s.pairs["category"].isin(FAMILY_CATEGORIES).sum())
    assert f"({in_fam}) are duplicates through its `group`" in " ".join(readme.split())
