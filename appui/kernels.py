"""The numba kernels, compiled in the background on the app's first start.

numba compiles a kernel on its first call and caches it on disk. After an
install or an update the cache is cold and compiling everything takes minutes
of CPU, so the app does not compile on its first page: :func:`start` runs
``python -m calib.warmup --json`` in a child process (its own interpreter, so
the server keeps answering) and reads its progress. Pages that need no kernel
(Home, Sample) draw at once; a page that computes calls :func:`wait`, which
shows the child's progress where that page waits. One compilation per server
process. If the child fails, each kernel compiles on its first use, as numba
does by default, and the page says so.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from .nav import PAGES, WITHOUT_KERNELS

ROOT = Path(__file__).resolve().parents[1]
COMMAND = (sys.executable, "-m", "calib.warmup", "--json")


@dataclass(eq=False)
class Compilation:
    """What the background compilation is doing: ``state`` is idle, checking (reading numba's cache),
    compiling, ready or failed; ``checked`` is set once the cold kernels are known, ``done`` at the end."""
    state: str = "idle"
    cold: int = 0
    fraction: float = 0.0
    message: str = ""
    seconds: float | None = None
    error: str = ""
    started: float = 0.0
    checked: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)

    def elapsed(self) -> float:
        return time.monotonic() - self.started if self.started else 0.0


_COMPILATION = Compilation()
_LOCK = threading.Lock()
_FAILURE_SHOWN = "calib_kernels_failure_shown"


def start() -> Compilation:
    """The server's compilation, started on the first call (cheap and idempotent after that)."""
    c = _COMPILATION
    with _LOCK:
        if c.state == "idle":
            c.state = "checking"
            threading.Thread(target=_run, args=(c,), name="calib-kernels", daemon=True).start()
    return c


def _finish(c: Compilation, state: str, error: str = "") -> None:
    c.state, c.error = state, error
    c.checked.set()
    c.done.set()


def _run(c: Compilation) -> None:
    try:
        from calib.warmup import cold_kernels, spawn  # imports the kernel modules: a second or two
        cold = cold_kernels()
        if not cold:
            return _finish(c, "ready")
        c.cold, c.state, c.message = len(cold), "compiling", f"{len(cold)} kernels to compile: starting the compiler"
        c.checked.set()
        path = [str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
        with tempfile.TemporaryFile("w+", encoding="utf-8") as err:
            c.started = time.monotonic()
            proc = spawn(COMMAND, ROOT, env, err)
            result = None
            for line in proc.stdout:
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if "cold" in msg:
                    c.cold = len(msg["cold"])
                elif "fraction" in msg:
                    c.fraction, c.message = float(msg["fraction"]), str(msg["message"])
                else:
                    result = msg
            code = proc.wait()
            err.seek(0)
            tail = [x for x in err.read().strip().splitlines() if x.strip()][-1:]
        if code != 0 or result is None:
            why = f"the compiling process ended with code {code}" + (f": {tail[0]}" if tail else "")
            return _finish(c, "failed", why)
        c.seconds = float(result["seconds"])
        if result.get("after"):
            return _finish(c, "failed", f"still not cached: {', '.join(result['after'])}")
        _finish(c, "ready")
    except Exception as exc:  # the app must come up all the same: kernels then compile on first use
        _finish(c, "failed", f"{type(exc).__name__}: {exc}")


def _waiting_pages() -> str:
    names = [label for _, label, _ in PAGES if label not in WITHOUT_KERNELS]
    return ", ".join(names[:-1]) + " and " + names[-1]


def progress_text(c: Compilation) -> str:
    if c.state == "checking":
        return "Checking numba's cache of compiled kernels..."
    return f"{c.message} ({c.elapsed():.0f} s so far)"


def _done_words(c: Compilation) -> tuple[str, str]:
    """The finished compilation's (label, status state) for the page that waited."""
    if c.state == "ready":
        return (f"Compiled the numba kernels in {c.seconds:.0f} s in the background; they are cached for the next "
                "starts", "complete")
    return (f"The background compilation stopped ({c.error}): each kernel compiles on its first use instead, "
            "without progress", "error")


def wait() -> None:
    """Before a page's first engine call: wait for the background compilation, with its progress shown here."""
    c = start()
    c.checked.wait(30)  # reading the cache takes a second or two; compiling is what gets the progress bar
    if c.done.is_set():
        if c.state == "failed" and not st.session_state.get(_FAILURE_SHOWN):  # once a session, where it matters
            st.session_state[_FAILURE_SHOWN] = True
            st.warning(_done_words(c)[0])
        return
    with st.status(f"Compiling {c.cold} numba kernels in the background: the first start after installing or "
                   "updating only; this page computes once they are ready, and later starts load them from "
                   "numba's cache", expanded=True) as box:
        bar = st.progress(0.0, text=progress_text(c))
        while not c.done.wait(0.5):
            bar.progress(min(max(c.fraction, 0.0), 1.0), text=progress_text(c))
        bar.progress(1.0, text=c.message or "done")
        label, state = _done_words(c)
        box.update(label=label, state=state, expanded=state == "error")
        st.session_state[_FAILURE_SHOWN] = state == "error"


def background_note() -> None:
    """On a page that needs no kernel: one line on the background compilation while it runs (refreshed
    every second; the page reruns once when it ends), nothing when the cache was warm."""
    c = start()
    c.checked.wait(5)
    if c.done.is_set():
        if c.state == "failed":
            st.caption(f"The background compilation of the numba kernels stopped ({c.error}): each kernel "
                       "compiles on its first use instead.")
        return

    @st.fragment(run_every=1.0)
    def note() -> None:
        if c.done.is_set():
            st.rerun()
        st.progress(min(max(c.fraction, 0.0), 1.0),
                    text=f"Compiling the numba kernels in the background (first start only): {progress_text(c)}. "
                         f"{_waiting_pages()} wait for it; {' and '.join(WITHOUT_KERNELS)} do not.")

    note()
