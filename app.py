"""Entry point: ``streamlit run app.py``.

Registers the pages (home + pages/*) with ``st.navigation`` so the sidebar
reads Home, Sample, Sweep, ... and runs the selected one. Shared state lives
in plain ``st.session_state`` keys (see appui/state.py); every page calls
``appui.frame.page()``, which loads the shipped sample on first use and starts
compiling the numba kernels in the background (appui/kernels.py).
"""

import streamlit as st

from appui.nav import PAGES  # Streamlit only: the sidebar is registered before any slow import

pages = [st.Page("home.py", title="Home", default=True)]
pages += [st.Page(path, title=label, url_path=label) for path, label, _ in PAGES]
st.navigation(pages).run()
