"""Production targets: the same decision as parameters and a snippet for each tool.

One module per tool (``datasketch``, ``milvus``, ``datatrove``, ``text_dedup``,
``nemo_curator``), each a pure function ``target(config) -> Target``,
registered in :func:`_registry`. A :class:`Target`
(:mod:`calib.production.targets.target`) states

* ``parameters``: plain JSON values in the tool's own names;
* ``snippet``: a file to run (its name is ``file``);
* ``unsupported``: what the tool cannot express of the config, and how it differs;
* ``kept``: which member of a duplicate cluster the tool keeps;
* ``tool``: the pinned tool version the snippet was written and read against;
* ``engine_config``: the config *as this tool runs it* (its verification, its
  kept-document rule, the closest representation calib can compute), which
  :func:`evidence` evaluates on the sample so that every target carries its
  own figures, not the calibrated config's.

Nothing here deletes anything: snippets stop at a list of proposed removals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from calib.production.targets.target import Target, measure_unsupported  # noqa: F401 (calib.production.targets.X)
from calib.sketches.schemes import get_scheme

if TYPE_CHECKING:
    from calib.search.config import Config


def _registry() -> dict[str, Callable[["Config"], Target]]:
    from calib.production.targets import datasketch, datatrove, milvus, nemo_curator, text_dedup
    return {"datasketch": datasketch.target, "milvus": milvus.target, "datatrove": datatrove.target,
            "text_dedup": text_dedup.target, "nemo_curator": nemo_curator.target}


REGISTRY_NAMES = ("datasketch", "milvus", "datatrove", "text_dedup", "nemo_curator")


def targets(config: "Config") -> dict[str, Target]:
    """Every registered target for ``config``, in registry order.

    No tool weighs shingles as calib's ICWS does (:mod:`calib.sketches.weighted_minhash`): a weighted
    config (or one with a weighted scheme) becomes each tool's unweighted closest config, classic
    MinHash over the same shingles verified by Jaccard, and says so in ``unsupported``."""
    unweighted = _unweighted(config)
    if unweighted is None:
        return {name: _without_issue24(fn(config)) for name, fn in _registry().items()}
    from dataclasses import replace
    return {name: _without_issue24(replace(t, unsupported=(*weighting_unsupported(config, name), *t.unsupported)))
            for name, t in ((name, fn(unweighted)) for name, fn in _registry().items())}


def _unweighted(config: "Config") -> "Config | None":
    """The closest config without weights (None when ``config`` has none)."""
    from dataclasses import replace
    if config.rep.weighting == "none" and not get_scheme(config.rep.scheme).weighted:
        return None
    measure = "jaccard" if config.measure == "weighted_jaccard" else config.measure
    return replace(config, rep=config.rep.with_(weighting="none", scheme="prefix"), measure=measure)


def weighting_unsupported(config: "Config", name: str) -> list[dict]:
    """The weighting entry of a target's ``unsupported`` list."""
    rep = config.rep
    if name == "datasketch":
        how = ("datasketch.WeightedMinHashGenerator is the same estimator (ICWS; calib.weighted_minhash.icws_dense "
               "reproduces it bit for bit given its tables) but draws its variates from dense (num_perm, dim) tables "
               "over a fixed vector dimension, not from a hash of the shingle, and MinHashLSH bands its (k, t) "
               "pairs, not calib's packed columns: the signatures and candidates differ")
    else:
        how = "the tool has no weighted MinHash"
    return [{"field": "/representation/weighting" if rep.weighting != "none" else "/representation/scheme",
             "value": rep.weighting if rep.weighting != "none" else rep.scheme,
             "reason": f"{how}; the snippet runs classic MinHash (scheme prefix) over the unweighted shingles, "
                       "verified by Jaccard at the same threshold, and is evaluated as that; "
                       "`calib apply --config config.json` runs the weighted config"}]


