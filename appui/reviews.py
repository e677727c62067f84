"""Review glue: the review store a page uses (a SQLite file in an allowed
folder, or a team's PostgreSQL URL, never shown with its password), the pairs
a configuration acts on, and merging review decisions into a sample's pair
labels."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

from calib.review.labels import with_review_labels as merge_review_labels  # noqa: F401 (re-exported)
from calib.review.urls import check_unambiguous, conninfo, is_postgres_url, redact_url, without_cleartext
from calib.reading.sample import REPO_ROOT, Sample
from calib.reading.writing import pair_frame
from calib.search.sweep import Evaluation

from .identity import OVERLAP  # noqa: F401 - the overlap share's session key (re-exported for the pages)
from .paths import ENV_VAR as PATHS_ENV_VAR
from .paths import allowed_roots, resolve_link, unique_resolved

ENV_VAR = "CALIB_REVIEW_DB"


DB_SUFFIXES = (".sqlite", ".sqlite3", ".db")
# Parameters a URL typed in the app may carry. Others (passfile, sslkey, service, host=/socket/dir, ...)
# would have the server read its own files or settings on a visitor's behalf; a URL set in
# CALIB_REVIEW_DB by whoever starts the server may carry anything.
URL_PARAMETERS = ("sslmode", "connect_timeout", "application_name", "options", "target_session_attrs", "user")


def default_db() -> str:
    return os.environ.get(ENV_VAR) or str(Path("~/.calib/reviews.sqlite").expanduser())


def allowed_db_dirs() -> list[Path]:
    """Folders a review database typed in the app may live in: ``~/.calib``, the
    folder of ``CALIB_REVIEW_DB`` (set by whoever starts the server), and the
    sample folders of :func:`appui.paths.allowed_roots` (``CALIB_ALLOWED_DIRS``)."""
    dirs = [Path("~/.calib").expanduser()]
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        dirs.append(Path(env).expanduser().parent)
    return unique_resolved(dirs + allowed_roots())


def check_db_path(text: str) -> Path:
    """The review database path, resolved (symlinks followed): it must name a
    .sqlite/.db file inside one of :func:`allowed_db_dirs`, else ``ValueError``."""
    raw = str(text or "").strip()
    if not raw:
        raise ValueError("Type a path for the review database.")
    if "\x00" in raw:
        raise ValueError("the review database path contains a NUL character")
    p = Path(raw).expanduser()
    if p.suffix.lower() not in DB_SUFFIXES:
        raise ValueError(f"{p} should end in .sqlite or .db (a SQLite file the app creates or reopens)")
    if not p.is_absolute():
        p = REPO_ROOT / p
    resolved = resolve_link(p)
    if resolved.suffix.lower() not in DB_SUFFIXES:  # a .sqlite symlink to some other file
        raise ValueError(f"{p} resolves to {resolved}, which is not a .sqlite or .db file")
    dirs = allowed_db_dirs()
    if not any(resolved.is_relative_to(d) for d in dirs):
        raise ValueError(f"{raw!r} resolves to {resolved}, which is outside the folders a review database may "
                         f"be in ({', '.join(str(d) for d in dirs)}). Set {ENV_VAR} or {PATHS_ENV_VAR} "
                         "when starting the app to allow another folder.")
    if resolved.exists() and not resolved.is_file():
        raise ValueError(f"{resolved} exists and is not a file")
    return resolved


def check_db_url(text: str) -> str:
    """The PostgreSQL URL to open for ``text`` typed in the app. The box shows the
    ``CALIB_REVIEW_DB`` URL in its display form (:func:`calib.review.urls.redact_url`): that
    text gives back the real URL. Decided on libpq's own parse of the URL, as libpq will
    use it: a typed URL may not carry a password (the page would show it; use ~/.pgpass or
    PGPASSWORD where the app runs), nor name a Unix-socket folder as host (a ``%2Ftmp``
    host or ``?host=/tmp``: local trust could log in as anyone), nor carry parameters
    outside :data:`URL_PARAMETERS`. Messages show the display form, never the typed text."""
    raw = str(text or "").strip()
    env = os.environ.get(ENV_VAR, "").strip()
    if env and is_postgres_url(env) and raw in (env, redact_url(env)):  # the box's text, or the session's
        return env
    if "\x00" in raw:
        raise ValueError("the review store URL contains a NUL character")
    check_unambiguous(raw)
    info = conninfo(raw)
    shown_url = redact_url(raw)
    if info.get("password"):
        raise ValueError(f"{shown_url}: leave the password out of a URL typed here (the page would show it); "
                         "put it in ~/.pgpass or PGPASSWORD where the app runs, or in "
                         f"{ENV_VAR} when starting the app")
    hosts = info.get("host", "").split(",")
    if not all(h.strip() for h in hosts):
        raise ValueError(f"{shown_url}: name the server (postgresql://user@host:5432/database)")
    if any(h.startswith(("/", "@")) for h in hosts):
        raise ValueError(f"{shown_url}: the host is a Unix-socket folder, which the app does not open for a "
                         f"visitor (local trust could log in as anyone); set the URL in {ENV_VAR} when starting the app")
    unknown = sorted(set(info) - {"host", "port", "dbname", "user"} - set(URL_PARAMETERS))
    if unknown:
        raise ValueError(f"{shown_url}: parameter {unknown[0]!r} is not accepted in the app (allowed: "
                         f"{', '.join(URL_PARAMETERS)}); set the URL in {ENV_VAR} when starting the app")
    return raw


def check_db_target(text: str) -> str:
    """The review store to open for the text of a page's box: a checked URL
    (:func:`check_db_url`) or a checked path (:func:`check_db_path`), as a string."""
    if is_postgres_url(str(text or "")):
        return check_db_url(text)
    return str(check_db_path(text))


def shown(target: str) -> str:
    """A review store as a page shows it: a URL's password as ***."""
    return redact_url(str(target))


