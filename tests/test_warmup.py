"""calib.warmup: on an empty numba cache every kernel is reported cold, and
after warm_up() none is; the app compiles them in a background child process
(appui/kernels.py) while Home and Sample draw, and the pages that compute wait
for it under its progress bar; later starts load from the cache."""

import json
import os
import re
import subprocess
import sys
import threading
import time
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
    # the progress callback: steps in order (each reported again while it compiles), fractions rising to 1,
    # kernels compiled counted up to all of them, and counted while the first step compiles, not after it
    fractions = [f for f, _ in calls]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and fractions[-1] == 1.0
    named = [m.split(":")[0] for _, m in calls[:-1]]
    steps = int(named[0].split(" of ")[1])
    assert list(dict.fromkeys(named)) == [f"step {k} of {steps}" for k in range(1, steps + 1)]
    compiled = [int(re.search(r"\((\d+) of (\d+) kernels compiled\)", m).group(1)) for _, m in calls[:-1]]
    assert compiled == sorted(compiled) and compiled[0] == 0 and compiled[-1] <= len(before)
    assert max(c for c, name in zip(compiled, named) if name == f"step 1 of {steps}") > 0
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


def test_progress_counts_kernels_as_their_cache_entries_appear():
    """While one long step compiles, the watch reports each rise of the kernels whose cache entry exists
    (not only at the next step), never a fall (an index file being rewritten reads as cold for a moment),
    and the fraction follows the kernels compiled without reaching 1 before the end."""
    from calib.warmup import CompileWatch
    cold = {"a.k1", "a.k2", "b.k3", "b.k4"}
    states = [cold, cold - {"a.k1"}, cold - {"a.k1"}, cold, {"b.k3", "b.k4"}, {"b.k4"}, set()]
    seen, calls = [], []

    def still_cold():
        seen.append(None)
        return sorted(states[min(len(seen) - 1, len(states) - 1)])

    watch = CompileWatch(cold, lambda f, m: calls.append((f, m)), interval=0.01, still_cold=still_cold)
    watch.step(0.0, "step 1 of 3: shingles")
    deadline = time.monotonic() + 10
    while len(seen) < len(states) + 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    watch.stop()
    messages = [m for _, m in calls]
    assert messages == [f"step 1 of 3: shingles ({k} of 4 kernels compiled)" for k in (0, 1, 2, 3, 4)]
    assert [f for f, _ in calls] == [0.0, 0.25, 0.5, 0.75, 0.99]
    watch.step(2 / 3, "step 2 of 3: banding")  # a step's own fraction below the kernels' share: no fall
    assert calls[-1] == (0.99, "step 2 of 3: banding (4 of 4 kernels compiled)")


# a stand-in for ``python -m calib.warmup --json``: two steps, the second only once the gate file exists
FAKE_CHILD = r"""
import json, pathlib, sys, time
gate = pathlib.Path(sys.argv[1])
say = lambda obj: print(json.dumps(obj), flush=True)
say({"cold": ["lsh._band_keys", "minhash._signatures"]})
say({"fraction": 0.0, "message": "step 1 of 2: banding (0 of 2 kernels compiled)"})
start = time.monotonic()
while not gate.exists():
    if time.monotonic() - start > 120:  # the test failed before opening it: do not linger
        sys.exit(1)
    time.sleep(0.05)
say({"fraction": 0.5, "message": "step 2 of 2: signatures (1 of 2 kernels compiled)"})
say({"fraction": 1.0, "message": "done: 2 of 2 kernels compiled"})
say({"seconds": 3.0, "after": []})
"""


@pytest.fixture
def compilation(monkeypatch):
    """A fresh background compilation whose cache check says two kernels are cold."""
    import streamlit as st

    import appui.kernels as kernels
    import calib.warmup
    monkeypatch.setattr(kernels, "_COMPILATION", kernels.Compilation())
    monkeypatch.setattr(calib.warmup, "cold_kernels", lambda: ["lsh._band_keys", "minhash._signatures"])
    st.cache_resource.clear()
    st.cache_data.clear()
    yield kernels
    st.cache_resource.clear()
    st.cache_data.clear()


