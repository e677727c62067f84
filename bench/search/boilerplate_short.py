"""What boilerplate stripping and a minimum length buy, with intervals.

1. Stripping, on the shipped sample (``data/sample``): per line share s (0 = off), at the same
   thresholds and LSH split, the false verification rate of the ``boilerplate`` category (its 64
   not_duplicate pairs: distinct bodies inside one site's header and footers) and the pair recall of
   every other category's duplicate pairs (Wilson 95% intervals), with the row's pair recall and
   false-removal rate (their cluster-bootstrap intervals).
2. Minimum length, on the shipped sample plus short records built from real text: 150 "headlines"
   (the first 6-9 words of paragraphs of ``data/base``), each re-posted in capitals with doubled
   spaces (the same group: a duplicate) and a sibling headline with its last word replaced by another
   word of its paragraph (a group of its own: not a duplicate). Every cross-group pair is labeled, so
   each removal is a true or false one. False-removal rate overall and among the short documents,
   without and with ``min_shingles`` (rules exclude and exact).

    python -m bench.search.boilerplate_short [--out bench/results/boilerplate_short.md]
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from calib.search.config import Config
from calib.sketches.represent import Representation
from calib.reading.sample import from_frames
from calib.reading.samples import load_sample
from calib.estimates.stats import wilson
from calib.search.sweep import evaluate, slice_breakdown
from calib.search.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9)
SHARES = (0.0, 0.005, 0.01, 0.02, 0.05)


def _ci(k: int, n: int) -> str:
    if n == 0:
        return "n/a (0 pairs)"
    lo, hi = wilson(k, n)
    return f"{k / n:.3f} [{float(lo):.3f}, {float(hi):.3f}] ({k}/{n})"


def _row_ci(row: dict, name: str) -> str:
    v, lo, hi = row.get(name), row.get(f"{name}_low"), row.get(f"{name}_high")
    if v is None or not np.isfinite(v):
        return "n/a"
    return f"{v:.3f} [{lo:.3f}, {hi:.3f}]"


def stripping(reps) -> list[str]:
    sample = load_sample(ROOT / "data" / "sample")
    ws = Workspace(sample)
    lines = ["## 1. Boilerplate stripping on the shipped sample", "",
             "Exact verification, LSH 16 bands x 8 rows of 128 hashes, connected clusters; the same thresholds "
             "stripped and unstripped. `boilerplate FVR`: verified share of the boilerplate category's "
             "not_duplicate pairs (Wilson 95%). `other recall`: verified share of the duplicate pairs of every "
             "other category (Wilson 95%). `pair recall` and `false-removal` are the results row's (cluster "
             "bootstrap 95%).", ""]
    for base in reps:
        lines += [f"### {base.label()}", "",
                  "| strip_lines | stoplist lines | threshold | boilerplate FVR | other recall | pair recall | "
                  "false-removal | removed |", "|---|---|---|---|---|---|---|---|"]
        for share in SHARES:
            rep = base.with_(strip_lines=share)
            st = ws.stripped(rep)[0]
            for t in THRESHOLDS:
                cfg = Config(rep, b=16, r=8, threshold=t)
                ev = evaluate(ws, cfg)
                lab = ev.labeled
                bp = lab[(lab["category"] == "boilerplate") & (lab["label"] == 0)]
                other = lab[(lab["category"] != "boilerplate") & (lab["label"] == 1)]
                lines.append(f"| {share:g} | {0 if st is None else len(st)} | {t:g} | "
                             f"{_ci(int(bp['verified'].sum()), len(bp))} | "
                             f"{_ci(int(other['verified'].sum()), len(other))} | {_row_ci(ev.row, 'pair_recall')} | "
                             f"{_row_ci(ev.row, 'false_removal_rate')} | {ev.row.get('removed')} |")
        lines.append("")
    # per category at one threshold: what stripping changes besides the boilerplate category
    base, t = reps[0], 0.5
    lines += [f"Per category, {base.label()} at threshold {t} (slice_breakdown: verified share, Wilson 95%):", "",
              "| category | metric | unstripped | strip_lines 0.01 |", "|---|---|---|---|"]
    parts = []
    for share in (0.0, 0.01):
        sb = slice_breakdown(evaluate(ws, Config(base.with_(strip_lines=share), b=16, r=8, threshold=t)), sample)
        sb = sb[(sb["level"] == "pair") & (sb["metric"] != "candidate_recall")]
        parts.append({(r.value, r.metric): f"{r.rate:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] ({r.k}/{r.n})"
                      for r in sb.itertuples()})
    for key in sorted(parts[0]):
        lines.append(f"| {key[0]} | {key[1]} | {parts[0][key]} | {parts[1].get(key, 'n/a')} |")
    return lines + [""]


def headlines(n: int = 150, seed: int = 0) -> pd.DataFrame:
    """Short records from real paragraphs (see the module docstring): id, text, group."""
    rng = np.random.default_rng(seed)
    paras = []
    with gzip.open(ROOT / "data" / "base" / "base_texts.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            paras += [p.split() for p in json.loads(line)["paragraphs"] if len(p.split()) >= 12]
    pick = rng.choice(len(paras), size=n, replace=False)
    rows = []
    for k, p in enumerate(pick.tolist()):
        words = paras[p]
        m = int(rng.integers(6, 10))
        head = words[:m]
        other = [w for w in words[m:] if w.lower() != head[-1].lower()]
        sibling = head[:-1] + [other[int(rng.integers(len(other)))]]
        rows += [(f"h{k}", " ".join(head), f"h{k}"), (f"h{k}r", "  ".join(head).upper(), f"h{k}"),
                 (f"h{k}s", " ".join(sibling), f"h{k}s")]
    return pd.DataFrame(rows, columns=["id", "text", "group"])


def minimum_length(reps) -> list[str]:
    sample = load_sample(ROOT / "data" / "sample")
    docs = sample.docs[["id", "text", "group"]].copy()
    short = headlines()
    p = sample.pairs
    pairs = pd.DataFrame({"id_a": sample.ids[p["i"].to_numpy()], "id_b": sample.ids[p["j"].to_numpy()],
                          "label": p["is_duplicate"].to_numpy(), "category": p["category"].to_numpy()})
    mixed = from_frames(pd.concat([docs, short], ignore_index=True), pairs, name="sample+headlines",
                        slice_columns=())
    ws = Workspace(mixed)
    is_short = np.r_[np.zeros(len(docs), bool), np.ones(len(short), bool)]
    lens = short["text"].str.len()
    lines = ["## 2. Minimum length on a corpus with short texts", "",
             f"The shipped sample ({len(docs)} documents) plus {len(short)} short records ({len(short) // 3} "
             f"headlines of {lens.min()}-{lens.max()} characters from `data/base` paragraphs, each re-posted in "
             "capitals (duplicate) and with its last word changed (not a duplicate)). LSH 16 x 8 of 128 hashes, "
             "exact verification, connected clusters. `false-removal` is the row's (cluster bootstrap 95%); "
             "`short false-removal`: false removals among the removed short records (Wilson 95%); "
             "`short recall`: the headline/capitals pairs verified (Wilson 95%).", ""]
    for rep, mins in reps:
        lines += [f"### {rep.label()}", "",
                  "| min_shingles | rule | threshold | short docs | false-removal | short false-removal | "
                  "short recall | pair recall | removed |", "|---|---|---|---|---|---|---|---|---|"]
        for m, rule in [(0, "exclude")] + [(m, r) for m in mins for r in ("exclude", "exact")]:
            for t in (0.5, 0.7, 0.8):
                ev = evaluate(ws, Config(rep, b=16, r=8, threshold=t, min_shingles=m, short_docs=rule))
                out = ev.outcomes
                rem = out["removed"].to_numpy() & is_short
                fr = int((out["false_removal"].to_numpy() & is_short).sum())
                lab = ev.labeled
                sp = lab[(lab["label"] == 1) & lab["id_a"].str.startswith("h") & lab["id_b"].str.startswith("h")]
                lines.append(f"| {m} | {rule if m else '-'} | {t:g} | {ev.row.get('short_documents', 0)} | "
                             f"{_row_ci(ev.row, 'false_removal_rate')} | {_ci(fr, int(rem.sum()))} | "
                             f"{_ci(int(sp['verified'].sum()), len(sp))} | {_row_ci(ev.row, 'pair_recall')} | "
                             f"{ev.row.get('removed')} |")
        lines.append("")
    return lines


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="bench/results/boilerplate_short.md")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    lines = ["# Boilerplate stripping and a minimum length", "",
             "Written by `python -m bench.search.boilerplate_short`.", ""]
    lines += stripping([Representation(shingle="char", k=5), Representation(shingle="word", k=5)])
    lines += minimum_length([(Representation(shingle="char", k=5), (40, 80)),
                             (Representation(shingle="word", k=3), (8, 12))])
    lines.append(f"Total time: {time.perf_counter() - t0:.0f} s.")
    out = Path(a.out)
    tmp = out.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.replace(out)


if __name__ == "__main__":
    main()
