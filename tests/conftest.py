"""Test-wide settings.

Under CI (``CI`` set, as ``.ci/run`` runs there) hypothesis is derandomized:
each property test sees the same examples on every run, so a landing never
depends on a lucky draw. Locally it explores new examples each run.
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
