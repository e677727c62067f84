"""Export: the versioned config JSON, production target snippets, and the removal manifest (a proposal)."""

from pathlib import Path

import pandas as pd
import streamlit as st

from appui import engine, export, labels, reviews, state, tables
from appui import frame as frame_
from appui.errors import guard, message
from appui.text import count, md
from calib.estimates import figures
from calib.production import export as cx
from calib.production import targets as T
from calib.production.targets.losses import loss_lines
from calib.verification.measures import get_measure
from calib.review.adjudication import decisions_of
from calib.review.agreement import review_evidence
from calib.review.postgres import is_postgres_url

TAB_TITLES = {"milvus": "Milvus"}
ALL = "(all)"


def latest_reviews() -> tuple[pd.DataFrame | None, tuple]:
    """The latest review decisions if the review store exists (never creates it), and a stamp
    that changes when they do."""
    got = review_decisions()
    return (None, ()) if got[0] is None else (got[0], got[2])


def review_decisions() -> tuple[pd.DataFrame | None, pd.DataFrame | None, tuple]:
    """(latest decisions, every decision, stamp) if the review store exists (never creates it); a store
    that cannot be read is named in a warning."""
    text = st.session_state.get(state.REVIEW_DB) or reviews.default_db()
    try:
        target = reviews.check_db_target(text)
    except ValueError:
        return None, None, ()
    if not is_postgres_url(target):
        path = Path(target)
        if not path.is_file():
            return None, None, ()
        stamp = tuple((p.name, p.stat().st_mtime_ns, p.stat().st_size)
                      for p in (path, Path(f"{path}-wal")) if p.exists())
    try:
        store = reviews.open_store(target, readonly=True)
    except ValueError as exc:
        st.warning(f"The review status column is empty: {md(exc)}")
        return None, None, ()
    try:
        latest = store.latest()
        if is_postgres_url(target):  # append-only: the count of decisions changes whenever they do
            stamp = (len(store),)
        return latest, decisions_of(store), (store.where,) + stamp
    finally:
        store.close()


def review_evidence_of(s) -> dict | None:
    """The reviews' label rule, counts and agreement, when the sample's labels came from them."""
    if reviews.review_labels_of(state.sample_hash()) is None:
        return None
    decisions = review_decisions()[1]
    return None if decisions is None else review_evidence(decisions, labels_from_reviews=True)


def config_section(cfg, ev, s) -> None:
    ss = st.session_state
    st.subheader("1. Configuration file (config.json)")
    sel = export.selection(ss[state.CONFIG_SOURCE], ss.get(state.BUDGET), ss.get(state.OBJECTIVE))
    stop = engine.handle().ws.stripped(cfg.rep)[0]  # the sample's boilerplate lines (None: no stripping)
    try:
        doc = export.config_document(cfg, evaluation=ev, sample=s, sel=sel, reviews=review_evidence_of(s),
                                     stoplist=stop)
    except cx.ExportError as exc:
        st.error(f"The config document does not validate: {md(exc)}")
        return
    c = st.columns(2)  # two a row: four cut "Format version" at 800 px
    c[0].metric("Format version", doc["format_version"], help="format_version in config.json")
    c[1].metric("calib version", doc["calib_version"])
    c = st.columns(2)
    c[0].markdown(f"**Config fingerprint**  \n`{doc['config_fingerprint']}`")
    c[1].markdown(f"**Representation fingerprint**  \n`{doc['representation_fingerprint']}`")
    st.success(f"Valid: checked against config.schema.json (format_version {doc['format_version']}); both "
               "fingerprints recomputed from the content and matching. `calib apply --config config.json` runs it.")
    m = (doc.get("evidence") or {}).get("metrics") or {}
    if m:  # the row config.json stores, written as every page and the CLI write it (calib.estimates.figures)
        st.caption(f"Evidence stored with it: the sample named **{md(s.name)}** (content hash "
                   f"{doc['evidence']['sample']['content_hash'][:12]}, {s.n:,} documents, {len(s.pairs):,} labeled "
                   f"pairs); pair recall {figures.rate_text(m, 'pair_recall')}, false-removal rate "
                   f"{figures.rate_text(m, 'false_removal_rate')}, {figures.count(m.get('removed'), 'document')} "
                   f"would be removed. Chosen: {export.selection_text(sel)}. "
                   + figures.covers(m.get("false_removal_rate_interval"), "false_removal_rate"))
    with st.expander("config.json", expanded=False):
        st.code(cx.dumps(doc), language="json")
    untuned = export.untuned(sel)
    st.download_button("Download config.json" + (" (untuned default)" if untuned else ""), export.config_bytes(doc),
                       export.config_filename(cfg), "application/json", key="download_config",
                       type="secondary" if untuned else "primary")
    if stop is not None:  # config.json names it with its sha256: apply reads it from beside config.json
        st.download_button(f"Download stoplist.json ({count(len(stop), 'line')}; save it beside config.json)",
                           stop.to_json(cfg.rep).encode("utf-8"), cx.STOPLIST_FILE, "application/json",
                           key="download_stoplist")


