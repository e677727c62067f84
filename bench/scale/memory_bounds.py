"""Bounded memory on hostile corpora: peak RSS of `calib sweep` and `calib apply`, refused before they would exceed the budget.

    PYTHONPATH=. python -m bench.scale.memory --mode bounds [--out bench/results/memory_bounds.md]
    PYTHONPATH=. python -m bench.scale.memory_bounds [--out ...]   # the same

Four corpora, written as JSONL (ids d0, d1, ...):

* ``one-word``: 200,000 documents of one word each, drawn from the word list
  with Zipf weights 1/rank, so the commonest word is the whole text of
  thousands of documents (exact copies: word 5-grams of a one-word text are
  the text itself);
* ``404``: 50,000 documents of 20-60 words (bench/scale/memory.py's generator) and
  3,000 copies of one 404 page at random positions (53,000 documents);
* ``near-2%`` and ``near-60%``: 300,000 such documents of which 2% / 60%
  are near-duplicates of an earlier one (last word replaced or one appended).

For each corpus, in a fresh interpreter started by bench/scale/memory.py's ~10 MB
launcher (peak RSS = ``ru_maxrss`` of ``os.wait4`` on that child alone):

* ``python -m calib sweep --sample F --shingles word5 --num-perm 128
  --splits 16x8,32x4 --thresholds 0.5,0.8`` (exact verification, default
  ``--max-pairs`` 20,000,000): rows and their statuses;
* ``python -m calib apply`` of a config (word 5-grams, num_perm 128, b=16,
  r=8, exact J >= 0.8, connected, keep first) with the default
  ``--max-pairs`` 50,000,000, batches of 10,000: its summary, or its
  one-line refusal.
"""

from __future__ import annotations

from bench.record import RESULTS_DIR
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE_404 = ("404 Not Found. The page you requested could not be found on this server. It may have been "
            "moved or deleted, or the address may be mistyped. Return to the home page or use the search box "
            "above to find what you were looking for. Error reference: not found.")


