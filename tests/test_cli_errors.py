"""CLI errors come before any work, as one line with exit status 2; outputs are
readable per the umask; progress is plain lines off a terminal; a sample
without labels is said so first, with its own exit status; a sweep's
recommended row is exported without sweeping again.

"Before any work" is shown by pairing a bad option with a sample that does not
exist: the option's error is the one reported, so nothing was loaded."""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path

import pandas as pd
import pytest

from calib import cli
from calib.cli import _common
from calib.base.atomic import write_bytes_atomic
from calib.search.config import config_from_row

REPO = Path(__file__).resolve().parents[1]
SAMPLE = str(REPO / "data" / "sample")
SMALL = ["--shingles", "word5,char5", "--num-perm", "64", "--splits", "8x8,16x4", "--thresholds", "0.7,0.8"]


def run(capsys, argv) -> tuple[int, list[str]]:
    code = cli.main([str(a) for a in argv])
    err = capsys.readouterr().err
    return code, [line for line in err.splitlines() if line.strip()]


def one_line(code, lines, *needles, status=2):
    assert code == status, lines
    assert len(lines) == 1, lines
    assert lines[0].startswith("calib ") and "error:" in lines[0]
    for n in needles:
        assert n in lines[0], lines[0]


# -- outputs checked before any work ----------------------------------------------------

def test_existing_out_file_is_refused_before_the_sample_is_read(tmp_path, capsys):
    out = tmp_path / "r.csv"
    out.write_text("keep me")
    one_line(*run(capsys, ["sweep", "--sample", tmp_path / "nope", "--out", out]), str(out), "already exists",
             "--overwrite")
    assert out.read_text() == "keep me"


def test_wrong_suffix_and_out_under_a_file(tmp_path, capsys):
    one_line(*run(capsys, ["sweep", "--sample", tmp_path / "nope", "--out", tmp_path / "r.txt"]),
             "r.txt", ".parquet or .csv")
    f = tmp_path / "a-file"
    f.write_text("x")
    one_line(*run(capsys, ["sweep", "--sample", tmp_path / "nope", "--out", f / "r.csv"]), "is a file, not a folder")
    one_line(*run(capsys, ["export", "--sample", tmp_path / "nope", "--out", f]), "is a file, not a folder")
    one_line(*run(capsys, ["export", "--sample", tmp_path / "nope", "--out", f / "sub"]), "is a file, not a folder")


def test_non_empty_out_folder_needs_overwrite(tmp_path, capsys):
    (tmp_path / "old.txt").write_text("x")
    one_line(*run(capsys, ["export", "--sample", tmp_path / "nope", "--out", tmp_path]), "not empty", "--overwrite")
    one_line(*run(capsys, ["apply", "--config", tmp_path / "c.json", "--corpus", tmp_path / "c.jsonl",
                           "--out", tmp_path]), "does not exist")  # missing inputs come first
    cfg = tmp_path / "c.json"
    cfg.write_text("{}")
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": 1, "text": "a"}\n')
    one_line(*run(capsys, ["apply", "--config", cfg, "--corpus", corpus, "--out", tmp_path]), "not empty")


def test_read_only_folder(tmp_path, capsys, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == ro else real(p, mode))  # root ignores modes
    one_line(*run(capsys, ["sweep", "--sample", tmp_path / "nope", "--out", ro / "r.csv"]), "not writable", str(ro))
    one_line(*run(capsys, ["export", "--sample", tmp_path / "nope", "--out", ro]), "not writable")


def test_missing_inputs_say_they_do_not_exist(tmp_path, capsys):
    one_line(*run(capsys, ["sweep", "--sample", tmp_path / "nope", "--out", tmp_path / "r.csv"]),
             "--sample", "nope", "does not exist")
    one_line(*run(capsys, ["sweep", "--sample", SAMPLE, "--pairs", tmp_path / "p.csv", "--out", tmp_path / "r.csv"]),
             "--pairs", "does not exist")
    one_line(*run(capsys, ["export", "--sample", SAMPLE, "--config", tmp_path / "c.json", "--out", tmp_path / "e"]),
             "--config", "does not exist")
    one_line(*run(capsys, ["export", "--sample", SAMPLE, "--from-sweep", tmp_path / "r.csv", "--out", tmp_path / "e"]),
             "--from-sweep", "does not exist")
    assert not (tmp_path / "r.csv").exists() and not (tmp_path / "e").exists()


# -- option validation: exit 2, before the sample is read -----------------------------------

@pytest.mark.parametrize("args,needles", [
    (["--budget", "-5"], ("--budget", "[0, 1]")),
    (["--max-pairs", "-1"], ("max_pairs", ">= 0")),
    (["--max-component", "0"], ("max_component", ">= 2")),
    (["--num-perm", "many"], ("--num-perm",)),
    (["--splits", "16by8"], ("--splits", "16x8")),
    (["--verify", "fuzzy"], ("fuzzy",)),
])
def test_bad_options_are_one_line_errors_before_work(tmp_path, capsys, args, needles):
    try:
        code = cli.main([str(x) for x in ["sweep", "--sample", tmp_path / "nope", "--out", tmp_path / "r.csv", *args]])
    except SystemExit as exc:  # argparse's own type errors exit 2 with a usage line
        code = exc.code
    lines = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert code == 2
    assert not any("nope" in x for x in lines), lines  # the sample was never looked at
    assert any(all(n in x for n in needles) for x in lines), lines
    assert not any("Traceback" in x for x in lines)


