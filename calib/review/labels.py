"""Review decisions as pair labels: merged into a sample, read from a filled queue, set against the sample's labels.

A pair is labeled by its decision in force when that is duplicate or
not_duplicate ('unsure' gives no label); :func:`with_review_labels` adds such
labels to a sample (a review overrides the sample's label of the same pair)
so that the next sweep uses them.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from calib.reading.sample import Sample
from calib.review.schema import DECISIONS


def contradicts(decision, label) -> np.ndarray:
    """True where a review decision says the opposite of the sample's label
    (duplicate vs label 0, not_duplicate vs label 1); unsure and unlabeled
    (-1) pairs never contradict."""
    d = np.asarray(decision, dtype=object)
    lab = np.asarray(label)
    return ((d == "duplicate") & (lab == 0)) | ((d == "not_duplicate") & (lab == 1))


def with_review_labels(sample: Sample, labels: pd.DataFrame) -> tuple[Sample, int, int]:
    """The sample with review labels (``DecisionStore.as_pair_labels()``: id_a,
    id_b, label, category) added, so the next sweep uses them; a review
    overrides an existing label of the same pair. Returns (new sample, labels
    used, labels skipped because an id is not in the sample)."""
    if labels is None or len(labels) == 0:
        return sample, 0, 0
    ids = pd.Series(np.arange(sample.n), index=sample.docs["id"].astype(str))
    known = labels["id_a"].astype(str).isin(ids.index) & labels["id_b"].astype(str).isin(ids.index)
    lab = labels[known & (labels["id_a"].astype(str) != labels["id_b"].astype(str))]
    skipped = int(len(labels) - len(lab))
    if lab.empty:
        return sample, 0, skipped
    a = ids[lab["id_a"].astype(str)].to_numpy(np.int64)
    b = ids[lab["id_b"].astype(str)].to_numpy(np.int64)
    new = pd.DataFrame({"i": np.minimum(a, b), "j": np.maximum(a, b),
                        "is_duplicate": (lab["label"].astype(str) == "duplicate").to_numpy(bool),
                        "category": lab["category"].astype(str).to_numpy() if "category" in lab else "review"})
    old = sample.pairs
    codes_new = set(zip(new["i"].tolist(), new["j"].tolist()))
    keep = [(x, y) not in codes_new for x, y in zip(old["i"].tolist(), old["j"].tolist())]
    pairs = pd.concat([old[keep], new], ignore_index=True)
    pairs = pairs.sort_values(["i", "j"], kind="stable").reset_index(drop=True)
    pairs["i"] = pairs["i"].astype("int64")
    pairs["j"] = pairs["j"].astype("int64")
    pairs["is_duplicate"] = pairs["is_duplicate"].astype(bool)
    name = sample.name if sample.name.endswith("+reviews") else f"{sample.name}+reviews"
    return replace(sample, pairs=pairs, name=name), int(len(new)), skipped



def queue_labels(path) -> pd.DataFrame:
    """Pair labels (as :meth:`DecisionStore.as_pair_labels`) from a filled review-queue CSV: rows whose
    ``decision`` is duplicate or not_duplicate; empty and 'unsure' rows give none.

    Read through the one input check (:func:`calib.base.inputs.read_regular`: a regular file of at
    most :data:`~calib.base.inputs.QUEUE_MAX_BYTES`), as strict UTF-8; ids as written, the
    spreadsheet guard ``'`` the writer put before a cell starting with ``= + - @`` (or ``'``) taken
    off (:func:`calib.base.atomic.csv_cell_value`), so every id round-trips. Any other decision, an
    empty, binary or non-UTF-8 file, and one pair given two contradicting decisions (the review
    store would call it contested: which one holds is not the file's to say) are a ValueError
    naming the file (and line and field)."""
    import io

    from calib.base.atomic import csv_values
    from calib.base.inputs import QUEUE_MAX_BYTES, read_regular
    from calib.reading.files import decode_text
    data = read_regular(path, max_bytes=QUEUE_MAX_BYTES, what="a review queue", name=str(path))
    text = decode_text(data, str(path))
    if not text.strip():
        raise ValueError(f"{path}: empty file (a queue written by calib sweep --review-queue has a header line)")
    try:
        q = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (ValueError, pd.errors.ParserError) as exc:  # a binary file, a ragged row
        raise ValueError(f"{path}: not a review queue CSV ({str(exc).splitlines()[0][:120]})") from None
    missing = [c for c in ("id_a", "id_b", "decision") if c not in q.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing} (a queue written by calib sweep --review-queue)")
    q = csv_values(q, ["id_a", "id_b"])
    d = q["decision"].str.strip()
    bad = ~d.isin(("", *DECISIONS))
    if bad.any():
        k = int(np.flatnonzero(bad.to_numpy())[0])
        raise ValueError(f"{path}: line {k + 2}: field decision: {q['decision'].iloc[k]!r} is not one of "
                         f"{', '.join(DECISIONS)} or empty")
    keep = d.isin(("duplicate", "not_duplicate")).to_numpy()
    out = pd.DataFrame({"id_a": q["id_a"][keep].to_numpy(), "id_b": q["id_b"][keep].to_numpy(),
                        "label": d[keep].to_numpy(), "category": "review", "line": np.flatnonzero(keep) + 2})
    _refuse_contradictions(out, path)
    a, b = out["id_a"].to_numpy(object), out["id_b"].to_numpy(object)
    out["id_a"], out["id_b"] = np.where(a < b, a, b), np.where(a < b, b, a)  # one pair, in either order, once
    return out.drop(columns="line").drop_duplicates(["id_a", "id_b"]).reset_index(drop=True)


def _refuse_contradictions(labels: pd.DataFrame, path) -> None:
    """One pair (in either order) given both duplicate and not_duplicate: a ValueError naming both lines."""
    a, b = labels["id_a"].to_numpy(object), labels["id_b"].to_numpy(object)
    k = pd.DataFrame({"a": np.where(a < b, a, b), "b": np.where(a < b, b, a), "label": labels["label"].to_numpy(),
                      "line": labels["line"].to_numpy()})
    mixed = k.groupby(["a", "b"], sort=False)["label"].transform("nunique").to_numpy() > 1
    if not mixed.any():
        return
    one = k[mixed].iloc[0]
    other = k[mixed & (k["a"] == one["a"]).to_numpy() & (k["b"] == one["b"]).to_numpy()
              & (k["label"] != one["label"]).to_numpy()].iloc[0]
    raise ValueError(f"{path}: lines {one['line']} and {other['line']}: field decision: pair ({one['a']!r}, "
                     f"{one['b']!r}) is {one['label']} on one line and {other['label']} on the other (contested): "
                     "keep one decision, or record both in a review store, whose label rule settles it")
