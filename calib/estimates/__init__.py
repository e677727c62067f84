"""Counts -> rates with intervals: recall, precision, false and missed removals; Wilson, cluster
bootstrap, band jackknife; per-slice tests; design-weighted estimates from a stratified draw's labels;
the clustering policies' false-removal rates side by side."""
