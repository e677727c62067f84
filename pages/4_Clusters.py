"""Clusters: risky clusters, policies, one cluster's graph, a document diff."""

import dataclasses

import numpy as np
import pandas as pd
import streamlit as st

from appui import charts, diff, engine, frame, labels, state, tables
from calib.estimates import figures
from appui.errors import guard
from appui.text import count
from calib.clusters.clustering import largest_components
from calib.verification.measures import get_measure

MAX_GRAPH = 60
RISK_LABELS = {"cluster": "cluster", "representative_id": "representative", "size": "documents",
               "diameter": "diameter (hops)", "min_edge_sim": "weakest edge J", "min_sim_to_rep": "lowest J to rep.",
               "weakest_a_id": "weakest pair: A", "weakest_b_id": "weakest pair: B", "weakest_sim": "weakest pair J",
               "n_chained": "chained", "risk": "risk"}
POLICY_LABELS = {"policy": "policy", "n_clusters": "clusters (with single documents)", "removed": "removed",
                 "chained_removals": "removed unverified", "below_threshold": "removed below threshold",
                 "false_removals": "false removals", "unlabeled_removals": "unlabeled removals",
                 "labeled_removals": "labeled removals", "false_removal_rate": "false-removal rate",
                 "false_removal_rate_95": "false-removal 95% CI"}
SLICE_LABELS = {"level": "level", "metric": "rate", "column": "slice", "value": "value", "n": "out of",
                "k": "count", "rate": "share", "ci_low": "95% low", "ci_high": "95% high", "p_value": "p",
                "p_adjusted": "p (Holm)", "flagged": "flagged"}
COMPONENT_LABELS = {"component": "component", "first_id": "first document", "size": "documents",
                    "n_removed": "removed", "flagged_giant": "giant (star rule)"}


def overview(ev) -> pd.DataFrame:
    c = ev.clustering
    sizes = c.cluster_sizes()
    frame.metrics([  # three a row: six in one cut the labels at 1000 px
        ("Verified pairs", f"{len(ev.verified.i):,}", "Candidate pairs whose exact similarity passed the threshold"),
        ("Clusters of 2+", f"{int((sizes >= 2).sum()):,}",
         "Clusters of two or more documents. The policies table's 'clusters' also counts each document "
         f"left alone as a cluster of one: {len(sizes):,} in all here."),
        ("Removed", f"{c.n_removed:,}", "Documents removed: every member of a cluster but its representative"),
        ("Chained", f"{c.n_chained:,}", "Removed documents whose pair with the representative was never verified"),
        ("Largest cluster", f"{int(sizes.max()) if len(sizes) else 0:,}", "Documents in the largest cluster"),
        ("Giant members", f"{int(c.flagged_giant.sum()):,}",
         "Members of components above the guard size, clustered with the star rule")])

    st.subheader("Clusters by risk")
    st.caption("risk = members below the threshold to their representative + (1 - weakest similarity to the "
               "representative) x log2(size). Similarities are the exact "
               f"{labels.measure(get_measure(state.config().measure).name)} of the shingle sets.")
    with st.spinner("Diagnosing clusters..."):
        diag = engine.diagnostics(ev)
    ids = state.sample().ids
    show = diag.copy()
    show.insert(1, "representative_id", ids[show["representative"].to_numpy()])
    for col in ("weakest_a", "weakest_b"):
        v = show[col].to_numpy()
        show[col + "_id"] = np.where(v >= 0, ids[np.clip(v, 0, None)], "")
    # what the sort is by (risk) and why (chained members, weakest similarities) first: at 1000 px the
    # last columns are off-screen
    cols = ["cluster", "representative_id", "size", "risk", "n_chained", "min_sim_to_rep", "weakest_sim",
            "min_edge_sim", "diameter", "weakest_a_id", "weakest_b_id"]
    shown, config = tables.view(show[cols], RISK_LABELS, formats={
        "cluster": "%d", **dict.fromkeys(("min_edge_sim", "min_sim_to_rep", "weakest_sim", "risk"), "%.3f")})
    st.dataframe(shown, hide_index=True, width="stretch", height=300, column_config=config)
    return diag


def policies(ev) -> None:
    st.subheader("Policies on the same verified pairs")
    with st.spinner("Clustering under each policy..."):
        p = engine.policies(ev)
    st.caption("Each column is this configuration evaluated under that policy: the same figures the Sweep table, "
               "the Export page and config.json give it. " + figures.covers(p["false_removal_rate_interval"], "false_removal_rate"))
    # the rate and its interval beside what is removed, where they are seen without scrolling
    p = p.assign(false_removal_rate_95=tables.interval(p["false_removal_rate_low"], p["false_removal_rate_high"],
                                                       "false_removal_rate"))
    cols = ["policy", "removed", "false_removal_rate", "false_removal_rate_95", "false_removals",
            "labeled_removals", "unlabeled_removals", "chained_removals", "below_threshold", "n_clusters"]
    # one column per policy, one row per figure: whole at 800 px (ten columns side by side were cut)
    st.table(tables.small_table(tables.percent_text(p[cols], ("false_removal_rate",)), "policy", POLICY_LABELS).T)
    st.caption("connected: every document in a component goes with one representative (chains allowed); "
               "star: each removed document must be a verified pair with its representative.")


