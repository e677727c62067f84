"""Compile the numba kernels ahead of real work.

numba compiles each kernel on its first call (minutes of CPU for all of
calib's: ``bench/speed/first_start.py`` measures it) and keeps the machine code in its on-disk cache
(``cache=True``), valid until the source changes. :func:`cold_kernels` says
which kernels have no cache entry for their current source; :func:`warm_up`
runs a tiny sample through every step (each scheme, both shingle types,
banding, exact Jaccard, all-pairs, clustering) so that everything is compiled
and cached. ``python -m calib.warmup`` does it at install time; the app runs
``python -m calib.warmup --json`` in a child process on its first start when the
cache is cold (one JSON object a line: the progress, then the result), so its
pages appear at once and only the pages that compute wait.
"""

from __future__ import annotations

import importlib
import time

MODULES = ("sketches.hashing", "sketches.encode", "sketches.shingles", "sketches.minhash", "sketches.oph",
           "sketches.oph_texts",
           "candidates.lsh", "verification.jaccard", "clusters.clustering", "estimates.metrics", "verification.copies",
           "verification.containment", "sketches.weighted_minhash", "sketches.dart_minhash", "verification.weighted_jaccard")
# kernels no user-facing path calls (the datasketch-equality check of the tests): never warmed, never "cold"
TEST_ONLY = ("weighted_minhash._icws_dense",)


def _cached_kernels():
    from numba.core.registry import CPUDispatcher

    for mod in MODULES:
        m = importlib.import_module(f"calib.{mod}")
        for name, obj in vars(m).items():
            if isinstance(obj, CPUDispatcher) and obj.__module__ == m.__name__ and obj._cache is not None \
                    and type(obj._cache).__name__ == "FunctionCache":
                short = f"{mod.rsplit('.', 1)[-1]}.{name}"  # module.function, as the app and the log name it
                if short not in TEST_ONLY:
                    yield short, obj


def kernel_names() -> list[str]:
    """Every kernel the warm-up compiles (``module.function``), cached or not."""
    return [name for name, _ in _cached_kernels()]


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


def warm_up(progress=None) -> float:
    """Run a tiny sample through every step; returns the seconds it took.
    ``progress(fraction, message)``, when given, is called before each step, at the end, and while a
    step runs each time another of the kernels cold at the start has its cache entry written
    (:class:`CompileWatch`: "step 1 of 18: normalization and shingle hashing (7 of 36 kernels
    compiled)"). The fraction never falls: the larger of the steps begun and the kernels compiled
    (compiling is nearly all of a cold start's time), below 1 until the end."""
    import pandas as pd

    from calib.search.config import Config
    from calib.sketches.schemes import scheme_names
    from calib.sketches.represent import Representation
    from calib.reading.sample import from_frames
    from calib.search.grid import Grid
    from calib.search.sweep import collision_curve, evaluate, sweep
    from calib.search.workspace import Workspace
    from calib.sketches.minhash import signatures_from_texts

    t0 = time.perf_counter()
    cold = set(cold_kernels()) if progress else set()
    texts = ["the quick brown fox jumps over the lazy dog", "The quick brown fox jumped over the lazy dog!",
             "Une phrase en français, très différente", "the quick brown fox jumps over the lazy dog",
             "lorem ipsum dolor sit amet consectetur", "lorem ipsum dolor sit amet, consectetur",
             # 2- and 4-byte str buffers, a final sigma, and a mark that composes with the letter before it
             # (that text goes to Python and is spliced back: every Unicode kernel runs)
             "\u039f\u0394\u039f\u03a3 \ud55c\uad6d\uc5b4 cafe\u0301 \U0001F600"]
    docs = pd.DataFrame({"id": [f"d{i}" for i in range(len(texts))], "text": texts})
    pairs = pd.DataFrame({"id_a": ["d0", "d0", "d4"], "id_b": ["d1", "d2", "d5"],
                          "label": ["duplicate", "not_duplicate", "duplicate"]})
    ws = Workspace(from_frames(docs, pairs, name="warm-up"))
    reps = tuple(Representation(shingle=sh, k=3, scheme=s) for sh in ("word", "char") for s in scheme_names())
    reps += (Representation(shingle="char", k=3, hashfunc="sha1"),)
    first, grid = reps[0], dict(num_perms=(16,), splits=((4, 4),), verify=("exact", "estimated", "none"),
                                thresholds=(0.5,), policies=("connected", "star"))
    cfg = Config(Representation(shingle="char", k=3, num_perm=16), b=4, r=4)
    # one stage at a time for the first representation (most kernels), then the rest per representation
    steps = [("normalization and shingle hashing", lambda: ws.sets(first)),
             ("signatures", lambda: ws.signatures(first)),
             ("banding", lambda: ws.candidates(first, 4, 4, None)),
             ("exact Jaccard and the all-pairs join", lambda: ws.reference_pairs(first, 0.5))]
    steps += [(f"sweep of {rep.shingle_label()} {rep.scheme} {rep.hashfunc}",
               lambda rep=rep: sweep(ws, Grid(representations=(rep,), **grid))) for rep in reps]
    steps += [("weighted MinHash and containment", lambda: sweep(ws, Grid(
        representations=(Representation(shingle="char", k=3),), weightings=("none", "idf"),
        measures=("jaccard", "containment"), **grid)))]
    steps += [("text in, OPH signature out (the corpus draw's loose pass)",
               lambda: signatures_from_texts(texts,
                                             Representation(shingle="char", k=3, num_perm=16, scheme="oph")))]
    steps += [("evaluation and collision curve", lambda: (evaluate(ws, cfg), collision_curve(ws, cfg.rep, 4, 4,
                                                                                              random_pairs=10)))]
    watch = CompileWatch(cold, progress) if progress else None
    try:
        for k, (label, run) in enumerate(steps):
            if watch:
                watch.step(k / len(steps), f"step {k + 1} of {len(steps)}: {label}")
            run()
    finally:
        if watch:
            watch.stop()
    if progress:
        progress(1.0, f"done: {_compiled(cold)}")
    return time.perf_counter() - t0


