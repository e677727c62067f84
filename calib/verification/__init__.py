"""Candidate pairs -> similarities: exact Jaccard and all-pairs joins, containment, exact copies, the short-document rule, the registry of measures."""
