"""Review: label the most informative pairs by hand."""

import pandas as pd
import streamlit as st

from appui import diff, engine, frame, identity, reviews, state, tables
from appui.errors import guard
from appui.text import agree, count, md
from appui.loading import Loaded
from calib.review.adjudication import (adjudication_queue, check_adjudicator, decisions_of, review_labels,
    reviewer_votes)
from calib.review.overlap import offered_to
from calib.review.labels import contradicts
from calib.review.queue import review_queue
from calib.review.schema import DECISIONS, MAX_NOTE
from calib.review.sqlite import ReviewStore

LABEL_NAMES = {1: "duplicate", 0: "not duplicate", -1: "unlabeled"}


def settings() -> str | None:
    return reviews.settings_widgets("review_db_input", "reviewer_input")


def decision_form(store: ReviewStore, row: pd.Series, texts: dict, label: int) -> None:
    cfg = state.config()
    st.markdown(f"**{md(row['id_a'])}** vs **{md(row['id_b'])}**: exact Jaccard {row['sim']:.3f} "
                f"({'no threshold' if cfg.threshold is None else f'threshold {cfg.threshold:g}'}); {'**removed by chaining only**' if row['chained'] else 'verified pair'}; "
                f"sample label: {LABEL_NAMES[int(label)]}.")
    if row.get("second_review", False):
        st.caption("Second review: another reviewer has decided this pair (the overlap share). Their decision "
                   "is not shown, so that the two decisions are independent.")
    if label != -1:
        st.caption(f"No pair without a sample label is left in the queue; this one already has a sample label "
                   f"({LABEL_NAMES[int(label)]}). A decision against it is flagged, and wins when reviews "
                   "are used as labels.")
    c = st.columns(2)
    for col, (a, b) in zip(c, ((row["id_a"], row["id_b"]), (row["id_b"], row["id_a"]))):
        col.markdown(f"**{md(a)}**")
        diff.show(col, texts[a], texts[b], cfg.rep)
    note = st.text_input("Note (optional)", key=f"note_{row['id_a']}_{row['id_b']}", max_chars=MAX_NOTE)
    reviewer = reviews.reviewer()
    b = st.columns(4)  # at 1000 px six columns cut "Not duplicate" to "Not d…"
    clicked = None
    for k, (d, text) in enumerate(zip(DECISIONS, ("Duplicate", "Not duplicate", "Unsure"))):
        if b[k].button(text, key=f"decide_{d}", disabled=not identity.may_review(),
                       type="primary" if k == 0 else "secondary"):
            clicked = d
    if clicked and reviewer:
        try:  # on a team's store the database checks the decision too
            store.record(row["id_a"], row["id_b"], clicked, reviewer, note=note, config_fingerprint=cfg.fingerprint())
        except ValueError as exc:
            st.error(md(exc))
            return
        st.session_state["calib_last_review"] = f"Recorded {clicked} for {md(row['id_a'])} / {md(row['id_b'])}."
        if contradicts([clicked], [label])[0]:
            st.session_state["calib_review_conflict"] = (
                f"This decision ({clicked.replace('_', ' ')}) contradicts the sample's label "
                f"({LABEL_NAMES[int(label)]}) for {md(row['id_a'])} / {md(row['id_b'])}. If you use reviews as labels, "
                "the review replaces the sample's label.")
        st.rerun()