def write_one_word(path: Path, n: int, words: list[str], seed: int = 0) -> dict:
    rng = random.Random(seed)
    weights = [1.0 / (k + 1) for k in range(len(words))]
    drawn = rng.choices(words, weights=weights, k=n)
    with open(path, "w", encoding="utf-8") as fh:
        for k, w in enumerate(drawn):
            fh.write(json.dumps({"id": f"d{k}", "text": w}) + "\n")
    counts: dict[str, int] = {}
    for w in drawn:
        counts[w] = counts.get(w, 0) + 1
    top = max(counts.values())
    return {"distinct texts": len(counts), "commonest text": f"{top:,} copies",
            "document pairs with J = 1": sum(c * (c - 1) // 2 for c in counts.values())}


def write_404(path: Path, n_docs: int, n_copies: int, words: list[str], seed: int = 0) -> dict:
    from bench.scale.memory import write_docs
    base = path.with_suffix(".base.jsonl")
    write_docs(base, n_docs, words, seed=seed)
    texts = [json.loads(line)["text"] for line in base.read_text(encoding="utf-8").splitlines()]
    base.unlink()
    rng = random.Random(seed + 7)
    for _ in range(n_copies):
        texts.insert(rng.randrange(len(texts) + 1), PAGE_404)
    with open(path, "w", encoding="utf-8") as fh:
        for k, t in enumerate(texts):
            fh.write(json.dumps({"id": f"d{k}", "text": t}) + "\n")
    return {"copies of the 404 page": f"{n_copies:,}", "their pairs": n_copies * (n_copies - 1) // 2}


def run_measured(cmd: list[str]) -> dict:
    """cmd in a fresh interpreter behind the launcher; peak RSS of that child, its rc and stderr."""
    from bench.scale.memory import LAUNCHER
    proc = subprocess.run([sys.executable, "-c", LAUNCHER, *cmd], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and "%|" not in ln]
    return {"rc": res["rc"], "peak_mb": res["maxrss_kb"] / 1024, "seconds": res["seconds"], "stderr": lines}


def sweep_case(corpus: Path, out: Path) -> dict:
    res = run_measured([sys.executable, "-m", "calib", "sweep", "--sample", str(corpus), "--out", str(out),
                        "--shingles", "word5", "--num-perm", "128", "--splits", "16x8,32x4",
                        "--thresholds", "0.5,0.8"])
    if res["rc"] == 0:
        import pandas as pd
        rows = pd.read_csv(out)
        res["outcome"] = "; ".join(
            f"{int(r.b)}x{int(r.r)} J>={r.threshold:g}: {r.status}"
            + (f", {int(r.verified):,} verified, {int(r.removed):,} removed" if r.status == "ok" else "")
            for r in rows.itertuples())
    else:
        res["outcome"] = res["stderr"][-1] if res["stderr"] else f"exit {res['rc']}"
    return res


def apply_case(config: Path, corpus: Path, out: Path) -> dict:
    res = run_measured([sys.executable, "-m", "calib", "apply", "--config", str(config), "--corpus", str(corpus),
                        "--out", str(out), "--batch-size", "10000"])
    if res["rc"] == 0:
        s = json.loads((out / "summary.json").read_text())
        res["outcome"] = (f"{s['exact_copies']:,} exact copies, {s['candidate_pairs']:,} candidate pairs, "
                          f"{s['verified_pairs']:,} verified, {s['proposed_removals']:,} removals")
    else:
        res["outcome"] = f"exit {res['rc']}: " + (res["stderr"][-1] if res["stderr"] else "")
    return res


def main_bounds(out_path: Path, words: list[str], only: str | None = None,
                steps: tuple[str, ...] = ("sweep", "apply")) -> None:
    from bench.scale.memory import apply_config_obj, write_docs
    from calib.production.document import write_config

    rows = []
    with tempfile.TemporaryDirectory(prefix="calib-mem-bounds-") as tmp:
        tmp = Path(tmp)
        cfg = tmp / "config.json"
        write_config(cfg, apply_config_obj(), created_by="bench/scale/memory_bounds.py")
        tiny = tmp / "tiny.jsonl"
        write_docs(tiny, 100, words)
        for k in range(2):  # JIT caches warm, and the fixed cost of the imports
            base_sweep = sweep_case(tiny, tmp / f"tiny{k}.csv")
            base_apply = apply_case(cfg, tiny, tmp / f"tiny{k}")
        cases = [("one-word", lambda p: write_one_word(p, 200_000, words)),
                 ("404", lambda p: write_404(p, 50_000, 3_000, words)),
                 ("near-2%", lambda p: {"near-duplicates": "2%", "bytes": write_docs(p, 300_000, words, dup_rate=0.02)}),
                 ("near-60%", lambda p: {"near-duplicates": "60%", "bytes": write_docs(p, 300_000, words, dup_rate=0.6)})]
        for name, make in cases:
            if only and name != only:
                continue
            path = tmp / f"{name}.jsonl"
            facts = make(path)
            n = sum(1 for _ in open(path, encoding="utf-8"))
            print(f"{name}: {n:,} documents {facts}", file=sys.stderr)
            for step, fn in (("sweep", lambda: sweep_case(path, tmp / f"{name}.csv")),
                             ("apply", lambda: apply_case(cfg, path, tmp / f"{name}-out"))):
                if step not in steps:
                    continue
                r = fn()
                r.update(corpus=name, docs=n, step=step, facts=facts)
                rows.append(r)
                print(json.dumps({k: v for k, v in r.items() if k != "stderr"}), file=sys.stderr)
            path.unlink()
    write_report(rows, base_sweep, base_apply, out_path)


def write_report(rows, base_sweep, base_apply, out: Path) -> None:
    import platform
    body = "".join(
        f"| {r['corpus']} | {r['docs']:,} | {r['step']} | {r['peak_mb']:.0f} | "
        f"{r['peak_mb'] - (base_sweep if r['step'] == 'sweep' else base_apply)['peak_mb']:.0f} | "
        f"{r['seconds']:.1f} | {r['rc']} | {r['outcome']} |\n" for r in rows)
    facts = "".join(f"* **{r['corpus']}**: " + ", ".join(f"{k}: {v:,}" if isinstance(v, int) else f"{k}: {v}"
                                                          for k, v in r["facts"].items()) + "\n"
                    for r in rows if r["step"] == rows[0]["step"])
    text = (
        "# Peak memory on hostile corpora: `calib sweep` and `calib apply`\n\n"
        f"`PYTHONPATH=. python -m bench.scale.memory --mode bounds` ({time.strftime('%Y-%m-%d')}, Python "
        f"{platform.python_version()}, 2 shared cores). See bench/scale/memory_bounds.py for the corpora and commands. "
        f"Each command runs in a fresh interpreter; peak RSS is `ru_maxrss` of `os.wait4` on it alone. "
        f"\"imports\" = the same command on 100 documents: sweep {base_sweep['peak_mb']:.0f} MB, "
        f"apply {base_apply['peak_mb']:.0f} MB.\n\n{facts}\n"
        "| corpus | docs | command | peak RSS MB | peak - imports MB | time s | exit | outcome |\n"
        "|---|---:|---|---:|---:|---:|---:|---|\n" + body)
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    import argparse
    from bench.scale.memory import word_list
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(RESULTS_DIR / "memory_bounds.md"))
    ap.add_argument("--only", help="one corpus: one-word, 404, near-2%%, near-60%%")
    ap.add_argument("--steps", default="sweep,apply", help="which commands to measure (sweep, apply)")
    a = ap.parse_args()
    main_bounds(Path(a.out), word_list(), a.only, tuple(a.steps.split(",")))
