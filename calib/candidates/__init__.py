"""Sketches -> candidate pairs: pair codes, LSH banding (b bands of r rows) and its S-curve, LSH Ensemble for containment."""
