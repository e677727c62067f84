"""The first start a newcomer sees: time to the first useful page on a fresh clone, numba's cache cold.

    PYTHONPATH=$PWD .venv/bin/python -m bench.speed.first_start            # nothing of ours beside it
    PYTHONPATH=$PWD .venv/bin/python -m bench.speed.first_start --load 2   # with 2 busy processes beside it

Clones this repository's committed HEAD into a temporary folder (a fresh clone has no ``__pycache__``,
so numba's cache is cold, as after an install; ``NUMBA_CACHE_DIR`` points at an empty folder too),
opens headless Chromium first (a newcomer's browser is already open), starts ``streamlit run
app.py`` in the clone with this virtualenv's Python and visits it. Seconds from the server's start:

- ``health``: ``/_stcore/health`` answers ok;
- ``sidebar``: the sidebar's page links first appear; every distinct list of them seen is recorded
  (the first must read Home, never the script's name "app");
- ``title`` and ``summary``: the home page's title, then the shipped sample's summary (the
  Documents metric says 2,396): the first useful page;
- ``compiled``: Curves, opened from the sidebar once the summary is there, ends its wait for the
  background compilation ("Compiled the numba kernels in N s"); ``curves`` when its chart is drawn.
  The kernel and step counts are read from the progress text shown while it waits.

``--load N`` runs N busy-loop processes for the whole run (started and stopped here, by PID). The
machine's 1-minute load average is read before and after. The entry for the mode ("nothing added"
or "N busy processes added") is replaced in bench/results/first_start.json, and first_start.md is
rewritten from it. On a machine shared with other work neither mode is idle: read the load average.
"""

from __future__ import annotations

from bench.record import RESULTS_DIR, load
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = RESULTS_DIR / "first_start.json"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
SUMMARY = ("Documents", "2,396")  # the shipped sample's first metric
POLL = 0.1


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _load() -> float:
    return round(load(), 2)


def _busy(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def _healthy(url: str) -> bool:
    try:
        return urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).read() == b"ok"
    except OSError:
        return False


