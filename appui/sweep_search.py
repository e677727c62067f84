"""The Sweep page's default search: its controls, the run you can watch and stop, how each row was
found, re-picking from the measured rows, and results files read and written as ``calib sweep``'s.

The controls are keyword arguments of :func:`calib.search.from_sample.search` (:func:`settings`):
a control added there reaches the search, the "same settings" check and the results caption at once.
"""

from __future__ import annotations

import io
import re

import pandas as pd
import streamlit as st

from calib.base import atomic
from calib.production.targets import TARGET_NAMES

from . import charts, engine, search_job, state
from .picking import objective_name, pick  # noqa: F401  (the page picks through this module)
from .text import count

JOB = "calib_search_job"
SETTINGS = "calib_search_settings"  # the controls' values, as the search's keyword arguments
EFFORT_HELP = ("How far the second pass explores (calib sweep --search-effort): up to 4 x effort rounds of "
               "moving every axis of the best settings; 0: only the step around the front")


def settings() -> dict:
    """The controls, as the keyword arguments of the search they run (and of the re-pick)."""
    ss = st.session_state
    c = st.columns(2) + st.columns(2)  # two a row: four cut a label at 800 px
    pct = c[0].number_input("False-removal budget (%)", 0.0, 100.0, float(ss[state.BUDGET]) * 100, 0.1,
                            format="%.2f", key="budget_pct",
                            help="Largest share of labeled removals that may be non-duplicates (any value: "
                                 "calib sweep --budget)")
    ss[state.BUDGET] = pct / 100
    objectives = list(charts.OBJECTIVES)
    objective = c[2].radio("Maximize", objectives, index=objectives.index(ss[state.OBJECTIVE]), horizontal=True,
                           format_func=lambda o: charts.OBJECTIVES[o].split(" (")[0], key="objective")
    ss[state.OBJECTIVE] = objective
    effort = c[1].number_input("Search effort", 0.0, 10.0, float(ss.get("calib_effort", 1.0)), 0.5,
                               key="search_effort", help=EFFORT_HELP)
    ss["calib_effort"] = effort
    levels = [None, 0.9, 0.95, 0.99]
    confidence = c[3].selectbox(
        "Budget held at", levels, index=levels.index(ss.get(state.CONFIDENCE)) if ss.get(state.CONFIDENCE) in levels
        else 0, key="confidence", format_func=lambda c: "the estimate" if c is None else f"{c:.0%} confidence",
        help="The estimate: the false-removal rate itself must fit the budget (the corpus exceeds it about half "
             "the time when it sits on the budget). A confidence: the rate's one-sided upper bound at that level "
             "must fit, so the corpus exceeds the budget with at most that much doubt (calib sweep --confidence)")
    ss[state.CONFIDENCE] = confidence
    names = list(TARGET_NAMES)
    target = st.selectbox("The tool that will run it", names, index=names.index(ss.get(state.TARGET, "calib"))
                          if ss.get(state.TARGET, "calib") in names else 0, key="target", format_func=target_title,
                          help="The search explores only what that tool runs and measures every configuration "
                               "as it runs it (calib sweep --target): a pick that holds the budget where it runs")
    ss[state.TARGET] = target
    # a control added here reaches the search, its re-pick check and the results file at once: one more keyword
    # argument of calib.search.from_sample.search (the target by name; appui.engine.search_call resolves it)
    ss[SETTINGS] = kwargs = {"max_false_removal_rate": pct / 100, "effort": float(effort), "objective": objective,
                             "confidence": confidence, "target": target}
    return kwargs


def target_title(name: str) -> str:
    """A target as the controls name it: calib's engines, or the tool."""
    return "calib (its local and Spark engines)" if name == "calib" else name.replace("_", "-")


def ignored() -> tuple[str, ...]:
    """Pair categories that count neither right nor wrong (calib sweep --ignore-categories)."""
    cats = sorted(c for c in state.sample().pairs["category"].astype(str).unique() if c)
    chosen = tuple(st.multiselect("Ignore pair categories", cats, default=[c for c in st.session_state.get(
        "calib_ignored", []) if c in cats], key="g_ignored", disabled=not cats,
        help="Labeled pairs of these categories count neither as duplicates nor as non-duplicates "
             "(e.g. heavy revisions: derived from their source, yet not copies); their number is listed"))
    st.session_state["calib_ignored"] = list(chosen)  # the search's and a grid of your own's, kept across pages
    return chosen


