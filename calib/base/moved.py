"""Old import paths, kept for one release (0.1.x; removed in 0.2).

Until 0.1 ``calib/`` was 45 modules side by side; they now live in stage folders
(``calib.lsh`` is :mod:`calib.candidates.lsh`). External code that imports an old
path keeps working: ``import calib.lsh`` gives a module that forwards every
attribute to the new one (or, for a module split in several, to the one that
holds the name), with one ``DeprecationWarning`` naming the new path; setting an
attribute through it sets it on the new module, so monkeypatches still reach.
Four old modules share their name with a new folder (``calib.clusters``,
``calib.reading``, ``calib.review``, ``calib.search``): the folder's
``__init__`` forwards the old module's names the same way. Nothing in calib,
its app, its benchmarks or its tests imports an old path (tests/test_layout.py).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import sys
import types
import warnings


def _first(new: str | tuple[str, ...]) -> str:
    return new if isinstance(new, str) else new[0]


def _lookup(old: str, name: str):
    """(module, value) of ``name`` among ``old``'s new modules: the one it is defined in, else the
    first that has it (a module split in several re-exports some of its neighbours' names)."""
    new = MOVED[old]
    found = []
    for target in (new,) if isinstance(new, str) else new:
        module = importlib.import_module(target)
        if hasattr(module, name):
            value = getattr(module, name)
            if getattr(value, "__module__", None) == target:  # its home, where a split module re-exports it
                return module, value
            found.append((module, value))
    if found:
        return found[0]
    raise AttributeError(f"module {old!r} has no attribute {name!r}")


# old path -> new module, or the modules it was split into (the first holds its main function)
MOVED = {
    "calib._api": "calib.base.verbs",
    "calib._named": "calib.base.named",
    "calib._validate": "calib.base.validate",
    "calib.atomic": "calib.base.atomic",
    "calib.jsondoc": "calib.base.jsondoc",
    "calib.budget": "calib.base.budget",
    "calib.fields": "calib.base.fields",
    "calib.reading": "calib.reading.files",
    "calib.samples": ("calib.reading.samples", "calib.reading.sample", "calib.reading.tables", "calib.reading.records",
                      "calib.reading.clough", "calib.reading.writing"),
    "calib.design": "calib.reading.design",
    "calib.represent": "calib.sketches.represent",
    "calib.encode": "calib.sketches.encode",
    "calib._hashing": "calib.sketches.hashing",
    "calib.chunks": "calib.sketches.chunks",
    "calib.shingles": "calib.sketches.shingles",
    "calib.boilerplate": "calib.sketches.boilerplate",
    "calib.minhash": "calib.sketches.minhash",
    "calib.oph": "calib.sketches.oph",
    "calib.weighted_minhash": ("calib.sketches.weighted_minhash", "calib.verification.weighted_jaccard"),
    "calib.pairs": "calib.candidates.pairs",
    "calib.lsh": "calib.candidates.lsh",
    "calib.ensemble": "calib.candidates.ensemble",
    "calib.jaccard": "calib.verification.jaccard",
    "calib.containment": "calib.verification.containment",
    "calib.copies": "calib.verification.copies",
    "calib.short": "calib.verification.short",
    "calib.measures": "calib.verification.measures",
    "calib.truth": "calib.clusters.truth",
    "calib.clusters": ("calib.clusters.clustering", "calib.clusters.chaining", "calib.estimates.policies"),
    "calib.stats": "calib.estimates.stats",
    "calib.metrics": "calib.estimates.metrics",
    "calib.bootstrap": "calib.estimates.bootstrap",
    "calib.jackknife": "calib.estimates.jackknife",
    "calib.slices": "calib.estimates.slices",
    "calib.review": ("calib.review.sqlite", "calib.review.schema", "calib.review.stores", "calib.review.queue",
                     "calib.review.labels"),
    "calib.review_pg": "calib.review.postgres",
    "calib.adjudication": "calib.review.adjudication",
    "calib.agreement": "calib.review.agreement",
    "calib.overlap": "calib.review.overlap",
    "calib.config": "calib.search.config",
    "calib.seeds": "calib.search.seeds",
    "calib.sweep": ("calib.search.sweep", "calib.search.workspace", "calib.search.grid", "calib.search.recommend"),
    "calib.search": ("calib.search.from_sample", "calib.search.grid"),
    "calib.sensitivity": "calib.search.sensitivity",
    "calib.manifest": "calib.production.manifest",
    "calib.export": ("calib.production.export", "calib.production.document"),
    "calib.targets": ("calib.production.targets", "calib.production.targets.target"),
    "calib.targets._source": "calib.production.targets._source",
    "calib.targets.datasketch": "calib.production.targets.datasketch",
    "calib.targets.datatrove": "calib.production.targets.datatrove",
    "calib.targets.milvus": "calib.production.targets.milvus",
    "calib.targets.nemo_curator": "calib.production.targets.nemo_curator",
    "calib.targets.text_dedup": "calib.production.targets.text_dedup",
    "calib.apply": ("calib.production.engines.local", "calib.production.engines.corpus"),
    "calib.spark_apply": ("calib.production.engines.spark", "calib.production.engines.spark_io",
                          "calib.production.engines.spark_batches", "calib.production.engines.spark_components",
                          "calib.cli.apply_spark", "calib.cli.spark_submit"),
    "calib.draw": ("calib.labeling.draw", "calib.cli.draw"),
    "calib.weighted": ("calib.labeling.weighted", "calib.estimates.design_weighted", "calib.cli.draw"),
    "calib.sample_build": ("calib.shipped.sample", "calib.shipped.base_texts", "calib.shipped.edits",
                           "calib.cli.samples"),
    "calib.corpus_build": "calib.shipped.corpus",
    "calib.reviews_cli": "calib.cli.reviews",
}

# old modules whose name is now a folder: the folder's __init__ forwards these
FOLDER_NAMES = {old: new for old, new in MOVED.items() if _first(new).startswith(old + ".")}


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} moved to {new}; the old path is removed in calib 0.2", DeprecationWarning, stacklevel=3)


