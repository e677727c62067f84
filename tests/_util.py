"""Helpers shared by the engine tests."""

from contextlib import contextmanager

import numba


@contextmanager
def one_thread():
    """Many tiny calls: numba's parallel launch overhead dominates on a busy
    2-core machine, so property tests run the kernels on one thread (the
    fixed-corpus tests exercise the parallel path)."""
    old = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(old)
