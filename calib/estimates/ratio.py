"""A design-weighted ratio estimate and its rates' names (shared by the document-sample
design, :mod:`calib.estimates.design_weighted`, and the corpus design,
:mod:`calib.estimates.corpus_weighted`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

STRATIFIED = "stratified"
Z95 = 1.959963984540054
RATES = ("candidate_recall", "pair_recall", "pair_precision", "false_removal_rate")


@dataclass(frozen=True)
class Ratio:
    """One stratified ratio estimate."""

    estimate: float
    low: float
    high: float
    variance: float
    labeled: int       # labeled pairs with x = 1
    n_eff: float
    s2: np.ndarray | None = None   # per-stratum residual variance for the label planner (bands smoothed)
    total_x: float = np.nan        # X^
    deff: float = 1.0              # variance / its stratified part (>= 1 when the unit term dominates)
