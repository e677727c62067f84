"""Writing a Sample back to files: docs.<fmt> and pairs.<fmt> (JSONL, CSV or Parquet)
that :func:`calib.reading.samples.load_sample` reads back as the same sample."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd

from calib.base.atomic import csv_quoting, write_bytes_atomic
from calib.reading.sample import Sample


def pair_frame(sample: Sample) -> pd.DataFrame:
    """The sample's pairs by id: id_a, id_b, label (duplicate/not_duplicate), category."""
    ids = sample.docs["id"].to_numpy(dtype=object)
    p = sample.pairs
    return pd.DataFrame({"id_a": pd.Series(ids[p["i"].to_numpy()], dtype="str"),
                         "id_b": pd.Series(ids[p["j"].to_numpy()], dtype="str"),
                         "label": pd.Series(np.where(p["is_duplicate"].to_numpy(bool), "duplicate",
                                                     "not_duplicate"), dtype="str"),
                         "category": pd.Series(p["category"].to_numpy(dtype=object), dtype="str")})


def write_sample(sample: Sample, directory, *, fmt: str = "jsonl") -> tuple[Path, Path]:
    """Write docs.<fmt> and pairs.<fmt> (fmt: jsonl, csv or parquet) into directory."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, frame in (("docs", sample.docs), ("pairs", pair_frame(sample))):
        out = directory / f"{stem}.{fmt}"
        write_frame(frame, out, fmt)
        written.append(out)
    return written[0], written[1]


def write_frame(frame: pd.DataFrame, out: Path, fmt: str) -> None:
    """``frame`` as ``fmt`` at ``out``, written atomically (a reader never sees half a file)."""
    if fmt == "jsonl":
        text = frame.to_json(orient="records", lines=True, force_ascii=False)
        data = text.encode("utf-8") if text.endswith("\n") or not text else (text + "\n").encode("utf-8")
    elif fmt == "csv":
        data = frame.to_csv(index=False, lineterminator="\n", quoting=csv_quoting(frame)).encode("utf-8")
    elif fmt == "parquet":
        buf = io.BytesIO()
        frame.to_parquet(buf, index=False)
        data = buf.getvalue()
    else:
        raise ValueError(f"fmt must be jsonl, csv or parquet, got {fmt!r}")
    write_bytes_atomic(out, data)