def no_cleartext(target: str) -> str:
    """A PostgreSQL URL as the app opens it: rebuilt from libpq's parse with ``require_auth`` refusing a
    cleartext password (:func:`calib.review.urls.without_cleartext`; libpq 16 or later), so that a server
    named in a link's query string or a typed URL cannot ask libpq for the password of a ``~/.pgpass``
    line (a line with ``*`` for the host would hand it to any server). SCRAM, md5, certificates and
    trust still work. Anything else (a SQLite path) is returned as it is."""
    if not is_postgres_url(target):
        return target
    try:
        import psycopg
        if psycopg.pq.version() < 160000:  # libpq before 16 knows no require_auth (docs: libpq 16 or later)
            return target
    except ImportError:
        return target
    return without_cleartext(target)


def open_store(target: str, *, readonly: bool = False):
    """The review store at ``target`` as the app opens it (:func:`no_cleartext`)."""
    from calib.review.stores import open_review_store
    return open_review_store(no_cleartext(target), readonly=readonly)


@contextmanager
def opened_store(db: str):
    """The review store at ``db`` (Review and Label pages), closed afterwards;
    None, with the reason shown, when it cannot be opened."""
    import streamlit as st

    from .errors import message
    from .text import md
    try:
        store = open_store(db)
    except Exception as exc:  # noqa: BLE001 - any failure to open is shown, never a traceback
        st.error(f"Cannot open the review store {md(shown(db))}: {message(exc)}")
        yield None
        return
    try:
        yield store
    finally:
        store.close()


def settings_widgets(db_key: str, reviewer_key: str) -> str | None:
    """The review store box (Review and Label pages): the checked path or URL, kept in the session and
    the page's query string (a reload keeps it), or None after an error. Who you are and the overlap
    share come once the store is open (:func:`appui.identity.identity_widgets`, key ``reviewer_key``)."""
    import streamlit as st

    from . import identity, state
    from .text import md
    ss = st.session_state
    text = st.text_input("Review database (SQLite file) or postgresql:// URL",
                         value=shown(identity.initial_db(default_db())), key=db_key,
                         help=f"Default ~/.calib/reviews.sqlite or the environment variable {ENV_VAR}; kept in the "
                              "page's address (?reviews=...). A team shares one PostgreSQL store: "
                              "postgresql://you@host:5432/database, your password in ~/.pgpass or PGPASSFILE.")
    try:
        target = check_db_target(text)
    except ValueError as exc:
        st.error(md(exc))
        return None
    ss[state.REVIEW_DB] = target
    identity.keep_db(target, default_db())
    return target


def reviewer() -> str:
    """Who records decisions: the connected role on a team's PostgreSQL store, else the typed name."""
    from .identity import reviewer as who
    return who()


def need_reviewer() -> None:
    """Why the decision buttons are off."""
    import streamlit as st

    from .identity import identity, vouched
    if vouched():
        st.warning(f"{identity().user} may only read this store (not in the team's reviewer group).")
        return
    st.warning("Type your reviewer name above before recording decisions: every decision carries it, and "
               "agreement between reviewers is measured from it.")


def label_counts_line(counts) -> str:
    """How the reviews become labels, said wherever they do (Review, Label, Sweep pages)."""
    from calib.review.adjudication import RULE
    return (f"{counts.used:,} label(s) used: {counts.adjudicated:,} adjudicated, {counts.unanimous:,} unanimous; "
            f"{counts.contested:,} contested pair(s) excluded, {counts.undecided:,} undecided (only 'unsure'); "
            f"{counts.unsure:,} unsure decision(s), {counts.double_reviewed:,} double-reviewed pair(s). Rule: {RULE}.")