def corpus_by_slice(ev) -> None:
    """A corpus draw's slices: every figure weighted to the corpus, per value (calib.estimates.corpus_slices)."""
    st.subheader("Who is removed: the corpus per slice")
    st.caption("Estimates for the whole corpus, per value of each slice field of the draw, weighted by the "
               "drawn pairs' inclusion probabilities, with 95% intervals. Removals count against the removed "
               "(later) document's value, as a share of the corpus's documents with that value; recall and "
               "precision are over the pairs whose two documents share the value.")
    with st.spinner("Estimating per slice..."):
        sb = engine.corpus_slices(ev)
    if sb.empty:
        st.info("This drawn set has no slice fields: draw it with `calib draw --design corpus --slice-fields F`.")
        return
    show = sb.assign(**{f"{n}_95": tables.interval(sb[f"{n}_low"], sb[f"{n}_high"], n)
                        for n in ("documents_removed_share", "pair_recall", "pair_precision", "false_removal_rate")},
                     documents_removed_95=(sb["documents_removed_low"].map("{:,.0f}".format) + "–"
                                           + sb["documents_removed_high"].map("{:,.0f}".format)),
                     column=sb["column"].map(labels.word), documents_removed=sb["documents_removed"].round())
    cols = ["column", "value", "documents", "documents_removed_share", "documents_removed_share_95",
            "pair_recall", "pair_recall_95", "false_removal_rate", "false_removal_rate_95", "documents_removed",
            "documents_removed_95", "pair_precision", "pair_precision_95", "labeled_duplicates", "labeled_removals"]
    shown, config = tables.view(show[cols], {"column": "slice", "documents": "documents in the corpus"},
                                percent=("documents_removed_share", "pair_recall", "false_removal_rate",
                                         "pair_precision"), formats={"documents_removed": tables.COUNT, "documents": tables.COUNT})
    st.dataframe(shown, hide_index=True, width="stretch", height=min(420, 40 + 35 * max(len(show), 1)),
                 column_config=config)


def by_slice(ev) -> None:
    if getattr(state.sample().design, "kind", "") == "corpus":
        corpus_by_slice(ev)
        return
    st.subheader("Who is removed: rates per slice")
    st.caption("Each rate per pair category and per document slice, with a 95% Wilson interval and a Fisher "
               "exact test of the slice against all the others (Holm-adjusted). Flagged document slices differ "
               "significantly: check that a rare domain or language is not removed disproportionately. Pair "
               "categories differ by design (an exact copy is easier to find than a translation): they keep their "
               "p values but are never flagged. 'same group, not listed': the duplicate pairs the sample's groups "
               "imply (two documents of one group) that its pair file does not list, as `calib samples summary` "
               "counts them (groups: pairs_within_groups_not_listed).")
    with st.spinner("Breaking the rates down by slice..."):
        sb = engine.slices(ev)
    if sb.empty:
        st.info("No labeled pair or slice column to break down.")
        return
    only = st.checkbox("Only flagged slices", value=False, key="slices_flagged_only")
    show = sb[sb["flagged"]] if only else sb
    frame.metrics([("Slices compared", f"{len(sb):,}"),
                   ("Flagged slices", f"{int(sb['flagged'].sum()):,}",
                    "Slices whose rate differs from the others' at p < 0.05 after Holm's adjustment")])
    show = show.assign(metric=show["metric"].map(labels.word), level=show["level"].map(labels.word),
                       value=show["value"].map(labels.category))
    # which rate of which slice value, the rate and whether it is flagged first: at 1000 px p, p (Holm) and
    # flagged were off-screen (the slice column's name, e.g. "category", after them)
    first = ["metric", "value", "rate", "flagged", "p_adjusted", "column", "p_value", "k", "n", "ci_low", "ci_high"]
    show = show[[c for c in first if c in show] + [c for c in show if c not in first]]
    shown, config = tables.view(show, SLICE_LABELS, percent=("rate", "ci_low", "ci_high"),
                                formats={"p_value": "%.2g", "p_adjusted": "%.2g"})
    st.dataframe(shown, hide_index=True, width="stretch", height=min(420, 40 + 35 * max(len(show), 1)),
                 column_config=config)


def giant_guard() -> None:
    """The giant-component guard is part of the configuration: changing it here
    changes the current configuration (and what the Export page writes)."""
    cfg = state.config()
    c = st.columns([1, 3])
    size = c[0].number_input("Giant-component guard (documents)", min_value=0, step=10,
                             value=cfg.max_component or 0, key="giant_guard",
                             help="Components larger than this are re-clustered with the star rule (no "
                                  "chaining) and flagged. 0 = off.")
    c[1].caption("Real crawls have produced single components of hundreds of thousands of documents that "
                 "wiped out whole sources. Above this size a component keeps only the documents verified "
                 "against a representative of their own; the table below shows which slices the largest "
                 "components swallow.")
    new = int(size) if size >= 2 else None
    if new != cfg.max_component:
        state.set_config(dataclasses.replace(cfg, max_component=new), "giant-component guard on the Clusters page")
        st.rerun()


