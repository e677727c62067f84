"""calib.warmup: on an empty numba cache every kernel is reported cold, and
after warm_up() none is (so the app's first page compiles everything once,
under its message and progress bar, and later runs load from the cache)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_cold_cache_is_detected_and_warm_up_compiles_every_kernel(tmp_path):
    """A cold numba cache: cold_kernels() lists the kernels, warm_up() compiles them all with a sane progress
    report, and a second process finds everything cached. .ci/run's warm-up in its fresh clone is such a cold
    compile and records it (``python -m calib.warmup --record``, path in CALIB_WARMUP_RECORD): checked here
    instead of compiling everything a second time. Without a cold record, the test compiles into its own cache."""
    record = Path(os.environ.get("CALIB_WARMUP_RECORD", tmp_path / "absent"))
    got = json.loads(record.read_text()) if record.is_file() else {}
    if got.get("before"):
        before, after, calls = got["before"], got["after"], got["calls"]
        env = dict(os.environ, PYTHONPATH=str(ROOT))
    else:
        code = ("import json; from calib.warmup import cold_kernels, warm_up\n"
                "calls = []\n"
                "before = cold_kernels(); warm_up(progress=lambda f, m: calls.append((f, m))); after = cold_kernels()\n"
                "print(json.dumps([before, after, calls]))")
        env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), PYTHONPATH=str(ROOT))
        out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                             check=True, timeout=1800).stdout
        before, after, calls = json.loads(out.splitlines()[-1])
    for kernel in ("encode._normalize", "shingles._hash_spans", "shingles._spans", "minhash._signatures",
                   "oph._signatures", "lsh._band_keys", "jaccard._prefix_join"):
        assert kernel in before
    assert after == []
    # the progress callback: steps in order, fractions rising to 1, kernels compiled counted up to all of them
    fractions = [f for f, _ in calls]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and fractions[-1] == 1.0
    steps = len(calls) - 1
    assert [m.split(":")[0] for _, m in calls[:-1]] == [f"step {k} of {steps}" for k in range(1, steps + 1)]
    compiled = [int(re.search(r"\((\d+) of (\d+) kernels compiled\)", m).group(1)) for _, m in calls[:-1]]
    assert compiled == sorted(compiled) and compiled[0] == 0 and compiled[-1] <= len(before)
    assert calls[-1][1] == f"done: {len(before)} of {len(before)} kernels compiled"
    # a second process finds everything cached
    again = subprocess.run([sys.executable, "-c", "from calib.warmup import cold_kernels; print(cold_kernels())"],
                           env=env, cwd=ROOT, capture_output=True, text=True, check=True, timeout=600).stdout
    assert again.strip() == "[]"


def test_warm_up_progress_on_a_warm_cache():
    """Nothing to compile: the steps still report, and say so."""
    from calib.warmup import cold_kernels, warm_up
    if cold_kernels():
        warm_up()
    calls = []
    warm_up(progress=lambda fraction, message: calls.append((fraction, message)))
    from calib.sketches.schemes import scheme_names
    n = 4 + 2 * len(scheme_names()) + 4  # 4 stages, word3 and char3 per scheme, char3 sha1, weighted+containment,
    # OPH from texts, evaluation
    assert calls[0] == (0.0, f"step 1 of {n}: normalization and shingle hashing (every kernel was cached)")
    assert calls[-1] == (1.0, "done: every kernel was cached")
    assert [f for f, _ in calls] == [k / n for k in range(n)] + [1.0]


def test_app_first_page_shows_compile_progress(monkeypatch):
    """A cold cache on the app's first page: a status naming the kernel count and
    time range, and a progress bar that the warm-up's callback moves."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    import appui.engine as engine
    seen = []

    def fake_warm_up(progress=None):
        progress(0.0, "step 1 of 2: banding (0 of 2 kernels compiled)")
        progress(0.5, "step 2 of 2: signatures (1 of 2 kernels compiled)")
        progress(1.0, "done: 2 of 2 kernels compiled")
        seen.append(progress)
        return 3.0

    st.cache_resource.clear()
    monkeypatch.setattr(engine, "cold_kernels", lambda: ["lsh._band_keys", "minhash._signatures"])
    monkeypatch.setattr(engine, "warm_up", fake_warm_up)
    monkeypatch.setattr(engine, "_KERNELS_READY", __import__("threading").Event())
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
        assert not at.exception, at.exception
        assert len(seen) == 1
        bars = at.get("progress")
        assert [(b.proto.value, b.proto.text) for b in bars][:1] == [(100, "done: 2 of 2 kernels compiled")]
        labels = [b.proto.label for b in at.get("status")]
        assert any(label.startswith("Compiled the numba kernels in 3 s") for label in labels), labels
        at.run()  # the next run of the page: compiled once, no second status
        assert len(seen) == 1
    finally:
        st.cache_resource.clear()
