"""Settings declared once: the Config/Representation/Grid fields drive the
results-row columns, config_from_row, the config document and its JSON
schema, the CLI grid flags and the Sweep page's columns. These tests hold
every one of those to the fields, so a field added in one place and
forgotten in another fails here."""

from __future__ import annotations

import json
import math
from dataclasses import fields

import numpy as np
import pandas as pd
import pytest

from appui.tables import sweep_view
from calib import cli
from calib.cli.sweep import SAMPLE_AXES, UNSET, grid_from_args
from calib.candidates import lsh
from calib.clusters.clustering import POLICIES, REPRESENTATIVE_RULES, Policy, Representative, cluster_pairs
from calib.search.config import VERIFY_RULES, Config, Verify, config_columns, config_from_row, table_columns
from calib.production.document import SCHEMA_PATH, build_config_doc, config_from_doc, validate_doc
from calib.candidates.pairs import decode, first_of_each, pair_codes, unordered_codes
from calib.sketches.schemes import ALIASES, scheme_names
from calib.sketches.boilerplate import Stoplist
from calib.base.fields import unset
from calib.sketches.represent import HASH_FUNCTIONS, SHINGLE_TYPES, Representation
from calib.reading.sample import Sample
from calib.search.grid import Grid
from calib.search.sweep import sweep

SCHEMA = json.loads(SCHEMA_PATH.read_text())
CONFIG_FIELDS = [f for f in fields(Config) if f.name != "rep"]

# A config with every field away from its default, one per verification rule.
ODD_REP = Representation(shingle="char", k=4, lowercase=False, nfkc=False, strip_punct=True, collapse_ws=False,
                         hashfunc="mmh3", scheme="datasketch", seed=9, num_perm=64, strip_lines=0.05)
ODD = [Config(ODD_REP, b=8, r=4, verify=v, threshold=0.65, policy="star", representative="medoid", max_component=7)
       for v in VERIFY_RULES]
# the containment measure (which keeps the longest document of a cluster)
ODD += [Config(ODD_REP, b=8, r=4, verify="estimated", threshold=0.65, policy="star", representative="longest",
               max_component=7, measure="containment")]
# weighted MinHash (weighting idf needs the weighted scheme icws and the weighted_jaccard measure)
ODD += [Config(ODD_REP.with_(scheme="icws", weighting="idf"), b=8, r=4, verify="exact", threshold=0.65,
               policy="star", representative="medoid", max_component=7, measure="weighted_jaccard")]
# a minimum length, matched exactly below it
ODD += [Config(ODD_REP, b=8, r=4, threshold=0.65, min_shingles=5, short_docs="exact")]


def test_every_field_differs_from_its_default_somewhere():
    for f in fields(Representation):
        assert any(getattr(c.rep, f.name) != f.default for c in ODD), f.name
    for f in CONFIG_FIELDS:
        assert any(getattr(c, f.name) != getattr(Config(), f.name) for c in ODD), f.name


# -- results rows ---------------------------------------------------------------------

@pytest.mark.parametrize("cfg", ODD + [Config()], ids=lambda c: c.verify.value)
def test_row_columns_and_round_trip(cfg):
    row = config_columns(cfg)
    # a doc_if_set field at its default adds no column (earlier tables keep their bytes)
    want = (["representation"] + [f.name for f in fields(Representation)
                                  if not (f.metadata["doc_if_set"] and getattr(cfg.rep, f.name) == f.default)]
            + [n for f in CONFIG_FIELDS if not unset(cfg, f) for n in (f.name, *f.metadata["then"])]
            + ["rep_fingerprint", "config_fingerprint"])
    assert list(row) == want
    assert config_from_row(row) == cfg
    # through a results table (a CSV round trip, as a saved sweep comes back)
    frame = pd.read_csv(pd.io.common.StringIO(pd.DataFrame([row]).to_csv(index=False)))
    back = config_from_row(frame.iloc[0])
    assert back == cfg and back.fingerprint() == row["config_fingerprint"]


