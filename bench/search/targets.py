"""Each target's own pick against calib's unconstrained pick, on the shipped sample.

    PYTHONPATH=. python -m bench.search.targets [--pre-steps strip_lines] [--out bench/results/search_targets.md]

For every target (calib's engines, datasketch, Milvus, datatrove, text-dedup, NeMo Curator): the
default search for it (``calib sweep --target NAME``: calib.search.from_sample.search with the
target's capabilities), its pick's pair recall and false-removal rate by that target's evidence
(calib.production.targets.evidence, what targets.json states), beside the same target's evidence for
calib's unconstrained pick (what an export without --target gives it today). ``--pre-steps`` lets
every tool take the named steps (e.g. boilerplate stripping with the exported stoplist) as a pre-step:
what the search reaches once the snippets run them.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

from bench.record import RESULTS_DIR, load, machine, write_result

BUDGET = 0.01


def _capabilities(pre_steps: tuple[str, ...]) -> dict:
    """Every target's capabilities, the tools' with ``pre_steps`` added (their modules' projection reads them)."""
    from calib.production import targets as T
    if pre_steps:
        for module in T._modules().values():
            module.CAPABILITIES = replace(module.CAPABILITIES, pre_steps=tuple(pre_steps))
    return T.capabilities()


def _figures(e: dict | None) -> str:
    if not e:
        return "cannot run | - | -"
    return f"{e['pair_recall']:.1%} | {e['false_removal_rate']:.2%} | {e['removed']}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=Path, default=Path("data/sample"))
    ap.add_argument("--pre-steps", default="", help="comma-separated steps every tool runs first, e.g. strip_lines")
    ap.add_argument("--targets", default="", help="comma-separated targets (default: all)")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    from calib.production import targets as T
    from calib.reading.samples import load_sample
    from calib.search.config import config_from_row
    from calib.search.from_sample import search
    from calib.search.workspace import Workspace

    pre = tuple(x for x in a.pre_steps.split(",") if x)
    caps = _capabilities(pre)
    names = [x for x in a.targets.split(",") if x] or list(caps)
    sample = load_sample(a.sample)
    ws = Workspace(sample)
    lines, picks = [], {}
    started = load()
    for name in ["calib", *[n for n in names if n != "calib"]]:
        t0, busy = time.perf_counter(), load()
        found = search(ws, max_false_removal_rate=BUDGET, target=caps[name])
        seconds = time.perf_counter() - t0
        picks[name] = None if found.best is None else config_from_row(found.best)
        row = found.best
        lines.append((name, seconds, busy, row, found.closest_text))
        print(f"{name}: {seconds:.0f} s, load {busy:.1f}: " + ("nothing fits" if row is None else
              f"{picks[name]} pair recall {row['pair_recall']:.3f} frr {row['false_removal_rate']:.4f}"), flush=True)
    calib_ev = T.evidence(ws, picks["calib"]) if picks["calib"] is not None else {}
    out = [f"# Each target's own pick against calib's (bench/search/targets.py)", "",
           f"`PYTHONPATH=. python -m bench.search.targets{' --pre-steps ' + a.pre_steps if pre else ''}` on "
           f"{sample.name} ({sample.n:,} documents), false-removal budget {BUDGET:g}; {machine()}; load average "
           f"{started:.1f} at the start (2 shared cores: seconds are upper bounds); {time.strftime('%Y-%m-%d')}.",
           "" if not pre else f"Every tool given {', '.join(pre)} as a pre-step (its snippet runs it first).", "",
           "Figures are each target's own evidence (targets.json: the configuration as that tool runs it).", "",
           "| target | its own pick | pair recall | false-removal rate | removed | search s | calib's pick run by "
           "the target: pair recall | false-removal rate | removed |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, seconds, busy, row, closest in lines:
        cfg = picks[name]
        if cfg is None:
            own = f"nothing within the budget ({closest}) | - | - | -"
        else:
            e = T.evidence(ws, cfg)[name] if name != "calib" else {k: row[k] for k in
                                                                   ("pair_recall", "false_removal_rate", "removed")}
            own = f"{cfg} | {_figures(e)}"
        theirs = _figures(calib_ev.get(name)) if name != "calib" else _figures(
            {k: lines[0][3][k] for k in ("pair_recall", "false_removal_rate", "removed")} if lines[0][3] is not None
            else None)
        out.append(f"| {name} | {own} | {seconds:.0f} | {theirs} |")
    text = "\n".join(out) + "\n"
    print(text)
    path = a.out or RESULTS_DIR / f"search_targets{'_' + '_'.join(pre) if pre else ''}.md"
    write_result(path, text)


if __name__ == "__main__":
    main()
