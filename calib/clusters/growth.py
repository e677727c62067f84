"""Chaining that grows with the corpus: removals by chaining alone on the whole sample and on halves of it.

Under connected clustering a document is removed by chaining alone when its cluster's representative
is not one of its own verified pairs (A~B, B~C: C removed in favour of A). A chain needs its links to
be in the collection, so a larger collection holds longer chains: a sample of a corpus sees fewer of
them than the corpus will. Comparing the share of removals by chaining alone on random halves of the
sample (each pair kept when both its documents are drawn) with the share on the whole sample shows the
growth: the whole's share above the halves' says chains lengthen with the collection, and the corpus a
configuration is applied to will remove more by chaining than the sample showed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calib.clusters.clustering import cluster_pairs

HALVES = 8
GROWING = 0.02  # the whole sample's chained share above the halves' by more than this: chains grow


@dataclass(frozen=True)
class ChainGrowth:
    """Removals by chaining alone as a share of removals: on the whole sample and on halves of it."""

    whole: float       # share on the whole sample (NaN: nothing removed)
    half: float        # mean share over the halves (NaN: no half removes anything)
    chained: int       # removals by chaining alone on the whole sample
    removed: int

    @property
    def growing(self) -> bool:
        return bool(np.isfinite(self.whole) and np.isfinite(self.half) and self.whole - self.half > GROWING)

    @property
    def advice(self) -> str:
        """What growing chains mean for the corpus ('' when they do not grow)."""
        return ("chains lengthen with the collection: on the whole corpus expect a larger share, and compare calib "
                "apply's chained share (or use the star policy, which removes no document by chaining alone)"
                if self.growing else "")


def _share(n: int, i, j, sim, keep, **rule) -> tuple[int, int]:
    m = keep[i] & keep[j]
    cl = cluster_pairs(n, i[m], j[m], sim[m], **rule)
    return int(cl.chained.sum()), int(cl.removed.sum())


def chain_growth(n: int, i, j, sim, *, policy="connected", representative="first", lengths=None,
                 max_component=None, halves: int = HALVES, seed: int = 0) -> ChainGrowth:
    """The :class:`ChainGrowth` of verified pairs (i, j, sim) of n documents clustered under a rule."""
    i, j, sim = np.asarray(i, np.int64), np.asarray(j, np.int64), np.asarray(sim, np.float64)
    rule = dict(policy=policy, representative=representative, lengths=lengths, max_component=max_component)
    chained, removed = _share(n, i, j, sim, np.ones(n, bool), **rule)
    rng = np.random.default_rng(seed)
    shares = []
    for _ in range(halves):
        keep = np.zeros(n, bool)
        keep[rng.permutation(n)[: n // 2]] = True
        c, r = _share(n, i, j, sim, keep, **rule)
        if r:
            shares.append(c / r)
    return ChainGrowth(chained / removed if removed else float("nan"),
                       float(np.mean(shares)) if shares else float("nan"), chained, removed)


def chained_share_warning(evidence: dict | None, chained: int, removed: int) -> str | None:
    """A warning when a corpus removes a larger share by chaining alone than the sample the config was
    chosen on (the config document's evidence metrics ``chained_removals`` / ``removed``), by more than
    :data:`GROWING`; None otherwise (or when the document carries no such evidence, or counts no
    share could come from: the config loader refuses those first, :func:`calib.production.document.check_metrics`)."""
    metrics = (evidence or {}).get("metrics") or {}
    try:
        sample_chained, sample_removed = int(metrics["chained_removals"]), int(metrics["removed"])
    except (KeyError, TypeError, ValueError, OverflowError):
        return None
    if not removed or sample_removed <= 0 or not 0 <= sample_chained <= sample_removed:  # no share to compare with
        return None
    here, there = chained / removed, sample_chained / sample_removed
    if here - there <= GROWING:
        return None
    return (f"warning: {chained:,} of {removed:,} proposed removals ({here:.1%}) are by chaining alone, against "
            f"{there:.1%} on the sample the configuration was chosen on: chains lengthen with the collection, so "
            f"these removals were not measured there; review the manifest's chained rows (column chained) or "
            f"export the configuration with the star policy")


__all__ = ["ChainGrowth", "chain_growth", "chained_share_warning"]
