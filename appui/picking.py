"""Picking the recommended row from a sweep's stored rows, without measuring anything again.

The search's own budget and objective give the search's pick (after its seed check, as ``calib sweep``
marks it); a results file opened at the page's settings gives the row the file marks; any other choice
re-picks with :func:`calib.search.recommend.recommend` from the rows of the first and second passes
(the seed check's rows are other seeds of its few best: never candidates themselves).
"""

from __future__ import annotations

import pandas as pd

from calib.search.recommend import recommend
from calib.search.reseed import seed_flags

from .text import count


def objective_name(objective: str) -> str:
    """'pair recall': an objective as words (never its column name)."""
    return objective.replace("_", " ")


# the controls that do not change which row is the pick (only which rows are measured)
MEASURING_ONLY = ("effort",)


def same_settings(ran: dict, now: dict) -> bool:
    """The controls ``now`` pick as the search that ran with ``ran`` did: every control of ``now`` (a
    keyword argument of the search) but the measuring-only ones has the value it ran with."""
    def same(a, b) -> bool:
        if isinstance(a, float) or isinstance(b, float):
            try:
                return abs(float(a) - float(b)) < 1e-12
            except (TypeError, ValueError):
                return False
        return a == b
    return all(k in ran and same(ran[k], v) for k, v in now.items() if k not in MEASURING_ONLY)


def same_confidence(a, b) -> bool:
    """Two confidences are the same rule (None and NaN: the point estimate)."""
    a, b = (None if x is None or x != x else float(x) for x in (a, b))
    return a == b if a is None or b is None else abs(a - b) < 1e-12


def pick(sweep, rows: pd.DataFrame, budget: float, objective: str, confidence: float | None = None,
         controls: dict | None = None):
    """(the rows with their seed flags, the recommended row or None, how it was picked). The search's own
    settings (``controls``: the page's search controls, by default the budget and objective) give the
    search's pick (after its seed check, as calib sweep's); any other choice re-picks from the rows
    measured (never recomputed): the best within the budget among the rows of the first and second passes."""
    found, s = sweep.found, sweep.settings
    controls = controls if controls is not None else {"max_false_removal_rate": budget, "objective": objective,
                                                      "confidence": confidence}
    if found is None and s.get("file_pick") and same_confidence(confidence, s.get("confidence")) \
            and objective == s.get("objective") \
            and abs(budget - s.get("max_false_removal_rate", -1)) < 1e-12:
        marked = rows[rows["config_fingerprint"] == s["file_pick"]]
        if len(marked):
            return seed_flags(rows, budget), marked.iloc[0], "the file's recommended row (calib sweep's pick)"
    own = found is not None and same_settings(s, controls)
    if own:
        return seed_flags(rows, budget, found.check), found.best, "the search's pick"
    flagged = seed_flags(rows, budget)
    main = flagged[flagged["search_pass"] != 3] if "search_pass" in flagged else flagged
    rec = recommend(main, max_false_removal_rate=budget, objective=objective, confidence=confidence)
    how = (f"re-picked from the {count(len(main), 'measured row')} without running anything again"
           + ("" if found is None else f" (the search ran at a {s['max_false_removal_rate']:.2%} budget, maximizing "
              f"{objective_name(s.get('objective', 'pair_recall'))}; its seed check covered that pick: run the "
              "search again to check this one on more seeds)"))
    return flagged, rec, how


