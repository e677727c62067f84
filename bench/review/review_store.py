"""Decisions per second of the review store, SQLite file against PostgreSQL, with 1 and 4 writers.

Each writer is its own process appending N decisions, one transaction each (as the Review and
Label pages write); the rate is all decisions over the wall time from the common start to the
last writer's end, and every run checks that all rows are there with unique ids. Then the time
of the reads a page makes (latest(), all_decisions()) on the filled store. PostgreSQL is the
server of CALIB_TEST_POSTGRES (source .ci/postgres.sh && calib_pg_start: a local server, so
this is the store's cost, not a network's); a fresh database per run. Writes
bench/results/review_store.md.

    python -m bench.review.review_store [--decisions 300] [--writers 1,4]
"""

from __future__ import annotations

from bench.record import RESULTS_DIR, machine, write_result
import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from calib.review.stores import open_review_store  # noqa: E402


def _writer(target: str, tag: str, n: int, start) -> None:
    start.wait(120)
    with open_review_store(target) as s:
        for k in range(n):
            s.record(f"{tag}-{k:06d}", f"{tag}-{k + 1:06d}", "duplicate", tag)


def _fresh_pg(admin: str) -> str:
    import psycopg
    name = f"calib_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}"')
    return admin.rsplit("/", 1)[0] + "/" + name


def _drop_pg(admin: str, url: str) -> None:
    import psycopg
    with psycopg.connect(admin, autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')


def run(target: str, writers: int, n: int) -> dict:
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    procs = [ctx.Process(target=_writer, args=(target, f"w{k}", n, start)) for k in range(writers)]
    for p in procs:
        p.start()
    time.sleep(2.0)  # every writer imported calib and waits
    t0 = time.perf_counter()
    start.set()
    for p in procs:
        p.join()
        assert p.exitcode == 0, p.exitcode
    seconds = time.perf_counter() - t0
    with open_review_store(target, readonly=True) as s:
        t1 = time.perf_counter()
        latest = s.latest()
        t2 = time.perf_counter()
        every = s.all_decisions()
        t3 = time.perf_counter()
    assert len(every) == writers * n and every["id"].is_unique and len(latest) == writers * n
    return {"rate": writers * n / seconds, "seconds": seconds, "latest_ms": (t2 - t1) * 1e3,
            "all_ms": (t3 - t2) * 1e3}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--decisions", type=int, default=300, help="decisions per writer")
    ap.add_argument("--writers", default="1,4")
    ap.add_argument("--out", default=str(RESULTS_DIR / "review_store.md"))
    a = ap.parse_args(argv)
    admin = os.environ.get("CALIB_TEST_POSTGRES")
    if not admin:
        print("CALIB_TEST_POSTGRES is unset: source .ci/postgres.sh && calib_pg_start", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for writers in (int(w) for w in a.writers.split(",")):
            for backend in ("sqlite", "postgresql"):
                target = str(Path(tmp) / f"r{writers}.sqlite") if backend == "sqlite" else _fresh_pg(admin)
                try:
                    r = run(target, writers, a.decisions)
                finally:
                    if backend == "postgresql":
                        _drop_pg(admin, target)
                rows.append((backend, writers, r))
                print(f"{backend} x{writers}: {r['rate']:.0f} decisions/s", file=sys.stderr)
    lines = [f"# Review store: decisions per second ({a.decisions} per writer, one transaction each)", "",
             f"{machine()}, cores shared; PostgreSQL on this machine (`.ci/postgres.sh`: fsync off, as the "
             "tests run it). Other work shares these cores: the same run gives figures 2-3x apart; compare rows of "
             "one run, not runs.", "",
             "| store | writers | decisions | wall s | decisions/s | latest() ms | all_decisions() ms |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for backend, writers, r in rows:
        lines.append(f"| {backend} | {writers} | {writers * a.decisions} | {r['seconds']:.2f} | {r['rate']:.0f} | "
                     f"{r['latest_ms']:.1f} | {r['all_ms']:.1f} |")
    text = "\n".join(lines) + "\n"
    write_result(a.out, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