class CompileWatch:
    """The progress of a warm-up while its steps run: a step's first kernel calls compile for minutes
    (the first step alone compiles most of them), so a thread looks every ``interval`` seconds at
    which of the ``cold`` kernels have their cache entry now (``still_cold``: :func:`cold_kernels`,
    numba's index files, written as each kernel is compiled) and reports the step again when that
    count rose. Counts and fractions never fall (an index file being rewritten reads as absent)."""

    def __init__(self, cold: set[str], progress, interval: float = 1.0, still_cold=None):
        import threading
        self.cold, self.progress, self.interval = set(cold), progress, interval
        self.still_cold = still_cold or cold_kernels
        self.compiled, self.fraction, self.label = 0, 0.0, ""
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._thread = None
        if self.cold:
            self._thread = threading.Thread(target=self._watch, name="calib-warmup-watch", daemon=True)
            self._thread.start()

    def _count(self) -> int:
        if not self.cold:
            return 0
        return max(self.compiled, len(self.cold) - len(self.cold.intersection(self.still_cold())))

    def _say(self) -> None:
        share = self.compiled / len(self.cold) if self.cold else 0.0
        self.fraction = max(self.fraction, min(share, 0.99))
        what = (f"{self.compiled} of {len(self.cold)} kernels compiled" if self.cold else "every kernel was cached")
        self.progress(self.fraction, f"{self.label} ({what})")

    def step(self, fraction: float, label: str) -> None:
        """A step begins: report it with the kernels compiled so far."""
        with self._lock:
            self.compiled = self._count()
            self.fraction, self.label = max(self.fraction, fraction), label
            self._say()

    def _watch(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                if not self.label:
                    continue
                now = self._count()
                if now > self.compiled:
                    self.compiled = now
                    self._say()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def spawn(command, cwd, env: dict, stderr):
    """Start ``command`` (``python -m calib.warmup --json``, or a stand-in) as a child process told to
    exit with this one (``--parent``); its stdout is a text pipe of JSON lines: the cold kernels,
    progress, then the result."""
    import os
    import subprocess
    return subprocess.Popen((*command, "--parent", str(os.getpid())), cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=stderr, text=True, encoding="utf-8")


def _compiled(cold: set[str]) -> str:
    """How many of the kernels that were ``cold`` are cached now."""
    if not cold:
        return "every kernel was cached"
    return f"{len(cold) - len(cold.intersection(cold_kernels()))} of {len(cold)} kernels compiled"


def _exit_with_parent(parent: int) -> None:
    """In a child process: exit as soon as its parent ``parent`` is gone (the child was reparented, maybe
    before it got here), not at the next step's print."""
    import os
    import threading

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _main_json(parent: int) -> None:
    """``--json [--parent PID]``: one JSON object a line on stdout, {"cold": [...]} first, then {"fraction",
    "message"} a step, then {"seconds", "after"}: what the app's background compilation reads. It exits
    when process PID (default: its parent at start) is no longer its parent."""
    import json
    import sys
    _exit_with_parent(parent)

    def say(obj: dict) -> None:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    say({"cold": cold_kernels()})
    seconds = warm_up(progress=lambda fraction, message: say({"fraction": fraction, "message": message}))
    say({"seconds": seconds, "after": cold_kernels()})


if __name__ == "__main__":
    # python -m calib.warmup [--record FILE]: FILE gets {"before", "after", "calls"} as JSON (what was cold, what
    # is still cold, each progress call): .ci/run's cold compile, which tests/test_warmup.py then checks
    import json
    import sys
    if "--json" in sys.argv:
        import os
        _main_json(int(sys.argv[sys.argv.index("--parent") + 1]) if "--parent" in sys.argv else os.getppid())
        sys.exit(0)
    record = sys.argv[sys.argv.index("--record") + 1] if "--record" in sys.argv else None
    cold = cold_kernels()
    print(f"{len(cold)} kernel(s) to compile" + (f": {', '.join(cold)}" if cold else ""), flush=True)
    calls: list = []

    def shown(fraction: float, message: str) -> None:
        calls.append((fraction, message))
        print(f"  {message}", flush=True)

    seconds = warm_up(progress=shown)
    after = cold_kernels()
    print(f"warm-up took {seconds:.1f} s; now cold: {len(after)}")
    if record:
        with open(record, "w", encoding="utf-8") as f:
            json.dump({"before": cold, "after": after, "calls": calls}, f)
