"""Closed sets of named choices (verification rule, clustering policy, ...).

Each is a :class:`StrEnum`, so a member is its string (``Verify.EXACT ==
"exact"``, JSON and CSV write the plain name, fingerprints are unchanged),
while code compares members by identity (``cfg.verify is Verify.NONE``)
instead of spelling strings.
"""

from __future__ import annotations

from enum import StrEnum


class Named(StrEnum):
    """A closed set of names; ``what`` names the set in errors."""

    def __repr__(self) -> str:  # as its string, so reprs (and generated code) read 'exact'
        return repr(self.value)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(m.value for m in cls)

    @classmethod
    def parse(cls, value):
        """The member named by ``value`` (a member or its string, any case)."""
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            raise ValueError(f"{cls.what} must be one of {cls.names()}, got {value!r}") from None
