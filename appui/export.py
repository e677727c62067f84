"""Export glue: everything the Export page shows and offers for download,
built in memory from :mod:`calib.export` (the app writes no file on the server).

* :func:`config_document`: the versioned config JSON (``build_config_doc``),
  validated with ``validate_doc`` before it is shown or offered.
* :func:`targets_bytes`, :func:`unsupported_frame`, :func:`evidence_frame`: the
  production targets (:mod:`calib.production.targets`) and their own figures.
* :func:`filter_manifest`, :func:`frame_bytes`: the manifest preview and its
  CSV / Parquet bytes (the same serialization as ``calib.base.atomic.write_frame_atomic``).

Nothing here deletes anything: the manifest is a proposal for review.
"""

from __future__ import annotations


import pandas as pd

from calib.base import atomic
from calib.estimates import figures
from calib.production import export as cx
from calib.production import targets as T
from calib.search.config import Config, Verify
from calib.production.manifest import MANIFEST_COLUMNS

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


UNTUNED = ("**Untuned:** the current configuration is calib's default, not chosen on this sample. Run a sweep on "
           "the Sweep page and use its recommendation (or tick a row) before exporting; what this page offers now "
           "is that default, evaluated on the sample.")


def untuned(sel: dict) -> bool:
    """True when the configuration is still calib's default (neither recommended, picked nor set by hand)."""
    return sel.get("method") == "given" and str(sel.get("source") or "").startswith("default")


def selection_text(sel: dict) -> str:
    """How the configuration was chosen, in words ('given' is said to be untuned)."""
    if sel.get("method") == "recommend":
        budget = sel.get("max_false_removal_rate")
        under = f" under a {budget:.1%} false-removal budget" if budget is not None else ""
        return "recommended by the sweep" + under
    if sel.get("method") == "picked":
        return "picked from the sweep table"
    return "calib's default, not tuned on this sample" if untuned(sel) else f"given ({sel.get('source')})"


def untuned_warning(source: str) -> None:
    """The Export page's warning before anything is offered, when the configuration is untuned."""
    import streamlit as st
    if untuned(selection(source)):
        st.warning(UNTUNED)


def config_document(cfg: Config, evaluation=None, sample=None, sel: dict | None = None,
                    reviews: dict | None = None, stoplist=None) -> dict:
    """The config JSON document, validated (raises ``calib.production.document.ExportError`` when invalid); ``stoplist``:
    the boilerplate lines of a config that strips them (its file, stoplist.json, is downloaded beside)."""
    doc = cx.build_config_doc(cfg, evaluation=evaluation, sample=sample, created_by="calib app (Export page)",
                              selection=sel, reviews=reviews, stoplist=stoplist)
    cx.validate_doc(doc)
    return doc


def config_bytes(doc: dict) -> bytes:
    return cx.dumps(doc).encode("utf-8")


def targets_bytes(cfg: Config, evidence: dict | None = None) -> bytes:
    """targets.json as ``calib export`` writes it (with each target's evidence when given)."""
    return cx.dumps(T.targets_doc(cfg, evidence)).encode("utf-8")


EVIDENCE_ROWS = {"removed": "documents removed", "false_removals": "false removals",
                 "false_removal_rate": "false-removal rate", "pair_recall": "pair recall",
                 "unlabeled_removals": "unlabeled removals", "chained_removals": "chained removals"}


KEPT_LABELS = {("connected", "first"): "first document", ("star", "first"): "earliest kept (no chains)",
               ("connected", "union_size"): "union-find root (size)", ("connected", "union_rank"): "union-find root (rank)",
               ("connected", "random"): "a random member"}


def _how(cfg: Config) -> dict:
    verify = "none" if cfg.verify is Verify.NONE else f"{cfg.verify} J >= {cfg.threshold:g}"
    return {"verification": verify, "kept": KEPT_LABELS.get((cfg.policy, cfg.representative),
                                                          f"{cfg.policy}/{cfg.representative}")}


def evidence_frame(config: Config, config_row: dict, evidence: dict[str, dict], found: dict) -> pd.DataFrame:
    """One row per measure, one column for the calibrated config and one per target: how the
    target runs the config (verification, kept document) and its figures on the sample then."""
    def fmt(k, v):  # the digits and words of every page (calib.estimates.figures)
        return figures.pct(v, k) if k.endswith(("rate", "recall")) else figures.number(v)
    cols = {"calibrated config": {**_how(config), **{k: fmt(k, config_row.get(k)) for k in EVIDENCE_ROWS}}}
    for name, ev in evidence.items():
        t = found[name]
        cols[t.title] = {**_how(t.engine_config), **{k: fmt(k, ev.get(k)) for k in EVIDENCE_ROWS}}
    frame = pd.DataFrame(cols)
    frame.index = [{"verification": "verification", "kept": "kept per cluster"}.get(k) or EVIDENCE_ROWS[k]
                   for k in frame.index]
    return frame


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
        name = c if c in frame.columns and c not in MANIFEST_COLUMNS else f"slice_{c}"
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
    """CSV or Parquet bytes of a table, exactly as ``calib.base.atomic.write_frame_atomic`` writes them."""
    return atomic.frame_bytes(frame, suffix)
