"""What the default search finds does not move when it is made faster: the whole results table of
``calib.search.from_sample.search`` (first pass, second pass with the exploration, seed check) on a
small planted sample, hashed as tests/test_refactor_checksums.py hashes a sweep table (floats to
FLOAT_DIGITS significant digits, rows in the order the search wrote them), against the checksum
recorded before the search's caches and shortcuts (ceiling scans that reuse a step's removals,
fingerprints computed once, boilerplate lines normalized once per stripping).

The planted sample has what the exploration moves along: duplicate families at every edit rate,
pairs that share a long passage but are no duplicates, a header and a footer line (punctuated,
some not ASCII) on a share of the documents, so that boilerplate stripping and the punctuation
setting change the shingles.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from _planted import planted_corpus

# Recorded on main at 635ca8f (before the speed work): the search's rows there, hashed as below.
RECORDED = "10f17dc02ea4774ffab5af3d46363a6907ab66b4a58573340a0de15540762427"
FLOAT_DIGITS = 9

HEADERS = ("Copyright (c) 2019-2024, The Example Project -- all rights reserved; see LICENSE.",
           "Ünïcödé header — «quoted», naïve café; ©2024 Ëxample GmbH & Co. KG",
           "=== generated file: do not edit by hand (regenerate with `make docs`) ===")


def planted_search_sample():
    from calib.reading.sample import from_frames
    docs = planted_corpus(seed=3, singletons=160, families=45, boilerplate=15)
    rng = np.random.default_rng(5)
    texts = []
    for t in docs["text"]:
        lines = [t[k:k + 300] for k in range(0, len(t), 300)]  # several lines a document
        if rng.random() < 0.3:
            lines.insert(0, HEADERS[int(rng.integers(0, len(HEADERS)))])
        if rng.random() < 0.2:
            lines.append(HEADERS[int(rng.integers(0, len(HEADERS)))])
        texts.append("\n".join(lines))
    return from_frames(docs.assign(text=texts), name="planted-search")


def search_table_checksum() -> tuple[str, object]:
    from calib.search.from_sample import search
    from calib.search.workspace import Workspace
    found = search(Workspace(planted_search_sample()))
    table = found.results.to_csv(index=False, float_format=f"%.{FLOAT_DIGITS}g")
    return hashlib.sha256(table.encode()).hexdigest(), found


@pytest.mark.slow
def test_the_default_search_finds_the_rows_it_found_before_it_was_made_faster():
    got, found = search_table_checksum()
    # the sample exercises the exploration and the seed check, and boilerplate stripping is tried
    assert found.exploration is not None and found.exploration.ceilings and found.check is not None
    assert (found.results["strip_lines"] > 0).any()
    assert got == RECORDED, got


if __name__ == "__main__":  # print the checksum (run it on the commit to record, with that commit's calib first)
    print(search_table_checksum()[0])
