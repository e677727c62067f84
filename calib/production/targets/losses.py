"""What the export would lose where it runs: one line per target whose figures differ from calib's.

A target's figures are its evidence in targets.json (:func:`calib.production.targets.evidence`: the
configuration evaluated as that tool runs it, on the sample). They differ from calib's own when the
removals differ in number or in wrong ones (false removals), or when the false-removal rate differs
by more than :data:`RATE_TOLERANCE` (the rates are ratios of the same counts: a tolerance only absorbs
float formatting). A target with no evidence (it cannot run the configuration's split at all) is
named too: nothing is said about what it would do. The CLI's ``calib export`` and the app's Export
page print these lines, from this one function.
"""

from __future__ import annotations

from calib.estimates.figures import count, rate_text

RATE_TOLERANCE = 1e-9


def differs(config_row, evidence: dict | None) -> bool:
    """Whether a target's evidence differs from calib's row (a dict or a pandas Series: removals, false
    removals or the rate)."""
    if not evidence:
        return True
    for key in ("removed", "false_removals"):
        if _int(evidence.get(key)) != _int(config_row.get(key)):
            return True
    a, b = _float(evidence.get("false_removal_rate")), _float(config_row.get("false_removal_rate"))
    if (a != a) != (b != b):  # one measured, the other not
        return True
    return a == a and abs(a - b) > RATE_TOLERANCE


def loss_lines(config_row, evidence_by_target: dict, titles: dict[str, str] | None = None) -> list[str]:
    """One line per target (in the order of ``evidence_by_target``) whose figures differ from calib's:
    '<title>: false-removal rate 25.34% (95% interval ...), 480 removals (113 false) where calib removes 360
    (2 false) at 0.61%'. ``titles``: the targets' display names (default: their registry names)."""
    calib_rate = rate_text(config_row, "false_removal_rate")
    calib_says = (f"calib: {count(config_row.get('removed'), 'removal')} ({_int(config_row.get('false_removals'))} "
                  f"false) at {calib_rate.split(' (')[0]}")
    out = []
    for name, ev in evidence_by_target.items():
        title = (titles or {}).get(name, name)
        if not differs(config_row, ev):
            continue
        if not ev:
            out.append(f"{title}: no figures: it cannot run this configuration's split as measured "
                       f"(targets.json: {name}.unsupported); {calib_says}")
            continue
        out.append(f"{title}: false-removal rate {rate_text(ev, 'false_removal_rate')}, "
                   f"{count(ev.get('removed'), 'removal')} ({_int(ev.get('false_removals'))} false); {calib_says}")
    return out


def _int(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _float(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")
