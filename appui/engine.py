"""Cached engine calls.

One :class:`calib.search.workspace.Workspace` per sample (``st.cache_resource`` keyed by
the sample's content hash), with a ``threading.Lock`` next to it: the
Workspace is not safe for concurrent first computations, so every call that
may fill its caches holds the lock. Evaluations, collision curves and
diagnostics are cached by (sample hash, fingerprint, split), so a slider only
redoes the cheap step it changes.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from calib.clusters.chaining import chaining_diagnostics
from calib.search.config import Config
from calib.verification.measures import get_measure
from calib.sketches.represent import Representation
from calib.reading.sample import Sample
from calib.search.grid import Grid
from calib.search.sweep import collision_curve, evaluate, Evaluation, sweep
from calib.search.workspace import Workspace

from . import state


@dataclass(eq=False)
class Handle:
    ws: Workspace
    lock: threading.Lock


# How many Workspaces this server process has built, per sample content hash.
# st.cache_resource shares one per sample across every browser session (and
# computes it once even when sessions ask at the same moment); the Sweep page
# shows this with :func:`cache_info` so a test can check the sharing.
BUILDS: Counter = Counter()
_BUILDS_LOCK = threading.Lock()


@st.cache_resource(show_spinner=False, max_entries=4)
def _handle(content_hash: str, _sample: Sample) -> Handle:
    h = Handle(Workspace(_sample, disk=True), threading.Lock())  # a restarted server loads what it computed
    with _BUILDS_LOCK:
        BUILDS[content_hash] += 1
    return h


def handle() -> Handle:
    return _handle(state.sample_hash(), state.sample())


def cache_info() -> dict:
    """What the shared Workspace of the current sample holds. Reads the sizes of its
    caches without the lock (a sweep in another session must not block this page)
    and computes nothing."""
    ws = handle().ws
    return {"workspace": f"{id(ws):x}", "builds": BUILDS[state.sample_hash()],
            **ws.cache_info()}


def run_sweep(grid: Grid, progress=None) -> pd.DataFrame:
    h = handle()
    with h.lock:
        return sweep(h.ws, grid, progress=progress)


@st.cache_resource(show_spinner=False, max_entries=4)
def _sample_grid(content_hash: str, _h: Handle) -> tuple[Grid, str]:
    from calib.search.grid import grid_from_sample
    with _h.lock:
        grid, choice = grid_from_sample(_h.ws)
    return grid, choice.text(grid)


def sample_grid() -> tuple[Grid, str]:
    """The default search's first grid for the current sample (as ``calib sweep`` picks it), and why."""
    return _sample_grid(state.sample_hash(), handle())


def run_search(grid: Grid, progress=None):
    """The form's grid swept as ``calib sweep`` sweeps it: when it is still the sample's own choice,
    without the configurations the search skips (``calib.search.from_sample.useful``)."""
    from calib.search.from_sample import search
    from calib.search.grid import CHOSEN_AXES
    h = handle()
    with h.lock:
        return search(h.ws, grid, given=CHOSEN_AXES, second_pass=False, skip=grid == sample_grid()[0],
                      check_top=0, progress=progress)  # the page recommends on its own budget slider


def search_call(ws: Workspace, settings: dict, ignore_categories: tuple[str, ...] = (), **watch):
    """``calib sweep``'s default search on ``ws`` (no grid flag typed): the grid chosen from the sample,
    the configurations the search skips left out, the second pass (its step around the front and its
    exploration) and the seed check, with ``settings`` (the page's controls: ``max_false_removal_rate``,
    ``effort``, ...: keyword arguments of :func:`calib.search.from_sample.search`; ``target`` by name, as
    ``calib sweep --target`` takes it) and ``watch`` (``progress``, ``stop``, ``measured``)."""
    from calib.search.from_sample import RESEED_TOP, search
    from calib.search.grid import CHOSEN_AXES, grid_from_sample
    from calib.production.targets import capabilities
    ws = ws.ignoring(tuple(ignore_categories))
    grid, choice = grid_from_sample(ws, Grid(ignore_categories=tuple(ignore_categories)))
    kw = {**settings, "target": capabilities(settings.get("target") or "calib")}
    return search(ws, grid, given=CHOSEN_AXES, second_pass=True, check_top=RESEED_TOP, skip=choice is not None,
                  **kw, **watch)


