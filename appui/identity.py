"""Who is reviewing, and in which store: what the Review and Label pages show and keep.

- **The store** is kept in the page's query string (``?reviews=PATH_OR_URL``) as well as the session,
  so a reload, a bookmark or a second tab opens the same store. Only a store that passed the
  checks of :func:`appui.reviews.check_db_target` is written there, never a password (a typed URL
  may not hold one; the ``CALIB_REVIEW_DB`` default, which may, is not written at all).
- **Who you are**, on a PostgreSQL store with a team (:mod:`calib.review.team`), is the database's
  answer: ``session_user``, the login role the password in your ``~/.pgpass`` (or ``PGPASSFILE``)
  opened; the page shows it and asks for no name, and the database refuses a decision under another.
  The overlap share is the team's, read from the store; an adjudicator may change it for everyone.
- **On SQLite** (one person's file) and on a PostgreSQL store without a team, the name is typed
  and kept in the query string (``&reviewer=NAME``); nothing checks it, and the page says so.
"""

from __future__ import annotations

import streamlit as st

from calib.review.overlap import DEFAULT_SHARE
from calib.review.team import Identity, members, set_share, whoami

from . import state

QUERY_DB, QUERY_REVIEWER = "reviews", "reviewer"
IDENTITY = "calib_review_identity"  # (store target, Identity or None): what the database said this run
OVERLAP = "calib_review_overlap"  # the overlap share, a plain session key (widget keys drop on page change)


def initial_db(default: str) -> str:
    """The store a page opens with: this session's, else the query string's, else ``default``."""
    return st.session_state.get(state.REVIEW_DB) or st.query_params.get(QUERY_DB) or default


def keep_db(target: str, default: str) -> None:
    """Write the checked store into the query string (removed when it is the default)."""
    if target == default:
        if QUERY_DB in st.query_params:
            del st.query_params[QUERY_DB]
    elif st.query_params.get(QUERY_DB) != target:
        st.query_params[QUERY_DB] = target


def identity() -> Identity | None:
    """The database's identity of this session for the store in use (None: SQLite, or not opened yet)."""
    got = st.session_state.get(IDENTITY)
    return got[1] if got and got[0] == st.session_state.get(state.REVIEW_DB) else None


def vouched() -> bool:
    me = identity()
    return me is not None and me.vouched


def reviewer() -> str:
    """Who records decisions: the connected role on a team's store, else the typed name ('' until typed)."""
    if vouched():
        return identity().user
    return str(st.session_state.get(state.REVIEWER, "") or "").strip()


def may_review() -> bool:
    return identity().may("reviewer") if vouched() else bool(reviewer())


def why_not_adjudicate(votes_on_pair) -> str | None:
    """Why this session may not adjudicate a pair (None when it may): the same rule the database
    enforces on a team's store, said before the click. ``votes_on_pair``: reviewer names who voted."""
    me = reviewer()
    if not me:
        return "Type your reviewer name above first."
    if vouched() and not identity().may("adjudicator"):
        return (f"{me} is not an adjudicator of this team: the database lets only members of "
                f"{identity().team.adjudicator} adjudicate.")
    if me in set(votes_on_pair):
        return f"{me} reviewed this pair: another person adjudicates it."
    return None


def share() -> float:
    """The overlap share in force: the team's (from the store) or this session's."""
    return float(st.session_state.get(OVERLAP, DEFAULT_SHARE))


def identity_widgets(store, reviewer_key: str) -> None:
    """After the store is open: who you are (the database's answer, or a name box) and the overlap share."""
    from .text import md
    ss = st.session_state
    me = whoami(store)
    ss[IDENTITY] = (ss.get(state.REVIEW_DB), me)
    if me is not None and me.vouched:
        ss[OVERLAP] = me.share
        groups = ", ".join(g for g in ("reviewer", "adjudicator", "viewer") if me.may(g)) or "no group of the team"
        c = st.columns([3, 2])
        adjudicators = ", ".join(members(store)["adjudicator"]) or "none yet"
        c[0].markdown(f"Connected as **{md(me.user)}** ({md(groups)}): the database records every decision of "
                      "this session under this role, with the server's time, and checks who may adjudicate "
                      f"(this team's adjudicators: {md(adjudicators)}).")
        if me.may("adjudicator"):
            new = c[1].number_input("Team's share shown to a second reviewer", 0.0, 1.0, me.share, 0.05,
                                    key=f"{reviewer_key}_team_overlap",
                                    help="Every reviewer of this store works under this share (the store keeps it).")
            if abs(new - me.share) > 1e-12 and c[1].button("Set for the whole team", key=f"{reviewer_key}_set_share"):
                set_share(store, new)
                state.changed(f"The team's overlap share is {new:g} now (recorded in the store as {me.user}'s).")
        else:
            c[1].markdown(f"Share shown to a second reviewer: **{me.share:g}** (the team's; an adjudicator sets it)")
        return
    c = st.columns([3, 2])
    typed = c[0].text_input("Reviewer name", value=ss.get(state.REVIEWER) or st.query_params.get(QUERY_REVIEWER, ""),
                            key=reviewer_key, placeholder="required before the first decision",
                            help="Kept in the page's address (a reload keeps it); every decision records it.")
    ss[state.REVIEWER] = typed
    name = str(typed or "").strip()
    if name and st.query_params.get(QUERY_REVIEWER) != name:
        st.query_params[QUERY_REVIEWER] = name
    ss[OVERLAP] = c[1].number_input("Share shown to a second reviewer", 0.0, 1.0, share(), 0.05,
                                    key=f"{reviewer_key}_overlap",
                                    help="Pairs (chosen by a hash of their ids, the same for everyone) that a "
                                         "second reviewer decides blind, to measure agreement.")
    if me is None:
        st.caption("A SQLite store is one person's: the name is what you type and nothing checks it. A team "
                   "shares a PostgreSQL store, where the database says who you are (docs/team-review.md).")
    else:
        st.warning(f"This PostgreSQL store has no team: the name is typed, and anyone connected as "
                   f"{md(me.user)} can write under any name. Its owner sets one up with "
                   "`calib reviews team init` (docs/team-review.md).")
