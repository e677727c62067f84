"""The config document: ``config.json`` (``format_version`` 1) and the files it names.

One job: the configuration as a versioned JSON document and back.
:func:`build_config_doc` turns a :class:`~calib.search.config.Config` (and the
evidence it was chosen on) into the document; :func:`validate_doc` checks it
against the package's ``config.schema.json`` (JSON Schema draft 2020-12) and
recomputes both fingerprints (representation and config) from its content;
:func:`load_config` reads, validates and turns it back into a ``Config``. The
files a document names beside it are read and checked here too: the
boilerplate stoplist (:func:`load_stoplist`, by sha256) and a weighted
representation's document-frequency table (:func:`load_frequencies`). Output
is deterministic (no timestamp, keys sorted) and written atomically.
"""

from __future__ import annotations

import hashlib
import json
import math
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from calib.base.version import __version__
from calib.base.atomic import write_text_atomic
from calib.base.jsondoc import dumps, json_value
from calib.reading.files import json_message
from calib.production.manifest import NOTICE  # the document's notice is the manifest's
from calib.reading.files import _DuplicateKey, _no_duplicate_keys  # the loaders' duplicate-key rule

if TYPE_CHECKING:  # imported lazily: writing files needs neither numba nor scipy
    from calib.search.config import Config

FORMAT_VERSION = 1
SCHEMA_PATH = Path(__file__).with_name("config.schema.json")
STOPLIST_FILE = "stoplist.json"  # the boilerplate lines a config with strip_lines strips, beside config.json


class ExportError(ValueError):
    """A config file that cannot be used; ``pointer`` is the JSON pointer of the field."""

    def __init__(self, message: str, pointer: str = "", path: str | None = None):
        self.pointer = pointer or ""
        self.path = path
        where = f"{path}: " if path else ""
        at = f"at {self.pointer or '/'}: " if pointer is not None else ""
        super().__init__(f"{where}{at}{message}")


def sample_evidence(sample) -> dict:
    p = sample.pairs
    dup = int(p["is_duplicate"].sum()) if len(p) else 0
    ev = {"name": str(sample.name), "content_hash": sample.content_hash(), "n_docs": int(sample.n),
          "labeled_pairs": int(len(p)),
          "label_counts": {"duplicate": dup, "not_duplicate": int(len(p)) - dup},
          "has_groups": bool(sample.has_groups), "slice_columns": [str(c) for c in sample.slice_columns]}
    if sample.has_groups:
        sizes = sample.named_groups().value_counts()
        ev["label_counts"]["groups"] = int(len(sizes))
        ev["label_counts"]["docs_in_groups_of_2_or_more"] = int(sizes[sizes >= 2].sum())
        if sample.not_judged().any():
            ev["label_counts"]["docs_not_judged"] = int(sample.not_judged().sum())
    return ev


def ignored_evidence(evaluation) -> dict:
    """The labeled pairs that counted neither right nor wrong: their categories and how many."""
    lab = evaluation.labeled
    cats = [c for c in str(evaluation.row.get("ignored_categories", "") or "").split(",") if c]
    per = lab[lab["category"].isin(cats)]["category"].value_counts() if cats else {}
    return {"categories": cats, "pairs": int(evaluation.row.get("ignored_pairs", 0) or 0),
            "pairs_by_category": {str(c): int(per.get(c, 0)) for c in cats}}


