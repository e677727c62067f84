"""Words for people: one map from the machine names the engine uses (columns,
pair categories, labels, measures) to what a page shows.

Engine frames, CSV/Parquet downloads and config.json keep the machine names
(they are the files' contract); only what a page draws goes through here, so a
name reads the same on every page. A name not in the map is shown with spaces
for underscores (``edit_tree`` -> ``edit tree``), never in snake_case.
"""

from __future__ import annotations

# Pair categories of the shipped sample, the Clough corpus and the drawn sets; pair labels.
CATEGORIES = {
    "exact": "exact copy", "light_edit": "light edit", "same_topic": "same topic", "formatting": "formatting",
    "reordered": "reordered", "partial": "partial copy", "translation": "translation",
    "boilerplate": "shared boilerplate", "near_threshold": "near the threshold", "chain": "edit chain",
    "edit_tree": "edit tree", "cut": "cut (copied)", "light": "light revision", "heavy": "heavy revision",
    "non": "not derived",
    # duplicate pairs the groups imply that the pair file does not list (calib samples summary:
    # groups.pairs_within_groups_not_listed)
    "(group)": "same group, not listed",
    "duplicate": "duplicate", "not_duplicate": "not duplicate",
}

# Similarity measures (calib.verification.measures names).
MEASURES = {"jaccard": "Jaccard", "weighted_jaccard": "weighted Jaccard", "containment": "containment"}

# Column headers, on every page's tables (the Sweep results, Curves' per-bin rates, Review decisions,
# Label progress, Export's manifest, the Clusters tables).
COLUMNS = {
    "mark": "marked", "pair_recall": "pair recall", "pair_recall_95": "recall 95% CI", "pair_precision": "precision",
    "pair_precision_95": "precision 95% CI", "false_removal_rate": "false-removal rate",
    "false_removal_rate_95": "false-removal 95% CI", "candidates": "candidates", "representation": "representation",
    "num_perm": "hashes", "b": "b (bands)", "r": "r (rows)", "verify": "verify", "threshold": "threshold",
    "policy": "policy", "removed": "removed", "false_removals": "false removals",
    "unlabeled_removals": "unlabeled removals", "chained_removals": "chained removals",
    "missed_removal_rate": "missed-removal rate", "candidate_recall": "candidate recall", "reduction": "reduction",
    "s50": "s50 (50% point)", "status": "status", "config_fingerprint": "fingerprint",
    "pair_recall_interval": "recall CI method", "expected_pair_recall": "expected pair recall (no seed)",
    "pair_recall_macro": "pair recall per group", "expected_candidate_recall": "expected candidate recall",
    "candidate_recall_macro": "candidate recall per group", "seeds": "seeds",
    "pair_recall_min": "pair recall, lowest seed", "pair_recall_max": "pair recall, highest seed",
    "false_removal_rate_min": "false-removal, lowest seed", "false_removal_rate_max": "false-removal, highest seed",
    "candidate_recall_min": "candidate recall, lowest seed", "candidate_recall_max": "candidate recall, highest seed",
    "search_pass": "pass", "measure": "measure", "weighting": "shingle weights", "representative": "keep",
    "bin_low": "J from", "bin_high": "J to", "pairs": "pairs", "mean_similarity": "mean J", "rate": "measured rate",
    "rate_low": "95% low", "rate_high": "95% high", "rate_interval": "CI method", "expected": "expected (mean P(J))",
    "theory": "theory at mean J", "id_a": "document A", "id_b": "document B",
    "decision": "decision", "reviewer": "reviewer", "note": "note", "created_at": "recorded at (UTC)",
    "sample_label": "sample label", "contradicts": "contradicts sample label", "sim": "exact J",
    "chained": "chained only", "distance": "|J - threshold|", "stratum": "stratum", "drawn": "drawn",
    "pairs_in_sample": "pairs in the document sample", "duplicate": "duplicate", "not_duplicate": "not duplicate",
    "skipped": "skipped (unsure)", "left": "left", "labeled": "labeled",
    "doc_id": "document", "cluster_id": "cluster", "representative_id": "kept (representative)",
    "review_status": "review status", "via_id": "linked through", "flagged_giant": "in a giant cluster",
    "label": "sample label", "format_version": "format version", "value": "value", "documents": "documents",
    "category": "category", "same_config": "same configuration", "pair_recall_change": "pair recall change",
    "false_removal_rate_change": "false-removal change", "config": "configuration", "labels": "labels",
    "base_pair_recall": "recall as labeled", "base_false_removal_rate": "false-removal as labeled",
    "documents_removed": "documents removed", "documents_removed_95": "removed 95% CI",
    "documents_removed_share": "share removed", "documents_removed_share_95": "share removed 95% CI",
    "labeled_pairs": "labeled pairs", "labeled_duplicates": "labeled duplicates",
    "labeled_removals": "labeled removals", "corpus_documents": "documents in the corpus",
}


def word(name) -> str:
    """``name`` in words for a page: a category, label or column from the maps above, else
    the name with spaces for underscores."""
    key = str(name)
    return COLUMNS.get(key) or CATEGORIES.get(key) or MEASURES.get(key) or key.replace("_", " ")


def category(name) -> str:
    """A pair category or label in words ('light_edit' -> 'light edit')."""
    key = str(name)
    return CATEGORIES.get(key, key.replace("_", " "))


def measure(name) -> str:
    """A similarity measure's name as written in prose: 'Jaccard', 'weighted Jaccard'."""
    key = str(getattr(name, "value", name)).lower()
    return MEASURES.get(key, key.replace("_", " "))
