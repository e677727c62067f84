"""Deterministic JSON for the files calib writes (config.json, targets.json, summary.json).

Sorted keys, 2-space indent, UTF-8, a final newline, no NaN: the same inputs give the
same bytes. Shared by export, apply and the targets, so none imports another for it.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd


def json_value(v):
    """Plain-JSON version of a metrics value (NaN/inf -> None, numpy -> Python)."""
    if v is None or isinstance(v, (bool, np.bool_)):
        return None if v is None else bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return f if math.isfinite(f) else None
    if isinstance(v, str):
        return v
    if pd.isna(v):
        return None
    return str(v)


def dumps(doc: dict) -> str:
    """Deterministic serialization: sorted keys, 2-space indent, UTF-8, final newline."""
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