def components(ev) -> None:
    st.subheader("Largest components and their slices")
    s = state.sample()
    cols = list(s.slice_columns)
    lc = largest_components(ev.clustering, s.docs[cols] if cols else None, top=10)
    lc.insert(1, "first_id", s.ids[lc["first"].to_numpy()])
    lc = lc.drop(columns=["first"])
    st.caption("Columns col=value: the share of all documents with that slice value that sit in this component.")
    frame, config = tables.view(lc, COMPONENT_LABELS, percent=[c_ for c_ in lc.columns if "=" in c_],
                                formats={"component": "%d"})
    st.dataframe(frame, hide_index=True, width="stretch", column_config=config)


def graph(ev, diag: pd.DataFrame) -> tuple[int, int] | None:
    st.subheader("One cluster as a graph")
    if diag.empty:
        st.info("No cluster with two or more documents under this configuration.")
        return None
    s = state.sample()
    top = diag.head(200)
    labels = {int(r.cluster): f"cluster {int(r.cluster)}: {int(r.size)} docs, risk {r.risk:.2f}, "
                               f"rep {s.ids[int(r.representative)]}" for r in top.itertuples()}
    cid = st.selectbox("Cluster (riskiest first)", list(labels), format_func=labels.get, key="graph_cluster")
    nodes, edges, n_members = charts.cluster_frames(ev, s, cid, engine.sim_fn(state.config()),
                                                    engine.verified_similarity(ev), MAX_GRAPH)
    if n_members > len(nodes):
        st.caption(f"Showing {len(nodes):,} of {count(n_members, 'member')}.")
    st.altair_chart(charts.cluster_graph(nodes, edges, f"Cluster {cid}: edges = verified pairs "
                                                       f"({state.config().verify} similarity)"),
                    width="stretch")
    # the members under the graph, at full width: beside it the role column was cut
    frame, config = tables.view(nodes[["id", "role", "sim_to_rep", "words"]],
                                {"id": "document", "sim_to_rep": "J to representative"},
                                formats={"sim_to_rep": "%.3f"})
    st.dataframe(frame, hide_index=True, width="stretch", height=min(460, 40 + 35 * len(nodes)), column_config=config)
    row = diag[diag["cluster"] == cid].iloc[0]
    if row["weakest_a"] >= 0:
        return int(row["weakest_a"]), int(row["weakest_b"])
    rep = int(nodes.loc[nodes["role"] == charts.REP_ROLE, "row"].iloc[0])
    return rep, int(nodes.loc[nodes["row"] != rep, "row"].iloc[0])


def doc_diff(default: tuple[int, int] | None) -> None:
    st.subheader("Compare two documents")
    s = state.sample()
    rep = state.config().rep
    ids = list(s.ids)
    a0, b0 = default if default else (0, 1)
    st.caption("Defaults to the weakest pair of the cluster above. Text is shown after normalization; "
               f"highlighted: {rep.shingle} {rep.k}-shingles found in both documents.")
    c = st.columns(2)
    a = c[0].selectbox("Document A", range(len(ids)), index=a0, format_func=lambda k: ids[k], key=f"diff_a_{a0}")
    b = c[1].selectbox("Document B", range(len(ids)), index=b0, format_func=lambda k: ids[k], key=f"diff_b_{b0}")
    ta, tb = s.docs["text"].iat[a], s.docs["text"].iat[b]
    na, nb, shared = diff.shared_shingles(ta, tb, rep)
    union = na + nb - shared
    small = min(na, nb)
    st.markdown(f"**Exact Jaccard {shared / union if union else 0:.3f}**, **containment "
                f"{shared / small if small else 0:.3f}** (of the smaller): {shared:,} shared of {union:,} distinct "
                f"shingles (A has {na:,}, B has {nb:,}).")
    c = st.columns(2)
    c[0].text(ids[a])  # plain text: an id is never Markdown
    diff.show(c[0], ta, tb, rep)
    c[1].text(ids[b])
    diff.show(c[1], tb, ta, rep)


with guard("The Clusters page"):
    frame.page("Clusters", "What the current configuration would remove, riskiest clusters first.")
    giant_guard()
    with st.spinner("Evaluating the current configuration..."):
        ev = engine.evaluation()
    if ev.verified is None:
        st.warning("This configuration stopped with too many candidate pairs; choose a stricter split on the "
                   "Sweep page.")
    else:
        diag = overview(ev)
        policies(ev)
        by_slice(ev)
        components(ev)
        pair = graph(ev, diag)
        doc_diff(pair)
