"""Modules that are also their main function.

``calib.sweep``, ``calib.export`` and ``calib.apply`` are pipeline modules and
the public API's verbs at once: ``calib.sweep(sample, grid)`` runs
:func:`calib.search.sweep.sweep` while ``calib.search.grid.Grid`` is still the module's
class. (A plain function of the same name in ``calib/__init__`` would be
replaced by the module the first time anything imports it.)
"""

from __future__ import annotations

import sys
import types


def callable_module(name: str, fn) -> None:
    """Make the module ``name`` callable: calling it calls ``fn``."""
    module = sys.modules[name]
    cls = type("CallableModule", (types.ModuleType,),
               {"__call__": lambda self, *args, **kwargs: fn(*args, **kwargs), "__module__": __name__})
    module.__class__ = cls
