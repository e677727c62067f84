"""MinHash-LSH calibration workbench.

``calib/`` is a folder per stage, in the order the data flows (imports only go
down this list; tests/test_layout.py holds them to it)::

    base -> reading -> sketches -> candidates -> verification -> clusters
         -> estimates -> review -> search -> production -> labeling -> shipped -> cli

Nothing here imports Streamlit; the app in ``app.py``/``pages/`` and the CLI in
``calib.cli`` are thin shells over these functions.

The public API, from a labeled sample to a report-only proposal on a corpus::

    sample = calib.load_sample("data/sample")
    results = calib.sweep(sample, calib.Grid())          # one row per configuration
    best = calib.recommend(results, max_false_removal_rate=0.01)
    config = calib.Config.from_row(best)
    evaluation = calib.evaluate(sample, config)
    calib.export("export/", config, evaluation=evaluation, sample=sample)
    result = calib.apply(config, "corpus.jsonl")         # nothing is ever deleted

``calib.sweep``, ``calib.export`` and ``calib.apply`` are both the modules and
their functions (``calib.sweep.Grid`` still works): :mod:`calib.search.sweep`,
:mod:`calib.production.export` and :mod:`calib.production.engines.local`.
Names load on first use, so ``import calib`` stays light.
"""

from calib.base.version import __version__

_LAZY = {"load_sample": "reading.samples", "Grid": "search.grid", "recommend": "search.recommend",
         "evaluate": "search.sweep", "Config": "search.config", "config_from_row": "search.config",
         "Representation": "sketches.represent", "Verify": "search.config"}
_CALLABLE_MODULES = {"sweep": "search.sweep", "export": "production.export", "apply": "production.engines.local"}

__all__ = ["load_sample", "Grid", "sweep", "recommend", "Config", "evaluate", "export", "apply",
           "config_from_row", "Representation", "Verify"]


def __getattr__(name: str):
    import importlib
    if name in _CALLABLE_MODULES:  # the module makes itself callable when imported
        return importlib.import_module(f".{_CALLABLE_MODULES[name]}", __name__)
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'calib' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