def build_config_doc(config: Config, *, evaluation=None, sample=None, created_by: str = "calib export",
                     selection: dict | None = None, weights: dict | None = None, reviews: dict | None = None,
                     stoplist=None) -> dict:
    """The config JSON as a dict (see ``config.schema.json``).

    ``evaluation`` (``sweep.evaluate(...)``) and ``sample`` add the evidence:
    the sample's name, content hash, size and label counts, and every metric
    with its interval at this configuration. ``selection`` says how the
    configuration was chosen (e.g. ``{"method": "recommend", "max_false_removal_rate": 0.01}``).
    ``reviews`` (:func:`calib.review.agreement.review_evidence`): the label rule, label counts and
    agreement of the reviews the labels stand on.
    ``weights``: a weighted representation's table entry (:func:`weights_entry`).
    ``stoplist`` (:class:`calib.sketches.boilerplate.Stoplist`, when ``rep.strip_lines`` > 0): named with its
    sha256 as the file :data:`STOPLIST_FILE` beside the document.
    """
    if evaluation is not None and evaluation.config.fingerprint() != config.fingerprint():
        raise ValueError("the evaluation was computed for another configuration "
                         f"({evaluation.config.fingerprint()} != {config.fingerprint()})")
    rep = config.rep
    doc = {
        "format_version": FORMAT_VERSION,
        "calib_version": __version__,
        "created_by": created_by,
        "notice": NOTICE,
        **config.doc_sections(),  # representation, lsh, verification, clustering: from the Config fields
        "representation_fingerprint": rep.fingerprint(),
        "config_fingerprint": config.fingerprint(),
        **({"weights": weights} if weights is not None else {}),
        "evidence": None,
    }
    if rep.strip_lines:
        if stoplist is None:
            raise ValueError("representation.strip_lines is set: the document needs its stoplist")
        doc["stoplist"] = {"file": STOPLIST_FILE, "sha256": stoplist.sha256(rep), "lines": len(stoplist)}
    if evaluation is not None or sample is not None:
        ev: dict = {"selection": selection or {"method": "given"}}
        if sample is not None:
            ev["sample"] = sample_evidence(sample)
        if evaluation is not None:
            ev["metrics"] = {str(k): json_value(v) for k, v in evaluation.row.items()}
            ev["ignored"] = ignored_evidence(evaluation)
        if reviews is not None:
            ev["reviews"] = reviews
        doc["evidence"] = ev
    return doc


def write_config(path, config: Config, *, evaluation=None, sample=None, created_by: str = "calib export",
                 selection: dict | None = None, stoplist=None) -> dict:
    """Build, validate and atomically write the config JSON (and its stoplist file beside it); returns the document."""
    doc = build_config_doc(config, evaluation=evaluation, sample=sample, created_by=created_by, selection=selection,
                           stoplist=stoplist)
    validate_doc(doc)
    if "stoplist" in doc:
        write_text_atomic(Path(path).with_name(STOPLIST_FILE), stoplist.to_json(config.rep))
    write_text_atomic(path, dumps(doc))
    return doc