def queue_section(store: ReviewStore, decisions: pd.DataFrame) -> None:
    cfg = state.config()
    s = state.sample()
    with st.spinner("Evaluating the current configuration..."):
        ev = engine.evaluation(cfg)
    if ev.verified is None:
        st.warning("This configuration stopped with too many candidates; nothing to review.")
        return
    pairs = reviews.action_pairs(ev, s, engine.sim_fn(cfg))
    pairs["label"] = engine.handle().ws.truth.label(pairs["i"].to_numpy(), pairs["j"].to_numpy())
    reviewer = reviews.reviewer()
    if not identity.may_review():
        reviews.need_reviewer()
    share = identity.share()
    q = offered_to(review_queue(pairs, cfg.threshold), decisions, reviewer, share=share)
    st.subheader(f"Queue{f' of {md(reviewer)}' if reviewer else ''}: {count(len(q), 'pair')} left ({int((q['label'] == -1).sum()):,} without "
                 f"a sample label, {count(int(q['second_review'].sum()), 'second review')})")
    st.caption("Pairs the current configuration acts on: pairs without a sample label first, then within each "
               f"part removals justified only by chaining, then the pairs closest to the threshold. A pair leaves "
               f"your queue once you decide it; a share of {share:.0%} of the pairs (the same for everyone) is "
               "offered to a second reviewer, who does not see the first decision.")
    if st.session_state.get("calib_last_review"):
        st.success(st.session_state.pop("calib_last_review"))  # ids escaped when composed
    if st.session_state.get("calib_review_conflict"):
        st.warning(st.session_state.pop("calib_review_conflict"))
    if q.empty:
        st.info("Nothing left to review for this configuration.")
        return
    q = q.head(200)
    texts = dict(zip(s.docs["id"], s.docs["text"]))
    decision_form(store, q.iloc[0], texts, int(q.iloc[0]["label"]))
    with st.expander(f"Next {min(len(q), 200)} pairs in the queue"):
        show = q[["id_a", "id_b", "sim", "chained", "distance"]].assign(
            sample_label=q["label"].map(LABEL_NAMES), second_review=q["second_review"])
        frame, config = tables.view(show, formats={"sim": "%.3f", "distance": "%.3f"})
        st.dataframe(frame, hide_index=True, width="stretch", column_config=config)


def decisions_section(store: ReviewStore, decisions: pd.DataFrame) -> None:
    st.subheader("Decisions")
    labels, counts = review_labels(decisions)
    frame.metrics([("Decisions", f"{len(decisions):,}", "Decisions recorded in the review store"),
                   ("Labels used", f"{counts.used:,}", "Adjudicated plus unanimous pairs"),
                   ("Adjudicated", f"{counts.adjudicated:,}"),
                   ("Unanimous", f"{counts.unanimous:,}", "Every reviewer of the pair agrees (one reviewer counts)"),
                   ("Contested", f"{counts.contested:,}",
                    "Reviewers disagree and no adjudication yet: left out of the labels")])
    st.caption(reviews.label_counts_line(counts))
    s = state.sample()
    reviewer = reviews.reviewer()
    votes = reviewer_votes(decisions)
    mine = votes[votes["reviewer"] == reviewer].sort_values("order", ascending=False).head(50)
    if len(mine):  # only your own decisions: a second reviewer must not see the first one's
        st.caption(f"Your latest decisions ({md(reviewer)}), newest first; other reviewers' decisions stay hidden "
                   "until a pair is contested (Adjudication).")
        shown = reviews.with_sample_labels(mine.rename(columns={"order": "id"}), s, engine.handle().ws.truth)
        shown["contradicts"] = contradicts(shown["decision"], shown["sample_label"])
        n = int(shown["contradicts"].sum())
        if n:
            st.warning(f"{n:,} of the {count(len(shown), 'decision')} shown "
                       f"{agree(n, 'contradicts', 'contradict')} the sample's label (ticked in the table). "
                       f"Using reviews as labels replaces {agree(n, 'that label', 'those labels')}.")
        shown = shown.assign(sample_label=shown["sample_label"].map(LABEL_NAMES),
                             decision=shown["decision"].str.replace("_", " "))
        first = ["id_a", "id_b", "decision", "sample_label", "contradicts"]  # what the warning is about, on screen
        table, config = tables.view(shown[first + [c for c in shown.columns if c not in first]],
                                    {"id": "decision #"}, formats={"id": "%d"})
        st.dataframe(table, hide_index=True, width="stretch", column_config=config)
    if st.button(f"Use reviews as labels ({count(len(labels), 'pair label')})", key="use_reviews",
                 disabled=len(labels) == 0):
        new, used, skipped = reviews.merge_review_labels(s, labels)
        src = f"{st.session_state[state.SAMPLE_SOURCE]} + {count(used, 'review label')}"
        state.set_sample(Loaded(new, new.content_hash(), src))
        reviews.remember_review_labels(new.content_hash(), decisions, counts)
        msg = f"The sample now carries {count(used, 'review label')} (a review overrides the sample's label); " \
              f"run the sweep again to use them. {reviews.label_counts_line(counts)}"
        if skipped:
            msg += (f" {count(skipped, 'decision')} {agree(skipped, 'names', 'name')} documents that are not in "
                    f"this sample and {agree(skipped, 'was', 'were')} skipped.")
        state.changed(msg)