def test_home_page_shows_the_sample_while_the_kernels_compile(compilation, monkeypatch, tmp_path):
    """A cold cache on the first start: Home draws the shipped sample's summary at once, with the background
    compilation's progress under the intro; a page that computes waits for it under a status and a progress
    bar that the child's lines move, and the next run of that page does not wait again."""
    from streamlit.testing.v1 import AppTest
    gate = tmp_path / "gate"
    monkeypatch.setattr(compilation, "COMMAND", (sys.executable, "-c", FAKE_CHILD, str(gate)))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not at.exception, at.exception
    assert [(m.label, m.value) for m in at.metric][:2] == [("Documents", "2,396"), ("Labeled pairs", "589")]
    c = compilation._COMPILATION
    assert c.state == "compiling" and not c.done.is_set()  # the page did not wait for it
    bars = [b.proto.text for b in at.get("progress")]
    assert len(bars) == 1 and re.match(r"Compiling the numba kernels in the background \(first start only\): "
                                       r"(2 kernels to compile: starting the compiler|step 1 of 2: banding \(0 of 2 "
                                       r"kernels compiled\)) \(\d+ s so far\)\. ", bars[0]), bars  # as far as the child is
    assert "Sweep, Curves, Clusters, Review, Export and Label wait for it; Home and Sample do not." in bars[0]
    assert not at.get("status")

    waiting = compilation.wait

    def wait_then_open_the_gate():  # the child's second step comes while the page waits, not before
        threading.Timer(0.5, gate.touch).start()
        waiting()

    monkeypatch.setattr(compilation, "wait", wait_then_open_the_gate)
    at.switch_page("pages/3_Curves.py").run()
    assert not at.exception, at.exception
    assert c.state == "ready" and c.seconds == 3.0
    assert [(b.proto.value, b.proto.text) for b in at.get("progress")][:1] == [(100, "done: 2 of 2 kernels compiled")]
    labels = [b.proto.label for b in at.get("status")]
    assert labels == ["Compiled the numba kernels in 3 s in the background; they are cached for the next starts"]
    at.run()  # compiled once: no second wait
    assert not at.get("status") and not at.exception


def test_a_failed_compilation_leaves_the_pages_working(compilation, monkeypatch):
    """The child dies: the page that waited says so in one line (its last stderr line) and computes anyway,
    each kernel compiling on its first use."""
    from streamlit.testing.v1 import AppTest
    monkeypatch.setattr(compilation, "COMMAND", (sys.executable, "-c", "import sys; print('boom', file=sys.stderr); "
                                                 "sys.exit(3)"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("pages/3_Curves.py").run()
    assert not at.exception, at.exception
    said = [w.value for w in at.warning] + [b.proto.label for b in at.get("status")]  # ended before or while waiting
    assert ("The background compilation stopped (the compiling process ended with code 3: boom): each kernel "
            "compiles on its first use instead, without progress") in said, said
    assert at.get("vega_lite_chart")  # the page drew its chart all the same
    at.switch_page("pages/4_Clusters.py").run()  # said once a session
    assert not any("background compilation" in w.value for w in at.warning)


def test_the_compiling_child_exits_with_its_parent(tmp_path):
    """The app's child (``python -m calib.warmup --json --parent PID``) on a cold cache outlives no server: its
    parent exits at once (before the child has even imported), and the child is gone within seconds instead of
    compiling on for minutes."""
    parent = ("import subprocess, sys\n"
              "import os\n"
              "p = subprocess.Popen([sys.executable, '-m', 'calib.warmup', '--json', '--parent', str(os.getpid())],\n"
              "                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
              "print(p.pid, flush=True)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    pid = int(subprocess.run([sys.executable, "-c", parent], env=env, cwd=ROOT, capture_output=True, text=True,
                             check=True, timeout=60).stdout)
    deadline = time.monotonic() + 20
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    gone = not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    if not gone:
        os.kill(pid, 9)
    assert gone, "the warm-up child went on compiling after its parent exited"
