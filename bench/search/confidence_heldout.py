"""The ``--confidence 0.95`` pick against the point-estimate pick, on whole labeled corpora larger than their sample.

A corpus here is labeled whole (its groups: same group = duplicate, every other pair not), so a
configuration's false-removal rate on all of it is known exactly. ``--draws`` samples of ``--share`` of
its documents are drawn (uniform, seeded); on each, the default search (as ``calib sweep`` runs it: grid
from the sample, second pass with the exploration, seed check) picks twice: by the point estimate (the
false-removal rate within the budget) and with ``confidence=0.95`` (its one-sided 95% upper bound within
the budget). Each pick is then evaluated on the whole corpus. Reported per draw: each pick's rate on the
sample with the stated P(rate > budget), its rate and pair recall on the whole corpus, and whether the
whole corpus exceeds the budget; in total, how often each rule's pick exceeded it.

Corpora: ``records`` (``bench/corpora/person_records.py``: short generated person records, typos and
swapped fields, different people sharing names), ``lookalikes`` (``bench/corpora/rare.py`` made dense:
edited duplicate families beside look-alike groups built on a shared template, which are not
duplicates) and any labeled sample folder, e.g. the manual pages of ``python -m bench.corpora.held_out
manpages``, given as ``NAME:PATH``.

    PYTHONPATH=. python -m bench.search.confidence_heldout --corpus records --corpus manpages:/tmp/manpages
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from bench.record import RESULTS_DIR, load, machine, write_result

BUDGET = 0.01
CONFIDENCE = 0.95


def lookalikes(n: int = 4000, max_edit: float = 0.35, seed: int = 3):
    """``bench/corpora/rare.py``'s corpus made dense and hard: duplicate families (up to ``max_edit`` of the
    words replaced) beside as many look-alike groups (a shared template of 45-85% of the words, not
    duplicates), random-word documents around them; labeled whole by the families."""
    import pandas as pd

    from bench.corpora.rare import build
    from calib.reading.sample import from_frames
    c = build(n, dup_pairs=n / 3, lookalikes=1.0, max_edit=max_edit, seed=seed)
    group = pd.Series([f"f{f}" if f >= 0 else None for f in c.family], dtype=object)
    docs = pd.DataFrame({"id": c.ids, "text": c.texts, "group": group})
    return from_frames(docs, name=f"lookalikes_{n}_{max_edit:g}_{seed}", slice_columns=())


def corpus(spec: str, records: int):
    """The whole labeled corpus named by ``spec``: 'records', 'lookalikes[:DOCS:MAX_EDIT]' or 'NAME:PATH'
    (a sample folder)."""
    if spec == "records":
        from bench.corpora.person_records import person_records
        return "person records", person_records(records, seed=7)
    if spec.startswith("lookalikes"):
        n, edit = (spec.split(":")[1:] + ["4000", "0.35"][len(spec.split(":")) - 1:])[:2]
        return f"look-alikes (edits up to {float(edit):.0%})", lookalikes(int(n), float(edit))
    name, _, path = spec.partition(":")
    from calib.reading.samples import load_sample
    return name, load_sample(Path(path))


def subset(sample, share: float, seed: int):
    """A uniform sample of ``share`` of the corpus's documents (groups kept: their pairs stay labeled)."""
    from calib.reading.sample import from_frames
    rng = np.random.default_rng(seed)
    keep = np.sort(rng.choice(sample.n, int(round(share * sample.n)), replace=False))
    return from_frames(sample.docs.iloc[keep], name=f"{sample.name}_draw{seed}", slice_columns=sample.slice_columns)


def pick_figures(found, whole_ws) -> dict:
    """A search's pick: its sample figures, the stated exceedance, and its figures on the whole corpus."""
    from calib.estimates.exceedance import exceed_probability
    from calib.search.config import config_from_row
    from calib.search.recommend import config_text
    from calib.search.sweep import evaluate
    best = found.best
    if best is None:
        return {"config": "nothing fits", "sample_frr": np.nan, "p_exceed": np.nan, "whole_frr": np.nan,
                "whole_recall": np.nan, "whole_false": 0, "whole_labeled": 0}
    row = evaluate(whole_ws, config_from_row(best)).row
    return {"config": config_text(best), "sample_frr": float(best["false_removal_rate"]),
            "sample_high": float(best["false_removal_rate_high"]), "sample_recall": float(best["pair_recall"]),
            "p_exceed": exceed_probability(best["false_removal_rate"], best["false_removal_rate_low"],
                                           best["false_removal_rate_high"], BUDGET),
            "whole_frr": float(row["false_removal_rate"]), "whole_recall": float(row["pair_recall"]),
            "whole_false": int(row.get("false_removals", 0) or 0),
            "whole_labeled": int(row.get("labeled_removals", 0) or 0)}