def test_row_without_a_later_field_takes_its_default():
    row = config_columns(ODD[0])
    del row["max_component"]
    assert config_from_row(row) == Config(ODD_REP, 8, 4, "exact", 0.65, "star", "medoid", None)
    # a set-only column (boilerplate, minimum length) left empty in a table's other rows reads as its default
    row = config_columns(ODD[-1])
    row.update(min_shingles=float("nan"), short_docs=float("nan"), strip_lines=float("nan"))
    assert config_from_row(row) == Config(ODD_REP.with_(strip_lines=0.0), b=8, r=4, threshold=0.65)


def test_set_only_fields_leave_earlier_rows_documents_and_fingerprints_alone():
    cfg = ODD[0]
    bare = Config(ODD_REP.with_(strip_lines=0.0), 8, 4, "exact", 0.65, "star", "medoid", 7)
    assert "strip_lines" not in config_columns(bare) and "min_shingles" not in config_columns(bare)
    assert "strip_lines" not in bare.rep.to_dict() and "short_docs" not in bare.doc_sections()
    assert Config().fingerprint() == "e303eefd4946"  # as recorded before the set-only fields existed
    assert cfg.fingerprint() != bare.fingerprint() != ODD[-1].fingerprint()
    assert Config(min_shingles=0, short_docs="exact") == Config()  # no minimum: one spelling


# -- one verification type, one "no threshold" -------------------------------------------

def test_verify_is_one_type_accepting_the_old_strings():
    assert VERIFY_RULES == ("exact", "estimated", "none")
    for s in VERIFY_RULES:
        c = Config(verify=s)
        assert c.verify is Verify(s) and c.verify == s and f"{c.verify}" == s
    assert Config(verify="EXACT").verify is Verify.EXACT
    with pytest.raises(ValueError, match="Config.verify must be one of"):
        Config(verify="fuzzy")
    assert repr(Verify.NONE) == "'none'"


@pytest.mark.parametrize("name,kind", [("policy", Policy), ("representative", Representative)])
def test_clustering_choices_are_types_accepting_the_old_strings(name, kind):
    for s in kind.names():
        c = Config(**{name: s.upper()}, **({"policy": "connected"} if name == "representative" else {}))
        assert getattr(c, name) is kind(s) and getattr(c, name) == s
        assert config_from_row(config_columns(c)) == c
        assert type(c.doc_sections()["clustering"][name]) is str  # the document holds the plain name
    with pytest.raises(ValueError, match=f"Config.{name} must be one of"):
        Config(**{name: "nearest"})
    assert Config(**{name: kind.names()[0]}).fingerprint() == Config(**{name: kind(kind.names()[0])}).fingerprint()
    assert cluster_pairs(3, [0], [1], **{name: kind.names()[0].upper()}).removed.tolist() == [False, True, False]


@pytest.mark.parametrize("spelled", [0.0, 0, float("nan"), None, 0.8])
def test_no_threshold_is_none_whatever_its_old_spelling(spelled):
    c = Config(verify="none", threshold=spelled)
    assert c.threshold is None
    assert c.fingerprint() == Config(verify="none").fingerprint() == "1ea5b8fe191d"  # as before the refactor
    assert math.isnan(config_columns(c)["threshold"])
    assert build_config_doc(c)["verification"] == {"rule": "none", "threshold": None}


def test_an_old_document_with_threshold_zero_still_loads():
    doc = build_config_doc(Config(verify="none"))
    doc["verification"]["threshold"] = 0.0  # as files written before "no threshold" was null
    validate_doc(doc)
    assert config_from_doc(doc) == Config(verify="none")


def test_verified_rule_needs_a_threshold():
    with pytest.raises(ValueError, match="threshold"):
        Config(verify="exact", threshold=None)
    with pytest.raises(ValueError, match="threshold"):
        Config(verify="estimated", threshold=float("nan"))