def measure(clone: Path, page, timeout: float = 1800) -> dict:
    """Start the app in ``clone`` and time what ``page`` (a Playwright page) shows; see the module doc."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, PYTHONPATH=str(clone), NUMBA_CACHE_DIR=str(clone / ".numba-cache"))
    log = open(clone / "streamlit.log", "wb")
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.address",
         "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"], cwd=clone, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True)
    got: dict = {"sidebar_lists": []}
    since = lambda: round(time.monotonic() - t0, 2)  # noqa: E731
    try:
        while not _healthy(url):
            if proc.poll() is not None or time.monotonic() - t0 > 120:
                raise SystemExit(f"streamlit did not start:\n{(clone / 'streamlit.log').read_text()}")
            time.sleep(POLL)
        got["health"] = since()
        page.goto(url)
        main = page.locator('[data-testid="stMain"]')
        metric = page.locator('[data-testid="stMetric"]', has_text=SUMMARY[0]).first
        while "summary" not in got:
            links = page.locator('[data-testid="stSidebarNavLink"]').all_inner_texts()
            if links and (not got["sidebar_lists"] or got["sidebar_lists"][-1][1] != links):
                got["sidebar_lists"].append((since(), [x.strip() for x in links]))
                got.setdefault("sidebar", since())
            if "title" not in got and main.get_by_text("MinHash-LSH calibration workbench").count():
                got["title"] = since()
            if metric.count() and SUMMARY[1] in metric.inner_text():
                got["summary"] = since()
                got["home_note"] = " ".join(page.locator('[data-testid="stProgress"]').all_inner_texts())
            if time.monotonic() - t0 > timeout:
                raise SystemExit("the home page never showed the sample's summary")
            time.sleep(POLL)
        page.locator('[data-testid="stSidebarNavLink"]', has_text="Curves").first.click()
        while "compiled" not in got:
            text = main.inner_text() if main.count() else ""
            for m in re.finditer(r"step \d+ of (\d+)", text):
                got["steps"] = int(m.group(1))
            for m in re.finditer(r"\d+ of (\d+) kernels compiled", text):
                got["kernels"] = int(m.group(1))
            m = re.search(r"Compiled the numba kernels in (\d+) s", text)
            if m:
                got["compiled"], got["compile_reported_s"] = since(), int(m.group(1))
            elif "background compilation stopped" in text:
                raise SystemExit(f"the compilation failed: {text[:500]}")
            if time.monotonic() - t0 > timeout:
                raise SystemExit("the kernels never finished compiling")
            time.sleep(0.5)
        page.locator('[data-testid="stVegaLiteChart"]').first.wait_for(timeout=timeout * 1000)
        got["curves"] = since()
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    return got


def run(load: int) -> dict:
    from playwright.sync_api import sync_playwright
    busy = _busy(load)
    try:
        time.sleep(5 if load else 0)  # the busy processes take their cores first
        before = _load()
        with tempfile.TemporaryDirectory(prefix="calib-first-start-") as tmp:
            clone = Path(tmp) / "calib"
            subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(clone)], check=True)
            commit = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short", "HEAD"], check=True,
                                    capture_output=True, text=True).stdout.strip()
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                page = browser.new_page(viewport={"width": 1400, "height": 1600})
                got = measure(clone, page)
                browser.close()
        after = _load()
    finally:
        for b in busy:
            b.kill()
            b.wait()
    return {"mode": f"{load} busy processes added" if load else "nothing added", "busy_processes": load, "load_before": before,
            "load_after": after, "cpus": os.cpu_count(), "commit": commit,
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), **got}


def report(entries: list[dict]) -> str:
    rows = ["| mode | load avg before / after | health s | sidebar s (first links) | title s | summary s | "
            "kernels | steps | compiled s | Curves drawn s | commit |", "|" + " --- |" * 11]
    for e in entries:
        first = ", ".join(e["sidebar_lists"][0][1][:3]) + ", ..." if e["sidebar_lists"] else "-"
        rows.append(f"| {e['mode']} | {e['load_before']} / {e['load_after']} | {e['health']} | {e['sidebar']} "
                    f"({first}) | {e.get('title', '-')} | {e['summary']} | {e.get('kernels', '-')} | "
                    f"{e.get('steps', '-')} | {e['compiled']} | {e['curves']} | {e['commit']} |")
    return ("# First start on a fresh clone (bench/speed/first_start.py)\n\n"
            f"{entries[0]['cpus']} CPUs shared with other work; seconds from `streamlit run` on a fresh clone "
            "(numba's cache cold) until: the health check answers, the sidebar's links appear, the home page's "
            "title, the shipped sample's summary (the first useful page), the Curves page's wait for the background "
            "compilation ends, its chart is drawn. Load: the 1-minute load average before and after the run; "
            "\"N busy processes added\" ran N busy loops of ours beside it; the machine is shared, so neither "
            "mode is idle.\n\n" + "\n".join(rows) + "\n")


def _entry(entries: list[dict], busy: bool) -> dict:
    return next(e for e in entries if (e["busy_processes"] > 0) == busy)


def prose(entries: list[dict]) -> str:
    """The README's and Getting started's sentence on the first start, from the measured entries (a test
    checks that both pages hold it as written here)."""
    alone, busy = _entry(entries, False), _entry(entries, True)
    load = lambda e: "-".join(f"{x:g}" for x in sorted({e["load_before"], e["load_after"]}))  # noqa: E731
    return (f"On a fresh clone the home page showed the shipped sample's summary {alone['summary']:.1f} s after "
            f"`streamlit run` (load average {load(alone)} before and after, on {alone['cpus']} cores) and "
            f"{busy['summary']:.1f} s with {busy['busy_processes']} busy processes beside it (load "
            f"{load(busy)}); meanwhile the numba kernels compiled in the background "
            f"in {alone['compiled'] / 60:.1f} and {busy['compiled'] / 60:.1f} minutes, and only the pages that "
            f"compute waited for them (`bench/speed/first_start.py`, {alone['date'][:10]}).")


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from calib.base.atomic import write_text_atomic
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--load", type=int, default=0, help="busy-loop processes beside the run (default 0)")
    a = ap.parse_args()
    entry = run(a.load)
    print(json.dumps(entry, indent=1))
    entries = json.loads(RESULTS.read_text()) if RESULTS.is_file() else []
    entries = [e for e in entries if e["mode"] != entry["mode"]] + [entry]
    entries.sort(key=lambda e: e["busy_processes"])
    write_text_atomic(RESULTS, json.dumps(entries, indent=1) + "\n")
    write_text_atomic(RESULTS.with_suffix(".md"), report(entries))


if __name__ == "__main__":
    main()
