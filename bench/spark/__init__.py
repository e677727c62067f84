"""Spark: the Spark engine against the local one (local[N] and a standalone cluster), and its time per stage."""
