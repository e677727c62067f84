"""Sweep: evaluate a grid of configurations and pick one under a false-removal budget."""

from dataclasses import fields

import pandas as pd
import streamlit as st

from appui import charts, engine, frame, reviews, state, tables
from appui import sweep_search as search
from appui.errors import guard, message
from appui.text import count
from calib.estimates import figures
from calib.production import targets as T
from calib.sketches.schemes import SCHEMES, canonical_scheme, scheme_names
from calib.sketches.represent import HASH_FUNCTIONS, WEIGHTINGS, Representation
from calib.search.config import VERIFY_RULES, config_from_row
from calib.verification.measures import MEASURE_NAMES
from calib.candidates.lsh import parse_splits
from calib.search.grid import Grid
from calib.search.knobs import knobs, knobs_text
from calib.search.recommend import closest, held_words, recommend, standing_text
from calib.search.seeds import across_seeds
from calib.search.from_sample import objective_text

SEEDS = next(f for f in fields(Grid) if f.name == "seeds")  # its parser: "1,2,3" -> (1, 2, 3)
AXES = {f.name: f for f in fields(Grid)}  # the boilerplate and minimum-length axes are parsed by their own CLI parsers
THRESHOLDS = [round(0.05 + 0.05 * k, 2) for k in range(19)]  # 0.05..0.95 (containment of short copies: low)
HASH_COUNTS = [16, 32, 64, 128, 256, 512]


def grid_defaults(grid: Grid) -> dict:
    """The form's starting values: calib's default grid (the one `calib sweep` and
    `calib export` use). The form has one normalization, taken from the first representation."""
    rep = grid.representations[0]
    return {"lowercase": rep.lowercase, "nfkc": rep.nfkc, "strip_punct": rep.strip_punct,
            "collapse_ws": rep.collapse_ws, "hashfunc": rep.hashfunc, "scheme": rep.scheme, "seed": rep.seed, "seeds": str(rep.seed),
            "word_k": sorted(r.k for r in grid.representations if r.shingle == "word"),
            "char_k": sorted(r.k for r in grid.representations if r.shingle == "char"),
            "num_perms": list(grid.num_perms), "all_splits": grid.splits is None,
            "splits": ("16x8, 32x4, 8x16, 20x6" if grid.splits is None  # the list shown when switching to a list
                       else ", ".join(f"{b}x{r}" for b, r in grid.splits)),
            "thresholds": list(grid.thresholds), "verify": [v.value for v in grid.verify],
            "measures": list(grid.measures), "weightings": list(grid.weightings),
            "policies": list(grid.policies), "representative": grid.representative,
            "strip_lines": ", ".join(f"{x:g}" for x in grid.strip_lines),
            "min_shingles": ", ".join(str(x) for x in grid.min_shingles), "short_docs": grid.short_docs}


DEFAULT_GRID = grid_defaults(Grid())