def _without_issue24(t: Target) -> Target:
    """A pre-step the target's snippet does not host (stripping, the minimum length: the fields its
    ``unsupported`` lists) is left out of the config it is evaluated as: it runs without them.
    A step the snippet hosts (:mod:`calib.production.targets._presteps`) stays."""
    cfg = t.engine_config
    fields = {u["field"] for u in t.unsupported}
    drop_strip = bool(cfg is not None and cfg.rep.strip_lines and "/representation/strip_lines" in fields)
    drop_short = bool(cfg is not None and cfg.min_shingles and "/short_docs" in fields)
    if not (drop_strip or drop_short):
        return t
    from dataclasses import replace
    if drop_strip:
        cfg = replace(cfg, rep=cfg.rep.with_(strip_lines=0.0))
    if drop_short:
        cfg = replace(cfg, min_shingles=0)
    lacks = " and ".join(w for w, on in (("boilerplate stripping", drop_strip), ("minimum length", drop_short)) if on)
    return replace(t, engine_config=cfg, engine_note=f"{t.engine_note}; without {lacks} (its snippet cannot "
                                                     "run it as calib does)")


EVIDENCE_KEYS = ("removed", "true_removals", "false_removals", "false_removal_rate", "false_removal_rate_low",
                 "false_removal_rate_high", "pair_recall", "pair_recall_low", "pair_recall_high",
                 "pair_precision", "unlabeled_removals", "chained_removals", "missed_removal_rate", "status")


def evidence(ws, config: "Config", found: dict | None = None, *, evaluation=None) -> dict[str, dict]:
    """Each target's figures on the workspace's sample, computed as that target runs the config.

    Scores every distinct ``engine_config`` once (``calib.search.sweep.evaluate_row``);
    ``evaluation`` (of ``config`` itself) is reused where a target runs the
    config unchanged. Returns ``{target: {metric: value}}`` with plain JSON values.
    """
    from calib.search.sweep import evaluate_row
    from calib.base.jsondoc import json_value

    found = targets(config) if found is None else found
    cache: dict[str, dict] = {}
    if evaluation is not None:
        cache[evaluation.config.fingerprint()] = evaluation.row
    # Targets grouped by shingling: one group's sets and signatures are let go (Workspace.transient)
    # before the next group's are built, so memory holds the config's and one target's, not all.
    todo: dict[str, dict[str, "Config"]] = {}
    for t in found.values():
        if t.engine_config is not None and t.engine_config.fingerprint() not in cache:
            todo.setdefault(t.engine_config.rep.shingling_fingerprint(), {})[t.engine_config.fingerprint()] = \
                t.engine_config
    for group in todo.values():
        with ws.transient():
            for fp, cfg in group.items():
                cache[fp] = evaluate_row(ws, cfg)
    out = {}
    for name, t in found.items():
        if t.engine_config is not None:
            fp = t.engine_config.fingerprint()
            out[name] = {"config_fingerprint": fp, **{k: json_value(cache[fp].get(k)) for k in EVIDENCE_KEYS}}
    return out


def targets_doc(config: "Config", evidence_by_target: dict | None = None) -> dict:
    """The targets.json document: every target's parameters, unsupported list, kept-document
    rule and how it was evaluated, with its figures when ``evidence_by_target`` is given."""
    from calib.base.version import __version__
    from calib.production.document import FORMAT_VERSION
    from calib.production.manifest import NOTICE
    found = targets(config)
    doc = {"format_version": FORMAT_VERSION, "calib_version": __version__,
           "config_fingerprint": config.fingerprint(), "notice": NOTICE, "targets": {}}
    for name, t in found.items():
        d = t.to_dict()
        if evidence_by_target is not None:
            d["evidence"] = evidence_by_target.get(name)
        doc["targets"][name] = d
    return doc


def render(config: "Config") -> dict[str, str]:
    """Snippet text per target, keyed by file name."""
    return {t.file: t.snippet for t in targets(config).values()}
