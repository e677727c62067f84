"""Export: the versioned config JSON, production targets, and the report-only manifest.

Nothing in this project deletes a document. An export states a decision
(which configuration, with what evidence) and lists the documents that
configuration *would* remove, for people to review.

* :func:`build_config_doc` / :func:`write_config` / :func:`load_config`: the
  config JSON (``format_version`` 1), validated against the package's
  ``config.schema.json`` (JSON Schema draft 2020-12); on load both
  fingerprints are recomputed and compared. Output is deterministic: no
  timestamp, keys sorted, so the same inputs give the same bytes.
* :func:`targets` / :func:`render_targets`: the same decision expressed as
  parameters (and a snippet) for datasketch, Milvus MINHASH_LSH, datatrove,
  text-dedup and NeMo Curator. Each target lists ``unsupported``: the parts of
  the config it cannot express, instead of silently changing their meaning.
* :func:`manifest`: one row per proposed removal (report only).

Every file is written atomically: temp file in the same folder, fsync,
``os.replace``; on any error the temp file is removed.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from typing import TYPE_CHECKING

from . import __version__
from .atomic import cleanup_temp_files, write_bytes_atomic, write_frame_atomic, write_text_atomic  # noqa: F401

if TYPE_CHECKING:  # imported lazily: writing files needs neither numba nor scipy
    from .config import Config

FORMAT_VERSION = 1
SCHEMA_PATH = Path(__file__).with_name("config.schema.json")
NOTICE = ("Report only: this project never deletes, moves or rewrites a document. The manifest lists "
          "documents this configuration WOULD remove, each next to the representative it would keep, "
          "for human review; acting on it is a separate, deliberate step outside calib.")

MANIFEST_COLUMNS = (
    "doc_id", "cluster_id", "representative_id", "sim_to_representative_estimated",
    "sim_to_representative_exact", "via_id", "via_exact", "via_estimated", "chained", "flagged_giant",
)
# then: label (export only), slice columns, review_status, config_fingerprint


class ExportError(ValueError):
    """A config file that cannot be used; ``pointer`` is the JSON pointer of the field."""

    def __init__(self, message: str, pointer: str = "", path: str | None = None):
        self.pointer = pointer or ""
        self.path = path
        where = f"{path}: " if path else ""
        at = f"at {self.pointer or '/'}: " if pointer is not None else ""
        super().__init__(f"{where}{at}{message}")


# ---------------------------------------------------------------------------
# The config document
# ---------------------------------------------------------------------------

def _json_value(v):
    """Plain-JSON version of a metrics value (NaN/inf -> None, numpy -> Python)."""
    if v is None or isinstance(v, (bool, np.bool_)):
        return None if v is None else bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return f if math.isfinite(f) else None
    if isinstance(v, str):
        return v
    if pd.isna(v):
        return None
    return str(v)


def sample_evidence(sample) -> dict:
    p = sample.pairs
    dup = int(p["is_duplicate"].sum()) if len(p) else 0
    ev = {"name": str(sample.name), "content_hash": sample.content_hash(), "n_docs": int(sample.n),
          "labeled_pairs": int(len(p)),
          "label_counts": {"duplicate": dup, "not_duplicate": int(len(p)) - dup},
          "has_groups": bool(sample.has_groups), "slice_columns": [str(c) for c in sample.slice_columns]}
    if sample.has_groups:
        sizes = sample.docs["group"].dropna().value_counts()
        ev["label_counts"]["groups"] = int(len(sizes))
        ev["label_counts"]["docs_in_groups_of_2_or_more"] = int(sizes[sizes >= 2].sum())
    return ev


def build_config_doc(config: Config, *, evaluation=None, sample=None, created_by: str = "calib export",
                     selection: dict | None = None) -> dict:
    """The config JSON as a dict (see ``config.schema.json``).

    ``evaluation`` (``sweep.evaluate(...)``) and ``sample`` add the evidence:
    the sample's name, content hash, size and label counts, and every metric
    with its interval at this configuration. ``selection`` says how the
    configuration was chosen (e.g. ``{"method": "recommend", "max_false_removal_rate": 0.01}``).
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
        "evidence": None,
    }
    if evaluation is not None or sample is not None:
        ev: dict = {"selection": selection or {"method": "given"}}
        if sample is not None:
            ev["sample"] = sample_evidence(sample)
        if evaluation is not None:
            ev["metrics"] = {str(k): _json_value(v) for k, v in evaluation.row.items()}
        doc["evidence"] = ev
    return doc


def dumps(doc: dict) -> str:
    """Deterministic serialization: sorted keys, 2-space indent, UTF-8, final newline."""
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def write_config(path, config: Config, *, evaluation=None, sample=None, created_by: str = "calib export",
                 selection: dict | None = None) -> dict:
    """Build, validate and atomically write the config JSON; returns the document."""
    doc = build_config_doc(config, evaluation=evaluation, sample=sample, created_by=created_by, selection=selection)
    validate_doc(doc)
    write_text_atomic(path, dumps(doc))
    return doc


