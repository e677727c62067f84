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

Each module also declares what its tool runs, ``CAPABILITIES``
(:class:`calib.search.capabilities.Capabilities`), whose ``project`` (the module's
``project(config)``) is the one place ``engine_config`` comes from: the search
(``calib sweep --target``), the export and the docs read it. :func:`capabilities`
returns them by name, calib's own engines (:data:`calib.search.capabilities.CALIB`,
the identity) first.

Nothing here deletes anything: snippets stop at a list of proposed removals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from calib.production.targets.target import Target, measure_unsupported  # noqa: F401 (calib.production.targets.X)
from calib.sketches.schemes import get_scheme

if TYPE_CHECKING:
    from calib.search.config import Config


def _modules() -> dict:
    """The registry: one line per target, its module (holding ``target``, ``project``, ``CAPABILITIES``)."""
    from calib.production.targets import datasketch, datatrove, milvus, nemo_curator, text_dedup
    return {"datasketch": datasketch, "milvus": milvus, "datatrove": datatrove, "text_dedup": text_dedup,
            "nemo_curator": nemo_curator}


def _registry() -> dict[str, Callable[["Config"], Target]]:
    return {name: module.target for name, module in _modules().items()}


REGISTRY_NAMES = ("datasketch", "milvus", "datatrove", "text_dedup", "nemo_curator")
TARGET_NAMES = ("calib", *REGISTRY_NAMES)  # what --target accepts: calib's engines, then every tool


def measured_for(row) -> str:
    """The target a results row was measured for: its 'target' cell (calib's rows have none, or NaN)."""
    t = row.get("target")
    return "calib" if t is None or (isinstance(t, float) and t != t) or str(t) == "" else str(t)


def capabilities(name: str | None = None):
    """What each target runs (``{name: Capabilities}``, calib first), or the one named ``name``
    (a ValueError naming the choices for another name)."""
    from calib.search.capabilities import CALIB
    found = {"calib": CALIB, **{n: m.CAPABILITIES for n, m in _modules().items()}}
    if name is None:
        return found
    if name not in found:
        raise ValueError(f"unknown target {name!r}: one of {', '.join(found)}")
    return found[name]


def targets(config: "Config") -> dict[str, Target]:
    """Every registered target for ``config``, in registry order.

    No tool weighs shingles as calib's ICWS does (:mod:`calib.sketches.weighted_minhash`): a weighted
    config (or one with a weighted scheme) becomes each tool's unweighted closest config, classic
    MinHash over the same shingles verified by Jaccard, and says so in ``unsupported``."""
    unweighted = _unweighted(config)
    if unweighted is None:
        return {name: _without_issue24(fn(config), config) for name, fn in _registry().items()}
    from dataclasses import replace
    return {name: _without_issue24(replace(t, unsupported=(*weighting_unsupported(config, name), *t.unsupported)),
                                   config)
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


def _without_issue24(t: Target, config: "Config") -> Target:
    """A pre-step the tool's projection drops (its snippet cannot run it as calib does: see its
    ``unsupported``) is left out of the config it is evaluated as: say which in its note."""
    cfg = t.engine_config
    if cfg is None:
        return t
    lacks = [w for w, on in (("boilerplate stripping", config.rep.strip_lines and not cfg.rep.strip_lines),
                             ("minimum length", config.min_shingles and not cfg.min_shingles)) if on]
    if not lacks:
        return t
    from dataclasses import replace
    return replace(t, engine_note=f"{t.engine_note}; without {' and '.join(lacks)} (its snippet cannot run it as "
                                  "calib does)")


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


def figures_text(row: dict) -> str:
    """'false-removal rate 34.8% (147 of 422 removals false), pair recall 99.0%': a target's figures in words."""
    from calib.estimates.figures import pct
    false, removed = row.get("false_removals"), row.get("removed")
    counts = "" if false is None or removed is None else f" ({int(false):,} of {int(removed):,} removals false)"
    return (f"false-removal rate {pct(row.get('false_removal_rate'), 'false_removal_rate')}{counts}, "
            f"pair recall {pct(row.get('pair_recall'), 'pair_recall')}")


def cannot_run(ws, config: "Config", name: str) -> str | None:
    """None when target ``name`` runs ``config`` as written (calib's engines always do); else one line:
    what the tool lacks of it and the figures it would give on the workspace's sample (as it runs it:
    its projection, evaluated as :func:`evidence` evaluates it)."""
    from calib.search.sweep import evaluate_row
    caps = capabilities(name)
    if caps.runs_as_is(config):
        return None
    projected = caps.project(config)
    gives = ("it cannot run it at all" if projected is None else
             f"{name} would give {figures_text(evaluate_row(ws, projected))} (as it runs it: {projected.fingerprint()})")
    return (f"{name} cannot run configuration {config.fingerprint()} as measured: it lacks "
            f"{'; '.join(caps.differences(config))}; {gives}: search for it with --target {name}")
