"""Readable errors instead of tracebacks."""

from __future__ import annotations

import logging
from contextlib import contextmanager

import streamlit as st

from calib.reading.files import SampleError

from .paths import PathNotAllowed
from .text import md

log = logging.getLogger("calib.app")


def message(exc: BaseException) -> str:
    """A one-line, user-facing message for an engine error, Markdown-escaped
    (it quotes file names and values from the data)."""
    if isinstance(exc, SampleError):
        return f"The sample could not be loaded: {md(exc)}"
    if isinstance(exc, PathNotAllowed):
        return md(exc)
    if isinstance(exc, (ValueError, KeyError, FileNotFoundError, PermissionError, OSError)):
        return f"{type(exc).__name__}: {md(exc)}"
    return f"Unexpected error ({type(exc).__name__}): {md(exc)}"


@contextmanager
def guard(what: str = "This step"):
    """Show engine errors with ``st.error`` (traceback to the server log only).

    Streamlit's own control flow (st.rerun, st.stop, st.switch_page) raises
    BaseException subclasses and passes through untouched.
    """
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - the point is to never show a traceback
        log.exception("%s failed", what)
        st.error(f"{what} failed. {message(exc)}")