class _Forward(types.ModuleType):
    """A module whose attributes are those of ``target`` (warns once on first use)."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        target, value = _lookup(self.__name__, name)
        if not self.__dict__.get("_warned"):
            self.__dict__["_warned"] = True
            _warn(self.__name__, target.__name__)
        return value

    def __setattr__(self, name: str, value) -> None:
        # a monkeypatch through the old path must reach the module that uses the name
        if name.startswith("__"):
            return super().__setattr__(name, value)
        try:
            target, _ = _lookup(self.__name__, name)
        except AttributeError:
            target = importlib.import_module(_first(MOVED[self.__name__]))
        setattr(target, name, value)

    def __delattr__(self, name: str) -> None:
        if name.startswith("__"):
            return super().__delattr__(name)
        delattr(_lookup(self.__name__, name)[0], name)

    def __dir__(self):
        new = MOVED[self.__name__]
        return sorted({n for t in ((new,) if isinstance(new, str) else new) for n in dir(importlib.import_module(t))})

    def __call__(self, *args, **kwargs):  # calib.sweep / calib.export / calib.apply are callable
        return importlib.import_module(_first(MOVED[self.__name__]))(*args, **kwargs)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED and fullname not in FOLDER_NAMES:
            return importlib.util.spec_from_loader(fullname, self, is_package=fullname == "calib.targets")

    def create_module(self, spec):
        return _Forward(spec.name)

    def exec_module(self, module):
        pass

    def get_code(self, fullname):
        """``python -m OLD.PATH`` (runpy asks for code): one line naming the new path, exit status 2,
        instead of runpy's AttributeError; the old paths are for imports, not for running."""
        new = _first(MOVED[fullname])
        message = f"{fullname} moved to {new}: run python -m {new} (the old path is removed in calib 0.2)"
        return compile(f"import sys\nprint({message!r}, file=sys.stderr)\nraise SystemExit(2)\n", fullname, "exec")


def install() -> None:
    """Put the old paths' finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())


def forward_folder(folder: str):
    """A module ``__getattr__`` for the folder ``folder`` that was a module: old names are forwarded."""
    def __getattr__(name: str):
        folder_module = sys.modules[folder]
        if name.startswith("__") or any(os.path.exists(os.path.join(d, name + ".py")) or os.path.isdir(os.path.join(d, name))
                                        for d in folder_module.__path__):
            raise AttributeError(name)  # a submodule not imported yet: the import system loads it
        target, value = _lookup(folder, name)
        _warn(f"{folder}.{name}", f"{target.__name__}.{name}")
        return value

    return __getattr__