def adjudication_section(store: ReviewStore, decisions: pd.DataFrame) -> None:
    st.subheader("Adjudication")
    q = adjudication_queue(decisions)
    if st.session_state.get("calib_last_adjudication"):
        st.success(st.session_state.pop("calib_last_adjudication"))
    if q.empty:
        st.info("No contested pair: every pair decided by two or more reviewers is unanimous or adjudicated.")
        return
    st.caption(f"{count(len(q), 'contested pair')}: reviewers disagree, so the pair gives no label until an "
               "adjudicator (someone who did not review it) decides. The adjudication is the label.")
    s = state.sample()
    texts = dict(zip(s.docs["id"].astype(str), s.docs["text"]))
    choices = [f"{a} / {b}" for a, b in zip(q["id_a"], q["id_b"])]
    pick = st.selectbox("Contested pair", range(len(q)), format_func=lambda k: choices[k], key="adjudicate_pick")
    row = q.iloc[int(pick or 0)]
    st.markdown(f"**{md(row['id_a'])}** vs **{md(row['id_b'])}**: {md(row['votes'])}")
    if row["id_a"] in texts and row["id_b"] in texts:
        c = st.columns(2)
        for col, (a, b) in zip(c, ((row["id_a"], row["id_b"]), (row["id_b"], row["id_a"]))):
            col.markdown(f"**{md(a)}**")
            diff.show(col, texts[a], texts[b], state.config().rep)
    else:
        st.caption("These documents are not in the current sample: load the sample they come from to read them.")
    note = st.text_input("Adjudication note (optional)", key=f"adj_note_{row['id_a']}_{row['id_b']}",
                         max_chars=MAX_NOTE)
    adjudicator = reviews.reviewer()
    votes = reviewer_votes(decisions)
    why_not = identity.why_not_adjudicate(votes.loc[(votes["id_a"] == row["id_a"]) & (votes["id_b"] == row["id_b"]),
                                                    "reviewer"])
    b = st.columns(4)
    clicked = None
    for k, (d, text) in enumerate((("duplicate", "Adjudicate: duplicate"), ("not_duplicate", "Adjudicate: not duplicate"))):
        if b[k].button(text, key=f"adjudicate_{d}", disabled=why_not is not None):
            clicked = d
    if why_not:
        st.caption(md(why_not))
    if clicked and adjudicator:
        try:  # the same rule, checked again here and, on a team's store, by the database
            check_adjudicator(decisions, row["id_a"], row["id_b"], adjudicator)
            store.record(row["id_a"], row["id_b"], clicked, adjudicator, note=note, kind="adjudication")
        except ValueError as exc:
            st.error(md(exc))
            return
        st.session_state["calib_last_adjudication"] = (f"Adjudicated {md(row['id_a'])} / {md(row['id_b'])}: "
                                                       f"{clicked.replace('_', ' ')}.")
        st.rerun()


def agreement_section(decisions: pd.DataFrame) -> None:
    st.subheader("Agreement between reviewers")
    reviews.agreement_view(decisions, state.sample())


with guard("The Review page"):
    frame.page("Review", "Hand labels for the pairs that decide the calibration.")
    db = settings()
    if db:
        with reviews.opened_store(db) as store:
            if store is not None:
                identity.identity_widgets(store, "reviewer_input")
                st.caption(f"Decisions are appended to {md(reviews.shown(db))}.")
                decisions = decisions_of(store)
                queue_section(store, decisions)
                decisions_section(store, decisions)
                adjudication_section(store, decisions)
                agreement_section(decisions)
