"""The first start as the README and Getting started tell it: their figures are bench/speed/first_start.py's
measurement (bench/results/first_start.json), and no page types a kernel or step count by hand that the
warm-up does not have."""

import json
import re
from pathlib import Path

import pytest

from bench.speed.first_start import RESULTS, prose

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def flat(text: str) -> str:
    return " ".join(text.split())


def test_readme_and_getting_started_state_the_measured_first_start():
    entries = json.loads(RESULTS.read_text())
    assert any(e["busy_processes"] == 0 for e in entries) and any(e["busy_processes"] for e in entries)
    for e in entries:
        assert e["summary"] < e["compiled"]  # the summary came before the kernels: the home page did not wait
        assert e["sidebar_lists"][0][1][0] == "Home", e["sidebar_lists"]  # the first links drawn read Home
        assert not any("app" in links for _, links in e["sidebar_lists"])
    sentence = flat(prose(entries))
    for page in (ROOT / "README.md", ROOT / "docs" / "getting-started.md"):
        assert sentence in flat(page.read_text(encoding="utf-8")), page


class _Stop(Exception):
    pass


def warm_up_steps() -> int:
    """How many steps the warm-up has: the first progress call says "step 1 of N" (then stop it)."""
    from calib.warmup import warm_up
    said = []

    def first(fraction, message):
        said.append(message)
        raise _Stop

    with pytest.raises(_Stop):
        warm_up(progress=first)
    return int(re.match(r"step 1 of (\d+):", said[0]).group(1))


def test_no_page_types_a_kernel_or_step_count_the_warm_up_does_not_have():
    from calib.warmup import kernel_names
    kernels, steps = len(kernel_names()), warm_up_steps()
    for page in PAGES:
        text = flat(page.read_text(encoding="utf-8"))
        for m in re.finditer(r"\b(\d+) (?:numba )?kernels\b", text):
            assert int(m.group(1)) == kernels, f"{page.name}: {m.group(0)!r}, the warm-up has {kernels}"
        for m in re.finditer(r"\bstep \d+ of (\d+)\b", text):
            assert int(m.group(1)) == steps, f"{page.name}: {m.group(0)!r}, the warm-up has {steps} steps"