@lru_cache(maxsize=1)
def schema() -> dict:
    """The config JSON Schema (draft 2020-12) shipped with the package."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def _pointer(parts: Iterable) -> str:
    out = ""
    for p in parts:
        out += "/" + str(p).replace("~", "~0").replace("/", "~1")
    return out


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
    from .represent import Representation
    try:
        rep = Representation.from_dict(doc["representation"])
    except (ValueError, TypeError) as exc:
        raise ExportError(str(exc), "/representation", path)
    if rep.fingerprint() != doc["representation_fingerprint"]:
        raise ExportError(f"representation_fingerprint {doc['representation_fingerprint']!r} does not match the "
                          f"representation (recomputed {rep.fingerprint()!r}): the file was edited or corrupted",
                          "/representation_fingerprint", path)
    try:
        cfg = config_from_doc(doc)
    except (ValueError, TypeError) as exc:
        raise ExportError(str(exc), "/lsh", path)
    if cfg.fingerprint() != doc["config_fingerprint"]:
        raise ExportError(f"config_fingerprint {doc['config_fingerprint']!r} does not match the configuration "
                          f"(recomputed {cfg.fingerprint()!r}): the file was edited or corrupted",
                          "/config_fingerprint", path)
    lsh = doc["lsh"]
    for name, want in (("rows_used", cfg.b * cfg.r), ("lsh_threshold", cfg.lsh_threshold), ("s50", cfg.s50)):
        if not math.isclose(float(lsh[name]), float(want), rel_tol=1e-12, abs_tol=1e-12):
            raise ExportError(f"{name} {lsh[name]!r} does not follow from b={cfg.b}, r={cfg.r} (expected {want!r})",
                              f"/lsh/{name}", path)


def config_from_doc(doc: dict) -> "Config":
    from .config import Config
    return Config.from_doc_sections(doc)


def load_config(path) -> tuple[Config, dict]:
    """Read, validate and check a config JSON: ``(Config, document)``.

    Raises :class:`ExportError` (a ``ValueError``) naming the file and field.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ExportError("no such file", None, str(p))
    except (OSError, UnicodeDecodeError) as exc:
        raise ExportError(f"cannot read: {exc}", None, str(p))
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ExportError(f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", None, str(p))
    validate_doc(doc, path=str(p))
    return config_from_doc(doc), doc


# ---------------------------------------------------------------------------
# Production targets
# ---------------------------------------------------------------------------

_HASH_CODE = {
    "xxhash": "xxhash.xxh32_intdigest(b)  # xxHash32, seed 0",
    "mmh3": "mmh3.hash(b, 0, signed=False)  # MurmurHash3 x86_32, seed 0, unsigned",
    "sha1": "sha1_hash32(b)  # datasketch.hashfunc.sha1_hash32",
}
_HASH_IMPORT = {"xxhash": "import xxhash", "mmh3": "import mmh3", "sha1": "from datasketch.hashfunc import sha1_hash32"}


def _shingling(rep) -> dict:
    return {"lowercase": rep.lowercase, "nfkc": rep.nfkc, "strip_punct": rep.strip_punct,
            "collapse_ws": rep.collapse_ws, "unit": rep.shingle, "k": rep.k, "encoding": "utf-8",
            "shingle_hash": rep.hashfunc,
            "order": "NFKC, lowercase, punctuation/symbols/underscore -> space, whitespace collapse",
            "short_text": "a text with fewer than k units is one shingle (the whole normalized text)",
            "empty_text": "no shingle: never a candidate, never inserted into an index"}


def _verification_note(config: Config) -> str:
    if config.verify == "exact":
        return f"keep a candidate pair when the exact Jaccard of the shingle sets >= {config.threshold:g}"
    if config.verify == "estimated":
        return (f"keep a candidate pair when the MinHash estimate (fraction of the {config.rep.num_perm} "
                f"signature values that agree) >= {config.threshold:g}")
    return "every LSH candidate pair is a duplicate (no verification)"


def _datasketch_target(config: Config) -> dict:
    rep = config.rep
    unsupported = []
    if config.b < 2:
        unsupported.append({"field": "/lsh/b", "value": config.b,
                            "reason": "datasketch MinHashLSH refuses fewer than 2 bands (b < 2)"})
    unsupported.append({"field": "/clustering", "value": f"{config.policy}/{config.representative}",
                        "reason": "datasketch finds candidate pairs only; clustering (policy and representative "
                                  "rule) is not part of it. The snippet stops at verified pairs; `calib apply` "
                                  "does the clustering."})
    return {
        "library": "datasketch>=2.0,<3",
        "minhash": {"class": "datasketch.MinHash", "num_perm": rep.num_perm, "seed": rep.seed,
                    "hashfunc": _HASH_CODE[rep.hashfunc].split("  #")[0],
                    "scheme": "affine32",
                    "permutations": None if rep.scheme == "datasketch" else
                    "calib 'fast' scheme: (a, b) = splitmix64(seed, p), computed in the snippet and passed as "
                    "permutations=(a, b) with scheme='affine32'"},
        "lsh": {"class": "datasketch.MinHashLSH", "num_perm": rep.num_perm, "params": [config.b, config.r]},
        "shingling": _shingling(rep),
        "verification": {"rule": config.verify, "threshold": config.threshold, "how": _verification_note(config)},
        "clustering": {"policy": config.policy, "representative": config.representative,
                       "max_component": config.max_component},
        "unsupported": unsupported,
    }


def _milvus_target(config: Config) -> dict:
    rep = config.rep
    # Parameter names: https://milvus.io/docs/minhash-lsh.md (index building params, index-specific
    # search params) and https://milvus.io/docs/minhash-function.md (MinHash function, Milvus 3.0.x).
    unsupported = []
    if config.b * config.r != rep.num_perm:
        unsupported.append({"field": "/lsh", "value": [config.b, config.r],
                            "reason": f"mh_lsh_band must divide the signature evenly (rows per band = num_hashes / "
                                      f"mh_lsh_band = {rep.num_perm / config.b:g}); calib bands only the first "
                                      f"b*r = {config.b * config.r} of {rep.num_perm} values"})
    unsupported.append({"field": "/representation", "value": rep.fingerprint(),
                        "reason": "the server-side MinHash function does not document its permutations, its xxhash "
                                  "variant or a text normalization matching calib's: its signatures are not calib's. "
                                  "To keep the calibrated representation, compute signatures client-side with the "
                                  "datasketch target and insert them into the BINARY_VECTOR field "
                                  "(mh_element_bit_width 32, little-endian uint32)"})
    if rep.hashfunc == "mmh3":
        unsupported.append({"field": "/representation/hashfunc", "value": "mmh3",
                            "reason": "the MinHash function offers hash_function 'xxhash' or 'sha1' only"})
    if rep.shingle == "word":
        unsupported.append({"field": "/representation/shingle", "value": "word",
                            "reason": "token_level 'word' tokenizes with the field's analyzer (standard by default), "
                                      "not calib's whitespace split after NFKC/lowercase/punctuation steps"})
    elif rep.lowercase or rep.nfkc or rep.strip_punct or rep.collapse_ws:
        unsupported.append({"field": "/representation", "value": rep.normalization_label(),
                            "reason": "token_level 'char' shingles the raw characters; calib's normalization "
                                      "(lowercase/NFKC/punctuation/whitespace) is not applied server-side"})
    if config.verify == "exact":
        unsupported.append({"field": "/verification/rule", "value": "exact",
                            "reason": "mh_search_with_jaccard refines with the stored raw MinHash signatures "
                                      "(an estimate), not the exact Jaccard of shingle sets; recompute exact J "
                                      "client-side for the returned hits"})
    if config.verify != "none":
        unsupported.append({"field": "/verification/threshold", "value": config.threshold,
                            "reason": "Milvus search returns the top `limit` hits, not all pairs above a threshold; "
                                      "filter the hits client-side (similarity = 1 - distance in the Milvus docs' "
                                      "example; not sure this holds in every version: check on a known pair)"})
    unsupported.append({"field": "/clustering", "value": f"{config.policy}/{config.representative}",
                        "reason": "Milvus searches; it does not cluster or choose representatives"})
    return {
        "docs": ["https://milvus.io/docs/minhash-lsh.md", "https://milvus.io/docs/minhash-function.md"],
        "schema": {"vector_field": {"datatype": "BINARY_VECTOR", "dim": rep.num_perm * 32}},
        "index_params": {"index_type": "MINHASH_LSH", "metric_type": "MHJACCARD",
                         "params": {"mh_element_bit_width": 32, "mh_lsh_band": config.b,
                                    "with_raw_data": config.verify != "none"}},
        "search_params": {"metric_type": "MHJACCARD",
                          "params": {"mh_search_with_jaccard": config.verify != "none", "refine_k": 64}},
        "search_limit": 16,
        "minhash_function": {"function_type": "MINHASH",
                             "params": {"num_hashes": rep.num_perm, "shingle_size": rep.k,
                                        "token_level": rep.shingle,
                                        "hash_function": rep.hashfunc if rep.hashfunc != "mmh3" else "xxhash",
                                        "seed": rep.seed}},
        "client_side_signatures": "np.asarray(minhash(text).hashvalues, dtype='<u4').tobytes() from the datasketch "
                                  "target: bit-identical to calib's signatures",
        "threshold": config.threshold if config.verify != "none" else None,
        "unsupported": unsupported,
    }


def _datatrove_target(config: Config) -> dict:
    rep = config.rep
    # Field names from datatrove's src/datatrove/pipeline/dedup/minhash.py (MinhashConfig),
    # utils/hashing.py (HashConfig) and utils/text.py (TextNormConfig). Releases before
    # norm_config/hash_config existed had `use_64bit_hashes` instead (not sure of the exact version).
    unsupported = []
    if rep.shingle == "char":
        unsupported.append({"field": "/representation/shingle", "value": "char",
                            "reason": "datatrove shingles word n-grams from a language word tokenizer only"})
    else:
        unsupported.append({"field": "/representation/shingle", "value": "word",
                            "reason": "datatrove splits words with a language-specific word tokenizer "
                                      "(MinhashDedupSignature(language=...)), not calib's whitespace split"})
    if rep.nfkc:
        unsupported.append({"field": "/representation/nfkc", "value": True,
                            "reason": "TextNormConfig has no NFKC step (norm_unicode_diacritics is NFD + drop "
                                      "combining marks, a different mapping; left off here)"})
    if not rep.collapse_ws and rep.shingle == "char":
        unsupported.append({"field": "/representation/collapse_ws", "value": False,
                            "reason": "norm_whitespace is set to True: datatrove tokenizes words anyway"})
    if rep.hashfunc == "mmh3":
        unsupported.append({"field": "/representation/hashfunc", "value": "mmh3",
                            "reason": "HashConfig.hash_fc is 'sha1' or 'xxhash'"})
    unsupported.append({"field": "/representation/scheme", "value": rep.scheme,
                        "reason": "datatrove permutes with (a*h + b) mod (2^61 - 1), a and b from "
                                  "RandomState(seed): not datasketch's affine32, so signatures differ"})
    unsupported.append({"field": "/representation/k", "value": rep.k,
                        "reason": "a text with fewer than n_grams words has no n-gram in datatrove (no signature, "
                                  "never a duplicate); calib makes it one shingle"})
    if config.verify != "none":
        unsupported.append({"field": "/verification/rule", "value": config.verify,
                            "reason": "datatrove does no verification: every bucket collision is a duplicate"})
    if config.policy != "connected":
        unsupported.append({"field": "/clustering/policy", "value": config.policy,
                            "reason": "MinhashDedupCluster takes connected components (union-find)"})
    if config.representative != "first":
        unsupported.append({"field": "/clustering/representative", "value": config.representative,
                            "reason": "datatrove keeps one document per component (the union-find root); "
                                      "no length/priority/medoid rule (not sure which member the root is)"})
    return {
        "library": "datatrove",
        "MinhashConfig": {
            "n_grams": rep.k, "num_buckets": config.b, "hashes_per_bucket": config.r, "seed": rep.seed,
            "hash_config": {"precision": 32, "hash_fc": "sha1" if rep.hashfunc == "sha1" else "xxhash"},
            "norm_config": {"lowercase": rep.lowercase, "norm_whitespace": True,
                            "remove_punctuation": rep.strip_punct, "norm_unicode_diacritics": False,
                            "norm_numbers": False, "norm_weekdays": False, "norm_monthnames": False},
        },
        "unsupported": unsupported,
    }


def _text_dedup_target(config: Config) -> dict:
    rep = config.rep
    # Flags from ChenghaoMou/text-dedup text_dedup/utils/add_args.py (add_minhash_args).
    unsupported = []
    if rep.shingle == "char":
        unsupported.append({"field": "/representation/shingle", "value": "char",
                            "reason": "text-dedup's minhash splits words on non-alphanumeric characters (word n-grams)"})
    if rep.nfkc or not rep.lowercase or not rep.strip_punct:
        unsupported.append({"field": "/representation", "value": rep.normalization_label(),
                            "reason": "text-dedup lowercases and splits on non-alphanumerics; it has no NFKC option "
                                      "and always drops punctuation (not sure for every release)"})
    if rep.hashfunc != "sha1":
        unsupported.append({"field": "/representation/hashfunc", "value": rep.hashfunc,
                            "reason": "--hash_func is 'sha1' or 'xxh3' (xxh3 is not xxHash32); sha1 is written"})
    unsupported.append({"field": "/representation/scheme", "value": rep.scheme,
                        "reason": "text-dedup permutes modulo the Mersenne prime 2^61 - 1: signatures differ"})
    if config.verify != "none":
        unsupported.append({"field": "/verification/rule", "value": config.verify,
                            "reason": "--threshold only picks (b, r) when they are not given; with --b/--r set, "
                                      "every band collision is a duplicate (no verification)"})
    if config.policy != "connected" or config.representative != "first":
        unsupported.append({"field": "/clustering", "value": f"{config.policy}/{config.representative}",
                            "reason": "text-dedup clusters with union-find and keeps the cluster root"})
    return {
        "library": "text-dedup (python -m text_dedup.minhash)",
        "args": {"ngram": rep.k, "num_perm": rep.num_perm, "b": config.b, "r": config.r, "seed": rep.seed,
                 "threshold": config.threshold, "hash_func": "sha1", "min_length": 0},
        "unsupported": unsupported,
    }


def _nemo_target(config: Config) -> dict:
    rep = config.rep
    unsupported = []
    if rep.shingle == "word":
        unsupported.append({"field": "/representation/shingle", "value": "word",
                            "reason": "NeMo Curator shingles character n-grams (char_ngrams) only"})
    if rep.lowercase or rep.nfkc or rep.strip_punct or rep.collapse_ws:
        unsupported.append({"field": "/representation", "value": rep.normalization_label(),
                            "reason": "no text normalization before shingling; normalize the text column first"})
    unsupported.append({"field": "/representation/hashfunc", "value": rep.hashfunc,
                        "reason": "NeMo Curator hashes on GPU (cuDF minhash, MurmurHash3-based; not sure of "
                                  "its permutations): signatures differ"})
    if config.verify != "none":
        unsupported.append({"field": "/verification/rule", "value": config.verify,
                            "reason": "FuzzyDeduplicationWorkflow does no Jaccard check; the legacy "
                                      "FuzzyDuplicatesConfig(false_positive_check=True, jaccard_threshold=...) did "
                                      "(exact Jaccard of its own char n-grams)"})
    if config.policy != "connected" or config.representative != "first":
        unsupported.append({"field": "/clustering", "value": f"{config.policy}/{config.representative}",
                            "reason": "connected components, one document kept per component (not sure which)"})
    return {
        "library": "nemo_curator",
        "FuzzyDeduplicationWorkflow": {"seed": rep.seed, "char_ngrams": rep.k, "num_bands": config.b,
                                       "minhashes_per_band": config.r, "use_64_bit_hash": False,
                                       "text_field": "text", "perform_removal": False},
        "FuzzyDuplicatesConfig (legacy)": {"seed": rep.seed, "char_ngrams": rep.k, "num_buckets": config.b,
                                           "hashes_per_bucket": config.r, "use_64_bit_hash": False,
                                           "false_positive_check": config.verify != "none",
                                           "jaccard_threshold": config.threshold},
        "unsupported": unsupported,
    }


TARGETS = {"datasketch": _datasketch_target, "milvus": _milvus_target, "datatrove": _datatrove_target,
           "text_dedup": _text_dedup_target, "nemo_curator": _nemo_target}
SNIPPET_FILES = {"datasketch": "datasketch_target.py", "milvus": "milvus_target.py",
                 "datatrove": "datatrove_target.py", "text_dedup": "text_dedup_target.sh",
                 "nemo_curator": "nemo_curator_target.py"}


def targets(config: Config) -> dict[str, dict]:
    """Parameters of each production target for ``config`` (plain JSON values)."""
    return {name: fn(config) for name, fn in TARGETS.items()}


def targets_doc(config: Config) -> dict:
    return {"format_version": FORMAT_VERSION, "calib_version": __version__,
            "config_fingerprint": config.fingerprint(), "notice": NOTICE, "targets": targets(config)}


def _py(v) -> str:
    return repr(v)


def render_datasketch(config: Config) -> str:
    """A runnable Python module reproducing the representation with datasketch."""
    rep = config.rep
    perms = ""
    mh_kwargs = "num_perm=NUM_PERM, seed=SEED, hashfunc=hashfunc, scheme=\"affine32\""
    if rep.scheme == "fast":
        perms = '''

def _splitmix64(x):
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def fast_permutations(num_perm=None, seed=None):
    """calib's 'fast' scheme: (a_p, b_p) = splitmix64 of (seed, p); a is odd."""
    num_perm = NUM_PERM if num_perm is None else num_perm
    seed = SEED if seed is None else seed
    p = np.arange(num_perm, dtype=np.uint64)
    with np.errstate(over="ignore"):
        base = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
        za = _splitmix64(base + np.uint64(2) * p)
        zb = _splitmix64(base + np.uint64(2) * p + np.uint64(1))
    a = (za & np.uint64(0xFFFFFFFF)) | np.uint64(1)
    b = zb & np.uint64(0xFFFFFFFF)
    return a, b


PERMUTATIONS = fast_permutations()
'''
        mh_kwargs = "num_perm=NUM_PERM, seed=SEED, hashfunc=hashfunc, permutations=PERMUTATIONS, scheme=\"affine32\""
    verify_fn = {
        "exact": "    return exact_jaccard(shingles(text_a), shingles(text_b)) >= THRESHOLD",
        "estimated": "    return minhash(text_a).jaccard(minhash(text_b)) >= THRESHOLD",
        "none": "    return True",
    }[config.verify]
    return f'''"""datasketch target generated by calib {__version__} for config {config.fingerprint()}.

{NOTICE}

Reproduces calib's representation {rep.fingerprint()} ({rep}):
MinHash values are bit-identical to calib's signatures, and MinHashLSH with
params=(b, r) returns the same candidate pairs as calib's banding.
Documents with no shingle are not inserted (calib never makes them candidates).
"""

import re
import unicodedata

import numpy as np
{_HASH_IMPORT[rep.hashfunc]}
from datasketch import MinHash, MinHashLSH

LOWERCASE = {_py(rep.lowercase)}
NFKC = {_py(rep.nfkc)}
STRIP_PUNCT = {_py(rep.strip_punct)}
COLLAPSE_WS = {_py(rep.collapse_ws)}
SHINGLE = {_py(rep.shingle)}  # 'word' (whitespace tokens) or 'char' (code points)
K = {rep.k}
NUM_PERM = {rep.num_perm}
SEED = {rep.seed}
B, R = {config.b}, {config.r}
VERIFY = {_py(config.verify)}
THRESHOLD = {config.threshold!r}

_PUNCT_RE = re.compile(r"[^\\w\\s]|_", re.UNICODE)


def normalize(text):
    if NFKC:
        text = unicodedata.normalize("NFKC", text)
    if LOWERCASE:
        text = text.lower()
    if STRIP_PUNCT:
        text = _PUNCT_RE.sub(" ", text)
    if COLLAPSE_WS or SHINGLE == "word":
        text = " ".join(text.split())
    return text


def shingles(text):
    """The set of UTF-8 encoded shingles of one text."""
    norm = normalize(text)
    if SHINGLE == "word":
        units, joiner = (norm.split(" ") if norm else []), " "
    else:
        units, joiner = list(norm), ""
    if not units:
        return set()
    if len(units) < K:
        grams = [joiner.join(units)]
    else:
        grams = [joiner.join(units[i:i + K]) for i in range(len(units) - K + 1)]
    return {{g.encode("utf-8", "surrogatepass") for g in grams}}


def hashfunc(b):
    return {_HASH_CODE[rep.hashfunc]}
{perms}

def minhash(text, shingle_set=None):
    m = MinHash({mh_kwargs})
    m.update_batch(sorted(shingles(text) if shingle_set is None else shingle_set))
    return m


def make_lsh():
    return MinHashLSH(num_perm=NUM_PERM, params=(B, R))


def exact_jaccard(a, b):
    return len(a & b) / len(a | b) if (a or b) else 0.0


def verified(text_a, text_b):
    """Verification rule {config.verify!r}: {_verification_note(config)}."""
{verify_fn}


def candidate_pairs(docs):
    """docs: iterable of (id, text). Returns sorted (id_a, id_b) LSH candidate pairs."""
    lsh, sigs = make_lsh(), {{}}
    for key, text in docs:
        sh = shingles(text)
        if not sh:
            continue
        m = minhash(text, sh)
        sigs[key] = m
        lsh.insert(key, m)
    pairs = set()
    for key, m in sigs.items():
        for other in lsh.query(m):
            if other != key:
                pairs.add((min(key, other), max(key, other)))
    return sorted(pairs)
'''


def render_milvus(config: Config) -> str:
    t = _milvus_target(config)
    return f'''"""Milvus MINHASH_LSH target generated by calib {__version__} for config {config.fingerprint()}.

{NOTICE}

Parameter names: https://milvus.io/docs/minhash-lsh.md (index building and
search params) and https://milvus.io/docs/minhash-function.md (MinHash
function, Milvus 3.0.x). What this target cannot express is listed in
targets.json under milvus.unsupported: read it before use.
"""

from pymilvus import DataType, Function, FunctionType, MilvusClient

DIM = {t["schema"]["vector_field"]["dim"]}  # num_hashes * 32 bits
INDEX_PARAMS = {json.dumps(t["index_params"]["params"], sort_keys=True)}
SEARCH_PARAMS = {{"metric_type": "MHJACCARD", "params": {json.dumps(t["search_params"]["params"], sort_keys=True)}}}
SEARCH_LIMIT = {t["search_limit"]}
THRESHOLD = {t["threshold"]!r}  # applied client-side to the hits

# Option A (keeps calib's representation): compute signatures client-side with
# datasketch_target.minhash(text) and insert
#   np.asarray(m.hashvalues, dtype="<u4").tobytes()
# into the BINARY_VECTOR field.
# Option B (server-side MinHash function; its signatures are NOT calib's):
MINHASH_FUNCTION_PARAMS = {json.dumps(t["minhash_function"]["params"], sort_keys=True)}


def create_collection(client: MilvusClient, name: str, server_side_minhash: bool = False):
    schema = client.create_schema()
    schema.add_field(field_name="id", datatype=DataType.VARCHAR, is_primary=True, max_length=512)
    schema.add_field(field_name="text", datatype=DataType.VARCHAR, max_length=65535,
                     enable_analyzer=server_side_minhash)
    schema.add_field(field_name="signature", datatype=DataType.BINARY_VECTOR, dim=DIM)
    if server_side_minhash:
        schema.add_function(Function(name="minhash", input_field_names=["text"], output_field_names=["signature"],
                                     function_type=FunctionType.MINHASH, params=MINHASH_FUNCTION_PARAMS))
    index_params = client.prepare_index_params()
    index_params.add_index(field_name="signature", index_type="MINHASH_LSH", metric_type="MHJACCARD",
                           params=INDEX_PARAMS)
    client.create_collection(collection_name=name, schema=schema, index_params=index_params)
'''


def render_datatrove(config: Config) -> str:
    t = _datatrove_target(config)
    mc = t["MinhashConfig"]
    return f'''"""datatrove target generated by calib {__version__} for config {config.fingerprint()}.

{NOTICE}

Not equivalent to the calibrated config: see datatrove.unsupported in targets.json.
"""

from datatrove.pipeline.dedup.minhash import MinhashConfig
from datatrove.utils.hashing import HashConfig
from datatrove.utils.text import TextNormConfig

minhash_config = MinhashConfig(
    n_grams={mc["n_grams"]},
    num_buckets={mc["num_buckets"]},
    hashes_per_bucket={mc["hashes_per_bucket"]},
    seed={mc["seed"]},
    hash_config=HashConfig(precision={mc["hash_config"]["precision"]}, hash_fc={mc["hash_config"]["hash_fc"]!r}),
    norm_config=TextNormConfig({", ".join(f"{k}={v!r}" for k, v in mc["norm_config"].items())}),
)
'''


def render_text_dedup(config: Config) -> str:
    t = _text_dedup_target(config)
    args = " \\\n    ".join(f"--{k} {v}" for k, v in t["args"].items())
    return f'''#!/bin/sh
# text-dedup target generated by calib {__version__} for config {config.fingerprint()}.
# {NOTICE}
# Not equivalent to the calibrated config: see text_dedup.unsupported in targets.json.
python -m text_dedup.minhash \\
    --path "$DATASET" --local --output "$OUTPUT" --column text \\
    {args}
'''


def render_nemo(config: Config) -> str:
    t = _nemo_target(config)
    kw = ",\n    ".join(f"{k}={v!r}" for k, v in t["FuzzyDeduplicationWorkflow"].items())
    return f'''"""NeMo Curator target generated by calib {__version__} for config {config.fingerprint()}.

{NOTICE}

Not equivalent to the calibrated config: see nemo_curator.unsupported in targets.json.
"""

from nemo_curator.stages.deduplication.fuzzy import FuzzyDeduplicationWorkflow

FUZZY_KWARGS = dict(
    {kw},
)
# workflow = FuzzyDeduplicationWorkflow(input_path=..., cache_path=..., output_path=..., **FUZZY_KWARGS)
'''


RENDERERS = {"datasketch": render_datasketch, "milvus": render_milvus, "datatrove": render_datatrove,
             "text_dedup": render_text_dedup, "nemo_curator": render_nemo}


def render_targets(config: Config) -> dict[str, str]:
    """Snippet text per target, keyed by file name."""
    return {SNIPPET_FILES[name]: fn(config) for name, fn in RENDERERS.items()}


def write_targets(out_dir, config: Config) -> list[Path]:
    out = Path(out_dir)
    paths = [write_text_atomic(out / "targets.json", dumps(targets_doc(config)))]
    for fname, text in render_targets(config).items():
        paths.append(write_text_atomic(out / fname, text))
    return paths


# ---------------------------------------------------------------------------
# Manifest
# ---------------------------------------------------------------------------

def _via(n: int, clustering, vi: np.ndarray, vj: np.ndarray) -> np.ndarray:
    """For each row, a verified neighbour one step closer to its representative
    (within its cluster); -1 for kept rows."""
    rep = clustering.representative
    removed = clustering.removed
    via = np.full(n, -1, dtype=np.int64)
    direct = removed & ~clustering.chained
    via[direct] = rep[direct]
    chained = np.flatnonzero(clustering.chained)
    if len(chained):
        from scipy import sparse
        from scipy.sparse import csgraph
        cl = clustering.cluster
        same = cl[vi] == cl[vj]
        ei, ej = vi[same], vj[same]
        heads = np.unique(rep[removed])
        src = np.r_[ei, ej, np.full(len(heads), n)]
        dst = np.r_[ej, ei, heads]
        g = sparse.csr_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(n + 1, n + 1))
        _, pred = csgraph.breadth_first_order(g, n, directed=True, return_predecessors=True)
        via[chained] = pred[chained]
    return via


