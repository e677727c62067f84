"""calib.warmup: on an empty numba cache every kernel is reported cold, and
after warm_up() none is (so the app's first page compiles everything once,
under its message, and later runs load from the cache)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_cold_cache_is_detected_and_warm_up_compiles_every_kernel(tmp_path):
    code = ("import json; from calib.warmup import cold_kernels, warm_up\n"
            "before = cold_kernels(); warm_up(); after = cold_kernels()\n"
            "print(json.dumps([before, after]))")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                         check=True, timeout=1800).stdout
    before, after = json.loads(out.splitlines()[-1])
    for kernel in ("encode._normalize", "shingles._hash_spans", "shingles._spans", "minhash._signatures",
                   "oph._signatures", "lsh._band_keys", "jaccard._prefix_join"):
        assert kernel in before
    assert after == []
    # a second process finds everything cached
    again = subprocess.run([sys.executable, "-c", "from calib.warmup import cold_kernels; print(cold_kernels())"],
                           env=env, cwd=ROOT, capture_output=True, text=True, check=True, timeout=600).stdout
    assert again.strip() == "[]"