def grid_inputs() -> Grid:
    saved = {**sample_defaults(), **st.session_state.get(state.GRID, {})}
    g = {}
    st.markdown("**Representation**")
    c = st.columns(2)  # two a row: four cut "Strip punctuation" at 1000 px
    for k, (name, label) in enumerate((("lowercase", "Lowercase"), ("nfkc", "Unicode NFKC"),
                                       ("strip_punct", "Strip punctuation"), ("collapse_ws", "Collapse whitespace"))):
        g[name] = c[k % 2].checkbox(label, value=saved[name], key=f"g_{name}")
    c = st.columns(2)  # two a row: at four, a chip read "1." at 1000 px
    g["word_k"] = c[0].multiselect("Word shingle sizes (words)", list(range(1, 10)), default=saved["word_k"],
                                   key="g_word_k")
    g["char_k"] = c[1].multiselect("Character shingle sizes (chars)", list(range(2, 13)), default=saved["char_k"],
                                   key="g_char_k")
    c = st.columns(2)
    g["hashfunc"] = c[0].selectbox("Shingle hash", HASH_FUNCTIONS, index=HASH_FUNCTIONS.index(saved["hashfunc"]),
                                   key="g_hashfunc")
    names = scheme_names()
    g["scheme"] = c[1].selectbox("MinHash scheme", names, index=names.index(canonical_scheme(saved["scheme"])),
                                 key="g_scheme", help="; ".join(str(SCHEMES[n]) for n in names))
    st.markdown("**LSH, verification, clustering**")
    c = st.columns(2)
    g["num_perms"] = c[0].multiselect("Hash counts (num_perm)", HASH_COUNTS, default=saved["num_perms"],
                                      key="g_num_perms")
    mode = c[1].radio("Splits", ["all splits (b x r = num_perm)", "a list"],
                      index=0 if saved["all_splits"] else 1, key="g_split_mode")
    g["all_splits"] = mode.startswith("all")
    g["splits"] = c[1].text_input("Splits (bands x rows)", value=saved["splits"], key="g_splits",
                                  disabled=g["all_splits"])
    # the whole width: seven chips in half of it showed four at 1000 px and three at 800
    kept = [t for t in (_number(v) for v in saved["thresholds"]) if t is not None]  # a typed one stays listed
    g["thresholds"] = st.multiselect("Thresholds (J or C)", sorted(set(THRESHOLDS) | set(kept)),
                                     default=kept, key="g_thresholds", accept_new_options=True,
                                     help="Pick from the list or type any number between 0 and 1 (e.g. 0.57)")
    c = st.columns(2)
    g["verify"] = c[1].multiselect("Verification", list(VERIFY_RULES), default=saved["verify"],
                                   key="g_verify", help="exact: Jaccard of the shingle sets; estimated: from the "
                                   "signatures; none: every LSH candidate counts as a duplicate")
    g["policies"] = c[0].multiselect("Clustering policies", ["connected", "star"], default=saved["policies"],
                                     key="g_policies")
    reps = ["first", "longest", "medoid"]
    c = st.columns(2)
    g["representative"] = c[1].selectbox("Keep per cluster", reps, index=reps.index(saved["representative"]),
                                         key="g_representative")
    g["measures"] = c[0].multiselect("Measures", list(MEASURE_NAMES), default=saved["measures"], key="g_measures",
                                     help="jaccard: |A∩B|/|A∪B|; containment: |A∩B|/|A| of the smaller set A, "
                                          "for short texts copied inside long ones (keeps the longest document "
                                          "of each cluster, whatever 'Keep per cluster' says)")
    c = st.columns(2)
    g["weightings"] = c[0].multiselect(
        "Shingle weights", list(WEIGHTINGS), default=saved["weightings"], key="g_weightings",
        help="none: plain shingle sets; idf: each shingle weighs ln(1 + N/df) (df counted on the sample), so "
             "boilerplate shared by many pages counts little: signatures by weighted MinHash (scheme dart; icws on request), "
             "verification by weighted Jaccard at the same thresholds")
    g["seeds"] = c[1].text_input("Hash seeds", value=saved["seeds"], key="g_seeds",
                                 help="One seed, or several (e.g. 1,2,3) to measure hash luck: every configuration "
                                      "runs once per seed and the results show the mean and range over seeds")
    st.markdown("**Boilerplate and short documents**")
    c = st.columns(4)
    g["strip_lines"] = c[0].text_input("Strip boilerplate lines (shares)", value=saved["strip_lines"],
                                       key="g_strip_lines", help=AXES["strip_lines"].metadata["help"])
    g["min_shingles"] = c[1].text_input("Minimum length (shingles)", value=saved["min_shingles"],
                                        key="g_min_shingles", help=AXES["min_shingles"].metadata["help"])
    g["short_docs"] = c[2].selectbox("Short documents", ["exclude", "exact"],
                                     index=["exclude", "exact"].index(saved["short_docs"]), key="g_short_docs",
                                     help=AXES["short_docs"].metadata["help"])
    st.session_state[state.GRID] = g

    norm = {k: g[k] for k in ("lowercase", "nfkc", "strip_punct", "collapse_ws")}
    seeds = SEEDS.metadata["parse"](g["seeds"])
    reps_ = tuple(Representation(**norm, shingle=kind, k=int(k), hashfunc=g["hashfunc"], scheme=g["scheme"])
                  for kind, ks in (("word", g["word_k"]), ("char", g["char_k"])) for k in sorted(ks))
    if not reps_:
        raise ValueError("choose at least one word or character shingle size")
    if not g["num_perms"] or not g["thresholds"] or not g["verify"] or not g["policies"] or not g["measures"] \
            or not g["weightings"]:
        raise ValueError("choose at least one hash count, threshold, verification rule, measure, shingle weight "
                         "and policy")
    return Grid(representations=reps_, num_perms=tuple(sorted(g["num_perms"])), ignore_categories=tuple(st.session_state.get("calib_ignored", [])),
                splits=None if g["all_splits"] else parse_splits(g["splits"]),
                verify=tuple(g["verify"]), measures=tuple(g["measures"]), weightings=tuple(g["weightings"]),
                thresholds=thresholds(g["thresholds"]),
                policies=tuple(g["policies"]), representative=g["representative"],
                **{n: AXES[n].metadata["parse"](g[n]) for n in ("strip_lines", "min_shingles", "short_docs")},
                # the representations' own seed is no seeds axis (the same grid as Grid())
                seeds=None if not seeds or seeds == tuple({r.seed for r in reps_}) else seeds)