def _pair_lookup(n: int, vi, vj, values, qi, qj) -> np.ndarray:
    code = np.minimum(vi, vj) * n + np.maximum(vi, vj)
    order = np.argsort(code, kind="stable")
    code, values = code[order], np.asarray(values, dtype=np.float64)[order]
    q = np.minimum(qi, qj) * n + np.maximum(qi, qj)
    pos = np.clip(np.searchsorted(code, q), 0, max(len(code) - 1, 0))
    out = np.full(len(q), np.nan)
    if len(code):
        hit = code[pos] == q
        out[hit] = values[pos[hit]]
    return out


def _review_status(doc_ids, rep_ids, review_store) -> np.ndarray:
    status = np.full(len(doc_ids), "unreviewed", dtype=object)
    if review_store is None or not len(doc_ids):
        return status
    latest = review_store.latest() if hasattr(review_store, "latest") else review_store
    latest = latest[latest["id_b"].notna()]
    if latest.empty:
        return status
    lut = {(a, b): d for a, b, d in zip(latest["id_a"], latest["id_b"], latest["decision"])}
    for k, (a, b) in enumerate(zip(doc_ids, rep_ids)):
        status[k] = lut.get((min(a, b), max(a, b)), "unreviewed")
    return status


def manifest_frame(ids, clustering, vi, vj, v_exact, v_est, sim_est, sim_exact, *, config_fingerprint: str,
                   labels=None, slices: pd.DataFrame | None = None, review_store=None) -> pd.DataFrame:
    """Core of the manifest, shared by :func:`manifest` and ``calib apply``.

    ``sim_est``/``sim_exact`` are callables ``(rows, reps) -> float array``.
    """
    ids = np.asarray(ids, dtype=object)
    n = len(ids)
    vi = np.asarray(vi, np.int64)
    vj = np.asarray(vj, np.int64)
    rows = np.flatnonzero(clustering.removed)
    rep = clustering.representative[rows]
    via = _via(n, clustering, vi, vj)[rows]
    data = {
        "doc_id": ids[rows].astype(str) if len(rows) else np.array([], dtype=object),
        "cluster_id": clustering.cluster[rows].astype(np.int64),
        "representative_id": ids[rep].astype(str) if len(rows) else np.array([], dtype=object),
        "sim_to_representative_estimated": np.asarray(sim_est(rows, rep), dtype=np.float64),
        "sim_to_representative_exact": np.asarray(sim_exact(rows, rep), dtype=np.float64),
        "via_id": ids[via].astype(str) if len(rows) else np.array([], dtype=object),
        "via_exact": _pair_lookup(n, vi, vj, v_exact, rows, via),
        "via_estimated": _pair_lookup(n, vi, vj, v_est, rows, via),
        "chained": clustering.chained[rows].astype(bool),
        "flagged_giant": clustering.flagged_giant[rows].astype(bool),
    }
    if labels is not None:
        lab = np.asarray(labels(rows, rep), dtype=np.int8)
        data["label"] = np.where(lab == 1, "duplicate", np.where(lab == 0, "not_duplicate", "unlabeled"))
    frame = pd.DataFrame(data)
    if slices is not None:
        for c in slices.columns:
            name = c if c not in frame.columns else f"slice_{c}"
            frame[name] = slices[c].to_numpy(dtype=object)[rows] if len(rows) else np.array([], dtype=object)
    frame["review_status"] = _review_status(frame["doc_id"].tolist(), frame["representative_id"].tolist(),
                                            review_store)
    frame["config_fingerprint"] = config_fingerprint
    frame["_row"] = rows
    frame = frame.sort_values(["cluster_id", "_row"], kind="stable").drop(columns="_row").reset_index(drop=True)
    for c in frame.columns:
        if frame[c].dtype == object:
            frame[c] = frame[c].astype("string")
    return frame


