"""Export: the folder that states a decision, for people to review.

Nothing in this project deletes a document. An export states a decision
(which configuration, with what evidence) and lists the documents that
configuration *would* remove. :func:`write_export` writes the export folder
as one set: config.json (the config document, :mod:`calib.production.document`),
targets.json (every production target of :mod:`calib.production.targets` with
its kept-document rule and its own evidence), the snippets, the manifest
(:mod:`calib.production.manifest`), the stoplist and document-frequency files
the config names, and a README.

Every file is written atomically: temp file in the same folder, fsync,
``os.replace``; on any error the temp file is removed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from calib.base import verbs as _api
from calib.base.atomic import write_bytes_atomic, write_frame_atomic, write_text_atomic
from calib.base.jsondoc import dumps
from calib.production.document import (FORMAT_VERSION, STOPLIST_FILE, WEIGHTS_FILE, build_config_doc,
                                       validate_doc, weights_entry)
# the config document's names stay reachable as calib.production.export.X (the public API, e.g. calib.production.document.load_config)
from calib.production.document import (SCHEMA_PATH, ExportError, config_from_doc, ignored_evidence,  # noqa: F401
                                       load_config, load_frequencies, load_stoplist, sample_evidence, schema,
                                       write_config)
from calib.production.manifest import NOTICE

if TYPE_CHECKING:  # imported lazily: writing files needs neither numba nor scipy
    from calib.search.config import Config


README_TEXT = """calib export
============

{notice}

Files
-----
config.json        the chosen configuration (format_version {fv}), its fingerprints and the
                   evidence it was chosen on (sample hash, label counts, every metric with
                   its 95% interval). `calib apply --config config.json` runs it.
targets.json       the same configuration for datasketch, Milvus MINHASH_LSH, datatrove,
                   text-dedup and NeMo Curator: pinned tool version, parameters, what each
                   cannot express (`unsupported`), which document each keeps per cluster
                   (`kept_document`) and its own evidence: the sample's figures when the
                   configuration runs as that tool runs it (`evidence`, `evaluated_as`).
                   Only the datasketch target reproduces calib's signatures and pairs.
*_target.*         one snippet per target.
stoplist.json      (when the configuration strips boilerplate) the normalized lines stripped
                   before shingling; config.json holds its sha256.
manifest.csv       proposed removals (report only), one row per document that this
manifest.parquet   configuration would remove, next to the representative it would keep.

config fingerprint: {fp}
"""


def targets_document(config: Config, *, workspace=None, evaluation=None) -> dict:
    """targets.json: every target, with its own evidence when a workspace is given."""
    from calib.production import targets as T
    found = T.targets(config)
    ev = T.evidence(workspace, config, found, evaluation=evaluation) if workspace is not None else None
    return T.targets_doc(config, ev)


def write_export(out_dir, config: Config, *, evaluation, sample, review_store=None, created_by="calib export",
                 selection: dict | None = None, workspace=None) -> dict[str, Path]:
    """Write everything an export consists of as one set: built in a temp
    sibling folder that replaces ``out_dir`` whole (:func:`calib.base.atomic.atomic_folder`).

    ``workspace`` (a ``calib.search.sweep.Workspace`` of ``sample``) evaluates each
    target's own variant of the config; one is made when not given.
    """
    from calib.production import targets as T
    from calib.base.atomic import atomic_folder
    from calib.production.manifest import manifest
    from calib.search.workspace import Workspace

    out = Path(out_dir)
    ws = workspace if workspace is not None else Workspace(sample)
    table = ws.frequencies(config.rep) if config.rep.weighting != "none" else None
    weights = weights_entry(table, ws.frequencies_source) if table is not None else None
    stop = ws.stripped(config.rep)[0]
    reviews = None
    if review_store is not None and hasattr(review_store, "all"):  # a store, not a frame of latest decisions
        from calib.review.adjudication import decisions_of
        from calib.review.agreement import review_evidence
        reviews = review_evidence(decisions_of(review_store), labels_from_reviews=sample.name.endswith("+reviews"))
    files = {"config.json": dumps(build_config_doc(config, evaluation=evaluation, sample=sample,
                                                   created_by=created_by, selection=selection, weights=weights,
                                                   reviews=reviews, stoplist=stop)),
             "targets.json": dumps(targets_document(config, workspace=ws, evaluation=evaluation))}
    validate_doc(json.loads(files["config.json"]))
    if stop is not None:
        files[STOPLIST_FILE] = stop.to_json(config.rep)
    files.update(T.render(config))
    files["README.txt"] = README_TEXT.format(notice=NOTICE, fv=FORMAT_VERSION, fp=config.fingerprint())
    if table is not None:
        files["README.txt"] += (f"\n{WEIGHTS_FILE}: the shingles' document frequencies the idf weights come from\n"
                                f"({weights['rule']}; sha256 in config.json under \"weights\"): keep it beside "
                                "config.json.\n")
    frame = manifest(evaluation, sample, review_store=review_store)
    with atomic_folder(out) as tmp:
        paths = {"config": write_text_atomic(tmp / "config.json", files.pop("config.json"))}
        for name, text in files.items():
            paths[name] = write_text_atomic(tmp / name, text)
        paths["manifest.csv"] = write_frame_atomic(frame, tmp / "manifest.csv")
        paths["manifest.parquet"] = write_frame_atomic(frame, tmp / "manifest.parquet")
        if table is not None:
            paths[WEIGHTS_FILE] = write_bytes_atomic(tmp / WEIGHTS_FILE, table.to_bytes())
    return {k: out / p.name for k, p in paths.items()}


# calib.export(...) is write_export(...) (the public API, see calib/__init__.py)
_api.callable_module(__name__, write_export)