def default_search(settings: dict, ignore_categories: tuple[str, ...] = ()):
    """A callable ``run(progress=, stop=, measured=)`` running :func:`search_call` on the current sample's
    shared workspace (holding its lock), for a thread of its own (:mod:`appui.search_job`)."""
    h = handle()

    def run(**watch):
        with h.lock:
            return search_call(h.ws, settings, ignore_categories, **watch)
    return run


def run_second_pass(results: pd.DataFrame, *, budget: float, objective: str, effort: float = 0.0, progress=None):
    """``results`` with the second pass appended (one step around the front, then the exploration of
    every axis, as ``calib sweep``'s, when ``effort`` > 0), how many configurations the first step added,
    what the exploration looked at (:func:`calib.search.from_sample.second`)."""
    from calib.search.from_sample import second
    h = handle()
    with h.lock:
        cats = results["ignored_categories"].iloc[0] if "ignored_categories" in results and len(results) else ""
        ws = h.ws.ignoring(tuple(c for c in str(cats or "").split(",") if c))  # the labels the first pass used
        return second(ws, results, max_false_removal_rate=budget, objective=objective, effort=effort,
                      progress=progress)


def agreement(decisions: pd.DataFrame, sample) -> pd.DataFrame:
    """The kappa table of :func:`calib.review.agreement.agreement_table`, recomputed only when the decisions
    (their count and newest row) or the sample change: the Review page reruns on every click."""
    last = decisions.iloc[-1] if len(decisions) else None
    key = (len(decisions), None if last is None else (int(last["id"]), str(last["created_at"])))
    return _agreement(key, None if sample is None else state.sample_hash(), decisions, sample)


@st.cache_data(show_spinner=False, max_entries=8)
def _agreement(key: tuple, sample_hash: str | None, _decisions: pd.DataFrame, _sample) -> pd.DataFrame:
    from calib.review.agreement import agreement_table, sample_categories
    return agreement_table(_decisions, sample_categories(_sample, _decisions) if _sample is not None else None)


def contested_sensitivity(results: pd.DataFrame, contested: pd.DataFrame, budget: float) -> pd.DataFrame:
    """How the recommendation of ``results`` changes if the contested review pairs went either way
    (:func:`calib.search.sensitivity.contested_sensitivity`), cached per sample, table, pairs and budget."""
    pairs = tuple(zip(contested["id_a"].astype(str), contested["id_b"].astype(str)))
    return _contested_sensitivity(state.sample_hash(), tuple(results["config_fingerprint"].astype(str)), pairs,
                                  float(budget), handle(), results)


@st.cache_data(show_spinner=False, max_entries=16)
def _contested_sensitivity(content_hash: str, fingerprints: tuple, pairs: tuple, budget: float, _h: Handle,
                           _results: pd.DataFrame) -> pd.DataFrame:
    from calib.search.sensitivity import contested_sensitivity
    with _h.lock:
        cats = _results["ignored_categories"].iloc[0] if "ignored_categories" in _results else ""
        ws = _h.ws.ignoring(tuple(c for c in str(cats or "").split(",") if c))  # the labels the sweep used
        return contested_sensitivity(ws, _results, pd.DataFrame(list(pairs), columns=["id_a", "id_b"]),
                                     budget=budget)


@st.cache_resource(show_spinner=False, max_entries=16)
def _evaluation(content_hash: str, config_fp: str, _h: Handle, _cfg: Config) -> Evaluation:
    with _h.lock:
        return evaluate(_h.ws, _cfg)


def evaluation(cfg: Config | None = None) -> Evaluation:
    cfg = cfg or state.config()
    return _evaluation(state.sample_hash(), cfg.fingerprint(), handle(), cfg)


def target_evidence(cfg: Config) -> dict[str, dict]:
    """Each production target's figures on the sample, computed as that target runs ``cfg``
    (``calib.production.targets.evidence``; every variant is a cached evaluation)."""
    from calib.production import targets as T
    from calib.base.jsondoc import json_value
    out = {}
    for name, t in T.targets(cfg).items():
        if t.engine_config is None:
            continue
        row = evaluation(t.engine_config).row
        out[name] = {"config_fingerprint": t.engine_config.fingerprint(),
                     **{k: json_value(row.get(k)) for k in T.EVIDENCE_KEYS}}
    return out


