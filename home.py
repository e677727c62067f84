"""Home page: what the workbench does, the current sample and configuration, links.

Drawn in the order a newcomer reads it, before anything slow: the title and the intro need
Streamlit only; the engine's modules load after them, then the sample's summary. The numba
kernels compile in the background meanwhile (appui/kernels.py): this page does not wait.
"""

import streamlit as st

from appui import frame

frame.head("MinHash-LSH calibration workbench")
st.markdown(
    "Choose a near-duplicate configuration **on a labeled sample before deleting anything**.  \n"
    "Sweep shingles, hash counts, LSH splits (b bands x r rows), verification thresholds and clustering "
    "policies; measure recall and false removals with intervals.  \n"
    "Check the chosen configuration's S-curve, risky clusters and hard pairs, then export it.")
compiling = st.container()  # the background compilation's line, filled last: below the intro, above the sample

from appui import kernels, state  # noqa: E402  (after the first paint: these load the engine's modules)
from appui.errors import guard  # noqa: E402
from appui.text import md  # noqa: E402

with guard("The home page"):
    frame.setup("Home", kernels=False)
    s, cfg = state.sample(), state.config()
    npos = int(s.pairs["is_duplicate"].sum()) if len(s.pairs) else 0
    st.subheader("Current sample")
    c = st.columns(4)
    c[0].metric("Documents", f"{s.n:,}")
    c[1].metric("Labeled pairs", f"{len(s.pairs):,}")
    c[2].metric("Duplicate pairs", f"{npos:,}")
    c[3].metric("Excluded rows", f"{len(s.exclusions):,}")
    st.caption(f"**{md(s.name)}** from {md(st.session_state[state.SAMPLE_SOURCE])}")

    st.subheader("Current configuration")
    st.markdown(f"`{state.config_label(cfg)}`")
    st.caption(f"{md(cfg)}  \nSource: {md(st.session_state[state.CONFIG_SOURCE])}; fingerprint {cfg.fingerprint()}")

    st.subheader("Pages")
    # the page's name as the link, what it does beside it as wrapping text: a link's label is one line,
    # cut at the window's edge ("...under a false-removal budg" at 800 px)
    for path, label, what in state.PAGES:
        c = st.columns([1, 4], vertical_alignment="center")
        c[0].page_link(path, label=label)
        c[1].markdown(what)
    with compiling:
        kernels.background_note()
