"""Cluster bootstrap intervals for rates whose trials share documents.

A rate ``k / n`` over labeled pairs (or documents) is not a binomial
proportion when the pairs share documents: all pairs inside one group of
near-identical documents move together when the hash luck of the group
changes, so a Wilson interval that counts them as independent trials is far
too narrow. The dependence unit here is the *cluster*: a true-duplicate
cluster (a group, or a component of the duplicate labels); a document in no
duplicate cluster is its own unit.

Cluster bootstrap (resample units with replacement, Davison & Hinkley 1997,
sec. 3.8). Replicate ``t`` draws C units out of C uniformly with
replacement; unit ``u`` is drawn ``w[t, u]`` times, ``w[t] ~ Multinomial(C,
1/C)``. A trial inside one unit ``u`` (both documents of a pair, or a
document) enters the replicate ``w[t, u]`` times; a pair across units ``u !=
v`` enters ``w[t, u] * w[t, v]`` times (every copy of ``u`` meets every copy
of ``v``: the product-weight bootstrap for crossed data, Owen 2007). So::

    k*_t = sum_u w[t,u] k_in[u] + sum_{u != v} w[t,u] w[t,v] k_x[u,v]
    n*_t = the same with the trial counts
    rate*_t = k*_t / n*_t

with ``k_in``, ``n_in`` per-unit counts and ``k_x``, ``n_x`` (sparse) counts
per unit pair, computed once. The 95% interval is the 2.5% and 97.5%
percentiles of ``rate*`` (replicates with ``n*_t = 0`` are left out). It is
deterministic: the weights depend only on (seed, C, replicates), and one set
of weights serves every rate of a sweep (common random numbers, so two
configurations are compared on the same resamples).

When no unit takes part in more than one trial, the trials are independent
and the Wilson interval (:mod:`calib.estimates.stats`) is the better one (exact-ish
for small n); :func:`dependent` tells the two cases apart.

What the interval covers: which clusters the labeled sample happened to
contain, with each cluster's own realized hash luck. What it does not
cover: a different population than the one sampled, label errors, and the
hash luck shared by *every* cluster at once (see the README: the ``seeds``
sweep axis measures that).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

WILSON, BOOTSTRAP, WILSON_CLUSTERS = "wilson", "cluster-bootstrap", "wilson-clusters"
_BLOCK_CELLS = 4_000_000  # weights generated and reduced this many cells (replicates x units) at a time
_CACHE_CELLS = 8_000_000  # keep all weights when they fit (float64: 64 MB)


@dataclass(frozen=True, eq=False)
class ClusterBootstrap:
    """Bootstrap of rates over trials grouped into dependence units.

    ``units``: int64 per document (row), its unit (dense codes 0..C-1).
    """

    units: np.ndarray
    replicates: int = 1000
    seed: int = 0
    alpha: float = 0.05
    _blocks: dict = field(default_factory=dict, repr=False)
    _totals: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        u = np.asarray(self.units, dtype=np.int64)
        if u.ndim != 1 or (len(u) and u.min() < 0):
            raise ValueError("ClusterBootstrap.units must be a 1-d array of non-negative unit codes")
        _, dense = np.unique(u, return_inverse=True)
        object.__setattr__(self, "units", dense.astype(np.int64))
        if self.replicates < 10:
            raise ValueError(f"ClusterBootstrap.replicates must be >= 10, got {self.replicates}")

    @property
    def n_units(self) -> int:
        return int(self.units.max(initial=-1) + 1)

    # -- weights ---------------------------------------------------------------
    def _block_rows(self) -> list[tuple[int, int]]:
        step = max(1, _BLOCK_CELLS // max(1, self.n_units))
        return [(a, min(a + step, self.replicates)) for a in range(0, self.replicates, step)]

    def weights(self, start: int, stop: int) -> np.ndarray:
        """(stop - start, C) float64 multinomial counts of replicates start..stop-1.

        Block ``start`` is drawn from its own generator seeded (seed, start), so
        the weights do not depend on the block size the caller iterates with.
        """
        key = (start, stop)
        have = self._blocks.get(key)
        if have is not None:
            return have
        c = self.n_units
        rng = np.random.default_rng([self.seed, start])
        draws = rng.integers(0, c, size=(stop - start, c), dtype=np.int64)
        # Multinomial(C, 1/C) per row = counts of C uniform draws: one bincount over row-offset codes.
        rows = np.arange(stop - start, dtype=np.int64)[:, None] * c
        w = np.bincount((draws + rows).ravel(), minlength=(stop - start) * c).reshape(stop - start, c)
        w = w.astype(np.float64)
        if self.replicates * c <= _CACHE_CELLS:
            self._blocks[key] = w
        return w

    def _weights_t(self, start: int, stop: int) -> np.ndarray:
        """:meth:`weights` transposed, (C, stop - start) and C-contiguous: a unit's weights are one row."""
        key = ("t", start, stop)
        have = self._blocks.get(key)
        if have is not None:
            return have
        wt = np.ascontiguousarray(self.weights(start, stop).T)
        if self.replicates * self.n_units <= _CACHE_CELLS:
            self._blocks.pop((start, stop), None)  # one copy kept: :meth:`weights` redraws it if asked
            self._blocks[key] = wt
        return wt

    # -- rates -----------------------------------------------------------------
    def pairs(self, i, j) -> "PairTrials":
        """A fixed set of pair trials, its unit structure and trial counts
        precomputed (successes vary per configuration, the trials do not)."""
        return PairTrials(self, np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64))

    def pair_counts(self, i, j, success) -> "Counts":
        """Per-unit and per-unit-pair trial and success counts of pair trials."""
        return self.pairs(i, j).counts(success)

    def doc_counts(self, docs, success) -> "Counts":
        """Counts of document trials (each document inside its own unit)."""
        u = self.units[np.asarray(docs, dtype=np.int64)]
        c = self.n_units
        return self.unit_counts(np.bincount(u, weights=np.asarray(success, dtype=np.float64), minlength=c),
                                np.bincount(u, minlength=c))

    def unit_counts(self, k, n) -> "Counts":
        """Counts given directly per unit: k successes of n trials inside each unit."""
        c = self.n_units
        n = np.asarray(n, dtype=np.float64)
        empty = sparse.csr_matrix((c, c))
        return Counts(np.asarray(k, dtype=np.float64), n, empty, empty, trials_per_unit=n)

    def totals(self, per_unit: np.ndarray, per_pair: sparse.csr_matrix) -> np.ndarray:
        """Replicate totals sum_u w_u a_u + sum_{u<v} w_u w_v X[u, v] (one per replicate).

        The last few are cached by content: a sweep asks for the same trial
        counts (e.g. every labeled pair) once per configuration."""
        key = hashlib.blake2b(b"".join((per_unit.tobytes(), per_pair.indptr.tobytes(), per_pair.indices.tobytes(),
                                        per_pair.data.tobytes())), digest_size=16).digest()
        have = self._totals.get(key)
        if have is not None:
            return have
        out = np.empty(self.replicates, dtype=np.float64)
        # Only the units with trials enter: rows of the (C, T) transposed weights, gathered. Counts and
        # weights are integers, so the sums are exact in any order (the same totals as over every unit).
        units = np.flatnonzero(per_unit)
        rows = np.flatnonzero(np.diff(per_pair.indptr)) if per_pair.nnz else None
        part = per_pair[rows] if rows is not None else None
        for a, b in self._block_rows():
            wt = self._weights_t(a, b)
            t = per_unit[units] @ wt[units]
            if part is not None:  # sum_{u<v} w_u w_v X[u, v] = sum_u w_u (X w)_u, over the rows u of X with trials
                t = t + np.einsum("rt,rt->t", wt[rows], part @ wt)
            out[a:b] = t
        if len(self._totals) >= 64:
            self._totals.pop(next(iter(self._totals)))
        self._totals[key] = out
        return out

    def replicate_rates(self, counts: "Counts") -> np.ndarray:
        """rate*_t for every replicate (NaN where the replicate has no trial)."""
        k = self.totals(counts.k_in, counts.k_x)
        n = self.totals(counts.n_in, counts.n_x)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, k / n, np.nan)

    def interval(self, counts: "Counts") -> tuple[float, float]:
        """Percentile interval (alpha/2, 1 - alpha/2) of the replicate rates."""
        if counts.n_total == 0:
            return float("nan"), float("nan")
        reps = self.replicate_rates(counts)
        reps = reps[~np.isnan(reps)]
        if not len(reps):
            return float("nan"), float("nan")
        lo, hi = np.quantile(reps, [self.alpha / 2, 1 - self.alpha / 2])
        return float(lo), float(hi)