def load_stoplist(doc: dict, read_text: Callable[[str], str], where: str):
    """The :class:`calib.sketches.boilerplate.Stoplist` a config document names (None when it strips
    nothing), read with ``read_text(file name)`` and checked against its sha256."""
    from calib.sketches.boilerplate import Stoplist
    entry = doc.get("stoplist")
    if entry is None:
        return None
    try:
        text = read_text(entry["file"])
    except (OSError, ValueError) as exc:  # ValueError: calib.base.inputs' checks (a FIFO, /dev/zero, the size)
        raise ExportError(f"cannot read the stoplist {entry['file']!r} beside the config ({exc})", "/stoplist/file",
                          where)
    got = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if got != entry["sha256"]:
        raise ExportError(f"{entry['file']} has sha256 {got}, the config names {entry['sha256']}: the file was "
                          "edited or is another export's", "/stoplist/sha256", where)
    try:
        st = Stoplist.from_doc(json.loads(text), entry["file"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ExportError(str(exc), "/stoplist/file", where)
    if st.share != doc["representation"].get("strip_lines", 0.0):
        raise ExportError(f"{entry['file']}: share {st.share} is not representation.strip_lines", "/stoplist", where)
    return st


@lru_cache(maxsize=1)
def schema() -> dict:
    """The config JSON Schema (draft 2020-12) shipped with the package."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def _pointer(parts: Iterable) -> str:
    out = ""
    for p in parts:
        out += "/" + str(p).replace("~", "~0").replace("/", "~1")
    return out


def _check_fingerprint(doc: dict, key: str, recomputed: str, what: str, path) -> None:
    if recomputed != doc[key]:
        raise ExportError(f"{key} {doc[key]!r} does not match {what} (recomputed {recomputed!r}): "
                          "the file was edited or corrupted", f"/{key}", path)


def validate_doc(doc, *, path: str | None = None) -> None:
    """Raise :class:`ExportError` naming the field (JSON pointer) when ``doc`` is not
    a valid config document: unknown format_version, schema violation, or a
    representation/config fingerprint that does not match its content."""
    import jsonschema

    if not isinstance(doc, dict):
        raise ExportError(f"a config document must be a JSON object, got {type(doc).__name__}", "", path)
    if "format_version" not in doc:
        raise ExportError("missing field 'format_version'", "/format_version", path)
    fv = doc["format_version"]
    if not isinstance(fv, int) or isinstance(fv, bool):
        raise ExportError(f"format_version must be an integer, got {fv!r}", "/format_version", path)
    if fv != FORMAT_VERSION:
        raise ExportError(f"unknown format_version {fv} (this calib {__version__} reads format_version "
                          f"{FORMAT_VERSION})", "/format_version", path)
    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(doc), key=lambda e: (list(map(str, e.absolute_path)), e.validator))
    if errors:
        err = errors[0]
        parts = list(err.absolute_path)
        if err.validator == "required":
            missing = [k for k in err.validator_value if isinstance(err.instance, dict) and k not in err.instance]
            if missing:
                raise ExportError(f"missing field {missing[0]!r}", _pointer(parts + [missing[0]]), path)
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            allowed = set(err.schema.get("properties", {}))
            extra = sorted(k for k in err.instance if k not in allowed)
            if extra:
                raise ExportError(f"unknown field {extra[0]!r}", _pointer(parts + [extra[0]]), path)
        raise ExportError(err.message, _pointer(parts), path)
    from calib.sketches.represent import Representation
    try:
        rep = Representation.from_dict(doc["representation"])
    except (ValueError, TypeError) as exc:
        raise ExportError(str(exc), "/representation", path)
    _check_fingerprint(doc, "representation_fingerprint", rep.fingerprint(), "the representation", path)
    try:
        cfg = config_from_doc(doc)
    except (ValueError, TypeError) as exc:
        raise ExportError(str(exc), "/lsh", path)
    _check_fingerprint(doc, "config_fingerprint", cfg.fingerprint(), "the configuration", path)
    if (rep.weighting != "none") != ("weights" in doc):
        raise ExportError(f"weighting {rep.weighting!r} " + ("needs its document-frequency table under /weights"
                          if rep.weighting != "none" else "takes no /weights"), "/weights", path)
    if bool(rep.strip_lines) != ("stoplist" in doc):
        raise ExportError("representation.strip_lines and the 'stoplist' entry go together (one is missing)",
                          "/stoplist", path)
    check_metrics((doc.get("evidence") or {}).get("metrics") or {}, path)
    lsh = doc["lsh"]
    for name, want in (("rows_used", cfg.b * cfg.r), ("lsh_threshold", cfg.lsh_threshold), ("s50", cfg.s50)):
        if not math.isclose(float(lsh[name]), float(want), rel_tol=1e-12, abs_tol=1e-12):
            raise ExportError(f"{name} {lsh[name]!r} does not follow from b={cfg.b}, r={cfg.r} (expected {want!r})",
                              f"/lsh/{name}", path)


# counts of a result row that the evidence holds and readers use (apply's chaining warning), and how
# they nest: a part is never more than its whole
COUNTS = ("removed", "chained_removals", "labeled_removals", "unlabeled_removals", "false_removals", "n_docs")
PARTS_OF = {"chained_removals": "removed", "labeled_removals": "removed", "unlabeled_removals": "removed",
            "false_removals": "labeled_removals"}
RATES = ("pair_recall", "false_removal_rate", "pair_precision", "missed_removal_rate", "candidate_recall")


def check_metrics(metrics: dict, path: str | None = None) -> None:
    """The evidence metrics as calib writes them: every number finite (a value calib cannot measure is
    null) and non-negative, counts whole, rates and their bounds at most 1, a part (chained, labeled,
    false removals) at most its whole. Anything else was edited: :class:`ExportError` naming the field."""
    def bad(key, why):
        raise ExportError(f"evidence metric {key} {metrics[key]!r} {why} (not as calib wrote it: the file was "
                          f"edited)", _pointer(["evidence", "metrics", key]), path)
    numbers = {k: v for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    for k, v in numbers.items():
        if not math.isfinite(v) or v < 0:
            bad(k, "is not a finite non-negative number")
        if k in COUNTS and v != int(v):
            bad(k, "is not a whole count")
        if k.removesuffix("_low").removesuffix("_high") in RATES and v > 1:
            bad(k, "is a rate above 1")
    for part, whole in PARTS_OF.items():
        if part in numbers and whole in numbers and numbers[part] > numbers[whole]:
            bad(part, f"is more than {whole} {numbers[whole]!r}")


def config_from_doc(doc: dict) -> "Config":
    from calib.search.config import Config
    return Config.from_doc_sections(doc)


def load_config(path) -> tuple[Config, dict]:
    """Read, validate and check a config JSON: ``(Config, document)``.

    Raises :class:`ExportError` (a ``ValueError``) naming the file and field.
    """
    from calib.base.inputs import CONFIG_MAX_BYTES, InputError, read_regular_text
    p = Path(path)
    try:  # the one input check: a regular file (a FIFO never blocks), of a config's size at most
        text = read_regular_text(p, max_bytes=CONFIG_MAX_BYTES, what="a config", name=str(p))
    except InputError as exc:
        raise ExportError("no such file" if exc.detail == "file not found" else exc.detail, None, str(p))
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except _DuplicateKey as exc:  # the loaders' rule: which value is meant is ambiguous
        raise ExportError(f"duplicate key {exc.key!r} in one JSON object (which value is meant is ambiguous)",
                          None, str(p))
    except json.JSONDecodeError as exc:
        raise ExportError(f"not valid JSON (line {exc.lineno}, column {exc.colno}: {json_message(exc)})", None, str(p))
    except RecursionError:  # e.g. arrays nested 100,000 deep
        raise ExportError("not valid JSON (nested too deeply)", None, str(p))
    except ValueError as exc:  # e.g. an integer of 5,000 digits
        raise ExportError(f"not valid JSON ({str(exc).split(';')[0][:100]})", None, str(p))
    validate_doc(doc, path=str(p))
    return config_from_doc(doc), doc


WEIGHTS_FILE = "document_frequencies.bin"


def weights_entry(table, source: str) -> dict:
    """The config document's ``weights`` entry for a document-frequency table
    (:class:`calib.sketches.weighted_minhash.DocumentFrequencies`) written as :data:`WEIGHTS_FILE`."""
    from calib.sketches.weighted_minhash import RULE
    compact = table.compact()
    return {"file": WEIGHTS_FILE, "sha256": table.sha256(), "documents": int(table.documents),
            "entries": int(len(compact.hashes)), "rule": RULE, "source": source}


def load_frequencies(doc: dict, config_path, read_bytes=None):
    """The document-frequency table a weighted config document names (None when unweighted):
    read beside the config file (by ``read_bytes(path)`` when given: object storage) and
    checked against its sha256 before any work starts."""
    from calib.sketches.weighted_minhash import DocumentFrequencies
    entry = doc.get("weights")
    if entry is None:
        return None
    cp = str(config_path)
    path = (cp.rsplit("/", 1)[0] + "/" if "/" in cp else "") + entry["file"]
    try:
        table = DocumentFrequencies.load(path, entry["sha256"], None if read_bytes is None else read_bytes(path))
    except FileNotFoundError:
        raise ExportError(f"the document-frequency table {path} is missing (copy it with the config)",
                          "/weights/file", str(config_path))
    except ValueError as exc:
        raise ExportError(str(exc), "/weights", str(config_path))
    if table.documents != entry["documents"]:
        raise ExportError(f"{path} counts {table.documents} documents, the config says {entry['documents']}",
                          "/weights/documents", str(config_path))
    return table