def test_os_error_while_writing_is_one_line(tmp_path, capsys, monkeypatch):
    import calib.base.atomic as atomic

    def disk_full(frame, path):
        raise OSError(28, "No space left on device", str(path))
    monkeypatch.setattr(atomic, "write_frame_atomic", disk_full)
    code = cli.main(["sweep", "--sample", SAMPLE, "--out", str(tmp_path / "r.csv"), *SMALL])
    lines = [x for x in capsys.readouterr().err.splitlines() if "error" in x]
    assert code == 2 and lines == [f"calib sweep: error: {tmp_path / 'r.csv'}: No space left on device"]


# -- outputs, progress, help -----------------------------------------------------------------

@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_outputs_follow_the_umask(tmp_path, mask, mode):
    old = os.umask(mask)
    try:
        p = write_bytes_atomic(tmp_path / "x.csv", b"a\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(p.stat().st_mode) == mode


def test_progress_off_a_terminal_is_plain_lines(monkeypatch):
    buf = io.StringIO()
    clock = iter([0.0, 1.0, 11.0, 12.0, 30.0])
    monkeypatch.setattr(_common.time, "monotonic", lambda: next(clock))
    p = _common.plain_progress("sweep", every=10.0, stream=buf)
    for f in (0.0, 0.1, 0.5, 0.6, 1.0):
        p(f, f"step {f}")
    assert buf.getvalue().splitlines() == ["sweep:   0% step 0.0", "sweep:  50% step 0.5", "sweep: 100% step 1.0"]
    monkeypatch.setattr(_common.sys.stderr, "isatty", lambda: False, raising=False)
    assert _common.tqdm_progress("sweep").__qualname__.startswith("plain_progress")


def test_help_shows_readable_defaults_and_samples_subcommands(capsys):
    with pytest.raises(SystemExit):
        cli.main(["sweep", "--help"])
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    # axes chosen from the sample name the old fixed grid's values too, as typed
    assert "(default: from the sample; calib.Grid(): 128,256)" in out and "(128, 256)" not in out
    assert "(default: from the documents' lengths; calib.Grid(): word3,word5,char5)" in out
    for flag in ("--hashfunc", "--scheme", "--seed", "--overwrite"):
        assert flag in out
    assert "seed of the MinHash permutations" in out and "32-bit hash" in out
    with pytest.raises(SystemExit):
        cli.main(["samples", "--help"])
    out = capsys.readouterr().out
    for sub in ("build", "extract-base", "summary"):
        assert sub in out


# -- no labels; sweep -> export without sweeping again ------------------------------------------

def test_no_labels_first_line_and_exit_status(tmp_path, capsys):
    docs = tmp_path / "docs.jsonl"
    src = (REPO / "data" / "sample" / "docs.jsonl").read_text().splitlines()[:300]
    docs.write_text("\n".join(json.dumps({"id": json.loads(x)["id"], "text": json.loads(x)["text"]})
                              for x in src) + "\n")
    code, lines = run(capsys, ["sweep", "--sample", docs, "--out", tmp_path / "r.csv", *SMALL])
    one_line(code, lines, "has no duplicate labels", "nothing is recommended", "nothing swept", status=3)
    assert code == _common.NO_LABELS == 3
    assert not (tmp_path / "r.csv").exists()  # refused before any work: nothing measured, nothing written
    code, lines = run(capsys, ["export", "--sample", docs, "--out", tmp_path / "e"])
    one_line(code, lines, "no duplicate labels", "--from-sweep", status=3)


@pytest.mark.slow
def test_export_from_sweep_exports_the_recommended_or_chosen_row(tmp_path, capsys):
    res = tmp_path / "r.parquet"
    assert run(capsys, ["sweep", "--sample", SAMPLE, "--out", res, *SMALL])[0] == 0
    table = pd.read_parquet(res)
    assert table["recommended"].dtype == bool and table["recommended"].sum() == 1
    rec = table[table["recommended"]].iloc[0]
    code, lines = run(capsys, ["export", "--sample", SAMPLE, "--from-sweep", res, "--out", tmp_path / "e"])
    assert code == 0, lines
    assert not any(x.lstrip().startswith("sweep") and "%" in x for x in lines)  # no second sweep (its progress bar)
    doc = json.loads((tmp_path / "e" / "config.json").read_text())
    assert doc["config_fingerprint"] == rec["config_fingerprint"] == config_from_row(rec).fingerprint()
    assert doc["evidence"]["selection"]["method"] == "recommend"
    # every target whose figures differ from calib's is named, with its own figures from targets.json
    evidence = {k: v["evidence"] for k, v in json.loads((tmp_path / "e" / "targets.json").read_text())["targets"].items()}
    losses = [x for x in lines if x.startswith("where it runs otherwise: ")]
    differ = [k for k, ev in evidence.items() if not ev or (ev["removed"], ev["false_removals"]) !=
              (doc["evidence"]["metrics"]["removed"], doc["evidence"]["metrics"]["false_removals"])]
    assert "datatrove" in differ and len(losses) == len(differ), (losses, differ)
    line = next(x for x in losses if x.startswith("where it runs otherwise: datatrove: "))
    assert f"{evidence['datatrove']['removed']:,} removals ({evidence['datatrove']['false_removals']} false)" in line
    other = table[~table["recommended"] & (table["status"] == "ok")].iloc[0]
    code, lines = run(capsys, ["export", "--sample", SAMPLE, "--from-sweep", res, "--fingerprint",
                               other["config_fingerprint"], "--out", tmp_path / "e", "--overwrite"])
    assert code == 0, lines
    doc = json.loads((tmp_path / "e" / "config.json").read_text())
    assert doc["config_fingerprint"] == other["config_fingerprint"]
    assert doc["evidence"]["selection"]["method"] == "chosen"
    one_line(*run(capsys, ["export", "--sample", SAMPLE, "--from-sweep", res, "--fingerprint", "000000000000",
                           "--out", tmp_path / "e2"]), "no row has config_fingerprint 000000000000")
