"""Export glue: everything the Export page shows and offers for download,
built in memory from :mod:`calib.export` (the app writes no file on the server).

* :func:`config_document`: the versioned config JSON (``build_config_doc``),
  validated with ``validate_doc`` before it is shown or offered.
* :func:`targets_bytes`, :func:`unsupported_frame`: the production targets.
* :func:`filter_manifest`, :func:`frame_bytes`: the manifest preview and its
  CSV / Parquet bytes (the same serialization as ``calib.atomic.write_frame_atomic``).

Nothing here deletes anything: the manifest is a proposal for review.
"""

from __future__ import annotations


import pandas as pd

from calib import atomic
from calib import export as cx
from calib.config import Config

MANIFEST_FILES = ("manifest.csv", "manifest.parquet")


def selection(source: str, budget: float | None = None, objective: str | None = None) -> dict:
    """How the current configuration was chosen, for the config's evidence."""
    source = str(source or "")
    if source.startswith("recommended"):
        out = {"method": "recommend", "source": source}
        if budget is not None:
            out["max_false_removal_rate"] = float(budget)
        if objective:
            out["objective"] = str(objective)
        return out
    if source.startswith("picked"):
        return {"method": "picked", "source": source}
    return {"method": "given", "source": source}


def config_document(cfg: Config, evaluation=None, sample=None, sel: dict | None = None) -> dict:
    """The config JSON document, validated (raises ``calib.export.ExportError`` when invalid)."""
    doc = cx.build_config_doc(cfg, evaluation=evaluation, sample=sample, created_by="calib app (Export page)",
                              selection=sel)
    cx.validate_doc(doc)
    return doc


def config_bytes(doc: dict) -> bytes:
    return cx.dumps(doc).encode("utf-8")


def targets_bytes(cfg: Config) -> bytes:
    return cx.dumps(cx.targets_doc(cfg)).encode("utf-8")


def config_filename(cfg: Config) -> str:
    return f"calib-config-{cfg.fingerprint()}.json"


def targets_filename(cfg: Config) -> str:
    return f"calib-targets-{cfg.fingerprint()}.json"


def manifest_filename(cfg: Config, suffix: str) -> str:
    return f"calib-manifest-{cfg.fingerprint()}.{suffix}"


def snippet_language(file_name: str) -> str:
    return "bash" if file_name.endswith(".sh") else "python"


def unsupported_frame(target: dict) -> pd.DataFrame:
    """A target's ``unsupported`` list as a table: field (JSON pointer), value, reason."""
    rows = [{"field": u.get("field", ""), "value": cx.dumps(u.get("value")).strip() if not isinstance(
        u.get("value"), str) else u["value"], "reason": u.get("reason", "")} for u in target.get("unsupported", [])]
    return pd.DataFrame(rows, columns=["field", "value", "reason"])


def slice_columns(frame: pd.DataFrame, sample) -> list[str]:
    """The manifest's slice columns (named as in the sample, or ``slice_<name>`` on a clash)."""
    out = []
    for c in getattr(sample, "slice_columns", ()):
        name = c if c in frame.columns and c not in cx.MANIFEST_COLUMNS else f"slice_{c}"
        if name in frame.columns:
            out.append(name)
    return out


def filter_manifest(frame: pd.DataFrame, *, chained_only: bool = False, slice_column: str | None = None,
                    slice_value=None, cluster_id: int | None = None) -> pd.DataFrame:
    """The manifest rows that pass the filters (``None`` = no filter)."""
    m = pd.Series(True, index=frame.index)
    if chained_only:
        m &= frame["chained"].astype(bool)
    if slice_column and slice_value is not None:
        m &= frame[slice_column].astype("string") == str(slice_value)
    if cluster_id is not None:
        m &= frame["cluster_id"] == int(cluster_id)
    return frame[m]


def frame_bytes(frame: pd.DataFrame, suffix: str) -> bytes:
    """CSV or Parquet bytes of a table, exactly as ``calib.atomic.write_frame_atomic`` writes them."""
    return atomic.frame_bytes(frame, suffix)
