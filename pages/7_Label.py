"""Label: label a drawn set of pairs (calib draw) and see what to label next."""

from pathlib import Path

import pandas as pd
import streamlit as st

from appui import diff, engine, frame, identity, labels, reviews, state, tables
from appui.errors import guard, message
from appui.loading import load_path
from appui.paths import resolve_allowed
from appui.text import count, md
from calib.estimates import figures
from calib.labeling.draw import pairs_bytes, progress, read_drawn, representation, with_decisions, write_labels
from calib.review.adjudication import decisions_of, resolved_decisions, review_labels
from calib.review.overlap import offered_to
from calib.review.sqlite import ReviewStore

KEYS = {"duplicate": "d", "not_duplicate": "n", "unsure": "s"}
FOLDER = "calib_label_folder"


def choose_folder() -> Path | None:
    ss = st.session_state
    st.caption("A folder written by `calib draw --corpus CORPUS --out DIR` (documents.jsonl, pairs.csv, design.json), "
               "inside the allowed folders of the Sample page.")
    text = st.text_input("Drawn set folder", value=ss.get(FOLDER, ""), key="label_folder_input",
                         placeholder="e.g. work/drawn (from calib draw)")
    if not text.strip():
        return None
    try:
        folder = resolve_allowed(text)
    except Exception as exc:  # noqa: BLE001
        st.error(message(exc))
        return None
    ss[FOLDER] = text
    return folder


def progress_section(pairs: pd.DataFrame, design) -> None:
    table = progress(pairs, design)
    done = int(table["labeled"].sum() + table["skipped"].sum())
    st.subheader(f"Progress: {done:,} of {len(pairs):,} drawn pairs decided")
    st.progress(done / max(len(pairs), 1))
    # a small HTML table (one row per stratum): every cell whole at 800 px, counts with thousands separators
    # (a grid cut its "left" column to "1:"); drawn "of" the stratum's pairs in one column, and no "labeled"
    # (duplicate + not duplicate): seven columns were wider than the page at 800 px
    shown = table.assign(drawn=[f"{d:,} of {n:,}" for d, n in zip(table["drawn"], table["pairs_in_sample"])])
    st.table(tables.small_table(shown.drop(columns=["pairs_in_sample", "labeled"]), "stratum",
                                {"drawn": "drawn of the stratum's pairs", "skipped": "skipped (unsure)"}))
    st.caption(f"{design}. Strata: exact Jaccard bands of the {design.shingle_label()} shingles, and "
               "'uniform' for every pair below the floor. Skipped pairs (unsure) stay unlabeled.")


def label_section(store: ReviewStore, drawn, pairs: pd.DataFrame, decisions: pd.DataFrame) -> None:
    if st.session_state.get("calib_label_flash"):
        st.success(st.session_state.pop("calib_label_flash"))
    reviewer = reviews.reviewer()
    if not identity.may_review():
        reviews.need_reviewer()
        return
    unlabeled = pairs[drawn.pairs["label"].fillna("").astype(str).str.strip() == ""]  # the file's, not the reviews'

    left = offered_to(unlabeled, decisions, reviewer, share=identity.share())
    if left.empty:
        st.info(f"Nothing left for {md(reviewer)}: every drawn pair has your decision or enough reviewers. Export "
                "the labels below, or draw more pairs.")
        return
    row = left.iloc[0]
    texts = dict(zip(drawn.docs["id"], drawn.docs["text"]))
    st.markdown(f"**{count(len(left), 'pair')} left for {md(reviewer)}** (of {len(pairs):,} drawn): "
                f"{md(row['id_a'])} vs {md(row['id_b'])}, stratum {md(row['stratum'])}, "
                f"exact J {float(row['similarity']):.3f}")
    if row["second_review"]:
        st.caption("Second review: another reviewer decided this pair; their decision stays hidden.")
    c = st.columns(2)
    for col, (a, b) in zip(c, ((row["id_a"], row["id_b"]), (row["id_b"], row["id_a"]))):
        col.markdown(f"**{md(a)}**")
        diff.show(col, texts[a], texts[b], representation(drawn.design))
    clicked = None
    with st.container(horizontal=True):  # the buttons wrap to a new line rather than cut their labels
        for k, (d, text) in enumerate((("duplicate", "Duplicate"), ("not_duplicate", "Not duplicate"),
                                       ("unsure", "Skip"))):
            # the button shows its shortcut key itself ("Duplicate D"): the label does not repeat it
            if st.button(text, key=f"label_{d}", shortcut=KEYS[d], disabled=not reviewer,
                         type="primary" if k == 0 else "secondary"):
                clicked = d
    st.caption("Keys: D duplicate, N not duplicate, S skip (recorded as unsure: the pair stays unlabeled).")
    if clicked:
        try:  # on a team's store the database checks the decision too
            store.record(row["id_a"], row["id_b"], clicked, reviewer, note=f"drawn set, stratum {row['stratum']}")
        except ValueError as exc:
            st.error(md(exc))
            return
        st.session_state["calib_label_flash"] = f"Recorded {clicked.replace('_', ' ')} for {md(row['id_a'])} / {md(row['id_b'])}."
        st.rerun()


