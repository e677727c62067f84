"""CPU cost of the slice-field pass of ``calib draw --design corpus --slice-fields`` against
the draw's own first pass (count_documents), on the same corpus file.

Writes a corpus of N random-word documents (bench.corpora.rare.build, each text
repeated --repeat times to reach a few KB) with two slice fields, times
:func:`calib.reading.corpus.count_documents` and
:func:`calib.labeling.corpus_slices.count_slices` in this process (CPU seconds),
and writes bench/results/slice_pass.md with the load average before and after.

    python -m bench.scale.slice_pass [--docs 50000] [--repeat 11]
"""

from __future__ import annotations

from bench.record import RESULTS_DIR, load_averages, write_result
import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> None:
    import numpy as np

    from bench.corpora.rare import build
    from calib.labeling.corpus_slices import count_slices
    from calib.reading.corpus import count_documents
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=11)
    a = ap.parse_args()
    c = build(a.docs, seed=3)
    rng = np.random.default_rng(0)
    lang = np.array(["en", "de", "fr", "es"])[rng.integers(0, 4, a.docs)]
    src = rng.integers(0, 50, a.docs)
    load0 = load_averages()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "docs.jsonl"
        with open(path, "w", encoding="utf-8") as fh:
            for d, t, la, s in zip(c.ids, c.texts, lang, src):
                fh.write(json.dumps({"id": d, "text": " ".join([t] * a.repeat), "lang": str(la), "src": f"s{s}"}) + "\n")
        kb = path.stat().st_size / a.docs / 1024
        rows = []
        for name, fn in (("count_documents (the draw's pass 0)", lambda: count_documents(path)),
                         ("count_slices lang,src", lambda: count_slices(path, ("lang", "src")))):
            t = time.process_time()
            fn()
            rows.append((name, time.process_time() - t))
    load1 = load_averages()
    per_m = rows[1][1] * 1_000_000 / a.docs
    text = (f"# The slice-field pass (bench/scale/slice_pass.py)\n\n{a.docs:,} documents of {kb:.1f} KB, two slice fields "
            f"(4 and 50 values). Load average before {load0[0]:.1f}, after {load1[0]:.1f} (2 cores).\n\n"
            "| pass | CPU s |\n|---|---:|\n" + "".join(f"| {n} | {s:.2f} |\n" for n, s in rows) +
            f"\nThe slice pass: about {per_m:,.0f} CPU seconds per million documents of this size, against about "
            "515 for the draw's own passes with `prefix` (bench/results/corpus_draw.md).\n")
    write_result(RESULTS_DIR / "slice_pass.md", text)
    print(text)


if __name__ == "__main__":
    main()
