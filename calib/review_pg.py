"""PostgreSQL backend of the review store (placeholder: URL helpers only)."""
from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

URL_SCHEMES = ("postgresql", "postgres")


def is_postgres_url(target) -> bool:
    """True for a ``postgresql://`` or ``postgres://`` URL (a review store on a server)."""
    return not isinstance(target, Path) and isinstance(target, str) and \
        urlsplit(target.strip()).scheme.lower() in URL_SCHEMES
