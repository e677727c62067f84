"""A small labeled sample with boilerplate for the weighted-MinHash tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

FOOTER = "Copyright Example Corp. All rights reserved. Privacy policy. Terms of use. Cookie settings. Contact us."


def write_boiler_sample(d: Path) -> Path:
    """Twelve pages of one site (a shared footer), two near-copy pairs, two boilerplate pairs:
    docs.jsonl and pairs.csv in ``d``."""
    rng = np.random.default_rng(4)
    words = [f"w{k}" for k in range(400)]
    bodies = [" ".join(rng.choice(words, 25)) for _ in range(10)]
    texts = [f"{b}\n{FOOTER}" for b in bodies]
    texts += [texts[0].replace(bodies[0].split()[3], "changed"), texts[1] + " one more line"]
    (d / "docs.jsonl").write_text("".join(json.dumps({"id": f"d{k:02d}", "text": t}) + "\n"
                                          for k, t in enumerate(texts)))
    (d / "pairs.csv").write_text("id_a,id_b,label,category\nd00,d10,duplicate,light_edit\n"
                                 "d01,d11,duplicate,light_edit\nd02,d03,not_duplicate,boilerplate\n"
                                 "d04,d05,not_duplicate,boilerplate\n")
    return d
