"""Streamlit glue for the calibration workbench.

Pages gather input, call :mod:`calib` through these helpers, and draw.
No algorithm lives here: only state, caching, file handling, error display
and chart builders.

    state     plain ``st.session_state`` keys shared across pages
    paths     which folders a typed path may point into
    loading   sample loading (shipped, typed path, upload) with caching
    engine    cached Workspace / evaluation / curves, guarded by a lock
    errors    ``guard()``: readable ``st.error`` instead of tracebacks
    charts    Altair chart builders
    diff      side-by-side HTML diff with shared shingles marked
    reviews   merging review decisions into a sample's labels
    export    Export page helpers: validated config JSON, targets, manifest filters and bytes
"""
