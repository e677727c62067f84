"""Watching a search from outside: a stop flag and the rows as they are measured.

The engine knows no UI: :func:`calib.search.from_sample.search` takes a ``stop`` callable (True: stop)
and a ``measured`` callable (called with each batch of rows once it is scored) and installs them here
for the length of the call; :func:`calib.search.sweep.sweep_configs` asks :func:`stopped` between
settings (a (representation, split, measure) group) and hands its rows to :func:`report`, and the
exploration asks between the settings it moves to. A stopped search returns what it measured.

A :class:`contextvars.ContextVar` holds them, so a search run in a thread of its own (the app's) is
watched by its own caller only, and the loops between need no extra argument.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Callable, Iterator


def _never() -> bool:
    return False


def _ignore(rows) -> None:
    pass


@dataclass(frozen=True)
class Watch:
    stop: Callable[[], bool] = _never      # asked between settings: True ends the search with what it has
    measured: Callable[[object], None] = _ignore  # each batch of scored rows (a DataFrame), as it is done


_CURRENT: ContextVar[Watch] = ContextVar("calib_search_watch", default=Watch())


@contextmanager
def watching(stop: Callable[[], bool] | None = None, measured: Callable[[object], None] | None = None) -> Iterator[Watch]:
    """Install ``stop`` and ``measured`` for the code run inside the ``with`` block."""
    w = Watch(stop or _never, measured or _ignore)
    token = _CURRENT.set(w)
    try:
        yield w
    finally:
        _CURRENT.reset(token)


def stopped() -> bool:
    """The watcher asked to stop."""
    return bool(_CURRENT.get().stop())


def report(rows) -> None:
    """Hand a batch of scored rows to the watcher."""
    if len(rows):
        _CURRENT.get().measured(rows)
