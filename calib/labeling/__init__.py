"""Calibrating on your own corpus: drawing pairs to label (stratified by similarity) and corpus-level estimates from their labels."""
