"""Engines that run an exported config over an unlabeled corpus and write a report-only manifest: local (numpy/numba) and Spark."""
