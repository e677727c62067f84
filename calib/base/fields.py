"""Settings declared once: metadata on the fields of the config dataclasses.

Every field of :class:`~calib.sketches.represent.Representation` and
:class:`~calib.search.config.Config` is declared with :func:`setting`, every field of
:class:`~calib.search.grid.Grid` with :func:`axis`. Everything that lists settings
iterates over ``dataclasses.fields`` and reads this metadata: the results-row
columns and :func:`calib.search.config.config_from_row`, the config document's
sections (and the test that ``config.schema.json`` agrees), the CLI's grid
flags, and the Sweep page's configuration columns. So a new setting is one
declaration (plus, for the exported document, its entry in the JSON schema,
which a test demands).
"""

from __future__ import annotations

import math
from dataclasses import MISSING, Field, field
from enum import Enum
from typing import Any, Callable


def setting(default: Any = MISSING, *, help: str, doc: tuple[str, str] | None = None, table: bool = True,
            then: tuple[str, ...] = (), table_then: tuple[str, ...] = (), none_as: Any = None,
            parse: Callable | None = None, default_factory: Any = MISSING, doc_if_set: bool = False,
            row_if_set: bool = False) -> Any:
    """A config field.

    ``help``: one line for the CLI and the app. ``doc``: (section, key) in the
    exported config document (Representation fields live in its
    ``representation`` section under their own names). ``table``: shown among
    the Sweep page's configuration columns. ``then``: derived properties that
    follow the field in a results row (and its document section);
    ``table_then`` the ones of them the Sweep page shows. ``none_as``: how
    ``None`` is written in a results row (a float column cannot hold None).
    ``parse``: how a row cell becomes the value (default: by the default's type).
    ``doc_if_set``: written in the config document only when it differs from
    the default (a later field leaves the documents of earlier configs byte-identical);
    ``row_if_set``: likewise a results-row column (and a fingerprint key) only when set.
    """
    md = {"help": help, "doc": doc, "table": table, "then": tuple(then), "table_then": tuple(table_then),
          "none_as": none_as, "parse": parse, "doc_if_set": doc_if_set,
          "row_if_set": row_if_set}
    if default_factory is not MISSING:
        return field(default_factory=default_factory, metadata=md)
    return field(default=default, metadata=md)


def axis(default: Any, *, of: str | None, help: str, flag: str | None = None, parse: Callable | None = None,
         fixed: bool = False) -> Any:
    """A Grid field: the values swept for Config field ``of`` (``rep.NAME`` for a
    Representation field), or, with ``fixed``, one value used by every
    configuration. ``flag``/``parse``: its CLI option and how the option's text
    becomes the value (None: the CLI builds it another way)."""
    return field(default=default, metadata={"of": of, "help": help, "flag": flag, "parse": parse, "fixed": fixed})


def unset(obj: Any, f: Field) -> bool:
    """A ``row_if_set`` field of ``obj`` left at its default (left out of rows and fingerprints)."""
    return f.metadata.get("row_if_set", False) and getattr(obj, f.name) == f.default


def is_missing(v: Any) -> bool:
    """None or a float NaN (how a missing value comes back from a table)."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def to_cell(value: Any, f: Field) -> Any:
    """A field's value as a results-row cell: enums by value, None as ``none_as``."""
    if value is None:
        return f.metadata.get("none_as")
    if isinstance(value, Enum):
        return value.value
    return value


def from_cell(value: Any, f: Field) -> Any:
    """A results-row cell back to the field's value (inverse of :func:`to_cell`)."""
    if hasattr(value, "item"):  # numpy scalar -> Python
        value = value.item()
    if is_missing(value) and f.metadata.get("row_if_set"):  # a row without the setting: its default
        return f.default
    none_as = f.metadata.get("none_as")
    if is_missing(value) or (none_as is not None and not is_missing(none_as) and value == none_as):
        return None
    parse = f.metadata.get("parse")
    if parse is not None:
        return parse(value)
    default = f.default if f.default is not MISSING else None
    if isinstance(default, bool):
        if isinstance(value, str):
            if value.strip().lower() not in ("true", "false"):
                raise ValueError(f"{f.name}: expected true or false, got {value!r}")
            return value.strip().lower() == "true"
        return bool(value)
    if isinstance(default, int):
        return int(value)
    if isinstance(default, float):
        return float(value)
    if isinstance(default, str):
        return str(value)
    return value
