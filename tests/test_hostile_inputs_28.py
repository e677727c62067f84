"""Hostile inputs, memory and silent errors: inputs that used to exhaust memory, end in a
traceback or give a silently wrong result. Each test reproduces the case
first; memory cases test the refusal path (estimated before the work), not a
real multi-GiB allocation."""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from calib import cli
from calib.search.config import Config
from calib.production.document import write_config
from calib.sketches.represent import Representation
from calib.reading.sample import from_frames
from calib.reading.samples import SampleError, load_sample
from calib.clusters.truth import _group_pair_codes, truth_from_sample

REPO = Path(__file__).resolve().parents[1]
WORDS = [f"w{k}" for k in range(300)]
TINY_GRID = ["--shingles", "word3", "--num-perm", "32", "--splits", "8x4", "--thresholds", "0.7"]


def run(capsys, *argv) -> tuple[int, list[str]]:
    """Exit status and stderr lines of ``calib ARGV`` (argparse's usage errors exit 2)."""
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    return code, [line for line in err.splitlines() if line.strip()]


def one_line(result, *needles, status=2):
    code, lines = result
    assert code == status, lines
    assert len(lines) == 1, lines
    assert lines[0].startswith("calib ") and "error:" in lines[0] and "Traceback" not in lines[0]
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def write_corpus(path: Path, n: int = 120, seed: int = 0) -> Path:
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": i, "text": " ".join(rng.choice(WORDS) for _ in range(25)), "source": "s"}) + "\n")
    return path