def test_passes_and_similarity_follow_the_rule():
    exact, est = np.array([0.9, 0.5, 0.79]), np.array([0.7, 0.85, 0.8])
    assert Config(verify="exact").passes(Config(verify="exact").similarity(exact, est)).tolist() == [True, False,
                                                                                                     False]
    c = Config(verify="estimated")
    assert c.passes(c.similarity(exact, est)).tolist() == [False, True, True]
    c = Config(verify="none")
    assert c.passes(c.similarity(exact, est)).tolist() == [True, True, True]


# -- the config document and config.schema.json ------------------------------------------

def test_schema_representation_is_the_representation_fields():
    sec = SCHEMA["properties"]["representation"]
    names = [f.name for f in fields(Representation)]
    # a doc_if_set field is optional (absent: its default)
    required = [f.name for f in fields(Representation) if not f.metadata["doc_if_set"]]
    assert set(sec["properties"]) == set(names) and set(sec["required"]) == set(required)
    assert sec["properties"]["shingle"]["enum"] == list(SHINGLE_TYPES)
    assert sec["properties"]["hashfunc"]["enum"] == list(HASH_FUNCTIONS)
    assert sec["properties"]["scheme"]["enum"] == list(scheme_names()) + list(ALIASES)  # old names still read


def test_schema_sections_are_the_config_fields():
    want: dict[str, set] = {}
    for f in CONFIG_FIELDS:
        section, key = f.metadata["doc"]
        want.setdefault(section, set()).update({key, *f.metadata["then"]})
    for section, keys in want.items():
        assert set(SCHEMA["properties"][section]["properties"]) == keys, section
    assert SCHEMA["properties"]["verification"]["properties"]["rule"]["enum"] == list(VERIFY_RULES)
    assert SCHEMA["properties"]["clustering"]["properties"]["policy"]["enum"] == list(POLICIES)
    assert SCHEMA["properties"]["clustering"]["properties"]["representative"]["enum"] == list(REPRESENTATIVE_RULES)


@pytest.mark.parametrize("cfg", ODD, ids=lambda c: c.verify.value)
def test_document_round_trip(cfg):
    weights = None
    if cfg.rep.weighting != "none":  # a weighted document names its document-frequency table
        from calib.production.document import weights_entry
        from calib.sketches.weighted_minhash import DocumentFrequencies
        weights = weights_entry(DocumentFrequencies(3, np.array([7], np.uint32), np.array([2])), "sample")
    doc = json.loads(json.dumps(build_config_doc(
        cfg, weights=weights, stoplist=Stoplist(0.05, 10, ("menu",), (3,)) if cfg.rep.strip_lines else None)))
    validate_doc(doc)
    assert config_from_doc(doc) == cfg


# -- the CLI flags ---------------------------------------------------------------------

def _grid_actions():
    sweep = cli.build_parser()._subparsers._group_actions[0].choices["sweep"]
    return {a.dest: a for a in sweep._actions}


def test_every_grid_field_has_its_cli_flag_with_the_grid_default():
    actions = _grid_actions()
    for f in fields(Grid):
        if f.metadata["flag"] is None:
            continue
        a = actions[f.name]
        assert a.option_strings == [f.metadata["flag"]]
        if f.name in SAMPLE_AXES:  # chosen from the sample unless given; the help names Grid()'s too
            assert a.default is UNSET and "from the sample; calib.Grid(): " in a.help, f.name
        else:
            assert a.default == getattr(Grid(), f.name), f.name
        assert f.metadata["help"] in a.help and "(default: " in a.help and "(" not in a.help.split("default: ")[1][:1]


def test_cli_flags_build_the_grid_they_name():
    a = cli.build_parser().parse_args(
        ["sweep", "--sample", "x", "--out", "y.csv", "--shingles", "char4", "--num-perm", "64", "--splits",
         "8x8, 16x4", "--verify", "exact,none", "--thresholds", "0.6", "--policies", "star", "--representative",
         "medoid", "--max-component", "7", "--hashfunc", "mmh3", "--scheme", "datasketch", "--seed", "9",
         "--normalizations", "nopunct", "--max-pairs", "100"])
    g, given = grid_from_args(a)
    assert set(given) == {"representations", "num_perms", "splits", "thresholds"}  # all given: swept as given
    assert g.max_pairs == 100
    configs = list(g.configs())
    rep = Representation(shingle="char", k=4, lowercase=False, nfkc=False, strip_punct=True, collapse_ws=False,
                         hashfunc="mmh3", scheme="datasketch", seed=9, num_perm=64)
    assert configs == [Config(rep, b, r, v, t, "star", "medoid", 7)
                       for b, r in ((8, 8), (16, 4)) for v, t in (("exact", 0.6), ("none", None))]