def manifest(evaluation, sample, *, review_store=None) -> pd.DataFrame:
    """One row per proposed removal of ``evaluation`` on ``sample`` (report only).

    Columns: doc_id, cluster_id, representative_id, similarity to the
    representative (estimated and exact), the verified pair connecting the
    document to its cluster (via_id and that pair's exact/estimated J),
    chained (only the transitive closure justifies the removal),
    flagged_giant, label (the sample's label of (doc, representative)), the
    sample's slice columns, review_status ('unreviewed', or the latest
    decision for (doc, representative) when a ReviewStore is given), and
    config_fingerprint. Sorted by cluster then row.
    """
    from .jaccard import pairs_jaccard
    from .minhash import estimate_jaccard, signatures
    from .shingles import shingle_hashes
    from .truth import truth_from_sample

    cfg = evaluation.config
    if evaluation.clustering is None:
        raise ValueError("this configuration produced no clustering (too many candidates): no manifest")
    rep = cfg.rep
    clustering = evaluation.clustering
    texts = sample.texts

    def _subset(rows, reps):
        need = np.unique(np.r_[rows, reps]).astype(np.int64)
        sets = shingle_hashes([texts[k] for k in need], rep, unique=True)
        return need, sets

    cache: dict = {}

    def _prep(rows, reps):
        if "need" not in cache:
            cache["need"], cache["sets"] = _subset(rows, reps)
            cache["sig"] = signatures(cache["sets"], rep.num_perm, rep.seed, rep.scheme)
        need = cache["need"]
        return np.searchsorted(need, rows), np.searchsorted(need, reps)

    def sim_est(rows, reps):
        if not len(rows):
            return np.zeros(0)
        a, b = _prep(rows, reps)
        return estimate_jaccard(cache["sig"], a, b)

    def sim_exact(rows, reps):
        if not len(rows):
            return np.zeros(0)
        a, b = _prep(rows, reps)
        return pairs_jaccard(cache["sets"], a, b)

    truth = truth_from_sample(sample)
    v = evaluation.verified
    slices = sample.docs[list(sample.slice_columns)] if sample.slice_columns else None
    return manifest_frame(sample.ids, clustering, v.i, v.j, v.exact, v.estimated, sim_est, sim_exact,
                          config_fingerprint=cfg.fingerprint(), labels=truth.label, slices=slices,
                          review_store=review_store)


