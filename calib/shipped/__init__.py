"""Builders of the shipped sample and unlabeled corpus (deterministic from data/base)."""