# -- the Sweep page's columns --------------------------------------------------------------

def test_sweep_page_columns_come_from_the_fields():
    cols = table_columns()
    assert cols[:1] == ["representation"]
    shown = {f.name for f in [*fields(Representation), *CONFIG_FIELDS] if f.metadata["table"]}
    assert shown | {"s50"} | {"representation"} == set(cols)
    assert set(cols) <= set(config_columns(ODD[-1]))
    # the Sweep page's table (appui.tables.sweep_view) shows them in this order, after the decision columns
    tiny = Sample(docs=pd.DataFrame({"id": ["a", "b"], "text": ["one two three four five six", "one two three"]}))
    frame, _ = sweep_view(sweep(tiny, Grid(num_perms=(16,), splits=((4, 4),), thresholds=(0.5,))))
    shown_cols = list(frame.columns)
    assert [c for c in shown_cols if c in cols] == [c for c in cols if c in config_columns(Config())]
    # set-only settings show once a sweep sets them
    frame, _ = sweep_view(sweep(tiny, Grid(num_perms=(16,), splits=((4, 4),), thresholds=(0.5,),
                                           strip_lines=(0.0, 0.5), min_shingles=(0, 2))))
    assert [c for c in frame.columns if c in cols] == cols


# -- the grid -------------------------------------------------------------------------------

def test_grid_configs_are_the_cartesian_product():
    g = Grid(representations=(Representation(k=3), Representation(shingle="char", k=5)), num_perms=(64, 128),
             splits=((16, 4), (16, 8)), verify=("exact", "none"), thresholds=(0.5, 0.8),
             policies=("connected", "star"), representative="longest", max_component=5)
    want = [Config(rep.with_(num_perm=m), b, r, v, t, pol, "longest", 5)
            for rep in g.representations for m in (64, 128) for b, r in ((16, 4), (16, 8)) if b * r <= m
            for v in ("exact", "none") for pol in ("connected", "star")
            for t in ((0.5, 0.8) if v == "exact" else (None,))]
    assert list(g.configs()) == want and g.size() == len(want) == 2 * 3 * 2 * 3


def test_parse_splits_is_one_parser():
    assert lsh.parse_splits("16x8, 32x4") == ((16, 8), (32, 4))
    assert lsh.parse_splits("16×8;32*4") == ((16, 8), (32, 4))
    assert lsh.parse_splits(" ALL ") is None
    for bad in ("16x", "sixteen", "16x8 and 4x4", "0x8", ""):
        with pytest.raises(ValueError, match="splits"):
            lsh.parse_splits(bad)


# -- pair codes -----------------------------------------------------------------------------

def test_pair_codes_round_trip_and_order():
    rng = np.random.default_rng(3)
    n = 1000
    a, b = rng.integers(0, n, 500), rng.integers(0, n, 500)
    a, b = a[a != b], b[a != b]
    codes = unordered_codes(a, b, n)
    i, j = decode(codes, n)
    assert (i < j).all() and (i == np.minimum(a, b)).all() and (j == np.maximum(a, b)).all()
    assert (pair_codes(i, j, n) == codes).all()
    # sorting codes sorts pairs by (i, j)
    order = np.argsort(codes, kind="stable")
    assert [(x, y) for x, y in zip(i[order], j[order])] == sorted(zip(i.tolist(), j.tolist()))
    first = first_of_each(i, j, n)
    assert len(first) == len(set(zip(i.tolist(), j.tolist())))
