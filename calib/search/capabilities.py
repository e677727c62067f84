"""What a tool runs of a configuration: its declared capabilities and its projection.

A production tool runs only part of calib's space: some verify nothing (every LSH candidate is a
duplicate), some cluster by connected components only and keep a fixed member, some shingle
characters only. :class:`Capabilities` declares that part, and its ``project`` maps any
:class:`~calib.search.config.Config` onto the configuration the tool actually runs (its
verification, its clustering and keep rule, its representation; the steps it lacks dropped). The
projection is idempotent: ``project(project(c)) == project(c)``, and a configuration the tool runs
as it is written is a fixed point of it. ``None``: the tool cannot run the configuration at all.

The declarations live beside each tool's snippet (``calib.production.targets.<tool>``, one
``CAPABILITIES`` each); this module holds only their type and calib's own (:data:`CALIB`: every
step, the identity projection), so that the search, which sits below production, takes a target
as a plain argument and never imports production.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from calib.search.config import Config, Verify

# calib's steps a tool may lack: each is dropped by the projection unless the tool takes it as a pre-step
STEPS = {"strip_lines": "boilerplate stripping", "min_shingles": "a minimum length",
         "measure": "containment verification", "weighting": "idf weighting"}


def _identity(config: Config) -> Config:
    return config


@dataclass(frozen=True)
class Capabilities:
    """What one tool runs (each field read from the pinned tool's source; see its module)."""

    name: str
    project: Callable[[Config], "Config | None"] = _identity
    shingles: tuple[str, ...] = ("word", "char")  # shingle units it reproduces
    normalization: str = "calib"        # "calib": calib's rules shipped in the snippet; else the tool's own, fixed
    verify: tuple[str, ...] = ("exact", "estimated", "none")  # the verification rules it can run
    policies: tuple[str, ...] = ("connected", "star")
    keep: str = "any"                   # its kept-document rule ("any": calib's choice)
    lacks: tuple[str, ...] = ()         # calib's steps (keys of STEPS) it does not run
    pre_steps: tuple[str, ...] = ()     # of those, the ones its snippet runs before the tool, unchanged
    whole_signature: bool = False       # bands the whole signature: r = num_perm // b, b must divide num_perm
    min_bands: int = 1
    tool: str = "calib"                 # the pinned version read

    @property
    def verifies(self) -> bool:
        """Whether any verification after LSH is possible (else the split decides every removal)."""
        return any(v != "none" for v in self.verify)

    def dropped(self) -> tuple[str, ...]:
        """The steps the projection drops: lacked and not a pre-step."""
        return tuple(s for s in self.lacks if s not in self.pre_steps)

    def runs_as_is(self, config: Config) -> bool:
        """The tool runs ``config`` exactly as written (it is a fixed point of the projection)."""
        p = self.project(config)
        return p is not None and p.fingerprint() == config.fingerprint()

    def fixed(self, configs) -> list[Config]:
        """The distinct projections of ``configs`` (first occurrence order), those it cannot run left out.
        A tool banding the whole signature gets each split cut to it first (num_perm = b * r: under a
        prefix-stable scheme the same bands, so the same candidates, with b * r hashes)."""
        out: dict[str, Config] = {}
        for c in configs:
            if self.whole_signature and c.b * c.r != c.rep.num_perm:
                c = replace(c, rep=c.rep.with_(num_perm=c.b * c.r))
            p = self.project(c)
            if p is not None:
                out.setdefault(p.fingerprint(), p)
        return list(out.values())

    def differences(self, config: Config) -> list[str]:
        """What of ``config`` the tool does not run, in words (empty when it runs it as written)."""
        p = self.project(config)
        if p is None:
            return [f"{self.name} cannot run it at all"]
        out = []
        rep, prep = config.rep, p.rep
        if rep.strip_lines and not prep.strip_lines:
            out.append(STEPS["strip_lines"])
        if config.min_shingles and not p.min_shingles:
            out.append(STEPS["min_shingles"])
        if rep.weighting != prep.weighting:
            out.append(STEPS["weighting"])
        if config.measure != p.measure and config.measure == "containment":
            out.append(STEPS["measure"])
        if config.verify != p.verify:
            out.append(f"{config.verify} verification (it runs {p.verification_label()})")
        if (config.policy, config.representative) != (p.policy, p.representative):
            out.append(f"{config.policy} clusters keeping {config.representative} (it runs {p.policy}, keeping "
                       f"{p.representative})")
        if config.max_component != p.max_component:
            out.append(f"the giant-component guard {config.max_component}")
        if (config.b, config.r) != (p.b, p.r):
            out.append(f"the split b={config.b} r={config.r} (it bands b={p.b} r={p.r})")
        same = rep.with_(strip_lines=prep.strip_lines, weighting=prep.weighting, scheme=prep.scheme)
        if same.shingling_fingerprint() != prep.shingling_fingerprint():  # stripping and weights said above
            out.append(f"the representation {rep.shingle_label()} [{rep.normalization_label()}] (it shingles "
                       f"{prep.shingle_label()} [{prep.normalization_label()}])")
        return out or ([] if p.fingerprint() == config.fingerprint() else ["other settings"])


def common(config: Config, caps: Capabilities) -> Config:
    """``config`` without the steps ``caps`` drops (:meth:`Capabilities.dropped`): the first part of
    every tool's projection. Weights go with their weighted scheme (classic MinHash, scheme prefix,
    verified by Jaccard); containment becomes Jaccard (keeping the first document)."""
    drop = caps.dropped()
    rep = config.rep
    kw: dict = {}
    if "weighting" in drop and (rep.weighting != "none" or _weighted_scheme(rep.scheme)):
        rep = rep.with_(weighting="none", scheme="prefix")
        if config.measure == "weighted_jaccard":
            kw["measure"] = "jaccard"
    if "strip_lines" in drop and rep.strip_lines:
        rep = rep.with_(strip_lines=0.0)
    if "min_shingles" in drop and config.min_shingles:
        kw["min_shingles"] = 0
    if "measure" in drop and config.measure == "containment":
        kw.update(measure="jaccard", representative="first")
    if rep is not config.rep:
        kw["rep"] = rep
    return replace(config, **kw) if kw else config


def _weighted_scheme(scheme: str) -> bool:
    from calib.sketches.schemes import get_scheme
    return get_scheme(scheme).weighted


CALIB = Capabilities(name="calib")  # calib's engines (local and Spark) run every configuration as written


__all__ = ["CALIB", "Capabilities", "STEPS", "common"]
