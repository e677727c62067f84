"""The app's pages, as the sidebar lists them: Streamlit only, so that ``app.py`` registers them
(and the sidebar reads Home, Sample, Sweep, ...) before any slow import."""

PAGES = [
    ("pages/1_Sample.py", "Sample", "load a labeled sample, check its labels and slices"),
    ("pages/2_Sweep.py", "Sweep", "run calib sweep's search (watch it, stop it), pick a configuration under a false-removal budget"),
    ("pages/3_Curves.py", "Curves", "S-curve vs measured collision rates, MinHash error, optimizer check"),
    ("pages/4_Clusters.py", "Clusters", "risky clusters, policies, a cluster's graph, document diff"),
    ("pages/5_Review.py", "Review", "label the most informative pairs by hand"),
    ("pages/6_Export.py", "Export", "config JSON, production target snippets, the removal manifest (a proposal)"),
    ("pages/7_Label.py", "Label", "label a drawn set of pairs (calib draw) and see what to label next"),
]
# the pages that compute nothing with the compiled kernels: they draw while the kernels compile
WITHOUT_KERNELS = ("Home", "Sample")
