"""The frame every page shares: page config, state, title, kernels, sidebar status.

Apart from :mod:`appui.state` because it needs the compiled kernels as well as
the state. Its imports are light (Streamlit only) so that a page can draw its
title before the engine's modules load; :func:`setup` imports those.
"""

from __future__ import annotations

import streamlit as st

from appui.text import md


def head(title: str, caption: str | None = None) -> None:
    """The page's config, title and caption: drawn before anything slow."""
    st.set_page_config(page_title=f"{title} - LSH calibration", layout="wide")
    st.title(title)
    if caption:
        st.caption(caption)


def page(title: str, caption: str | None = None, *, kernels: bool = True) -> None:
    """Page set-up shared by every page: config, title, state, kernels, sidebar status. ``kernels``:
    the page computes, so it waits for the background compilation (:mod:`appui.kernels`)."""
    head(title, caption)
    setup(title, kernels=kernels)


def setup(title: str, *, kernels: bool = True) -> None:
    """After :func:`head`: the shipped sample and default configuration unless set, the kernels (waited
    for when ``kernels``, else only started in the background), the banner and the sidebar."""
    from appui import kernels as compiled, state
    state.ensure()
    compiled.start()
    if kernels:
        compiled.wait()
    s, cfg = state.sample(), state.config()
    if st.session_state.get(state.FLASH):
        st.success(md(st.session_state.pop(state.FLASH)))
    if s.design is not None and title in ("Sweep", "Curves", "Export"):
        # a drawn set (calib draw): the rates are corpus-level estimates (calib.labeling.weighted)
        st.info(f"Labels from a stratified draw ({md(s.design)}): recall, precision and false-removal rate are "
                "weighted by inclusion probability (stratified ratio estimates, intervals 'stratified'); the "
                "columns *_unweighted hold the plain proportions, labels_per_stratum the counts.")
    with st.sidebar:
        st.markdown("**Current sample**")
        st.caption(f"{md(s.name)}: {s.n:,} documents, {len(s.pairs):,} labeled pairs  \n"
                   f"from {md(st.session_state[state.SAMPLE_SOURCE])}")
        st.markdown("**Current configuration**")
        st.caption(f"{md(state.config_label(cfg))}  \n({md(st.session_state[state.CONFIG_SOURCE])}, {cfg.fingerprint()})")


def metrics(items, per_row: int = 3) -> None:
    """Metrics in rows of ``per_row``: items are (label, value) or (label, value, help). Short labels
    (two or three words) and at most three a row keep each label whole at 800 px; the longer
    definition goes in the help."""
    items = list(items)
    for start in range(0, len(items), per_row):
        cols = st.columns(per_row)
        for col, item in zip(cols, items[start:start + per_row]):
            label, value, *rest = item
            col.metric(label, value, help=rest[0] if rest else None)
