"""Benchmark scripts (not part of the calib package). See bench/README.md."""