def run(spec: str, draws: int, share: float, records: int, done=lambda rows: None) -> list[dict]:
    """Every draw of one corpus, both rules; ``done`` is called with the rows after each draw."""
    from calib.search.from_sample import search
    from calib.search.workspace import Workspace
    name, whole = corpus(spec, records)
    whole_ws = Workspace(whole)
    out = []
    for seed in range(draws):
        sample = subset(whole, share, seed)
        for rule, confidence in (("point", None), ("confidence 0.95", CONFIDENCE)):
            t0 = time.perf_counter()
            busy = load()
            found = search(Workspace(sample), max_false_removal_rate=BUDGET, confidence=confidence)
            seconds = time.perf_counter() - t0
            fig = pick_figures(found, whole_ws)
            out.append({"corpus": name, "corpus_docs": whole.n, "draw": seed, "sample_docs": sample.n, "rule": rule,
                        "seconds": seconds, "load": busy, **fig})
            print(f"{name} draw {seed} {rule}: {fig['config']} sample {fig['sample_frr']:.4f} "
                  f"P(>budget) {fig['p_exceed']:.3f} whole {fig['whole_frr']:.4f} "
                  f"({fig['whole_false']}/{fig['whole_labeled']}) recall {fig['whole_recall']:.3f} "
                  f"[{seconds:.0f} s]", file=sys.stderr)
        done(out)
    return out


def _p(x, digits: int = 2) -> str:
    """A rate as a percentage, '-' where there is none (nothing fit the rule)."""
    return "-" if x != x else f"{100 * x:.{digits}f}%"


def report(rows: list[dict], argv: list[str]) -> str:
    import pandas as pd
    t = pd.DataFrame(rows)
    lines = ["# The --confidence 0.95 pick against the point-estimate pick, on whole corpora",
             "",
             f"`python -m bench.search.confidence_heldout {' '.join(argv)}` ({machine()}; load average beside each "
             f"search). Budget {BUDGET:.0%}. Each draw is a uniform sample of the corpus's documents; each rule's "
             "pick is made by the default search on the sample and evaluated on the whole corpus (every pair "
             "labeled by its groups).",
             "",
             "| corpus | draw | sample docs / corpus docs | rule | pick | sample rate (95% upper) | stated P(rate > 1%) "
             "| whole-corpus rate (false / labeled removals) | whole-corpus pair recall | exceeds | seconds (load) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in t.itertuples():
        lines.append(f"| {r.corpus} | {r.draw} | {r.sample_docs:,} / {r.corpus_docs:,} | {r.rule} | {r.config} | "
                     f"{_p(r.sample_frr)} ({_p(getattr(r, 'sample_high', np.nan))}) | {_p(r.p_exceed, 1)} | "
                     f"{_p(r.whole_frr)} ({r.whole_false} / {r.whole_labeled}) | {_p(r.whole_recall, 1)} | "
                     f"{'yes' if r.whole_frr > BUDGET else 'no'} | {r.seconds:.0f} ({r.load:.1f}) |")
    lines += ["", "| corpus | rule | draws | whole corpus over the budget | mean whole-corpus rate | "
                  "max whole-corpus rate | mean whole-corpus pair recall | mean stated P(rate > 1%) |",
              "|---|---|---|---|---|---|---|---|"]
    for (c, rule), g in t.groupby(["corpus", "rule"], sort=False):
        lines.append(f"| {c} | {rule} | {len(g)} (a pick on {int(g['whole_frr'].notna().sum())}) | "
                     f"{int((g['whole_frr'] > BUDGET).sum())} | {_p(g['whole_frr'].mean())} | "
                     f"{_p(g['whole_frr'].max())} | {_p(g['whole_recall'].mean(), 1)} | {_p(g['p_exceed'].mean(), 1)} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", action="append", default=None,
                    help="'records', 'lookalikes' or NAME:PATH of a labeled sample folder (repeatable; "
                         "default: records)")
    ap.add_argument("--draws", type=int, default=3, help="samples drawn from each corpus (default: 3)")
    ap.add_argument("--share", type=float, default=0.5, help="share of the corpus's documents in a sample (0.5)")
    ap.add_argument("--records", type=int, default=3000, help="people in the person-records corpus (3000)")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "confidence_heldout.md")
    argv = sys.argv[1:] if argv is None else argv
    a = ap.parse_args(argv)
    rows: list[dict] = []
    for spec in a.corpus or ["records"]:  # the report so far is written after each draw
        rows += run(spec, a.draws, a.share, a.records, done=lambda more: write_result(a.out, report(rows + more, argv)))
    text = report(rows, argv)
    print(text)
    write_result(a.out, text)


if __name__ == "__main__":
    main()
