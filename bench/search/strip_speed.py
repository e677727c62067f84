"""CPU seconds of boilerplate line stripping as the default search asks for it (``Workspace.stripped``).

The default search strips lines held by more than 2% of the documents (``calib.search.explore.STRIP_SHARE``)
under the four normalizations it visits: word shingles [lower+nfkc+punct+ws], the same without punctuation
stripping, the same without lowercasing, and char shingles [lower+nfkc+punct+ws]. Each run is a fresh
process that builds a :class:`calib.search.workspace.Workspace` (not timed) and then asks for the four
stripped corpora in that order, the first one paying for splitting the texts into lines. CPU seconds are
``time.process_time`` (every thread of the process). A checksum over every stoplist's sha256 and every
stripped text shows that both trees strip the same.

    python -m bench.search.strip_speed --sample data/sample --sample /tmp/search-speed/source \\
        --before /path/to/main/checkout [--repeats 2] [--out bench/results/strip_speed.md]
    python -m bench.search.strip_speed --one data/sample [--calib-root /other/checkout]

``--calib-root`` imports calib from another checkout: the "before" rows of a speed-up.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import sys
import time
from functools import partial
from pathlib import Path

from bench.record import checkout_arguments, fresh_run

SETTINGS = (("word", dict()), ("word", dict(strip_punct=False)), ("word", dict(lowercase=False)), ("char", dict()))
SHARE = 0.02


def one(sample_dir: str) -> dict:
    import calib
    from calib.reading.samples import load_sample
    from calib.search.workspace import Workspace
    from calib.sketches.represent import Representation
    sample = load_sample(Path(sample_dir))
    ws = Workspace(sample)
    digest, times, sizes = hashlib.sha256(), [], []
    for shingle, flags in SETTINGS:
        rep = Representation(shingle=shingle, k=5, lowercase=True, nfkc=True, strip_punct=True, collapse_ws=True,
                             strip_lines=SHARE).with_(**flags)
        c0 = time.process_time()
        st, texts = ws.stripped(rep)
        times.append(time.process_time() - c0)
        sizes.append(len(st))
        digest.update(st.sha256(rep).encode())
        for t in texts:
            digest.update(hashlib.sha256(t.encode("utf-8", "surrogatepass")).digest())
    lines = sum(len(t.splitlines()) for t in sample.texts)
    return {"sample": sample_dir, "calib": str(Path(calib.__file__).parents[1]), "docs": int(sample.n),
            "lines": lines, "cpu": times, "stoplist_lines": sizes, "checksum": digest.hexdigest(),
            "load": os.getloadavg()[0]}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    checkout_arguments(ap, "a second checkout timed alternately with this one (the 'before' rows)")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--out", default="bench/results/strip_speed.md")
    a = ap.parse_args(argv)
    if a.calib_root:
        sys.path.insert(0, a.calib_root)
    if a.one:
        print(json.dumps(one(a.one)))
        return
    from bench.record import alternately, load_averages, machine, write_result
    runs = alternately(partial(fresh_run, "bench.search.strip_speed"), a.sample or ["data/sample"], a.before, a.repeats)
    labels = " / ".join(f"{s}{'' if not f else ' ' + ','.join(f'{k}={v}' for k, v in f.items())}" for s, f in SETTINGS)
    lines = ["# Boilerplate line stripping: CPU seconds of Workspace.stripped", "",
             f"`python -m bench.search.strip_speed {' '.join(shlex.quote(x) for x in (argv or sys.argv[1:]))}`: "
             f"each run a fresh process, {machine()}; load averages "
             f"{', '.join(f'{x:.2f}' for x in load_averages())} at the end. The four settings the default search "
             f"strips under, share {SHARE:g}, in order ({labels}; all k=5 lower+nfkc+punct+ws but the flag named). "
             "CPU = process seconds of each `stripped` call (the first one also splits the texts into lines).", "",
             "| sample | docs | lines | tree | CPU s per setting | CPU s total | stoplist lines | checksum |",
             "|---|---|---|---|---|---|---|---|"]
    for r in runs:
        lines.append(f"| {r['sample']} | {r['docs']} | {r['lines']} | {r['tree']} | "
                     f"{' / '.join(f'{x:.2f}' for x in r['cpu'])} | {sum(r['cpu']):.2f} | "
                     f"{' / '.join(map(str, r['stoplist_lines']))} | {r['checksum'][:12]} |")
    write_result(a.out, "\n".join(lines) + "\n")
    print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