def _number(v) -> float | None:
    """A threshold picked or typed, as a number in (0, 1] (None: not one)."""
    try:
        t = round(float(v), 4)
    except (TypeError, ValueError):
        return None
    return t if 0.0 < t <= 1.0 else None


def thresholds(values) -> tuple[float, ...]:
    """The thresholds picked or typed: numbers in (0, 1], sorted, each once."""
    out = set()
    for v in values:
        t = _number(v)
        if t is None:
            raise ValueError(f"threshold {v!r}: expected a number between 0 and 1")
        out.add(t)
    return tuple(sorted(out))


# --- a grid of your own: the form starts from the sample's grid; a second pass refines ---
def sample_defaults() -> dict:
    """The form's starting values: the grid `calib sweep` chooses from this sample (grid_from_sample)."""
    try:
        return grid_defaults(engine.sample_grid()[0])
    except Exception:  # noqa: BLE001 - e.g. a 1-document sample: the sweep itself reports it
        return DEFAULT_GRID


def search_caption() -> None:
    try:
        st.caption(engine.sample_grid()[1])
    except Exception:  # noqa: BLE001 - e.g. a 1-document sample: the sweep itself reports it
        pass


def run(grid: Grid) -> None:
    bar = st.progress(0.0, text="Starting the sweep...")
    found = engine.run_search(grid, progress=lambda f, msg: bar.progress(min(max(float(f), 0.0), 1.0), text=msg))
    bar.progress(1.0, text=f"Done: {count(len(found.results), 'configuration')}.")
    st.session_state["calib_second_pass_note"] = found.added_text().split("; second pass")[0]
    st.session_state["calib_ignored"] = list(grid.ignore_categories)
    state.set_results(found.results, source="a grid of your own")


