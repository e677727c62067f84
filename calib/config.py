"""A dedup configuration: the decision a calibration recommends.

representation (normalization, shingles, hash, num_perm, seed, scheme)
-> LSH split (b bands of r rows) -> verification (``exact`` Jaccard of the
shingle sets, ``estimated`` from the signatures, or ``none``: every LSH
candidate is a duplicate) at ``threshold`` -> clustering ``policy`` and
``representative`` rule.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field

import numpy as np

from .clusters import POLICIES, REPRESENTATIVE_RULES
from .lsh import check_split, s_at_probability, threshold_approx
from .represent import Representation

VERIFY_RULES = ("exact", "estimated", "none")


@dataclass(frozen=True)
class Config:
    rep: Representation = field(default_factory=Representation)
    b: int = 16
    r: int = 8
    verify: str = "exact"
    threshold: float = 0.8
    policy: str = "connected"
    representative: str = "first"
    max_component: int | None = None  # giant-component guard: larger components get the star rule

    def __post_init__(self) -> None:
        check_split(self.b, self.r, self.rep.num_perm)
        if self.verify not in VERIFY_RULES:
            raise ValueError(f"Config.verify must be one of {VERIFY_RULES}, got {self.verify!r}")
        if not isinstance(self.threshold, (int, float)) or not 0.0 <= float(self.threshold) <= 1.0 \
                or math.isnan(float(self.threshold)):
            raise ValueError(f"Config.threshold must be a number in [0, 1], got {self.threshold!r}")
        # Canonical values, so equal decisions fingerprint alike: ints, a float
        # threshold, and no threshold at all (0.0) when nothing is verified.
        object.__setattr__(self, "b", int(self.b))
        object.__setattr__(self, "r", int(self.r))
        object.__setattr__(self, "threshold", 0.0 if self.verify == "none" else float(self.threshold))
        if self.policy not in POLICIES:
            raise ValueError(f"Config.policy must be one of {POLICIES}, got {self.policy!r}")
        if self.max_component is not None and (isinstance(self.max_component, bool) or
                                               not isinstance(self.max_component, (int, np.integer)) or
                                               self.max_component < 2):
            raise ValueError(f"Config.max_component must be None or an integer >= 2, got {self.max_component!r}")
        if self.max_component is not None:
            object.__setattr__(self, "max_component", int(self.max_component))
        if self.representative not in REPRESENTATIVE_RULES:
            raise ValueError(f"Config.representative must be one of {REPRESENTATIVE_RULES}, got {self.representative!r}")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["rep"] = self.rep.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Config":
        d = dict(d)
        d["rep"] = Representation.from_dict(d.get("rep", {}))
        return cls(**d)

    def fingerprint(self) -> str:
        canon = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canon.encode()).hexdigest()[:12]

    @property
    def lsh_threshold(self) -> float:
        return threshold_approx(self.b, self.r)

    @property
    def s50(self) -> float:
        return s_at_probability(self.b, self.r, 0.5)

    def __str__(self) -> str:
        v = "no verification" if self.verify == "none" else f"{self.verify} J >= {self.threshold:g}"
        guard = f", star above {self.max_component}" if self.max_component else ""
        return (f"{self.rep} | LSH b={self.b} r={self.r} (P=0.5 at s={self.s50:.2f}) | {v} | "
                f"{self.policy} clusters{guard}, keep {self.representative}")