def export_section(folder: Path, pairs: pd.DataFrame, latest: pd.DataFrame) -> None:
    st.subheader("Export")
    filled = pairs.drop(columns=["decision"])
    row = st.container(horizontal=True)  # the buttons wrap to a new line rather than cut their labels
    row.download_button("Download pairs.csv", pairs_bytes(filled), file_name="pairs.csv", mime="text/csv",
                        key="label_download")
    if row.button("Write the labels into the folder", key="label_write"):
        try:
            written = write_labels(folder, latest)  # re-read under the claim: rows `draw --more` added stay
        except Exception as exc:  # noqa: BLE001
            st.error(f"Could not write {md(folder)}: {message(exc)}")
        else:  # plain text: the page escapes the message once when it shows it
            state.changed(f"Wrote {count((written.pairs['label'].str.strip() != '').sum(), 'label')} into "
                          f"{folder / 'pairs.csv'}.")
    if row.button("Use this drawn set as the sample", key="label_use"):
        try:
            write_labels(folder, latest)
            state.set_sample(load_path(str(folder)))
        except Exception as exc:  # noqa: BLE001
            st.error(message(exc))
        else:
            state.changed("The drawn set is the sample now: the Sweep, Curves and Export pages use estimates "
                          "weighted by inclusion probability.")


def next_section(folder: Path) -> None:
    s = state.sample()
    st.subheader("What to label next")
    if s.design is None or state.sample_hash() is None or st.session_state.get(state.SAMPLE_SOURCE) != str(folder):
        st.caption("Use this drawn set as the sample (above) to see which strata narrow the current configuration's "
                   "intervals most.")
        return
    if not s.pairs["is_duplicate"].any():
        st.info("No pair is labeled duplicate yet: label some pairs first.")
        return
    from calib.estimates.design_weighted import design_pairs
    from calib.labeling.weighted import next_labels
    cfg = state.config()
    width = st.number_input("Target half-width of the 95% intervals", 0.005, 0.25, 0.05, 0.005, key="label_width")
    k = st.number_input("Labels to propose", 10, 5000, 100, 10, key="label_k")
    with st.spinner("Evaluating the current configuration..."):
        ev = engine.evaluation(cfg)
    if ev.clustering is None:
        st.warning("This configuration stopped with too many candidates.")
        return
    plan = next_labels(design_pairs(engine.handle().ws, cfg, ev.clustering), s.design, width=width, k=int(k))
    st.caption(f"Configuration: {md(cfg)}")
    cols = st.columns(2)
    for col, (name, d) in zip(cols, plan["rates"].items()):
        limit = ("a looser pass (calib draw --loose): its misses limit it" if getattr(s.design, "kind", "") == "corpus"
                 else "the document sample limits it: draw from every document (calib draw without --design "
                      "sample)")
        need = (limit if d["documents_limit"] else
                "more than the strata hold" if d["labels_needed"] is None else f"{d['labels_needed']:,} more labels")
        # the configuration's own result row (the Sweep and Export pages' figure), in words when not measured
        col.metric(labels.word(name).capitalize(), figures.pct(ev.row.get(name), name),
                   help=f"±{width:g} needs {need} (greedy Neyman allocation)")
        col.caption(f"{figures.rate_text(ev.row, name)}; ±{width:g} needs {need}.")
    st.dataframe(plan["allocation"].rename("label next").to_frame().T, width="stretch")
    st.caption("`calib draw --more K --out FOLDER` draws these pairs (the drawn but unlabeled ones first).")


with guard("The Label page"):
    frame.page("Label", "Label a drawn set of pairs: stratified by similarity, so the estimates hold for the corpus.")
    folder = choose_folder()
    if folder is not None:
        db = reviews.settings_widgets("label_db_input", "label_reviewer")
        try:
            drawn = read_drawn(folder)
        except Exception as exc:  # noqa: BLE001
            st.error(message(exc))
            drawn = None
        if drawn is not None and db:
            with reviews.opened_store(db) as store:
                if store is not None:
                    identity.identity_widgets(store, "label_reviewer")
                    decisions = decisions_of(store)
                    resolved = resolved_decisions(decisions)  # the label rule, not the latest decision
                    pairs = with_decisions(drawn.pairs, resolved)
                    progress_section(pairs, drawn.design)
                    st.caption("In the review database: " + reviews.label_counts_line(review_labels(decisions)[1]) +
                               " Contested pairs count as skipped until adjudicated (Review page).")
                    label_section(store, drawn, pairs, decisions)
                    export_section(folder, pairs, resolved)
                    with st.expander("Agreement between reviewers"):
                        reviews.agreement_view(decisions, None)
            if store is not None:
                next_section(folder)
