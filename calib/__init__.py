"""MinHash-LSH calibration workbench.

Pipeline, one module per step::

    samples -> represent -> minhash -> lsh -> jaccard (verification) -> truth
            -> clusters -> metrics -> sweep -> export

Nothing here imports Streamlit; the app in ``app.py``/``pages/`` and the CLI in
``calib.cli`` are thin shells over these functions.
"""

__version__ = "0.1.0"
