"""LSH Ensemble: candidate pairs for containment, by partitioning on set size.

Zhu, Nargesian, Pu, Miller, "LSH Ensemble: Internet-Scale Domain Search",
PVLDB 9(12), 2016; the reference implementation is datasketch's
``MinHashLSHEnsemble`` (``datasketch/lshensemble.py``), which this module
reproduces as a batch all-pairs join over a signature matrix.

Theory. A query Q (size q) is contained in X (size x) at C = |Q & X| / q = t
exactly when their Jaccard is

    J = t q / (q + x - t q) = t / (1 + x/q - t),

which falls as x grows. Indexed sets are split into ``num_part`` size
partitions; in a partition with upper bound u every X has x <= u, so
J >= t / (1 + u/q - t): banding tuned to that Jaccard misses no more than the
bound says. Per (query, partition) the split (b, r) minimizes
w_fp FP + w_fn FN, with FP and FN the integrals of the containment S-curve

    P(C = c | b, r, u/q) = 1 - (1 - (c / (1 + u/q - c))^r)^b

below and above t (:func:`containment_s_curve`), over b r <= num_perm,
r <= m, tabulated at 10 size ratios u/q = exp(linspace(-5, 5, 10)) and looked
up by the first ratio >= u/q: the same integrals (scipy ``quad``), grid, tie-
break and lookup as datasketch, so the same (b, r). For each r used, the
signature is cut into num_perm // r bands of r rows; a (query, partition)
pair probes the first b of them (datasketch's ``_query_b``).

Differences from datasketch, by design: partitions are given (``uppers``) or
equi-depth on the sizes (datasketch optimizes them for false positives under
a uniform-containment assumption; equi-depth is the paper's near-optimal
choice for power-law sizes); candidates come from one sort per band instead
of a hash table, as in :mod:`calib.candidates.lsh`. For dedup, a pair (x, y) is a
candidate when the *smaller* set queries the larger one's partition
(:func:`ensemble_pairs`); :func:`ensemble_directed` gives every direction, as
querying each document against the index of all of them would.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.integrate import quad

from calib.candidates import lsh
from calib.base.validate import row_mask

XQS = np.exp(np.linspace(-5, 5, 10))  # size ratios u/q at which (b, r) is tabulated (as datasketch)


def containment_s_curve(c, b: int, r: int, xq: float) -> np.ndarray:
    """P(candidate | containment c) for a query of size q and a set of size x = xq q:
    1 - (1 - J^r)^b with J = c / (1 + xq - c). Containment above min(1, xq) cannot occur."""
    c = np.asarray(c, dtype=np.float64)
    j = c / (1.0 + xq - c)
    return 1.0 - (1.0 - j ** r) ** b


def _fp(threshold, b, r, xq):
    f = lambda t: 1 - (1 - (t / (1 + xq - t)) ** float(r)) ** float(b)  # noqa: E731
    return quad(f, 0.0, threshold if xq >= threshold else xq)[0]


def _fn(threshold, b, r, xq):
    f = lambda t: 1 - (1 - (1 - (t / (1 + xq - t)) ** float(r)) ** float(b))  # noqa: E731
    if xq >= 1.0:
        return quad(f, threshold, 1.0)[0]
    if xq >= threshold:
        return quad(f, threshold, xq)[0]
    return 0.0


def optimal_param(threshold: float, num_perm: int, max_r: int, xq: float,
                  weights: tuple[float, float] = (0.5, 0.5)) -> tuple[int, int]:
    """(b, r) minimizing w_fp FP + w_fn FN of the containment S-curve at size ratio xq
    (b outer, r inner, first minimum: datasketch's ``lshensemble._optimal_param``)."""
    w_fp, w_fn = weights
    best, opt = float("inf"), (0, 0)
    for b in range(1, num_perm + 1):
        for r in range(1, max_r + 1):
            if b * r > num_perm:
                continue
            err = _fp(threshold, b, r, xq) * w_fp + _fn(threshold, b, r, xq) * w_fn
            if err < best:
                best, opt = err, (b, r)
    return opt


@lru_cache(maxsize=64)
def param_table(threshold: float, num_perm: int, m: int = 8,
                weights: tuple[float, float] = (0.5, 0.5)) -> np.ndarray:
    """(10, 2) int array: the optimal (b, r) at each size ratio of :data:`XQS`."""
    return np.array([optimal_param(threshold, num_perm, m, xq, weights) for xq in XQS], dtype=np.int64)


def lookup(table: np.ndarray, u, q) -> np.ndarray:
    """Row of ``table`` per (upper bound u, query size q): the first tabulated ratio >= u/q
    (the last one beyond the grid), as datasketch's ``_get_optimal_param``."""
    k = np.searchsorted(XQS, np.asarray(u, np.float64) / np.asarray(q, np.float64), side="left")
    return np.minimum(k, len(XQS) - 1)


def equi_depth_uppers(sizes: np.ndarray, num_part: int) -> np.ndarray:
    """Upper size bounds of up to ``num_part`` partitions holding about equally many sets
    (each bound a size that occurs; equal sizes never straddle two partitions)."""
    s = np.sort(np.asarray(sizes)[np.asarray(sizes) > 0])
    if not len(s):
        return np.zeros(0, np.int64)
    cuts = s[np.minimum(np.ceil(np.arange(1, num_part + 1) * len(s) / num_part).astype(np.int64) - 1, len(s) - 1)]
    return np.unique(cuts).astype(np.int64)


@dataclass(frozen=True)
class Ensemble:
    """An LSH Ensemble for containment ``threshold``: ``num_part`` size partitions, r up to
    ``m``, the FP/FN ``weights`` (datasketch's ``MinHashLSHEnsemble`` parameters)."""

    threshold: float
    num_perm: int
    num_part: int = 16
    m: int = 8
    weights: tuple[float, float] = (0.5, 0.5)

    def __post_init__(self) -> None:
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"Ensemble.threshold must be in [0, 1], got {self.threshold}")
        if self.num_part < 1:
            raise ValueError(f"Ensemble.num_part must be >= 1, got {self.num_part}")
        if not 2 <= self.m <= self.num_perm:
            raise ValueError(f"Ensemble.m must be in [2, num_perm={self.num_perm}], got {self.m}")

    def table(self) -> np.ndarray:
        return param_table(float(self.threshold), int(self.num_perm), int(self.m), tuple(self.weights))

    def __str__(self) -> str:
        return (f"LSH Ensemble C >= {self.threshold:g}: {self.num_part} size partitions, r <= {self.m}, "
                f"num_perm={self.num_perm}")


