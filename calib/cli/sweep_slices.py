"""``calib sweep --by-slice FILE``: the recommended configuration's figures per slice value.

On a corpus draw (``calib draw --design corpus --slice-fields ...``) the figures
are weighted to the corpus (:mod:`calib.estimates.corpus_slices`); on any other
sample they are the Clusters page's per-slice rates (:func:`calib.search.sweep.slice_breakdown`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

SHOWN = 12  # slice values printed per column (the file has them all)


def write_by_slice(ws, best, out: Path) -> None:
    from calib.base.atomic import write_frame_atomic as write_table_atomic  # the suffix was checked up front
    from calib.search.config import config_from_row
    from calib.search.sweep import evaluate, slice_breakdown
    ev = evaluate(ws, config_from_row(best))
    design = ws.sample.design
    if getattr(design, "kind", "") != "corpus":
        table = slice_breakdown(ev, ws.sample)
        write_table_atomic(table, out)
        print(f"wrote {len(table)} per-slice rates of the recommended row to {out}", file=sys.stderr)
        return
    from calib.estimates.corpus_slices import corpus_slice_table
    table = corpus_slice_table(ws, ev.config, ev.clustering)
    write_table_atomic(table, out)
    if table.empty:
        print(f"wrote {out}: no slice fields in this drawn set (draw it with --slice-fields to get figures per "
              "value)", file=sys.stderr)
        return
    print(f"wrote {len(table)} slice values of the recommended row to {out}, weighted to the corpus:", file=sys.stderr)
    for line in summary_lines(table):
        print(line, file=sys.stderr)


def _pct(row, name: str) -> str:
    v, lo, hi = row[name], row[f"{name}_low"], row[f"{name}_high"]
    if not np.isfinite(v):
        return "not measured"
    return f"{100 * v:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def summary_lines(table) -> list[str]:
    """A few words per slice value: documents removed (share), pair recall, false-removal rate."""
    lines = []
    for col, part in table.groupby("column", sort=False):
        lines.append(f"  {col}:")
        for _, row in part.head(SHOWN).iterrows():
            docs = "" if not np.isfinite(row["documents"]) else f"{int(row['documents']):,} documents, "
            removed = (f"{row['documents_removed']:,.0f} removed ({_pct(row, 'documents_removed_share')})"
                       if np.isfinite(row["documents_removed_share"]) else f"{row['documents_removed']:,.0f} removed")
            lines.append(f"    {row['value']}: {docs}{removed}; pair recall {_pct(row, 'pair_recall')}, "
                         f"false-removal rate {_pct(row, 'false_removal_rate')}")
        if len(part) > SHOWN:
            lines.append(f"    ... and {len(part) - SHOWN:,} more values in the file")
    return lines