def second_pass_step(results: pd.DataFrame, budget: float, objective: str) -> None:
    """A grid of your own refined as ``calib sweep --second-pass`` refines it: around the recommended
    row and the front (the default search has its second pass already)."""
    if state.sweep().found is not None or ("search_pass" in results and (results["search_pass"] == 2).any()):
        return
    if st.button("Refine around the front (second pass)", key="second_pass",
                 help="The first step of calib sweep's second pass: at most 160 configurations around the "
                      "recommended row and the recall / false-removal front (neighbouring shingle sizes, finer "
                      "thresholds, steep splits, twice the hashes, other normalizations); calib sweep then "
                      "explores every axis (--search-effort)"):
        bar = st.progress(0.0, text="Second pass...")
        rows, added, explored = engine.run_second_pass(results, budget=budget, objective=objective,
                                             progress=lambda f, m: bar.progress(min(max(float(f), 0.0), 1.0), text=m))
        before = recommend(results, max_false_removal_rate=budget, objective=objective)
        after = recommend(rows, max_false_removal_rate=budget, objective=objective)
        moved = ("the recommendation stands" if after is None or (before is not None and before[
            "config_fingerprint"] == after["config_fingerprint"]) else
                 f"the recommendation moved to {after['representation']} b={after['b']} r={after['r']} "
                 f"t={after['threshold']} ({objective_text(objective, after[objective])}), found by the second "
                 "pass's step around the front")
        more = "" if explored is None else (f" and {sum(len(r) for r in explored.rows)} from "
                                            f"{count(len(explored.ceilings), 'setting')} explored")
        st.session_state["calib_second_pass_note"] = f"Second pass: {count(added, 'configuration')} added{more}; {moved}"
        state.set_results(rows, source="a grid of your own, refined")
        st.rerun()


def review_button(rec: pd.Series) -> None:
    """Queue the recommended row's unlabeled removals on the Review page, so the next sweep stands on them."""
    if int(rec.get("unlabeled_removals", 0) or 0) and st.button(
            f"Review its {int(rec['unlabeled_removals']):,} unlabeled removals", key="review_unlabeled",
            help="Makes the recommendation the current configuration and opens the Review page, whose queue "
                 "lists its unlabeled removals first; sweep with the reviews as labels afterwards"):
        state.set_config(config_from_row(rec), "recommended by the sweep, for review")
        st.switch_page("pages/5_Review.py")


def grid_summary(results: pd.DataFrame) -> str:
    """What a results frame covers (so a user, and the load test, can tell whose sweep it is)."""
    splits = sorted({(int(b), int(r)) for b, r in zip(results["b"], results["r"])})
    thresholds = sorted({float(t) for t in results["threshold"].dropna()})
    return (f"Results of {state.sweep().source}: {count(len(results), 'configuration')}; representations "
            f"{', '.join(sorted(results['representation'].unique()))}; hash counts "
            f"{', '.join(str(n) for n in sorted(results['num_perm'].unique()))}; splits "
            f"{', '.join(f'{b}x{r}' for b, r in splits)}; thresholds {', '.join(f'{t:g}' for t in thresholds) or '-'}.")


def engine_caption() -> None:
    try:
        info = engine.cache_info()
    except Exception:  # noqa: BLE001 - e.g. a 1-document sample: the sweep itself reports it
        return
    st.caption(f"Engine cache (shared by every browser session on this sample): workspace {info['workspace']}, "
               f"built {count(info['builds'], 'time')} by this server; it holds "
               f"{count(info['shingle_sets'], 'shingle set')}, "
               f"{count(info['signature_matrices'], 'signature matrix', 'signature matrices')}, "
               f"{count(info['candidate_sets'], 'candidate set')}."
               + (f" Kept on disk across restarts: {count(sum(info['loaded'].values()), 'step')} loaded, "
                  f"{count(sum(info['computed'].values()), 'step')} computed." if info.get("on_disk") else ""))


EVERY = "every representation"
NO_LABELS = ("This sample has no duplicate labels (no duplicate pair, no group of two or more): recall and "
             "false-removal rates cannot be measured, so nothing is recommended and there is no trade-off to "
             "plot. The table shows what each configuration would do (candidate pairs, documents removed). "
             "Load a labeled sample on the Sample page, or label pairs on the Review page and use them as labels.")