README_TEXT = """calib export
============

{notice}

Files
-----
config.json        the chosen configuration (format_version {fv}), its fingerprints and the
                   evidence it was chosen on (sample hash, label counts, every metric with
                   its 95% interval). `calib apply --config config.json` runs it.
targets.json       the same configuration as parameters for datasketch, Milvus MINHASH_LSH,
                   datatrove, text-dedup and NeMo Curator; each lists `unsupported`: what
                   that tool cannot express. Only the datasketch target reproduces calib's
                   signatures and candidate pairs exactly.
*_target.*         one snippet per target.
manifest.csv       proposed removals (report only), one row per document that this
manifest.parquet   configuration would remove, next to the representative it would keep.

config fingerprint: {fp}
"""


def write_readme(out_dir, config: Config) -> Path:
    return write_text_atomic(Path(out_dir) / "README.txt",
                             README_TEXT.format(notice=NOTICE, fv=FORMAT_VERSION,
                                                fp=config.fingerprint()))


def write_export(out_dir, config: Config, *, evaluation, sample, review_store=None, created_by="calib export",
                 selection: dict | None = None) -> dict[str, Path]:
    """Write everything an export consists of into ``out_dir`` (each file atomically)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"config": out / "config.json"}
    write_config(paths["config"], config, evaluation=evaluation, sample=sample, created_by=created_by,
                 selection=selection)
    for p in write_targets(out, config):
        paths[p.name] = p
    frame = manifest(evaluation, sample, review_store=review_store)
    paths["manifest.csv"] = write_frame_atomic(frame, out / "manifest.csv")
    paths["manifest.parquet"] = write_frame_atomic(frame, out / "manifest.parquet")
    paths["README.txt"] = write_readme(out, config)
    return paths