REVIEW_LABELS = "calib_review_labels"  # {"hash", "contested", "counts"}: the sample the reviews labeled


def remember_review_labels(sample_hash: str, decisions: pd.DataFrame, counts) -> None:
    """Keep, for the sample the reviews just labeled, its contested pairs and label counts: the Sweep
    page reports how the recommendation moves if the contested pairs went either way."""
    import streamlit as st

    from calib.review.adjudication import pair_verdicts
    v = pair_verdicts(decisions)
    st.session_state[REVIEW_LABELS] = {"hash": sample_hash, "counts": counts,
                                       "contested": v.loc[v["status"] == "contested", ["id_a", "id_b"]]
                                       .reset_index(drop=True)}


def review_labels_of(sample_hash: str | None) -> dict | None:
    """What :func:`remember_review_labels` kept, if it is about this sample."""
    import streamlit as st
    got = st.session_state.get(REVIEW_LABELS)
    return got if got and got["hash"] == sample_hash else None


def agreement_view(decisions: pd.DataFrame, sample: Sample | None) -> None:
    """The kappa table (overall, per category, per reviewer) with its intervals."""
    import streamlit as st

    from . import tables
    from .engine import agreement
    table = agreement(decisions, sample)
    o = table.iloc[0]
    if o["pairs"] == 0:
        st.info("No pair has been decided by two reviewers yet: agreement needs the overlap share "
                "(a second, blind review of some pairs).")
        return
    frame, config = tables.view(table, formats={"kappa": "%.3f", "low": "%.3f", "high": "%.3f"})
    st.dataframe(frame, hide_index=True, width="stretch", column_config=config)
    st.caption("Cohen's kappa when two reviewers rated the pairs, Fleiss' kappa when more did; per reviewer, "
               "Cohen's kappa of that reviewer against the others' ratings of the same pairs. low-high: 95% "
               "percentile bootstrap over pairs. Only pairs rated by two or more reviewers count; 'unsure' "
               "abstains (counted, not rated). Categories are the sample's pair categories; pairs the sample "
               "does not label are 'unlabeled'.")


def action_pairs(ev: Evaluation, sample: Sample, exact_sim) -> pd.DataFrame:
    """The pairs behind the configuration's removals: every verified pair,
    plus each chained removal with its representative (a pair never verified:
    only chaining removes it). Columns id_a, id_b, sim (exact J), chained,
    i, j, label (1 duplicate, 0 not, -1 unlabeled)."""
    v = ev.verified
    ids = sample.ids
    c = ev.clustering
    chained_rows = np.flatnonzero(c.chained)
    ci, cj = np.minimum(chained_rows, c.representative[chained_rows]), np.maximum(chained_rows, c.representative[chained_rows])
    i = np.concatenate([v.i, ci]).astype(np.int64)
    j = np.concatenate([v.j, cj]).astype(np.int64)
    sim = np.concatenate([v.exact, exact_sim(ci, cj)]) if len(ci) else np.asarray(v.exact, float)
    chained = np.concatenate([np.zeros(len(v.i), bool), np.ones(len(ci), bool)])
    out = pd.DataFrame({"id_a": ids[i], "id_b": ids[j], "sim": sim, "chained": chained, "i": i, "j": j})
    return out.drop_duplicates(["i", "j"]).reset_index(drop=True)


def with_sample_labels(decisions: pd.DataFrame, sample: Sample, truth) -> pd.DataFrame:
    """``decisions`` (id_a, id_b, ...) with ``sample_label``: the sample's label of
    the pair (1, 0, or -1 when unlabeled, a single-document decision, or an id
    not in the sample). ``truth``: the sample's :class:`calib.clusters.truth.Truth`."""
    rows = pd.Series(np.arange(sample.n), index=sample.docs["id"].astype(str))
    a = decisions["id_a"].astype(str).map(rows)
    b = decisions["id_b"].map(lambda v: None if pd.isna(v) else str(v)).map(rows)
    known = (a.notna() & b.notna()).to_numpy()
    label = np.full(len(decisions), -1, dtype=np.int64)
    if known.any():
        label[known] = truth.label(a[known].to_numpy(np.int64), b[known].to_numpy(np.int64))
    return decisions.assign(sample_label=label)


__all__ = ["action_pairs", "reviewer", "need_reviewer", "label_counts_line", "agreement_view", "merge_review_labels",
           "with_sample_labels", "default_db", "check_db_path", "check_db_url", "check_db_target", "shown", "pair_frame"]