def running() -> bool:
    """A search of this sample is running in this session."""
    j = job()
    return j is not None and j.running


def job() -> search_job.Job | None:
    j = st.session_state.get(JOB)
    return j if j is not None and j.sample_hash == state.sample_hash() else None


def run_controls(kwargs: dict, cats: tuple[str, ...]) -> None:
    """Run (or Stop) the default search; while it runs, its progress."""
    j = job()
    if j is not None and j.running:
        if st.button("Stop the search (keeps what was measured)", key="stop_search"):
            j.stop()
        watch()
        return
    if st.button("Run the search", key="run_search", type="primary",
                 help="calib sweep's default search: a grid chosen from the sample (first pass), a step around "
                      "the recall / false-removal front and the exploration of every axis (second pass), then "
                      "the best few re-run on more hash seeds (seed check)"):
        st.session_state.pop("calib_search_note", None)
        st.session_state[JOB] = search_job.start(state.sample_hash(), kwargs, engine.default_search(kwargs, cats))
        st.session_state[JOB].ignored = cats
        st.rerun()


def describe(row: pd.Series, objective: str) -> str:
    return (f"{state.config_label(_config(row))}: {objective_name(objective)} {row[objective]:.1%}, "
            f"false-removal rate {row['false_removal_rate']:.2%}")


def _config(row):
    from calib.search.config import config_from_row
    return config_from_row(row)


@st.fragment(run_every=1.0)
def watch() -> None:
    """The running search's progress, redrawn every second; the whole page once it ends."""
    j = job()
    if j is None:
        return
    if not j.running:
        collect(j)
        st.rerun()
    st.progress(min(max(j.fraction, 0.0), 1.0), text=f"{j.fraction:.0%}: {j.message}")
    st.caption(f"Elapsed {search_job.clock(j.elapsed())}; about {search_job.clock(j.left())} left "
               f"(estimated from the share done); {count(sum(len(b) for b in j.batches), 'configuration')} "
               "measured so far.")
    best = j.best_so_far(j.settings.get("objective", "pair_recall"))
    if best is not None:
        st.markdown(f"**Best so far** (within the {j.settings['max_false_removal_rate']:.2%} budget, found by "
                    f"the {best['found_by']}): {describe(best, j.settings.get('objective', 'pair_recall'))}")


def collect(j: search_job.Job) -> None:
    """A finished (or stopped) search's rows become the sample's sweep; an error is shown."""
    if st.session_state.get(JOB) is j:
        del st.session_state[JOB]
    if j.error is not None:
        st.session_state["calib_search_error"] = f"The search failed: {j.error}"
        return
    found = j.found
    if found.stopped and not len(found.results):  # any earlier sweep of the sample stays
        st.session_state["calib_search_note"] = ("The search was stopped before it measured a configuration: "
                                                 "nothing to show. Run it again and let it measure a few.")
        return
    state.set_results(found.results, found, j.settings, "the default search" + (
        ", stopped" if found.stopped else ""))
    st.session_state["calib_second_pass_note"] = ""


def finish_if_done() -> None:
    """A search that ended while another page was open: its rows become the sweep now."""
    j = job()
    if j is not None and not j.running:
        collect(j)
    err = st.session_state.pop("calib_search_error", None)
    if err:
        st.error(err)
    note = st.session_state.get("calib_search_note")  # shown until the next search starts
    if note:
        st.info(note)


# --- how each row was found --------------------------------------------------------------------
STEP_NAMES = {1: "the first pass", 2: "the second pass's step around the front", 3: "the seed check"}


def found_by(rows: pd.DataFrame, found=None) -> pd.Series:
    """Per row, the step of the search that measured it."""
    step = rows["search_pass"].map(STEP_NAMES).fillna("this sweep") if "search_pass" in rows else \
        pd.Series("this sweep", index=rows.index)
    ex = getattr(found, "exploration", None)
    if ex is not None and ex.rows:
        explored = set(pd.concat(ex.rows)["config_fingerprint"])
        step = step.where(~rows["config_fingerprint"].isin(explored), "the second pass's exploration")
    return step


