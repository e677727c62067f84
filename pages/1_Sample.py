"""Sample: choose the labeled sample and inspect it."""

import pandas as pd
import streamlit as st

from appui import charts, frame, labels, loading, state, tables
from appui.errors import guard, message
from appui.text import agree, count, md
from appui.paths import ENV_VAR, allowed_roots
from calib.reading.sample import summary
from calib.clusters.truth import largest_cluster_share, truth_from_sample


def choose_source() -> None:
    src = st.radio("Source", ["Shipped sample", "Path on this machine", "Upload files"], horizontal=True,
                   key="sample_source_choice")
    if src == "Shipped sample":
        if st.button("Use the shipped sample", key="use_shipped"):
            state.set_sample(loading.load_shipped())
            state.changed("Shipped sample loaded.")
    elif src == "Path on this machine":
        st.caption("A folder with docs.jsonl|csv|parquet [+ pairs.*], a documents file, or an inline-pairs "
                   "JSONL. Allowed folders: " + ", ".join(f"`{r}`" for r in allowed_roots())
                   + f" (add more with the environment variable `{ENV_VAR}`).")
        path = st.text_input("Path", key="sample_path", placeholder="data/sample or ../shared/corpora/clough")
        if st.button("Load path", key="load_path"):
            try:
                with st.spinner("Loading..."):
                    state.set_sample(loading.load_path(path))
            except Exception as exc:  # noqa: BLE001
                st.error(message(exc))
            else:
                state.changed(f"Loaded {path}.")
    else:
        st.caption("Documents: JSONL, CSV or Parquet with `id`, `text` [, `group`, slice columns], or an "
                   "inline-pairs JSONL (`id_a`, `text_a`, `id_b`, `text_b`, `label`). Pair labels "
                   "(optional): `id_a`, `id_b`, `label` [, `category`].")
        c = st.columns(2)
        docs = c[0].file_uploader("Documents file", type=["jsonl", "csv", "parquet"], key="upload_docs")
        pairs = c[1].file_uploader("Pair labels (optional)", type=["jsonl", "csv", "parquet"], key="upload_pairs")
        if st.button("Load uploaded files", key="load_upload", disabled=docs is None):
            try:
                with st.spinner("Loading..."):
                    state.set_sample(loading.load_upload(
                        (docs.name, docs.getvalue()),
                        (pairs.name, pairs.getvalue()) if pairs is not None else None))
            except Exception as exc:  # noqa: BLE001
                st.error(message(exc))
            else:
                state.changed(f"Loaded {docs.name}" + (f" with {pairs.name}." if pairs is not None else "."))


def show_sample() -> None:
    s = state.sample()
    info = summary(s)
    st.subheader(md(s.name))
    st.caption(f"from {md(st.session_state[state.SAMPLE_SOURCE])}; content hash {state.sample_hash()[:12]}")
    notes = [f"Check the labels: {md(w)}." for w in info["warnings"]]  # e.g. one group holding most documents
    share, docs, pairs = largest_cluster_share(truth_from_sample(s))
    if share > 0.5:  # the same dominant group is usually behind both: one warning, not two
        notes.insert(0, f"One duplicate group ({docs:,} documents) holds {share:.0%} of the duplicate pairs "
                        f"({pairs:,}): pair-weighted recall mostly measures that one group. Compare the per-group "
                        "(macro) recall on the Sweep page; its intervals resample whole groups.")
    if notes:
        st.warning(" ".join(notes))
    frame.metrics([("Documents", f"{info['documents']:,}"), ("Labeled pairs", f"{info['pairs']:,}"),
                   ("Duplicate", f"{info['pairs_by_label']['duplicate']:,}", "Labeled pairs that are duplicates"),
                   ("Not duplicate", f"{info['pairs_by_label']['not_duplicate']:,}",
                    "Labeled pairs that are not duplicates"),
                   ("Excluded rows", f"{info['excluded']:,}", "Rows left out while loading (see Validation)")])
    if "groups" in info:
        g = info["groups"]
        st.caption(f"Groups: {g['groups']:,} named groups, {g['in_groups_of_2_or_more']:,} documents in groups "
                   f"of 2 or more (largest {g['largest']}), {g['without_group']:,} documents without a group"
                   + (f", {g['not_judged']:,} not judged (group ?: their pairs are unlabeled, for the Review page)."
                      if g["not_judged"] else "."))
    if not info["pairs"] and "groups" not in info:
        st.warning("This sample has no labels (no pairs, no groups): recall and false removals cannot be measured.")

    # one chart a row: side by side at 1000 px the bars shrank to slivers and the axis titles were cut
    st.altair_chart(charts.length_histogram(s.docs), width="stretch")
    if info["pairs_by_category"]:
        st.altair_chart(charts.category_bars(info["pairs_by_category"]), width="stretch")
    else:
        st.info("No labeled pairs, so no categories.")

    st.subheader("Slices")
    if info["slice_columns"]:
        cols = st.columns(min(2, len(info["slice_columns"])))  # two a row: four cut a table's counts at 1000 px
        for k, (col, counts) in enumerate(info["slice_columns"].items()):
            # st.table: HTML, every row shown and every count whole (a canvas grid cut 1009 to "10")
            cols[k % len(cols)].markdown(f"**{md(labels.word(col))}**")
            table = pd.DataFrame({"value": list(counts), "documents": list(counts.values())})
            in_corpus = (getattr(s.design, "slice_docs", None) or {}).get(col)
            if in_corpus:  # a corpus draw: its drawn documents, and the whole corpus's counted at draw time
                table = (table.set_index("value").reindex(list(in_corpus)).fillna(0).astype(int)
                         .assign(corpus_documents=list(in_corpus.values())).reset_index())
            cols[k % len(cols)].table(tables.small_table(table, index="value", labels={
                "documents": "drawn documents", "corpus_documents": "in the corpus"} if in_corpus else None))
    else:
        st.caption("No slice columns (columns other than id, text, group).")

    st.subheader("Validation")
    if info["excluded"]:
        st.warning(f"{count(info['excluded'], 'row')} {agree(info['excluded'], 'was', 'were')} left out while "
                   "loading: " + ", ".join(f"{md(k)} ({v:,})" for k, v in info["excluded_by_reason"].items()))
        st.dataframe(s.exclusions, hide_index=True, width="stretch")
    else:
        st.success("Every row loaded; nothing excluded.")
    with st.expander("First documents"):
        st.dataframe(s.docs.head(50).assign(text=s.docs["text"].head(50).str.slice(0, 200)),
                     hide_index=True, width="stretch")


with guard("The Sample page"):
    frame.page("Sample", "Load the labeled sample the calibration measures on.", kernels=False)
    choose_source()
    show_sample()
