"""The app under load: 4 browser sessions on ONE ``streamlit run`` server.

Each session (its own thread, its own ``sync_playwright()`` and Chromium:
sync Playwright objects must stay on the thread that created them) opens the
Sweep page, chooses a DIFFERENT split (16x8, 32x4, 8x16, 64x2) and runs the
sweep; the four sweeps are started at the same moment. Then:

* each session's results caption names its own split and no other, and its
  recommendation (when there is one) uses its own b and r: no session sees
  another's results (session state is per session);
* every session reports the same Workspace (same id), built ONCE by the
  server (``appui.engine.BUILDS``), holding one shingle set and ONE signature
  matrix: the shingling and MinHash work is shared through ``st.cache_resource``;
  only the candidate sets differ (one per split, four in the end).
"""

from __future__ import annotations

import re
import threading
import time

import pytest

from _app_server import serve
from test_e2e_browser import ARGS, CHROMIUM, idle, only_128_and_a_split_list, sample_grid

# the Sweep page starts from the grid chosen from the sample (as calib sweep does)
N_REP, N_T = (lambda g: (len(g.representations), len(g.thresholds)))(sample_grid())

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # a real browser: never in the fast loop

SPLITS = ["16x8", "32x4", "8x16", "64x2"]
ENGINE = re.compile(r"Engine cache \(shared by every browser session on this sample\): workspace (\w+), "
                    r"built (\d+) times? by this server; it holds (\d+) shingle sets?, (\d+) signature "
                    r"matri(?:x|ces), (\d+) candidate sets?")


def main_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text().replace("\n", " ")


def engine_info(text: str) -> dict:
    m = ENGINE.search(text)
    assert m, f"no engine caption in: {text[-600:]}"
    ws, builds, sets, sigs, cands = m.groups()
    return {"workspace": ws, "builds": int(builds), "shingle_sets": int(sets), "signature_matrices": int(sigs),
            "candidate_sets": int(cands)}


def session(url: str, split: str, start: threading.Barrier, out: dict) -> None:
    from playwright.sync_api import sync_playwright

    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 1400})
                page.set_default_timeout(120_000)
                page.goto(f"{url}/Sweep")
                idle(page, "Run the search")
                only_128_and_a_split_list(page)
                box = page.get_by_label("Splits (bands x rows)")
                box.fill(split)
                box.press("Enter")
                idle(page, "num_perm 128 x 1 splits")
                assert box.input_value() == split
                start.wait(timeout=180)  # the four sweeps start together
                t0 = time.monotonic()
                page.get_by_role("button", name="Run sweep").click()
                idle(page, "Results of a grid of your own")
                out["seconds"] = time.monotonic() - t0
                text = main_text(page)
                assert page.locator('[data-testid="stException"]').count() == 0
                m = re.search(r"Results of a grid of your own: .*?thresholds [\d., -]*?\.(?=\s|$)", text)
                out["summary"] = m.group(0) if m else text
                rec = re.search(r"Recommended under a [\d.]+% budget: (.*?) (?:Pair recall|Candidate recall)", text)
                out["recommended"] = rec.group(1) if rec else None
                out["engine"] = engine_info(text)
            finally:
                browser.close()
    except BaseException as exc:  # noqa: BLE001 - reported by the main thread
        out["error"] = repr(exc)
        start.abort()


@pytest.fixture(scope="module")
def server(tmp_path_factory, unlabeled):
    """A server of its own: what it has built is counted from its start."""
    with serve(tmp_path_factory.mktemp("server"), allowed=[unlabeled]) as url:
        yield url


def test_four_sessions_one_server(server):
    t0 = time.monotonic()
    start = threading.Barrier(len(SPLITS))
    outs = [dict() for _ in SPLITS]
    threads = [threading.Thread(target=session, args=(server, split, start, out), daemon=True)
               for split, out in zip(SPLITS, outs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert not any(t.is_alive() for t in threads), "a session hung"
    for split, out in zip(SPLITS, outs):
        assert "error" not in out, f"session {split}: {out['error']}"
        # its own grid, not another session's
        assert f"splits {split};" in out["summary"], (split, out["summary"])
        assert f" {N_T * N_REP} configurations" in out["summary"], out["summary"]
        for other in SPLITS:
            if other != split:
                assert other not in out["summary"], (split, out["summary"])
        if out["recommended"] is not None:
            b, r = split.split("x")
            assert f"b={b} r={r}," in out["recommended"], (split, out["recommended"])
    infos = [out["engine"] for out in outs]
    assert len({i["workspace"] for i in infos}) == 1, infos  # one shared Workspace
    assert all(i["builds"] == 1 for i in infos), infos  # built once, although 4 sessions asked at once
    # shingling/MinHash once per representation of the default grid, whatever the number of sessions
    assert all(i["shingle_sets"] == N_REP and i["signature_matrices"] == N_REP for i in infos), infos
    assert max(i["candidate_sets"] for i in infos) == len(SPLITS) * N_REP, infos  # one per split and representation
    assert all(1 <= i["candidate_sets"] <= len(SPLITS) * N_REP for i in infos), infos
    assert sum(out["recommended"] is not None for out in outs) >= 2, outs
    elapsed = time.monotonic() - t0
    for split, out in zip(SPLITS, outs):
        print(f"{split}: {out['summary']} | recommended: {out['recommended']} | engine: {out['engine']}")
    print(f"4 sessions in {elapsed:.1f} s; sweep seconds per session: "
          + ", ".join(f"{s}={o['seconds']:.1f}" for s, o in zip(SPLITS, outs)))  # for the record: no timed assertion
