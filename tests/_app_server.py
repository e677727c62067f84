"""The real app served by ``streamlit run app.py`` on a free 127.0.0.1 port, for the browser tests.

    from _app_server import serve
    with serve(folder, allowed=[...], extra_env={...}) as url:
        ... Chromium visits url ...

The server's log is ``folder/streamlit.log`` (quoted when it exits or is not healthy within 60 s), its
review store ``folder/reviews.sqlite``; it is stopped (terminate, then kill) when the block ends.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(folder: Path, allowed: list[Path], extra_env: dict | None = None):
    port = _free_port()
    log = folder / "streamlit.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CALIB_ALLOWED_DIRS": os.pathsep.join(map(str, allowed)),
           "CALIB_REVIEW_DB": str(folder / "reviews.sqlite"), **(extra_env or {})}
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
             "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"streamlit exited with {proc.returncode}:\n{log.read_text()}")
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                pass
            if time.time() > deadline:
                pytest.fail(f"streamlit not healthy after 60 s:\n{log.read_text()}")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