@st.cache_data(show_spinner=False, max_entries=256)
def _collision(content_hash: str, rep_fp: str, b: int, r: int, _h: Handle, _rep: Representation) -> pd.DataFrame:
    with _h.lock:
        return collision_curve(_h.ws, _rep, b, r)


def collision(rep: Representation, b: int, r: int) -> pd.DataFrame:
    return _collision(state.sample_hash(), rep.fingerprint(), int(b), int(r), handle(), rep)


def sim_fn(cfg: Config):
    """Exact similarity of document pairs under ``cfg``'s representation and
    measure (Jaccard or containment), for diagnostics."""
    h = handle()
    with h.lock:
        sets = h.ws.sets(cfg.rep)
    exact = get_measure(cfg.measure).exact
    return lambda a, b: exact(sets, np.asarray(a, np.int64), np.asarray(b, np.int64))


def verified_similarity(ev: Evaluation) -> np.ndarray:
    """The similarity the configuration verified with (exact or estimated)."""
    v = ev.verified
    return ev.config.similarity(v.exact, v.estimated)


@st.cache_resource(show_spinner=False, max_entries=16)
def _diagnostics(content_hash: str, config_fp: str, _ev: Evaluation) -> pd.DataFrame:
    v, cfg = _ev.verified, _ev.config
    return chaining_diagnostics(_ev.clustering, v.i, v.j, verified_similarity(_ev), sim_fn(cfg),
                                threshold=cfg.threshold)


def diagnostics(ev: Evaluation) -> pd.DataFrame:
    return _diagnostics(state.sample_hash(), ev.config.fingerprint(), ev)


def policies(ev: Evaluation) -> pd.DataFrame:
    """The configuration of ``ev`` under each clustering policy, each row from that configuration's own
    (cached) evaluation: the same figures the Sweep and Export pages give it (calib.search.policies)."""
    import dataclasses

    from calib.clusters.clustering import Policy
    from calib.search.policies import policy_table
    evs = [ev if ev.config.policy == p else evaluation(dataclasses.replace(ev.config, policy=p)) for p in Policy]
    return policy_table([e for e in evs if e.clustering is not None], sim_fn(ev.config))


@st.cache_resource(show_spinner=False, max_entries=16)
def _slices(content_hash: str, config_fp: str, _ev: Evaluation, _h: Handle) -> pd.DataFrame:
    from calib.search.sweep import slice_breakdown
    return slice_breakdown(_ev, _h.ws.sample)


def slices(ev: Evaluation) -> pd.DataFrame:
    """Every rate of ``ev`` per category / slice value, with Fisher tests (shared frame: do not modify)."""
    return _slices(state.sample_hash(), ev.config.fingerprint(), ev, handle())


@st.cache_resource(show_spinner=False, max_entries=16)
def _corpus_slices(content_hash: str, config_fp: str, _ev: Evaluation, _h: Handle) -> pd.DataFrame:
    from calib.estimates.corpus_slices import corpus_slice_table
    with _h.lock:
        return corpus_slice_table(_h.ws, _ev.config, _ev.clustering)


def corpus_slices(ev: Evaluation) -> pd.DataFrame:
    """A corpus draw's figures of ``ev`` per slice value, weighted to the corpus (shared frame: do not modify)."""
    return _corpus_slices(state.sample_hash(), ev.config.fingerprint(), ev, handle())


@st.cache_resource(show_spinner=False, max_entries=16)
def _manifest(content_hash: str, config_fp: str, reviews_stamp: tuple, _ev: Evaluation, _h: Handle,
              _latest: pd.DataFrame | None) -> pd.DataFrame:
    from calib.production.manifest import manifest
    return manifest(_ev, _h.ws.sample, review_store=_latest)


def manifest(ev: Evaluation, latest_reviews: pd.DataFrame | None = None, reviews_stamp: tuple = ()) -> pd.DataFrame:
    """The report-only removal manifest of ``ev`` on the current sample (do not modify the frame:
    it is shared). ``latest_reviews`` (``ReviewStore.latest()``) fills review_status; pass a
    ``reviews_stamp`` that changes when the reviews do."""
    return _manifest(state.sample_hash(), ev.config.fingerprint(), tuple(reviews_stamp), ev, handle(),
                     latest_reviews)


def clear_all() -> None:
    st.cache_data.clear()
    st.cache_resource.clear()