def recommendation(rec: pd.Series, budget: float, objective: str, how: str, found=None) -> None:
    """The recommended row, which step found it and how it was picked, its numbers, and the button that
    makes it the current configuration."""
    cfg = config_from_row(rec)
    tool = T.measured_for(rec)
    runs = "" if tool == "calib" else f" as {tool} runs it"
    st.markdown(f"**Recommended under a {budget:.2%} budget{runs}:** `{state.config_label(cfg)}`")
    st.caption(f"{search.found_by_text(rec, found)[0].upper()}{search.found_by_text(rec, found)[1:]}; {how}.")
    frr = "false_removal_rate"
    frame.metrics([
        (charts.OBJECTIVES[objective].split(" (")[0], tables.pct(rec[objective], objective),
         charts.OBJECTIVES[objective]),
        ("False removals", tables.pct(rec[frr], frr),
         f"False-removal rate: the share of labeled removals that are not duplicates: {figures.rate_text(rec, frr)}. "
         + figures.covers(rec.get(frr + "_interval"), frr)),
        ("Candidates", figures.number(rec["candidates"]), "Candidate pairs LSH proposes for verification"),
        ("Removed", figures.number(rec["removed"]), "Documents this configuration would remove"),
        ("Missed removals", tables.pct(rec["missed_removal_rate"], "missed_removal_rate"),
         "Missed-removal rate: the share of documents that should go (duplicates of a kept one) that stay")])
    headline = figures.summary(rec)
    st.caption(f"{headline[0].upper()}{headline[1:]}. {figures.covers_row(rec, ('pair_recall', frr))}")
    if standing_text(rec):
        st.caption(f"It stands on: {standing_text(rec)}.")
    review_button(rec)
    if state.config().fingerprint() == rec["config_fingerprint"]:
        st.success(f"The current configuration is this recommendation (fingerprint {rec['config_fingerprint']}).")
    elif st.button("Use the recommended configuration", key="use_recommended", type="primary"):
        state.set_config(cfg, f"recommended by the sweep (budget {budget:.2%}, max {search.objective_name(objective)})")
        state.changed(f"Current configuration set to the recommendation: {state.config_label(cfg)}; "
                      "the other pages now use it.")


def table(results: pd.DataFrame, labeled: bool, budget: float, objective: str, rec_fp: str | None,
          per_seed: pd.DataFrame | None = None) -> None:
    """Every configuration, filterable and sortable; a ticked row can become the current configuration."""
    st.markdown("**All configurations** (the recommended first, then those within the budget by "
                f"{objective.replace('_', ' ')}; click a column to sort; tick a row to make it the current one)")
    f = st.columns(2)  # the filter and the two boxes: three a row cut the boxes' labels at 800 px
    within = f[1].checkbox("Only within the budget", value=False, key="only_within", disabled=not labeled)
    # one choice, "every representation" by default: rows a second pass adds are never hidden by a list
    # of the representations the first pass had (and no chips to cut)
    reps = [EVERY] + sorted(results["representation"].unique())
    pick = f[0].selectbox("Representation", reps, key="filter_rep")
    ok_only = f[1].checkbox("Hide stopped", value=True, key="ok_only",
                            help="Hide the configurations that stopped with too many candidate pairs")
    view = results if pick == EVERY else results[results["representation"] == pick]
    if ok_only:
        view = view[view["status"] == "ok"]
    if within and labeled:
        view = view[view["false_removal_rate"] <= budget]  # a rate not measured (NaN) is not within it
    view = tables.sweep_order(view, budget, objective, rec_fp, labeled)
    frame, col_cfg = tables.sweep_view(view, labeled=labeled, recommended_fp=rec_fp,
                                       current_fp=state.config().fingerprint())
    shared = tables.configuration_column(view)[1]
    st.caption("Configuration: shingles, hashes (h), bands x rows, the verification rule (J≥t: exact Jaccard at "
               "least t; est.: from the signatures), and whatever else differs between rows"
               + (f"; {shared}" if shared else "") + ". ★ recommended, ● current. It and the rates stay in view; "
               "scroll right for each setting's own column and the details. "
               + " ".join(figures.covers(view[f"{n}_interval"], n) for n in ("pair_recall", "false_removal_rate")
                          if labeled and f"{n}_interval" in view))
    event = st.dataframe(frame, hide_index=True, width="stretch", height=380, column_config=col_cfg,
                         on_select="rerun", selection_mode="single-row", key="results_table")
    rows = event.selection.rows if event is not None and hasattr(event, "selection") else []
    if rows:
        cfg = config_from_row(view.iloc[rows[0]])
        is_current = cfg.fingerprint() == state.config().fingerprint()
        if st.button(f"Use selected row: {state.config_label(cfg)}", key="use_selected", disabled=is_current):
            state.set_config(cfg, "picked from the sweep table")
            state.changed("Current configuration set to the selected row; the other pages now use it.")
        if is_current:
            st.caption("The selected row is the current configuration already.")
    download = results if per_seed is None else per_seed  # the per-seed rows, never the aggregate only
    d = st.columns(2)
    for col, fmt, mime in ((d[0], "csv", "text/csv"), (d[1], "parquet", "application/octet-stream")):
        col.download_button(f"Download results ({fmt.upper()})",
                            search.results_file(download, rec_fp, state.sample_hash(), fmt), f"results.{fmt}",
                            mime, key="dl_results" if fmt == "csv" else "dl_results_parquet")
    st.caption(f"As calib sweep --out writes it: the row marked recommended is this page's pick, so "
               f"`calib export --from-sweep results.{'csv'} --budget {budget:g}` exports it.")


