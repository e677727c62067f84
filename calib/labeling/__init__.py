"""Calibrating on your own corpus: drawing pairs to label (stratified by similarity) and what to
label next (the corpus-level estimates from their labels: calib.estimates.design_weighted)."""
