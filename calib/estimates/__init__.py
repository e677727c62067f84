"""Counts -> rates with intervals: recall, precision, false and missed removals; Wilson, cluster bootstrap, band
jackknife; per-slice tests; the clustering policies' false-removal rates side by side."""
