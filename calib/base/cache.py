"""Where calib keeps what it builds once and reuses across runs (never results)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$CALIB_CACHE_DIR``, else ``~/.cache/calib`` (not created here)."""
    return Path(os.environ.get("CALIB_CACHE_DIR") or Path.home() / ".cache" / "calib")
