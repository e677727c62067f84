"""Which review store a target names: a PostgreSQL server for a ``postgresql://`` URL (or libpq's
``keyword=value`` connection string), else a SQLite file."""

from __future__ import annotations

from pathlib import Path

from calib.review.postgres import PostgresReviewStore, is_postgres_url
from calib.review.schema import DecisionStore
from calib.review.sqlite import ReviewStore


def open_review_store(target: str | Path, *, readonly: bool = False) -> DecisionStore:
    """The review store named by ``target``: PostgreSQL for a ``postgresql://`` or
    ``postgres://`` URL (:mod:`calib.review.postgres`), else the SQLite file at that path.
    ``readonly``: reads work, every write raises a one-line ``ValueError``."""
    if is_postgres_url(target):
        return PostgresReviewStore(str(target), readonly=readonly)
    return ReviewStore(target, readonly=readonly)