def contested_section(results: pd.DataFrame, budget: float) -> None:
    """When the sample's labels came from reviews: how they were made, and how the recommendation
    moves if the contested pairs (left out) went either way."""
    got = reviews.review_labels_of(state.sample_hash())
    if got is None:
        return
    st.caption(f"Review labels in this sample: {reviews.label_counts_line(got['counts'])}")
    known = set(state.sample().ids)
    contested = got["contested"][got["contested"]["id_a"].isin(known) & got["contested"]["id_b"].isin(known)]
    if contested.empty or budget <= 0:
        return
    key = (state.sample_hash(), len(results))  # once asked for, it follows the budget slider
    if st.session_state.get("calib_contested_check") != key:
        if not st.button(f"Check the {count(len(contested), 'contested pair')} (scores the "
                         f"{count(results['config_fingerprint'].nunique(), 'configuration')} twice more)",
                         key="check_contested",
                         help="How the recommendation changes if the contested pairs, left out of the labels, "
                              "went either way"):
            return
        st.session_state["calib_contested_check"] = key
    with st.spinner(f"Scoring the configurations again with the {count(len(contested), 'contested pair')} "
                    "labeled each way..."):
        sens = engine.contested_sensitivity(results, contested, budget)
    moved = not sens["same_config"].all()
    st.markdown(f"**If the {count(len(contested), 'contested pair')} went the other way:** "
                + ("the recommendation changes." if moved else "the same configuration is recommended."))
    order = ["labels", "same_config", "pair_recall", "pair_recall_change", "false_removal_rate",
             "false_removal_rate_change", "config", "base_pair_recall", "base_false_removal_rate"]
    frame, config = tables.view(sens[order],
                                formats={c: "%.4f" for c in sens.columns if "rate" in c or "recall" in c})
    st.dataframe(frame, hide_index=True, width="stretch", column_config=config)
    st.caption("The sweep's configurations scored again with every contested pair labeled duplicate, then not "
               "duplicate (shingles, signatures and candidates reused). base_*: the configuration recommended as "
               "labeled, under that labeling.")