def write_labeled(directory: Path, groups: int = 20, seed: int = 0) -> Path:
    """A sample of ``groups`` groups of three near-copies (one word changed) plus as many singletons."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    rows = []
    for g in range(groups):
        base = [rng.choice(WORDS) for _ in range(30)]
        for c in range(3):
            text = list(base)
            text[rng.randrange(30)] = rng.choice(WORDS)
            rows.append({"id": f"g{g}-{c}", "text": " ".join(text), "group": f"G{g}"})
        rows.append({"id": f"s{g}", "text": " ".join(rng.choice(WORDS) for _ in range(30)), "group": f"S{g}"})
    (directory / "docs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return directory


# -- 1. a group's pairs are counted, then sampled --------------------------------------

def test_group_pairs_are_counted_then_sampled_uniformly():
    groups = np.r_[np.zeros(2000, np.int64), np.ones(1000, np.int64), np.arange(2, 502)]
    np.random.default_rng(5).shuffle(groups)
    n = len(groups)
    codes, total = _group_pair_codes(groups, n, max_pairs=20_000)
    assert total == 2000 * 1999 // 2 + 1000 * 999 // 2
    assert 19_000 < len(codes) <= 20_000 and np.all(np.diff(codes) > 0)  # distinct, a few repeats dropped
    i, j = codes // n, codes % n
    assert np.all(i < j) and np.all(groups[i] == groups[j])
    share_big = np.mean(groups[i] == 0)  # each pair equally likely: the big group holds 80% of the pairs
    assert abs(share_big - (2000 * 1999) / (2000 * 1999 + 1000 * 999)) < 0.02
    again, _ = _group_pair_codes(groups, n, max_pairs=20_000)
    assert np.array_equal(codes, again)  # seeded
    every, total_all = _group_pair_codes(groups, n, max_pairs=total)
    assert total_all == total == len(every)  # under the cap: every pair, as before


def test_sampled_truth_keeps_the_true_clusters(monkeypatch):
    docs = pd.DataFrame({"id": [f"d{k}" for k in range(300)], "text": ["x"] * 300,
                         "group": [f"G{k % 7}" if k < 200 else f"S{k}" for k in range(300)]})
    sample = from_frames(docs)
    exact = truth_from_sample(sample)
    monkeypatch.setattr("calib.clusters.truth.MAX_GROUP_PAIRS", 500)
    sampled = truth_from_sample(sample)
    assert not exact.sampled and sampled.sampled
    assert sampled.total_positive == exact.n_positive == 4 * (29 * 28 // 2) + 3 * (28 * 27 // 2)  # 200 docs in 7 groups
    assert sampled.n_positive <= 500
    # the same partition: cluster ids may differ, co-membership does not
    a, b = exact.clusters(), sampled.clusters()
    assert np.array_equal(a[:, None] == a[None, :], b[:, None] == b[None, :])


@pytest.mark.slow  # a fresh interpreter building the truth of 40,000 documents
def test_a_30k_group_needs_no_triu_allocation(tmp_path):
    """The issue's case (30,000 documents in one group: 3.35 GiB in np.triu_indices) under an
    address-space limit the old code could not run in."""
    script = tmp_path / "group.py"
    script.write_text(
        "import resource, sys\n"
        "import numpy as np, pandas as pd\n"
        "from calib.reading.sample import from_frames\n"
        "from calib.clusters.truth import truth_from_sample\n"
        "docs = pd.DataFrame({'id': [f'd{k}' for k in range(40000)], 'text': ['the'] * 40000,\n"
        "                     'group': ['the'] * 30000 + [f's{k}' for k in range(10000)]})\n"
        "s = from_frames(docs)\n"
        "resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, resource.RLIM_INFINITY))\n"
        "t = truth_from_sample(s)\n"
        "c = t.clusters()\n"
        "print(t.total_positive, t.n_positive, len(set(c[:30000].tolist())), len(set(c.tolist())))\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 0, out.stderr[-2000:]
    total, measured, group_clusters, clusters = map(int, out.stdout.split())
    assert total == 30000 * 29999 // 2 and 4_000_000 < measured <= 5_000_000
    assert group_clusters == 1 and clusters == 10001


# -- 2. design.json counts -----------------------------------------------------------------

@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    d = tmp_path_factory.mktemp("drawn")
    corpus = write_corpus(d / "c.jsonl", 80)
    assert cli.main(["draw", "--design", "sample", "--corpus", str(corpus), "--out", str(d / "set"), "--docs", "60", "--pairs", "60"]) == 0
    return d / "set"


def _edited_copy(src: Path, dst: Path, design=None, pairs=None) -> Path:
    dst.mkdir()
    for name in ("documents.jsonl", "pairs.csv", "design.json"):
        (dst / name).write_bytes((src / name).read_bytes())
    if design is not None:
        doc = json.loads((dst / "design.json").read_text())
        design(doc)
        (dst / "design.json").write_text(json.dumps(doc))
    if pairs is not None:
        frame = pd.read_csv(dst / "pairs.csv", dtype=str, keep_default_na=False)
        pairs(frame)
        frame.to_csv(dst / "pairs.csv", index=False)
    return dst


@pytest.mark.parametrize("edit,needle", [
    (lambda d: d.update(sample_docs=1_000_000_000), "sample_docs"),
    (lambda d: d.update(corpus_docs=10**12, sample_docs=10**9), "sample_docs"),
    (lambda d: d["population"].__setitem__(-1, 1e308), "population must be an integer"),
    (lambda d: d["population"].__setitem__(0, 10**30), "population must be an integer"),
    (lambda d: d.update(sample_docs=-5), "sample_docs must be an integer"),
])
def test_hand_edited_design_counts_are_refused_in_one_line(drawn, tmp_path, capsys, edit, needle):
    bad = _edited_copy(drawn, tmp_path / "bad", design=edit)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow-warning flood either
        line = one_line(run(capsys, "sweep", "--sample", bad, "--out", tmp_path / "r.csv", *TINY_GRID), needle)
        assert "design.json" in line
        one_line(run(capsys, "draw", "--out", bad, "--more", "5"), needle)
    assert not (tmp_path / "r.csv").exists()


# -- 3. memory estimated before the work --------------------------------------------------

def test_memory_limit_follows_rlimit_and_env(tmp_path):
    code = ("import resource; from calib.base.budget import memory_limit\n"
            "resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, resource.RLIM_INFINITY)); print(memory_limit())")
    env = {k: v for k, v in os.environ.items() if k != "CALIB_MAX_MEMORY"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**env, "PYTHONPATH": str(REPO)})
    assert int(out.stdout) <= 6 * 2**30
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**env, "PYTHONPATH": str(REPO), "CALIB_MAX_MEMORY": "1.5G"})
    assert int(out.stdout) == int(1.5 * 2**30)


def test_huge_max_pairs_is_refused_before_the_work(tmp_path, capsys, monkeypatch):
    corpus = write_corpus(tmp_path / "c.jsonl", 2000)
    cfg = tmp_path / "config.json"
    write_config(cfg, Config())
    monkeypatch.setenv("CALIB_MAX_MEMORY", "64M")
    # apply: the corpus's 1,999,000 possible pairs at ~130 bytes exceed 64 MiB
    line = one_line(run(capsys, "apply", "--config", cfg, "--corpus", corpus, "--out", tmp_path / "a",
                        "--max-pairs", 10**12), "--max-pairs 1,000,000,000,000", "lower --max-pairs to at most")
    assert f"at most {64 * 2**20 // 130:,}" in line and "CALIB_MAX_MEMORY" in line
    one_line(run(capsys, "draw", "--design", "sample", "--corpus", corpus, "--out", tmp_path / "d", "--docs", "2000",
                 "--max-pairs", 10**12), "--max-pairs", "lower --max-pairs")
    assert not (tmp_path / "a").exists() and not (tmp_path / "d").exists()
    # a budget the input cannot reach is no refusal: 120 documents hold 7,140 pairs
    small = write_corpus(tmp_path / "s.jsonl", 120)
    assert run(capsys, "apply", "--config", cfg, "--corpus", small, "--out", tmp_path / "a2",
               "--max-pairs", 10**12)[0] == 0


def test_the_default_pair_budget_is_lowered_to_fit_memory(tmp_path, capsys, monkeypatch):
    corpus = write_corpus(tmp_path / "c.jsonl", 200)
    cfg = tmp_path / "config.json"
    write_config(cfg, Config())
    monkeypatch.setenv("CALIB_MAX_MEMORY", "1G")
    code, lines = run(capsys, "apply", "--config", cfg, "--corpus", corpus, "--out", tmp_path / "a")
    assert code == 0, lines
    assert f"--max-pairs lowered from the default 50,000,000 to {2**30 // 130:,}" in lines[0]
    sample = write_labeled(tmp_path / "s")
    code, lines = run(capsys, "sweep", "--sample", sample, "--out", tmp_path / "r.csv", *TINY_GRID)
    assert code == 0 and f"lowered from the default 20,000,000 to {2**30 // 200:,}" in lines[0], lines
    # a budget the user chose is not lowered: refused
    one_line(run(capsys, "apply", "--config", cfg, "--corpus", write_corpus(tmp_path / "big.jsonl", 5000),
                 "--out", tmp_path / "a2", "--max-pairs", 10_000_000), "lower --max-pairs to at most")


def test_signatures_and_bands_past_memory_are_refused_before_they_are_built(tmp_path, capsys, monkeypatch):
    """num_perm 8192, b 8192, r 1 (valid): n x (4 x 8192 + 32 x 8192) bytes; 60k documents asked 3.66 GiB
    in one argsort. Here 4,000 documents against a 1 GiB budget: 1.1 GiB, refused, nothing written."""
    corpus = write_corpus(tmp_path / "c.jsonl", 4000)
    cfg = tmp_path / "config.json"
    write_config(cfg, Config(Representation(num_perm=8192), 8192, 1))
    monkeypatch.setenv("CALIB_MAX_MEMORY", "1G")
    one_line(run(capsys, "apply", "--config", cfg, "--corpus", corpus, "--out", tmp_path / "a", "--max-pairs", 1000),
             "4,000 documents x num_perm 8192 x b 8192", "~1.1 GiB", "fewer hashes and bands")
    assert not (tmp_path / "a").exists()
    sample = write_labeled(tmp_path / "s", groups=30)
    monkeypatch.setenv("CALIB_MAX_MEMORY", "4M")
    one_line(run(capsys, "sweep", "--sample", sample, "--out", tmp_path / "r.csv", "--num-perm", "8192",
                 "--splits", "8192x1", "--thresholds", "0.8", "--shingles", "word3", "--max-pairs", 1000),
             "num_perm 8192 x b 8192")


# -- arguments that ended in a traceback ---------------------------------------------------

@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus") / "c.jsonl", 120)


@pytest.mark.parametrize("argv,needle", [
    (["sweep", "--num-perm", "100000"], "num_perm must be an integer in [1, 8192]"),
    (["sweep", "--policies", "foo"], "policy must be one of"),
    (["sweep", "--representative", "foo"], "representative must be one of"),
])
def test_sweep_arguments(tmp_path, capsys, argv, needle):
    # a sample that does not exist: the option's error comes first, before any work
    one_line(run(capsys, argv[0], "--sample", tmp_path / "nope", "--out", tmp_path / "r.csv", *argv[1:]), needle)


@pytest.mark.parametrize("extra,needle", [
    (["--edges", "nan,1"], "band edges must increase"),
    (["--shingle", "char0"], "--shingle 'char0'"),
    (["--seed", "-1"], "--seed must be an integer >= 0"),
    (["--max-pairs", "-1"], "--max-pairs must be >= 1"),
])
def test_draw_arguments(tmp_path, capsys, corpus, extra, needle):
    code, lines = run(capsys, "draw", "--corpus", corpus, "--out", tmp_path / "d", *extra)
    assert code == 2 and needle in lines[-1] and "error:" in lines[-1], lines
    assert not (tmp_path / "d").exists()


def test_draw_more_pairs_than_the_sample_holds_takes_them_all(tmp_path, capsys, corpus):
    code, _ = run(capsys, "draw", "--design", "sample", "--corpus", corpus, "--out", tmp_path / "d", "--pairs",
                  "99999999999999999999",
                  "--docs", "30")
    assert code == 0
    pairs = pd.read_csv(tmp_path / "d" / "pairs.csv")
    assert len(pairs) == 30 * 29 // 2  # every pair of the document sample, once
    assert not pairs[["id_a", "id_b"]].duplicated().any()


def test_apply_keep_fields_named_twice(tmp_path, capsys, corpus):
    cfg = tmp_path / "config.json"
    write_config(cfg, Config())
    one_line(run(capsys, "apply", "--config", cfg, "--corpus", corpus, "--out", tmp_path / "a",
                 "--keep-fields", "source,source"), "--keep-fields", "'source' is named twice")


# -- 4-6. silent wrong results ---------------------------------------------------------------

def test_a_stratum_contradicting_its_similarity_is_refused(drawn, tmp_path, capsys):
    def swap(frame):
        strata = frame["stratum"].unique()
        a, b = (frame["stratum"] == strata[0]).idxmax(), (frame["stratum"] == strata[1]).idxmax()
        frame.loc[a, "stratum"], frame.loc[b, "stratum"] = strata[1], strata[0]
    bad = _edited_copy(drawn, tmp_path / "bad", pairs=swap)
    with pytest.raises(SampleError) as exc:
        load_sample(bad)
    assert "pairs.csv" in str(exc.value) and "line " in str(exc.value) and "stratum" in str(exc.value)
    assert "contradicts the row's similarity" in str(exc.value)
    one_line(run(capsys, "sweep", "--sample", bad, "--out", tmp_path / "r.csv", *TINY_GRID), "contradicts")
    assert load_sample(drawn).design is not None  # the file as drawn loads


def test_parquet_with_two_text_columns_is_refused_by_apply_and_draw(tmp_path, capsys):
    table = pa.Table.from_arrays([pa.array(["1", "2", "3"]), pa.array(["a b c"] * 3), pa.array(["x y z"] * 3)],
                                 names=["id", "text", "text"])
    pq.write_table(table, tmp_path / "dup.parquet")
    cfg = tmp_path / "config.json"
    write_config(cfg, Config())
    for argv in (["apply", "--config", cfg, "--out", tmp_path / "a"], ["draw", "--out", tmp_path / "d"]):
        one_line(run(capsys, *argv, "--corpus", tmp_path / "dup.parquet"), "duplicate column 'text'", "columns 2, 3")


def test_duplicate_key_in_config_json_is_refused(tmp_path, capsys, corpus):
    cfg = tmp_path / "config.json"
    write_config(cfg, Config(threshold=0.8))
    text = cfg.read_text()
    assert text.count('"threshold": 0.8') == 1
    cfg.write_text(text.replace('"threshold": 0.8', '"threshold": 0.1, "threshold": 0.8'))
    one_line(run(capsys, "apply", "--config", cfg, "--corpus", corpus, "--out", tmp_path / "a"),
             str(cfg), "duplicate key 'threshold'")
    sample = write_labeled(tmp_path / "s")
    one_line(run(capsys, "export", "--sample", sample, "--config", cfg, "--out", tmp_path / "e"), "duplicate key")


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    d = tmp_path_factory.mktemp("swept")
    sample = write_labeled(d / "s")
    res = d / "r.csv"
    assert cli.main(["sweep", "--sample", str(sample), "--out", str(res), "--shingles", "word3", "--num-perm", "32",
                     "--splits", "8x4,4x8", "--thresholds", "0.5,0.7"]) == 0
    return sample, res


def test_from_sweep_refuses_another_sample_an_edited_row_and_two_recommended(swept, tmp_path, capsys):
    sample, res = swept
    table = pd.read_csv(res)
    assert table["sample_hash"].nunique() == 1 and table["recommended"].sum() == 1
    code, lines = run(capsys, "export", "--sample", sample, "--from-sweep", res, "--out", tmp_path / "ok")
    assert code == 0, lines  # the table's own sample
    other = write_labeled(tmp_path / "other", seed=1)
    one_line(run(capsys, "export", "--sample", other, "--from-sweep", res, "--out", tmp_path / "e1"),
             "swept on another sample")
    edited = table.copy()
    edited.loc[edited["recommended"], "threshold"] = 0.95  # the row no longer matches its fingerprint
    edited.to_csv(tmp_path / "edited.csv", index=False)
    one_line(run(capsys, "export", "--sample", sample, "--from-sweep", tmp_path / "edited.csv",
                 "--out", tmp_path / "e2"), "was edited")
    two = table.copy()
    two.loc[(~two["recommended"]).idxmax(), "recommended"] = True
    two.to_csv(tmp_path / "two.csv", index=False)
    one_line(run(capsys, "export", "--sample", sample, "--from-sweep", tmp_path / "two.csv", "--out", tmp_path / "e3"),
             "2 configurations are marked recommended", "--fingerprint")
    old = table.drop(columns=["sample_hash"])
    old.to_csv(tmp_path / "old.csv", index=False)
    code, lines = run(capsys, "export", "--sample", sample, "--from-sweep", tmp_path / "old.csv", "--out", tmp_path / "e4")
    assert code == 0 and any("no sample_hash column" in x for x in lines)  # an older table: said, not refused
    assert not any((tmp_path / f"e{k}").exists() for k in (1, 2, 3))


@pytest.mark.slow
def test_spark_apply_on_a_truncated_gzip_says_one_line(tmp_path, corpus):
    import gzip
    data = gzip.compress(Path(corpus).read_bytes())
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(data[:len(data) // 2])
    cfg = tmp_path / "config.json"
    write_config(cfg, Config())
    out = subprocess.run([sys.executable, "-m", "calib", "apply", "--engine", "spark", "--config", str(cfg),
                          "--corpus", str(cut), "--out", str(tmp_path / "o")], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=tmp_path)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and "\tat org.apache" not in out.stderr, out.stderr[-3000:]
    assert "calib apply: error: " in out.stderr and "Unexpected end of input stream" in out.stderr


# -- every argument of every subcommand, out of range ------------------------------------------

BAD_VALUES = ("-1", "0", "99999999999999999999", "1e308", "nan", "inf", "", "garbage", ",")


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def _value_flags(command: str) -> list[str]:
    """Every option of ``command`` that takes a value, read from the parser (a new flag is walked too)."""
    return [a.option_strings[-1] for a in _subparsers()[command]._actions
            if a.option_strings and a.nargs != 0 and not isinstance(a, argparse._HelpAction)]


WALKED = [(c, f) for c in _subparsers() if c != "samples" for f in _value_flags(c)]


@pytest.fixture(scope="module")
def walk_inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("walk")
    cfg = d / "config.json"
    write_config(cfg, Config(Representation(shingle="word", k=3, num_perm=32), 8, 4, threshold=0.7))
    return {"sample": write_labeled(d / "sample", groups=12), "corpus": write_corpus(d / "c.jsonl", 60), "config": cfg}


def _base_argv(command: str, inputs: dict, out: Path) -> list[str]:
    return {"sweep": ["--sample", inputs["sample"], "--out", out / "r.csv", "--overwrite", *TINY_GRID],
            "export": ["--sample", inputs["sample"], "--config", inputs["config"], "--out", out / "e", "--overwrite"],
            "apply": ["--config", inputs["config"], "--corpus", inputs["corpus"], "--out", out / "a", "--overwrite"],
            "draw": ["--design", "sample", "--corpus", inputs["corpus"], "--out", out / "d", "--overwrite", "--docs", "30", "--pairs", "10"],
            }[command]


def _with_value(argv: list, flag: str, value: str) -> list:
    argv = [str(a) for a in argv]
    if flag in argv:
        argv[argv.index(flag) + 1] = value
        return argv
    return argv + [flag, value]


def _assert_clean_exit(code, lines, argv):
    assert code in (0, 2, 3), (argv, code, lines)
    assert not any("Traceback" in x for x in lines), (argv, lines)
    if code:
        errors = [x for x in lines if "error:" in x]
        assert len(errors) == 1 and errors[0] == lines[-1], (argv, lines)


@pytest.mark.slow
@pytest.mark.parametrize("command,flag", WALKED, ids=[f"{c}{f}" for c, f in WALKED])
def test_every_argument_out_of_range_exits_cleanly(command, flag, walk_inputs, tmp_path, capsys, monkeypatch):
    """Negative, zero, huge, nan, inf, empty and garbage values of each option: exit status 0, 2 or 3,
    one error line last on stderr, never a traceback (an exception escaping main fails the test)."""
    monkeypatch.chdir(tmp_path)  # an empty --out is the current folder: this one
    for value in BAD_VALUES:
        argv = [command, *_with_value(_base_argv(command, walk_inputs, tmp_path), flag, value)]
        code, lines = run(capsys, *argv)
        _assert_clean_exit(code, lines, argv)


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted({c for c, _ in WALKED}))
def test_the_walked_command_lines_run_as_given(command, walk_inputs, tmp_path, capsys, monkeypatch):
    """The walk's base command lines are valid: each refusal above is the bad value's."""
    monkeypatch.chdir(tmp_path)
    code, lines = run(capsys, command, *_base_argv(command, walk_inputs, tmp_path))
    assert code == 0, lines


@pytest.mark.slow
@pytest.mark.parametrize("value", BAD_VALUES)
def test_samples_subcommands_out_of_range_exit_cleanly(value, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for argv in (["samples", "summary", value], ["samples", "summary", str(REPO / "data" / "sample"), value],
                 ["samples", "build", "--out", str(tmp_path / "b"), "--base", str(tmp_path / "nope.gz"),
                  "--seed", value]):
        code, lines = run(capsys, *argv)
        _assert_clean_exit(code, lines, argv)


@pytest.fixture(scope="module")
def labeled_drawn(tmp_path_factory):
    """A drawn set of near-copies with every pair labeled (duplicate when J >= 0.6): what --more needs."""
    d = tmp_path_factory.mktemp("labeled_drawn")
    corpus = write_labeled(d / "src", groups=15) / "docs.jsonl"
    assert cli.main(["draw", "--design", "sample", "--corpus", str(corpus), "--out", str(d / "set"), "--docs", "60", "--pairs", "80",
                     "--shingle", "word3"]) == 0
    pairs = pd.read_csv(d / "set" / "pairs.csv", dtype=str, keep_default_na=False)
    pairs["label"] = np.where(pairs["similarity"].astype(float) >= 0.6, "duplicate", "not_duplicate")
    (d / "set" / "pairs.csv").write_text(pairs.to_csv(index=False))
    write_config(d / "config.json", Config(Representation(shingle="word", k=3, num_perm=32), 8, 4, threshold=0.6))
    return d / "set", d / "config.json"


MORE_FLAGS = ("--more", "--width", "--budget", "--config", "--seed")


@pytest.mark.slow
@pytest.mark.parametrize("flag", MORE_FLAGS)
def test_draw_more_arguments_out_of_range_exit_cleanly(flag, labeled_drawn, tmp_path, capsys, monkeypatch):
    """``calib draw --more`` on a labeled set: its own options walked the same way (with --config,
    so that a run that goes through evaluates one configuration, not the default grid)."""
    monkeypatch.chdir(tmp_path)
    drawn_set, cfg = labeled_drawn
    code, lines = run(capsys, "draw", "--out", _edited_copy(drawn_set, tmp_path / "base"), "--more", "5", "--config", cfg)
    assert code == 0, lines  # the base command line is valid
    for k, value in enumerate(BAD_VALUES):
        out = _edited_copy(drawn_set, tmp_path / f"set{k}")
        argv = ["draw", *_with_value(["--out", out, "--more", "5", "--config", cfg], flag, value)]
        code, lines = run(capsys, *argv)
        _assert_clean_exit(code, lines, argv)
