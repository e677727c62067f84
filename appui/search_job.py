"""The default search in a thread of its own, so the Sweep page can watch it and stop it.

The thread runs :func:`appui.engine.default_search` (``calib sweep``'s call of
:func:`calib.search.from_sample.search`) and only writes plain attributes of its :class:`Job`:
the progress fraction and message, each batch of rows as it is scored, the result. The page reads
them on a timer; it never waits on the thread. The stop button sets an event that the engine asks
between settings (:mod:`calib.search.watch`), so a stopped search returns what it measured.

The estimate of the time left is the elapsed time scaled by the fraction still to do,
``elapsed x (1 - f) / f``: the fraction is the engine's own estimate of the share of work done.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import pandas as pd

from calib.search.recommend import recommend


@dataclass(eq=False)
class Job:
    sample_hash: str
    settings: dict                        # the keyword arguments of the search (budget, effort, ...)
    started: float = field(default_factory=time.monotonic)
    fraction: float = 0.0
    message: str = "starting"
    batches: list = field(default_factory=list)   # scored rows, one frame per batch, in order
    found: object = None                  # the SearchResult once done
    error: BaseException | None = None
    ended: float | None = None
    stop_event: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    updates: int = 0                      # progress calls seen (a test reads it)

    # --- written by the search's thread -------------------------------------------------
    def progress(self, fraction: float, message: str) -> None:
        self.fraction, self.message = float(fraction), message
        self.updates += 1

    def measured(self, rows: pd.DataFrame) -> None:
        # the step that measured them: the progress message's head ("first pass", "seed check", ...)
        self.batches.append(rows.assign(found_by=self.message.split(":")[0]))

    # --- read by the page ---------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.ended is None

    def stop(self) -> None:
        self.stop_event.set()

    def elapsed(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def left(self) -> float | None:
        """Seconds left, estimated from the fraction done (None before any progress)."""
        f = self.fraction
        if not self.running or f <= 0.01:
            return None if self.running else 0.0
        return self.elapsed() * (1.0 - f) / f

    def rows(self) -> pd.DataFrame | None:
        return pd.concat(self.batches, ignore_index=True) if self.batches else None

    def best_so_far(self, objective: str = "pair_recall") -> pd.Series | None:
        """The row the rows measured so far recommend under the search's budget (its ``found_by``: the step)."""
        rows = self.rows()
        if rows is None:
            return None
        return recommend(rows, max_false_removal_rate=self.settings["max_false_removal_rate"], objective=objective)


def start(sample_hash: str, settings: dict, run) -> Job:
    """A job running ``run(progress=, stop=, measured=)`` in a daemon thread."""
    job = Job(sample_hash, dict(settings))

    def work() -> None:
        try:
            job.found = run(progress=job.progress, stop=job.stop_event.is_set, measured=job.measured)
        except BaseException as exc:  # noqa: BLE001 - shown on the page, never lost in a thread
            job.error = exc
        finally:
            job.ended = time.monotonic()

    job.thread = threading.Thread(target=work, name=f"calib-search-{sample_hash[:8]}", daemon=True)
    job.thread.start()
    return job


def clock(seconds: float | None) -> str:
    """'1 min 05 s', '42 s', or 'estimating' (no estimate yet)."""
    if seconds is None:
        return "estimating"
    s = int(round(seconds))
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"
