"""Export: the current configuration as JSON (placeholder until calib/export.py lands)."""

import streamlit as st

from appui import export, state
from appui.errors import guard

with guard("The Export page"):
    state.page("Export", "The chosen configuration, ready to apply elsewhere.")
    cfg = state.config()
    st.markdown(f"`{state.config_label(cfg)}`")
    st.caption(f"{cfg}  \nSource: {st.session_state[state.CONFIG_SOURCE]}")
    data = export.config_json(cfg)
    st.code(data, language="json")
    st.download_button("Download config.json", data.encode("utf-8"), export.config_filename(cfg),
                       "application/json", key="download_config", type="primary")
    # EXPORT-WIRING: calib/export.py (schema version, production targets, manifest) goes here.
    st.info("Production targets and the run manifest will appear here once the export module is wired in.")