def ensemble_directed(sig: np.ndarray, sizes: np.ndarray, ens: Ensemble, *, uppers: np.ndarray | None = None,
                      active: np.ndarray | None = None, max_pairs: int | None = 50_000_000
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Directed candidates (query q, indexed x), q != x, sorted: x lies in a partition with
    upper bound u and q, x collide in one of the first b bands of the r-row banding,
    (b, r) = the table's entry for u / |q|. Every active document is both a query and
    indexed. ``uppers``: the partitions' upper bounds (default: equi-depth)."""
    n = sig.shape[0]
    if sig.shape[1] < ens.num_perm:
        raise ValueError(f"signatures have {sig.shape[1]} columns, the ensemble needs num_perm={ens.num_perm}")
    sig = sig[:, :ens.num_perm]
    sizes = np.asarray(sizes, np.int64)
    act = (np.ones(n, np.bool_) if active is None else row_mask(active, n)) & (sizes > 0)
    ups = equi_depth_uppers(sizes[act], ens.num_part) if uppers is None else np.asarray(uppers, np.int64)
    if len(ups) and sizes[act].max(initial=0) > ups[-1]:
        raise ValueError(f"a set of size {sizes[act].max()} lies above the last partition bound {ups[-1]}")
    part = np.searchsorted(ups, sizes, side="left")  # first partition whose upper bound holds the size
    table = ens.table()
    keys: dict[int, np.ndarray] = {}
    out_q, out_x = [], []
    for p, u in enumerate(ups):
        in_p = act & (part == p)
        if not in_p.any():
            continue
        row = np.where(act, lookup(table, u, np.maximum(sizes, 1)), -1)
        for k in np.unique(row[act]):
            b, r = (int(v) for v in table[k])
            queries = act & (row == k)
            if r not in keys:
                keys[r] = lsh.band_keys(sig, ens.num_perm // r, r)
            rows = np.flatnonzero(queries | in_p)  # band only the rows in play (one sort per band of them)
            i, j = lsh.candidate_pairs(sig[rows], b, r, keys=np.ascontiguousarray(keys[r][:b, rows]),
                                       max_pairs=max_pairs)
            i, j = rows[i], rows[j]
            for a, c in ((i, j), (j, i)):  # a queries, c is indexed in p
                m = queries[a] & in_p[c]
                out_q.append(a[m]); out_x.append(c[m])
    if not out_q:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    q, x = np.concatenate(out_q), np.concatenate(out_x)
    codes = np.unique(q * np.int64(n) + x)
    return codes // n, codes % n


def ensemble_pairs(sig: np.ndarray, sizes: np.ndarray, ens: Ensemble, *, uppers: np.ndarray | None = None,
                   active: np.ndarray | None = None, max_pairs: int | None = 50_000_000
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Candidate pairs (i < j, sorted) for containment dedup: the smaller document (by size,
    then row) queries the partition of the larger one (its containment is the one verified)."""
    q, x = ensemble_directed(sig, sizes, ens, uppers=uppers, active=active, max_pairs=max_pairs)
    sizes = np.asarray(sizes, np.int64)
    smaller = (sizes[q] < sizes[x]) | ((sizes[q] == sizes[x]) & (q < x))
    q, x = q[smaller], x[smaller]
    i, j = np.minimum(q, x), np.maximum(q, x)
    n = sig.shape[0]
    codes = np.unique(i * np.int64(n) + j)
    return codes // n, codes % n
