"""The Clough & Stevenson short-answer corpus as a labeled Sample.

100 answers to 5 tasks, each answer paired with its task's source text:
``cut`` and ``light`` revisions are duplicates, ``non`` answers are not,
``heavy`` revisions as the caller says (``not_duplicate``, ``duplicate`` or
``exclude``). Its file list (``file_information.csv``) is data: every file it
names is opened inside the corpus folder.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from calib.reading.files import SampleError, read_input
from calib.reading.records import Docs, PairRow, resolve_pairs
from calib.reading.sample import EXCLUSION_COLUMNS, REPO_ROOT, Sample
from calib.reading.tables import read_table, require_columns

CLOUGH_DIR = REPO_ROOT.parent / "shared" / "corpora" / "clough"
HEAVY_CHOICES = ("not_duplicate", "duplicate", "exclude")


def _decode_legacy(data: bytes) -> str:
    """UTF-8, else Windows-1252 (some Clough files are cp1252); CRLF -> LF."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("cp1252", errors="replace")
    return text.replace("\r\n", "\n")


def load_clough(path=None, *, heavy: str = "not_duplicate", name: str | None = None) -> Sample:
    """The Clough & Stevenson short-answer corpus as a Sample: 100 documents
    (id = file stem, ``domain`` = task, ``category``), each answer paired with
    its task's source: cut/light duplicate, non not_duplicate, heavy per
    ``heavy`` ("not_duplicate", "duplicate" or "exclude")."""
    if heavy not in HEAVY_CHOICES:
        raise ValueError(f"heavy must be one of {HEAVY_CHOICES}, got {heavy!r}")
    path = Path(path) if path is not None else CLOUGH_DIR
    info = read_table(path / "file_information.csv", path)
    require_columns(info, ("File", "Task", "Category"))
    rows, lines, docs, heavy_excl = [], {}, [], []
    for rec, line in zip(info.records, info.lines):
        try:  # the file list is data: every name must stay inside the corpus folder
            text = _decode_legacy(read_input(path / rec["File"], root=path))
        except SampleError as exc:
            raise SampleError(f"{rec['File']!r}: {exc.detail}", file=info.file, line=line, field="File") from None
        did = Path(rec["File"]).stem
        docs.append({"id": did, "text": text, "domain": f"task{rec['Task']}", "category": rec["Category"]})
        lines[did] = line
    frame = pd.DataFrame(docs).astype("str")
    src = {d["domain"]: d["id"] for d in docs if d["category"] == "orig"}
    for d in docs:
        if d["category"] != "orig" and d["domain"] not in src:
            raise SampleError(f"task {d['domain'][4:]!r} has no 'orig' row (the source its answers are compared "
                              "with)", file=info.file, line=lines[d["id"]], field="Category")
    labels = {"cut": True, "light": True, "non": False, "heavy": heavy == "duplicate"}
    for d in docs:
        if d["category"] == "orig":
            continue
        if d["category"] not in labels:
            raise SampleError(f"unknown category {d['category']!r}", file=info.file, line=lines[d["id"]],
                              field="Category")
        if d["category"] == "heavy" and heavy == "exclude":
            heavy_excl.append({"file": info.file, "line": lines[d["id"]], "id": f"{d['id']}|{src[d['domain']]}",
                               "reason": "heavy revision pair excluded (heavy='exclude')"})
            continue
        rows.append(PairRow(d["id"], src[d["domain"]], labels[d["category"]], d["category"], info.file,
                            lines[d["id"]]))
    holder = Docs(frame.to_dict("records"), {d: (info.file, ln) for d, ln in lines.items()}, set(), [])
    pairs, excl = resolve_pairs(rows, holder, frame)
    exclusions = pd.DataFrame(heavy_excl + excl, columns=list(EXCLUSION_COLUMNS))
    return Sample(docs=frame, pairs=pairs, exclusions=exclusions, name=name or "clough",
                  slice_columns=("domain", "category"))