def tool_check(cfg, evidence: dict) -> None:
    """The tool that will run it (calib export --target): whether it runs this configuration as measured,
    and if not, what it lacks and the figures it would give instead."""
    names = list(T.TARGET_NAMES)
    chosen = st.session_state.get(state.TARGET, "calib")
    name = st.selectbox("The tool that will run it", names, index=names.index(chosen) if chosen in names else 0,
                        key="export_target", format_func=lambda n: n.replace("_", "-"),
                        help="calib export --target: a configuration that tool cannot run as measured is refused")
    st.session_state[state.TARGET] = name
    if name == "calib":
        return
    caps = T.capabilities(name)
    if caps.runs_as_is(cfg):
        st.success(f"{name} runs this configuration as measured: its figures below are the ones it gives.")
        return
    e = evidence.get(name)
    gives = "it cannot run it at all" if not e else f"it would give {T.figures_text(e)}"
    st.error(f"**{name} cannot run this configuration as measured**: it lacks {md('; '.join(caps.differences(cfg)))}; "
             f"{gives}. Run the search for it on the Sweep page (The tool that will run it: {name}), or "
             f"`calib sweep --target {name}`.")


def targets_section(cfg, ev) -> None:
    st.subheader("2. Production targets")
    st.caption("The same decision for each tool, pinned to the version it was read against: parameters, a "
               "snippet (copy button at the top right of each block), what the tool cannot express, which "
               "document it keeps per cluster, and its own figures on this sample. Only the datasketch target "
               "reproduces calib's signatures and candidate pairs exactly.")
    found = T.targets(cfg)
    evidence = {}
    if ev is not None:
        try:
            with st.spinner("Evaluating the configuration as each target runs it..."):
                evidence = engine.target_evidence(cfg)
        except Exception as exc:  # noqa: BLE001
            st.warning(f"The targets' own figures could not be computed: {message(exc)}")
    tool_check(cfg, evidence)
    if evidence:
        losses = loss_lines(ev.row, {name: evidence.get(name) for name in found},
                            {name: t.title for name, t in found.items()})
        if losses:
            st.warning("**Where it runs, it is not this configuration.** The tools below give other figures on "
                       "this sample than calib's:\n\n" + "\n".join(f"- {md(line)}" for line in losses))
        st.markdown("**What each target would remove on this sample** (the configuration evaluated as that tool "
                    "runs it: its verification, its kept-document rule, its shingles)")
        table = export.evidence_frame(cfg, ev.row, evidence, found)
        for start in range(0, table.shape[1], 3):  # three targets a table: six were cut at 800 px
            st.table(table.iloc[:, start:start + 3])
    st.caption("In brackets: how many parts of this configuration each target cannot express.")
    tabs = st.tabs([f"{TAB_TITLES.get(n, t.title)} ({len(t.unsupported)})" for n, t in found.items()])
    for tab, (name, t) in zip(tabs, found.items()):
        with tab:
            st.markdown(f"**Tool:** `{t.tool}`  \n**Keeps per cluster:** {t.kept}")
            if name in evidence:
                st.caption(f"Evaluated as: {t.engine_note} (configuration {evidence[name]['config_fingerprint']}).")
            unsupported = export.unsupported_frame(t.to_dict())
            if len(unsupported):
                st.warning(f"**{t.title} cannot express {count(len(unsupported), 'part')} of this configuration.** "
                           "Using it changes what 'duplicate' means in these ways:")
                st.table(unsupported.set_index("field"))
            else:
                st.success(f"{t.title} expresses every part of this configuration.")
            st.markdown(f"**{t.file}** ({count(len(t.snippet.splitlines()), 'line')}; scroll inside the block, "
                        "or copy it with the button at its top right)")
            st.code(t.snippet, language=export.snippet_language(t.file), line_numbers=True, wrap_lines=True,
                    height=420)
            with st.expander(f"Parameters ({name} in targets.json)"):
                st.json(t.parameters, expanded=True)
    st.download_button("Download targets.json", export.targets_bytes(cfg, evidence or None),
                       export.targets_filename(cfg), "application/json", key="download_targets")


