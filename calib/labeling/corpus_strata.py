"""What a corpus-scale draw's strata hold, for the CLI and the Label page (:mod:`calib.reading.corpus_design`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from calib.reading.corpus_design import CorpusDesign


def corpus_strata_table(design: CorpusDesign, labeled: pd.Series | None = None) -> pd.DataFrame:
    """One row per stratum: pairs (kept candidates of the band; every corpus pair for
    ``uniform``), drawn, the drawn share n_h / N_h, and the loose pass's chance that a pair of exact J at the
    band's lower edge is a candidate of some band (1 for ``uniform``; :meth:`CorpusDesign.p_candidate`)."""
    pop = np.asarray(design.population, dtype=float)
    lower = np.append(np.asarray(design.edges[:-1], dtype=float), np.nan)
    p = np.where(np.isnan(lower), 1.0, design.p_candidate(np.nan_to_num(lower)))
    t = pd.DataFrame({"stratum": design.strata, "pairs": design.population, "drawn": design.drawn,
                      "drawn_share": np.where(pop > 0, np.asarray(design.drawn) / np.maximum(pop, 1), 0.0),
                      "P_candidate_at_lower_edge": p})
    if labeled is not None:
        t["labeled"] = labeled.reindex(design.strata).fillna(0).astype(int).to_numpy()
    return t
