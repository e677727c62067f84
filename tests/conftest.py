"""Test-wide settings.

Under CI (``CI`` set, as ``.ci/run`` runs there) hypothesis is derandomized:
each property test sees the same examples on every run, so a landing never
depends on a lucky draw. Locally it explores new examples each run.
"""

import os
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def sample():
    """The shipped labeled sample (data/sample), loaded once per run; tests must not modify it."""
    from calib.samples import load_sample
    return load_sample(Path(__file__).resolve().parents[1] / "data" / "sample")