def knobs_section(results: pd.DataFrame, budget: float, objective: str) -> None:
    """After the second pass: per axis, the best row within the budget at each value tried."""
    if "search_pass" not in results or not (results["search_pass"] == 2).any():
        return
    found = knobs(results, budget=budget, objective=objective)
    if found.empty:
        return
    box = st.expander("Which knobs mattered")
    box.caption(f"{knobs_text(found, objective)}. Each row: the best {charts.OBJECTIVES[objective].split(' (')[0]} "
               f"within the {budget:.1%} budget among the configurations with that value (0% where none fits).")
    shown = found[found["axis"].isin(found["axis"].drop_duplicates().head(5))]
    box.table(pd.DataFrame({"axis": shown["axis"].str.replace("_", " "), "value": shown["value"],
                           "best": shown["best"].map(lambda v: f"{v:.1%}"), "configurations": shown["rows"]}))


def results_section(results: pd.DataFrame) -> None:
    sweep = state.sweep()
    st.subheader("Results")
    st.caption(grid_summary(results) + (f" {st.session_state['calib_second_pass_note']}."
                                         if st.session_state.get("calib_second_pass_note") else ""))
    search.steps_summary(sweep)
    per_seed = results
    if results["seed"].nunique() > 1 and sweep.found is None:  # a grid's own seeds: across-seed figures
        results = across_seeds(per_seed)
        st.info(f"{int(results['seeds'].max())} hash seeds ({results['seed_list'].iloc[0]}): every rate below is "
                "the mean over seeds, the table adds its lowest and highest seed, the chart its range (grey bar), "
                "and the recommendation is made on these across-seed figures.")
    labeled = bool((results["n_positive"].fillna(0) > 0).any())
    if not labeled:
        st.warning(NO_LABELS)
        table(results, False, 0.0, "candidates", None, per_seed)
        return
    ss = st.session_state
    budget, objective, confidence = ss[state.BUDGET], ss[state.OBJECTIVE], ss.get(state.CONFIDENCE)
    results, rec, how = search.pick(sweep, results, budget, objective, confidence, ss.get(search.SETTINGS))
    bad = int((results["status"] != "ok").sum())
    if bad:
        st.caption(f"{count(bad, 'configuration')} stopped with too many candidates (splits too loose); "
                   "not plotted.")
    if rec is None:
        bound = held_words(confidence)
        main = results[results["search_pass"] != 3] if "search_pass" in results else results
        near = closest(main, max_false_removal_rate=budget, objective=objective, confidence=confidence)[1]
        st.warning(f"No configuration keeps the {bound} within {budget:.2%}: {near}.")
    else:
        recommendation(rec, budget, objective, how, sweep.found)
    second_pass_step(per_seed, budget, objective)
    knobs_section(per_seed, budget, objective)
    contested_section(per_seed, budget)
    rec_fp = None if rec is None else rec["config_fingerprint"]
    st.altair_chart(charts.pareto_chart(results, objective, budget, rec_fp, state.config().fingerprint()),
                    width="stretch")
    table(results, True, budget, objective, rec_fp, per_seed)


with guard("The Sweep page"):
    frame.page("Sweep", "Run calib sweep's search on the labeled sample, watch it, and pick a configuration "
                        "under a false-removal budget.")
    search.finish_if_done()
    kwargs = search.settings()
    cats = search.ignored()
    search_caption()
    search.run_controls(kwargs, cats)
    with st.expander("A grid of your own (calib sweep with the grid flags typed)"):
        grid = None
        try:
            grid = grid_inputs()
            st.caption(str(grid))
        except Exception as exc:  # noqa: BLE001
            st.error(message(exc))
        if st.button("Run sweep", key="run_sweep", disabled=grid is None):
            run(grid)
    search.open_results()
    res = state.results()
    if res is None and search.running():
        st.caption("The search's rows appear here when it ends (or is stopped).")
    elif res is None:
        st.info("No sweep for this sample yet: press Run the search, or open a calib sweep results file.")
    else:
        results_section(res)
    engine_caption()