@dataclass(frozen=True, eq=False)
class Counts:
    """Successes and trials of one rate, per unit (k_in, n_in) and per unit
    pair (k_x, n_x: sparse, upper triangle) for trials across two units."""

    k_in: np.ndarray
    n_in: np.ndarray
    k_x: sparse.csr_matrix
    n_x: sparse.csr_matrix
    trials_per_unit: np.ndarray

    @property
    def k_total(self) -> float:
        return float(self.k_in.sum() + self.k_x.sum())

    @property
    def n_total(self) -> float:
        return float(self.n_in.sum() + self.n_x.sum())

    @property
    def dependent(self) -> bool:
        """True when some unit takes part in more than one trial (the trials share
        documents or groups), so they are not independent Bernoulli trials."""
        return bool((self.trials_per_unit > 1).any())

    @property
    def units_with_trials(self) -> int:
        """How many units hold at least one trial: the independent draws among the trials."""
        return int((self.trials_per_unit > 0).sum())

    def macro(self) -> float:
        """Unweighted mean over units of the per-unit rate (units with trials
        inside them only): each group counts once, however many pairs it has."""
        m = self.n_in > 0
        return float(np.mean(self.k_in[m] / self.n_in[m])) if m.any() else float("nan")


class PairTrials:
    """Pair trials (i, j) mapped to units: inside one unit, or across two."""

    def __init__(self, boot: ClusterBootstrap, i: np.ndarray, j: np.ndarray):
        self._build(boot.n_units, boot.units[i], boot.units[j])

    def _build(self, c: int, u: np.ndarray, v: np.ndarray) -> None:
        self.u_all, self.v_all = u, v
        self.c, self.same = c, u == v
        self.u_in = u[self.same]
        x = ~self.same
        self.lo, self.hi = np.minimum(u[x], v[x]), np.maximum(u[x], v[x])
        self.n_in = np.bincount(self.u_in, minlength=c).astype(np.float64)
        n_x = sparse.csr_matrix((np.ones(len(self.lo)), (self.lo, self.hi)), shape=(c, c))
        n_x.sum_duplicates()
        self.n_x = n_x
        # how many trials involve each unit (a pair inside a unit counts once)
        self.per_unit = (np.bincount(u, minlength=c) + np.bincount(v[x], minlength=c)).astype(np.float64)

    def __len__(self) -> int:
        return len(self.same)

    def subset(self, mask: np.ndarray) -> "PairTrials":
        """The trials where ``mask`` is true (same units)."""
        out = object.__new__(PairTrials)
        out._build(self.c, self.u_all[mask], self.v_all[mask])
        return out

    def counts(self, success) -> Counts:
        s = np.asarray(success, dtype=np.float64)
        if len(s) != len(self.same):
            raise ValueError(f"success has {len(s)} values for {len(self.same)} pair trials")
        k_in = np.bincount(self.u_in, weights=s[self.same], minlength=self.c)
        sx = s[~self.same]
        hit = sx != 0
        k_x = sparse.csr_matrix((sx[hit], (self.lo[hit], self.hi[hit])), shape=(self.c, self.c))
        k_x.sum_duplicates()
        return Counts(k_in, self.n_in, k_x, self.n_x, trials_per_unit=self.per_unit)


def cluster_units(true_clusters: np.ndarray) -> np.ndarray:
    """Dependence units of a sample: its true-duplicate clusters (groups, or
    components of the duplicate labels); other documents are singletons
    already (``Truth.clusters`` gives every row a component)."""
    return np.asarray(true_clusters, dtype=np.int64)


def largest_share(counts: Counts) -> float:
    """Share of all trials inside the single largest unit (0 when there are none)."""
    total = counts.n_total
    return float(counts.n_in.max(initial=0.0) / total) if total else 0.0
