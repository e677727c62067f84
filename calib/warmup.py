"""Compile the numba kernels ahead of real work.

numba compiles each kernel on its first call (about 20 s for all of calib's
on 2 cores) and keeps the machine code in its on-disk cache
(``cache=True``), valid until the source changes. :func:`cold_kernels` says
which kernels have no cache entry for their current source; :func:`warm_up`
runs a tiny sample through every step (each scheme, both shingle types,
banding, exact Jaccard, all-pairs, clustering) so that everything is compiled
and cached. The app calls it with a message on its first page when the cache
is cold; ``python -m calib.warmup`` does it at install time.
"""

from __future__ import annotations

import importlib
import time

MODULES = ("_hashing", "encode", "shingles", "minhash", "oph", "lsh", "jaccard", "clusters", "metrics")


def _cached_kernels():
    from numba.core.registry import CPUDispatcher

    for mod in MODULES:
        m = importlib.import_module(f"calib.{mod}")
        for name, obj in vars(m).items():
            if isinstance(obj, CPUDispatcher) and obj.__module__ == m.__name__ and obj._cache is not None \
                    and type(obj._cache).__name__ == "FunctionCache":
                yield f"{mod}.{name}", obj


def cold_kernels() -> list[str]:
    """Kernels (``module.function``) with nothing in numba's cache for their
    current source: their first call compiles. Empty when everything is cached."""
    cold = []
    for name, disp in _cached_kernels():
        try:
            index = disp._cache._cache_file._load_index()  # {} when missing or stale
        except Exception:  # numba internals moved: say nothing is known to be cached
            index = {}
        if not index:
            cold.append(name)
    return cold


def warm_up() -> float:
    """Run a tiny sample through every step; returns the seconds it took."""
    import pandas as pd

    from .config import Config
    from .minhash import scheme_names
    from .represent import Representation
    from .samples import from_frames
    from .sweep import Grid, collision_curve, evaluate, sweep, Workspace

    t0 = time.perf_counter()
    texts = ["the quick brown fox jumps over the lazy dog", "The quick brown fox jumped over the lazy dog!",
             "Une phrase en français, très différente", "the quick brown fox jumps over the lazy dog",
             "lorem ipsum dolor sit amet consectetur", "lorem ipsum dolor sit amet, consectetur"]
    docs = pd.DataFrame({"id": [f"d{i}" for i in range(len(texts))], "text": texts})
    pairs = pd.DataFrame({"id_a": ["d0", "d0", "d4"], "id_b": ["d1", "d2", "d5"],
                          "label": ["duplicate", "not_duplicate", "duplicate"]})
    ws = Workspace(from_frames(docs, pairs, name="warm-up"))
    reps = tuple(Representation(shingle=sh, k=3, scheme=s) for sh in ("word", "char") for s in scheme_names())
    reps += (Representation(shingle="char", k=3, hashfunc="sha1"),)
    sweep(ws, Grid(representations=reps, num_perms=(16,), splits=((4, 4),), verify=("exact", "estimated", "none"),
                   thresholds=(0.5,), policies=("connected", "star")))
    cfg = Config(Representation(shingle="char", k=3, num_perm=16), b=4, r=4)
    evaluate(ws, cfg)
    collision_curve(ws, cfg.rep, 4, 4, random_pairs=10)
    return time.perf_counter() - t0


if __name__ == "__main__":
    cold = cold_kernels()
    print(f"{len(cold)} kernel(s) to compile" + (f": {', '.join(cold)}" if cold else ""), flush=True)
    print(f"warm-up took {warm_up():.1f} s; now cold: {len(cold_kernels())}")
