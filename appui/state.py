"""Shared state: plain ``st.session_state`` keys (widget keys are dropped
when the page changes, these are not).

    calib_sample / calib_sample_hash / calib_sample_source   the sample in use
    calib_config / calib_config_source                       the current Config
    calib_results / calib_results_hash                       last sweep (for that sample)
    calib_sweeps                                             every sample's last sweep, by sample fingerprint:
                                                             {hash: Sweep} (a sample left and loaded again
                                                             finds its sweep)
    calib_grid                                               last grid choices
    calib_budget / calib_objective                           recommendation settings
    calib_review_db / calib_reviewer                         review page settings (kept in the query string too:
                                                             ?reviews=...&reviewer=..., appui/identity.py)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st

from calib.search.config import Config
from calib.reading.sample import Sample

from .loading import Loaded, load_shipped
from .nav import PAGES  # noqa: F401  (pages import it from here)

SAMPLE, SAMPLE_HASH, SAMPLE_SOURCE = "calib_sample", "calib_sample_hash", "calib_sample_source"
CONFIG, CONFIG_SOURCE = "calib_config", "calib_config_source"
RESULTS, RESULTS_HASH, GRID = "calib_results", "calib_results_hash", "calib_grid"
BUDGET, OBJECTIVE = "calib_budget", "calib_objective"
TARGET = "calib_target"  # the tool the search is for (calib sweep --target)
CONFIDENCE = "calib_confidence"  # the budget held on the rate (None) or its one-sided upper bound at this level
REVIEW_DB, REVIEWER = "calib_review_db", "calib_reviewer"
FLASH = "calib_flash"
SWEEPS = "calib_sweeps"


@dataclass(eq=False)
class Sweep:
    """One sample's last sweep: its rows, the search's result when the default search made them
    (None: a grid of the user's own, or a results file opened), its settings, and where it came from."""

    rows: object
    found: object = None
    settings: dict = field(default_factory=dict)
    source: str = "this session's sweep"



def ensure() -> None:
    """The shipped sample and the default configuration, unless set already."""
    ss = st.session_state
    if SAMPLE not in ss:
        set_sample(load_shipped())
    if CONFIG not in ss:
        set_config(Config(), "default")
    ss.setdefault(BUDGET, 0.01)
    ss.setdefault(OBJECTIVE, "pair_recall")


def set_sample(loaded: Loaded) -> None:
    ss = st.session_state
    if ss.get(SAMPLE_HASH) != loaded.content_hash:  # this sample's own last sweep, if it had one
        kept = ss.get(SWEEPS, {}).get(loaded.content_hash)
        if kept is None:
            ss.pop(RESULTS, None)
            ss.pop(RESULTS_HASH, None)
        else:
            ss[RESULTS], ss[RESULTS_HASH] = kept.rows, loaded.content_hash
    ss[SAMPLE], ss[SAMPLE_HASH], ss[SAMPLE_SOURCE] = loaded.sample, loaded.content_hash, loaded.source


def sample() -> Sample:
    return st.session_state[SAMPLE]


def sample_hash() -> str:
    return st.session_state[SAMPLE_HASH]


def config() -> Config:
    return st.session_state[CONFIG]


def set_config(cfg: Config, source: str) -> None:
    st.session_state[CONFIG] = cfg
    st.session_state[CONFIG_SOURCE] = source


def results():
    """The last sweep's results if they belong to the current sample, else None."""
    ss = st.session_state
    if ss.get(RESULTS) is not None and ss.get(RESULTS_HASH) == ss.get(SAMPLE_HASH):
        return ss[RESULTS]
    return None


def set_results(frame, found=None, settings: dict | None = None, source: str = "this session's sweep") -> None:
    """The current sample's sweep: its rows (and the search's result, settings and source, see :class:`Sweep`)."""
    ss = st.session_state
    ss[RESULTS] = frame
    ss[RESULTS_HASH] = ss[SAMPLE_HASH]
    ss.setdefault(SWEEPS, {})[ss[SAMPLE_HASH]] = Sweep(frame, found, dict(settings or {}), source)


def sweep():
    """The current sample's :class:`Sweep`, or None."""
    ss = st.session_state
    kept = ss.get(SWEEPS, {}).get(ss.get(SAMPLE_HASH))
    if kept is not None and kept.rows is results():
        return kept
    return None if results() is None else Sweep(results())


def changed(msg: str) -> None:
    """After the sample or configuration changed: rerun so the sidebar and the
    whole page show the new state, with ``msg`` shown once at the top."""
    st.session_state[FLASH] = msg
    st.rerun()


def config_label(cfg: Config) -> str:
    return (f"{cfg.rep.label()}, {cfg.rep.num_perm} hashes, "
            f"b={cfg.b} r={cfg.r}, {cfg.verification_label()}, {cfg.policy}")


def recommended():
    """The row the Sweep page recommends for this session's sweep under the budget, objective and bound chosen
    there (the across-seed rows when it swept several seeds), or None (no sweep, no label, nothing fits)."""
    from calib.search.seeds import across_seeds

    from .picking import pick  # the Sweep page's own pick (after the search's seed check)
    res, ss = results(), st.session_state
    if res is None or not len(res):
        return None
    kept = sweep()
    if "seed" in res and res["seed"].nunique() > 1 and kept.found is None:
        res = across_seeds(res)
    if not (res["n_positive"].fillna(0) > 0).any():
        return None
    return pick(kept, res, ss[BUDGET], ss[OBJECTIVE], ss.get(CONFIDENCE),
                ss.get("calib_search_settings"))[1]
