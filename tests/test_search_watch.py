"""Watching the default search: progress that never goes back and ends at 100%, measured rows handed
out as they are scored, and a stop that keeps what was measured."""

from __future__ import annotations

import pandas as pd
import pytest
from _steep import steep_sample

from calib.search.from_sample import search
from calib.search.workspace import Workspace


@pytest.fixture(scope="module")
def ws():
    return Workspace(steep_sample(0, pairs=30, hard=6, singletons=20))


@pytest.fixture(scope="module")
def watched(ws):
    """The default search on ``ws`` run once, watched: its result, the progress calls and the batches handed out."""
    seen, batches = [], []
    found = search(ws, progress=lambda f, m: seen.append((f, m)), measured=batches.append)
    return found, seen, batches


@pytest.mark.slow
def test_progress_is_monotone_reaches_one_and_names_each_step(watched):
    found, seen, batches = watched
    fractions = [f for f, _ in seen]
    assert all(0.0 <= f <= 1.0 for f in fractions)
    assert all(b >= a for a, b in zip(fractions, fractions[1:])), "progress went back"
    assert fractions[-1] == 1.0 and seen[-1][1] == "done"
    steps = {m.split(":")[0] for _, m in seen}
    assert {"first pass", "second pass, around the front", "seed check"} <= steps
    assert any(m.startswith("second pass, exploration: round 1") for _, m in seen)
    # every measured row was handed out, batch by batch, as it was scored
    handed = pd.concat(batches, ignore_index=True)
    assert sorted(handed["config_fingerprint"]) == sorted(found.results["config_fingerprint"])
    assert len(batches) >= 3 and not found.stopped


@pytest.mark.slow
def test_stop_between_settings_keeps_the_rows_measured(ws, watched):
    batches, calls = [], []

    def stop():  # asked between settings: stop once a few groups of the first pass are done
        calls.append(1)
        return len(calls) > 3

    full = watched[0]  # the same search on the same workspace, not stopped
    found = search(ws, stop=stop, measured=batches.append)
    assert found.stopped and "stopped on request" in found.added_text()
    n = len(found.results)
    assert 0 < n < int((full.results["search_pass"] == 1).sum())  # part of the first pass, nothing after
    assert set(found.results["search_pass"]) == {1}
    assert found.exploration is None and found.check is None
    # the rows kept are the ones the full search measures for the same configurations, figure for figure
    same = full.results.set_index("config_fingerprint").loc[found.results["config_fingerprint"]]
    pd.testing.assert_series_equal(same["pair_recall"].reset_index(drop=True),
                                   found.results["pair_recall"].reset_index(drop=True), check_names=False)
    assert sum(len(b) for b in batches) == n


def test_a_stop_before_the_first_row_ends_with_nothing_measured(ws):
    """Stop pressed at once: the search ends (progress at 100%, 'stopped') with no row and no pick,
    and says it stopped, instead of failing on a table without columns."""
    seen = []
    found = search(ws, stop=lambda: True, progress=lambda f, m: seen.append((f, m)))
    assert found.stopped and found.best is None and len(found.results) == 0
    assert seen[-1] == (1.0, "stopped")
    assert "stopped on request" in found.added_text()
    assert {"pair_recall", "false_removal_rate", "search_pass"} <= set(found.results.columns)
