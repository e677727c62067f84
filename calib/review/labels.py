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
    ``decision`` is duplicate or not_duplicate; empty and 'unsure' rows give none. Any other
    decision is a ValueError naming the file, line and field."""
    q = pd.read_csv(path, dtype={"id_a": str, "id_b": str, "decision": str}, keep_default_na=False)
    missing = [c for c in ("id_a", "id_b", "decision") if c not in q.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing} (a queue written by calib sweep --review-queue)")
    d = q["decision"].str.strip()
    bad = ~d.isin(("", *DECISIONS))
    if bad.any():
        k = int(np.flatnonzero(bad.to_numpy())[0])
        raise ValueError(f"{path}: line {k + 2}: field decision: {q['decision'].iloc[k]!r} is not one of "
                         f"{', '.join(DECISIONS)} or empty")
    keep = d.isin(("duplicate", "not_duplicate")).to_numpy()
    return pd.DataFrame({"id_a": q["id_a"][keep].to_numpy(), "id_b": q["id_b"][keep].to_numpy(),
                         "label": d[keep].to_numpy(), "category": "review"})
