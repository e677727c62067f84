"""What every production target states, and the differences every tool shares.

A :class:`Target` is one tool's version of a configuration: its parameters in
the tool's own names, a snippet to run, what the tool cannot express
(``unsupported``), the document it keeps per cluster, and the config *as the
tool runs it* (``engine_config``), which :func:`calib.production.targets.evidence`
evaluates on the sample. :func:`measure_unsupported` is the ``unsupported``
list every tool module starts from: no tool verifies containment, and the
tools whose snippet cannot host calib's pre-steps (:mod:`calib.production.targets._presteps`)
strip no boilerplate lines and apply no minimum length.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from calib.search.config import Config

# calib's steps no pinned tool runs itself (calib.search.capabilities.STEPS): boilerplate stripping, a
# minimum length, containment, idf weights; a tool's snippet may run some of them first (its pre_steps)
LACKS = ("strip_lines", "min_shingles", "measure", "weighting")


@dataclass(frozen=True)
class Target:
    name: str                   # registry key, e.g. "datatrove"
    title: str                  # e.g. "datatrove"
    tool: str                   # pinned, e.g. "datatrove==0.10.1"
    file: str                   # snippet file name in the export folder
    parameters: dict
    snippet: str
    unsupported: tuple = ()     # dicts: field (JSON pointer), value, reason
    kept: str = ""              # the kept-document rule, in words
    engine_config: "Config | None" = None
    engine_note: str = ""       # how engine_config approximates the tool, in words
    docs: tuple = field(default=())  # what the target was read against (URLs, source files)

    def to_dict(self) -> dict:
        """Plain JSON (targets.json), without the snippet text."""
        return {"tool": self.tool, "file": self.file, "parameters": self.parameters,
                "unsupported": list(self.unsupported), "kept_document": self.kept,
                "evaluated_as": None if self.engine_config is None else {
                    "config_fingerprint": self.engine_config.fingerprint(), "config": str(self.engine_config),
                    "verification": self.engine_config.verify, "representative": self.engine_config.representative,
                    "how": self.engine_note},
                "read_against": list(self.docs)}

    def __str__(self) -> str:
        return f"{self.title} ({self.tool}): {len(self.unsupported)} unsupported; keeps {self.kept}"


def measure_unsupported(config: "Config", hosts: tuple[str, ...] = ()) -> list[dict]:
    """The unsupported entry every target shares: the tools verify (or band) Jaccard only, so a
    containment config is run, and evaluated, as Jaccard at the same threshold; then the pre-steps
    the target's snippet does not host (``hosts``: :func:`calib.production.targets._presteps.hosted`)."""
    out = [] if config.measure == "jaccard" else [
        {"field": "/verification/measure", "value": config.measure,
         "reason": "the tool verifies Jaccard only: it runs (and is evaluated here) as Jaccard at the same "
                   "threshold; `calib apply --config config.json` runs the containment rule"}]
    return out + short_and_boilerplate_unsupported(config, hosts)


# What a snippet that cannot host calib's pre-steps lacks (the tools themselves have neither step).
_STRIP_NEED = ("no line stoplist: the tool is evaluated under another normalization than the one stoplist.json's "
               "lines are normalized with, so the snippet cannot strip them as calib does (evaluated without stripping)")
_SHORT_NEED = {"exclude": "every document is sketched: leave documents with fewer than {m} distinct shingles out "
                          "of the dedup input (they are kept, not removed)",
               "exact": "the snippet ships the minimum length with the rule 'exclude' only: sending documents with fewer "
                        "than {m} distinct shingles to an exact-text dedup is not shipped (evaluated without a "
                        "minimum length)"}


def short_and_boilerplate_unsupported(config: "Config", hosts: tuple[str, ...] = ()) -> list[dict]:
    """Boilerplate stripping and the minimum length (calib.sketches.boilerplate, calib.verification.short),
    where the target's snippet does not host them (``hosts``)."""
    out = []
    if config.rep.strip_lines and "strip_lines" not in hosts:
        out.append({"field": "/representation/strip_lines", "value": config.rep.strip_lines, "reason": _STRIP_NEED})
    if config.min_shingles and "min_shingles" not in hosts:
        out.append({"field": "/short_docs", "value": {"min_shingles": config.min_shingles, "rule": config.short_docs},
                    "reason": _SHORT_NEED[config.short_docs].format(m=config.min_shingles)})
    return out