def manifest_section(cfg, ev, s) -> None:
    st.subheader("3. Removal manifest (a proposal, nothing is deleted)")
    if ev.clustering is None:
        st.warning("This configuration stopped with too many candidates (its split is too loose): no clustering, "
                   "so no manifest. Choose a stricter configuration on the Sweep page.")
        return
    latest, stamp = latest_reviews()
    frame = engine.manifest(ev, latest, stamp)
    n_chained = int(frame["chained"].sum())
    frame_.metrics([("Proposed removals", f"{len(frame):,}"),
                    ("Clusters", f"{frame['cluster_id'].nunique():,}",
                     "Clusters with at least one proposed removal (clusters of two or more documents)"),
                    ("Chained only", f"{n_chained:,}", "Removed by chaining only: no verified pair with the "
                     "document that is kept"),
                    ("In giant clusters", f"{int(frame['flagged_giant'].sum()):,}")])
    st.caption("One row per document this configuration would remove, next to the representative it would keep; "
               "'linked through' is the verified neighbour that links it to its cluster. 'chained only': only the "
               "transitive closure justifies the removal: review those first. The downloads keep the machine "
               "column names (doc_id, via_id, ...).")

    f = st.columns([1, 1, 1, 1])
    chained_only = f[0].checkbox("Chained only", value=False, key="export_chained_only")
    slice_cols = export.slice_columns(frame, s)
    slice_col = f[1].selectbox("Slice column", [ALL] + slice_cols, key="export_slice_col",
                               disabled=not slice_cols)
    slice_value = None
    if slice_col != ALL:
        values = sorted(frame[slice_col].dropna().astype(str).unique())
        v = f[2].selectbox(f"{slice_col} =", [ALL] + values, key="export_slice_value")
        slice_value = None if v == ALL else v
    else:
        f[2].selectbox("Slice value", [ALL], key="export_slice_value_off", disabled=True)
    clusters = sorted(int(x) for x in frame["cluster_id"].unique())
    cl = f[3].selectbox("Cluster id", [ALL] + clusters, key="export_cluster")
    view = export.filter_manifest(frame, chained_only=chained_only,
                                  slice_column=None if slice_col == ALL else slice_col, slice_value=slice_value,
                                  cluster_id=None if cl == ALL else cl)
    st.markdown(f"**Showing {len(view):,} of {len(frame):,} proposed removals** (click a column to sort)")
    m = get_measure(state.config().measure)
    cols = {"sim_to_representative_exact": f"{m.symbol} to kept (exact)",
            "sim_to_representative_estimated": f"{m.symbol} to kept (estimate)",
            "via_exact": f"via {m.symbol} (exact)", "via_estimated": f"via {m.symbol} (estimate)"}
    conf = {c: st.column_config.NumberColumn(label, format="%.3f",
                                             help=f"{c}: {m.name}" + (" to the representative that is kept"
                                                                                if "representative" in c else
                                                                                " of the verified pair (doc, via_id)"))
            for c, label in cols.items()}
    conf["cluster_id"] = st.column_config.NumberColumn(labels.word("cluster_id"), format="%d")
    for c in view.columns:
        conf.setdefault(c, st.column_config.Column(labels.word(c)))
    first = ["doc_id", "cluster_id", "representative_id", "sim_to_representative_exact",
             "sim_to_representative_estimated", "chained", "label", "review_status", "via_id", "via_exact",
             "via_estimated", "flagged_giant"]
    order = [c for c in first if c in view.columns] + [c for c in view.columns if c not in first]
    st.dataframe(view, hide_index=True, width="stretch", height=380, column_config=conf, column_order=order,
                 key="manifest_table")
    st.caption("The downloads hold the whole manifest (every row, not only the filtered ones).")
    d = st.container(horizontal=True)  # the buttons wrap to a new line rather than cut "CSV" / "Parquet"
    d.download_button("Download the manifest (CSV)", export.frame_bytes(frame, "csv"),
                      export.manifest_filename(cfg, "csv"), "text/csv", key="download_manifest_csv")
    d.download_button("Download the manifest (Parquet)", export.frame_bytes(frame, "parquet"),
                      export.manifest_filename(cfg, "parquet"), "application/vnd.apache.parquet",
                      key="download_manifest_parquet")


with guard("The Export page"):
    frame_.page("Export", "The chosen configuration, ready to apply elsewhere, with the evidence it was chosen on.")
    st.info("**Nothing is deleted.** " + cx.NOTICE)
    cfg = state.config()
    st.markdown(f"Current configuration: `{state.config_label(cfg)}`")
    st.caption(f"Source: {st.session_state[state.CONFIG_SOURCE]}; fingerprint {cfg.fingerprint()}")
    export.untuned_warning(st.session_state[state.CONFIG_SOURCE])
    ev = None
    try:
        with st.spinner("Evaluating the current configuration on the sample..."):
            ev = engine.evaluation(cfg)
    except Exception as exc:  # noqa: BLE001
        st.error(f"The configuration could not be evaluated, so the export carries no evidence: {message(exc)}")
    s = state.sample()
    config_section(cfg, ev, s if ev is not None else None)
    targets_section(cfg, ev)
    if ev is not None:
        manifest_section(cfg, ev, s)
