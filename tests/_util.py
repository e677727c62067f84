"""Helpers shared by the engine tests."""

from contextlib import contextmanager

import numba
import pytest

from calib.reading.clough import CLOUGH_DIR

# The real Clough & Stevenson corpus lives beside the repository (../shared/corpora/clough), not in it:
# a clone elsewhere has no such folder, and every test that reads it skips with this reason.
needs_clough = pytest.mark.skipif(not (CLOUGH_DIR / "file_information.csv").is_file(),
                                  reason=f"the shared Clough corpus is absent ({CLOUGH_DIR} has no "
                                         "file_information.csv)")


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
