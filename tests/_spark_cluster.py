"""A Spark standalone cluster on loopback: a master and workers as separate processes, for tests and bench.

    from _spark_cluster import StandaloneCluster
    with StandaloneCluster(workers=2, cores=1, memory="1g") as cluster:
        ... CALIB_SPARK_MASTER=cluster.url calib apply --engine spark ...

Each process is ``spark-class org.apache.spark.deploy.{master.Master,worker.Worker}`` from the pyspark
wheel, bound to 127.0.0.1 (``--host`` and SPARK_LOCAL_IP: never the machine's interface), its web UI
on a free port, its work folder and log in a temporary folder, started and stopped by its PID.

The workers are nodes that never installed calib: their environment has no virtualenv on PATH and no
PYTHONPATH. :meth:`StandaloneCluster.driver_env` is a driver's environment for it: the master's URL in
CALIB_SPARK_MASTER, loopback, and CALIB_NODE_PYTHON = the cluster's ``python``, made by :func:`bare_python`
(an empty virtualenv: no calib, numpy or numba): the Python the executors run the shipped environment with.

The session-scoped pytest fixture ``spark_cluster`` (tests/conftest.py) starts one for the whole run.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def base_python() -> str:
    """The interpreter this virtualenv was made from."""
    base = Path(sys.base_prefix) / "bin"
    for name in (f"python{sys.version_info[0]}.{sys.version_info[1]}", "python3"):
        if (base / name).is_file():
            return str(base / name)
    raise RuntimeError(f"no python3 in {base}")


def bare_python(folder: Path) -> str:
    """A node's Python: an empty virtualenv of the driver's interpreter in ``folder`` (no pip, no packages, not even
    those installed into the base interpreter), so nothing but the standard library is importable."""
    subprocess.run([base_python(), "-m", "venv", "--without-pip", str(folder)], check=True, capture_output=True)
    return str(folder / "bin" / ("python%d.%d" % sys.version_info[:2]))


def spark_home() -> str:
    """The Spark installation the nodes run: the pyspark wheel's own folder (it holds bin/, sbin/ and jars/)."""
    import pyspark
    return str(Path(pyspark.__file__).resolve().parent)


class StandaloneCluster:
    """A master and ``workers`` workers (``cores`` cores, ``memory`` each) on 127.0.0.1."""

    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "1g", *, timeout: float = 60.0):
        self.workers, self.cores, self.memory, self.timeout = workers, cores, memory, timeout
        self.procs: list[subprocess.Popen] = []
        self.dir = Path(tempfile.mkdtemp(prefix="calib-spark-cluster-"))
        self.port = free_port()
        self.ui_port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.python = ""  # the nodes' Python, made by start()

    def node_env(self) -> dict:
        """A node's environment: no virtualenv on PATH, no PYTHONPATH, loopback only."""
        venv_bin = str(Path(sys.executable).parent)
        path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")
               and not k.startswith("CALIB_")}
        return {**env, "PATH": path, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_HOME": spark_home(),
                "SPARK_LOG_DIR": str(self.dir), "SPARK_WORKER_DIR": str(self.dir / "work")}

    def driver_env(self) -> dict:
        """The environment of a `calib apply --engine spark` run on this cluster (a driver on loopback)."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
        return {**env, "CALIB_SPARK_MASTER": self.url, "SPARK_LOCAL_IP": "127.0.0.1",
                "CALIB_NODE_PYTHON": self.python}

    def _start(self, name: str, args: list[str]) -> subprocess.Popen:
        log = open(self.dir / f"{name}.log", "wb")
        p = subprocess.Popen([str(Path(spark_home()) / "bin" / "spark-class"), *args], stdout=log, stderr=subprocess.STDOUT, env=self.node_env(),
                             cwd=self.dir, start_new_session=True)
        log.close()
        self.procs.append(p)
        return p

    def _alive_workers(self) -> int:
        import json
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as r:
                state = json.load(r)
        except (OSError, ValueError):  # not listening yet, or a partial page while the master's UI starts
            return -1
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-2000:]}" for p in sorted(self.dir.glob("*.log")))

    def start(self) -> "StandaloneCluster":
        self.python = bare_python(self.dir / "node-python")
        self._start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                               str(self.port), "--webui-port", str(self.ui_port)])
        for k in range(self.workers):
            (self.dir / "work").mkdir(exist_ok=True)
            self._start(f"worker-{k}", ["org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1",
                                        "--cores", str(self.cores), "--memory", self.memory,
                                        "--webui-port", str(free_port()), "--work-dir", str(self.dir / "work")])
        deadline = time.monotonic() + self.timeout
        try:
            while self._alive_workers() < self.workers:
                dead = [p for p in self.procs if p.poll() is not None]
                if dead or time.monotonic() > deadline:
                    raise RuntimeError(f"the standalone cluster did not start ({len(dead)} process(es) exited):\n"
                                       f"{self.logs()}")
                time.sleep(0.3)
        except BaseException:
            self.stop()  # no master or worker outlives a failed start
            raise
        return self

    def stop(self) -> None:
        for p in reversed(self.procs):  # workers first, then the master; each by its own PID
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(self.procs):  # a throwaway cluster: a few seconds to exit, then killed
            try:
                p.wait(timeout=3)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs.clear()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "StandaloneCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