def found_by_text(row: pd.Series, found=None) -> str:
    frame = row.to_frame().T
    return "found by " + found_by(frame, found).iloc[0]


def steps_summary(sweep: state.Sweep) -> None:
    """Which step measured what and what the search recommended: calib sweep's own summary line."""
    found = sweep.found
    if found is None:
        return
    st.markdown("**How the search went** (the same lines as `calib sweep`):")
    lines = re.split(r"; (?=second pass|seed check|nothing within|stopped on request)",
                     found.added_text(sweep.settings.get("objective", "pair_recall")))
    st.markdown("\n".join(f"- {x}" for x in lines))
    if found.exploration is not None and found.exploration.rounds:
        st.caption("Exploration: " + "; ".join(found.exploration.rounds) + ".")


# --- results files, both ways -------------------------------------------------------------------
def results_file(rows: pd.DataFrame, rec_fp: str | None, sample_hash: str, fmt: str) -> bytes:
    """The rows as ``calib sweep`` writes them: ``recommended`` on the pick's rows and the sample's
    ``sample_hash``, so ``calib export --from-sweep`` reads and checks them."""
    out = rows.drop(columns=["recommended"], errors="ignore").assign(
        recommended=(rows["config_fingerprint"] == rec_fp).to_numpy(bool), sample_hash=sample_hash)
    return atomic.frame_bytes(out, fmt)


def read_results(name: str, data: bytes) -> pd.DataFrame:
    """A results table of ``calib sweep`` (.parquet or .csv), read as ``calib export --from-sweep`` reads it."""
    try:
        if name.lower().endswith(".parquet"):
            frame = pd.read_parquet(io.BytesIO(data))
        else:
            frame = atomic.csv_values(pd.read_csv(io.BytesIO(data)))
    except Exception as exc:  # noqa: BLE001 - any unreadable table is one user error
        raise ValueError(f"{name}: not a readable results table ({exc})") from None
    missing = [c for c in ("config_fingerprint", "status", "false_removal_rate") if c not in frame]
    if missing:
        raise ValueError(f"{name}: no {', '.join(missing)} column: not a calib sweep results table")
    if "recommended" in frame:
        frame["recommended"] = frame["recommended"].astype(str).str.lower() == "true"
    return frame


def open_results() -> None:
    """Open a ``calib sweep`` results file as this sample's sweep (refused when swept on another sample)."""
    box = st.expander("Open a calib sweep results file")
    up = box.file_uploader("Results (.parquet or .csv, as calib sweep --out writes)", type=["parquet", "csv"],
                           key="open_results")
    if up is None or st.session_state.get("calib_opened") == (up.name, up.size, state.sample_hash()):
        return
    try:
        frame = read_results(up.name, up.getvalue())
    except ValueError as exc:
        box.error(str(exc))
        return
    swept_on = set(frame["sample_hash"].astype(str)) if "sample_hash" in frame else set()
    if swept_on and swept_on != {state.sample_hash()}:
        box.error(f"{up.name}: swept on another sample (sample_hash {sorted(swept_on)[0][:12]}..., this sample "
                  f"{state.sample_hash()[:12]}...): load that sample first, or sweep this one")
        return
    st.session_state["calib_opened"] = (up.name, up.size, state.sample_hash())
    marked = frame.loc[frame["recommended"], "config_fingerprint"] if "recommended" in frame else []
    ss = st.session_state
    # the rule the file's mark was made by (calib sweep --confidence; NaN or no column: the estimate)
    conf = pd.to_numeric(frame["confidence"], errors="coerce").iloc[0] if "confidence" in frame and len(frame) \
        else None
    state.set_results(frame.drop(columns=["sample_hash"], errors="ignore"), None,
                      {"file_pick": str(marked.iloc[0]) if len(marked) else None,
                       "max_false_removal_rate": ss[state.BUDGET], "objective": ss[state.OBJECTIVE],
                       "confidence": None if conf is None or conf != conf else float(conf)},
                      f"opened from {up.name}")
    st.rerun()
