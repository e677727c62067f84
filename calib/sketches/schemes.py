"""The registry of signature schemes: names, properties and where each kernel lives.

A scheme maps the CSR shingle hashes of each document to ``num_perm`` uint32
values whose fraction of equal columns estimates a similarity (see
:mod:`calib.sketches.minhash`). The registry names each kernel as
``"module:function"``, loaded on first use, so that a
:class:`~calib.sketches.represent.Representation` can check a scheme's name
without importing the kernels, which themselves build on representations.
A new scheme is one module with its kernel plus one :func:`register` line below.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Scheme:
    """A registered signature scheme.

    ``sketch(offsets, hashes, num_perm, seed)`` (``kernel``) maps CSR shingle hashes
    (repeats allowed) to the (n, num_perm) uint32 matrix. ``prefix_stable``:
    the first m columns of a num_perm matrix are the m-column matrix.
    ``datasketch_identical``: rows equal ``datasketch.MinHash(...).hashvalues``.
    ``weighted``: ``sketch`` takes a fifth argument, the weight of each hash (None: all 1).
    """

    name: str
    title: str
    kernel: Callable[..., np.ndarray] | str  # the function, or "module:function" loaded on first use
    cost: str
    prefix_stable: bool = False
    datasketch_identical: bool = False
    weighted: bool = False

    @property
    def sketch(self) -> Callable[..., np.ndarray]:
        """The kernel function (imported on first use when registered by name)."""
        if not isinstance(self.kernel, str):
            return self.kernel
        module, _, function = self.kernel.partition(":")
        return getattr(importlib.import_module(module), function)

    def __str__(self) -> str:
        return f"{self.name}: {self.title} ({self.cost} per document)"


SCHEMES: dict[str, Scheme] = {}
# Old names still accepted wherever a scheme is read (configs, results, CLI):
# they resolve to the current name, which is what gets written back.
ALIASES: dict[str, str] = {"fast": "prefix"}


def register(scheme: Scheme) -> Scheme:
    if scheme.name in SCHEMES or scheme.name in ALIASES:
        raise ValueError(f"signature scheme {scheme.name!r} is already registered")
    SCHEMES[scheme.name] = scheme
    return scheme


def scheme_names() -> tuple[str, ...]:
    """Current names of the registered schemes, in registration order."""
    return tuple(SCHEMES)


def weighted_scheme_names() -> tuple[str, ...]:
    return tuple(n for n, s in SCHEMES.items() if s.weighted)


# The weighted scheme a weighting other than none gets when none is named: dart draws
# about k (ln k + 2) darts per document where icws draws three logarithms per shingle and
# column (bench/results/weighted_throughput.md), with the same guarantee (columns collide
# with probability J_w, independently). icws stays for its prefix-stability and as the
# estimator datasketch's WeightedMinHashGenerator computes.
DEFAULT_WEIGHTED = "dart"


def canonical_scheme(name: str) -> str:
    """The current name of a scheme (resolving old names); ValueError if unknown."""
    name = ALIASES.get(name, name) if isinstance(name, str) else name
    if name not in SCHEMES:
        raise ValueError(f"unknown signature scheme {name!r} (expected one of {scheme_names()}; "
                         f"old names {tuple(ALIASES)} are accepted too)")
    return name


def get_scheme(name: str) -> Scheme:
    return SCHEMES[canonical_scheme(name)]


register(Scheme("prefix", "classic MinHash, affine32 permutations drawn per column (prefix-stable)",
                "calib.sketches.minhash:prefix_sketch", "O(n k)", prefix_stable=True))
register(Scheme("datasketch", "classic MinHash, bit-identical to datasketch.MinHash",
                "calib.sketches.minhash:datasketch_sketch", "O(n k)", datasketch_identical=True))
register(Scheme("oph", "one-permutation hashing with optimal densification (Shrivastava 2017)",
                "calib.sketches.oph:signatures", "O(n + k)"))
register(Scheme("icws", "weighted MinHash: improved consistent weighted sampling (Ioffe 2010)",
                "calib.sketches.weighted_minhash:sketch", "O(n k)", prefix_stable=True, weighted=True))
register(Scheme("dart", "weighted MinHash: dart throwing (DartMinHash, Christiani 2020)",
                "calib.sketches.dart_minhash:sketch", "O(n + k log k)", weighted=True))
