"""What to label next in a stratified draw (:mod:`calib.labeling.draw`), and ``calib draw --more``.

The rates of a drawn set's labels are design-weighted ratio estimates
(:mod:`calib.estimates.design_weighted`); their variance falls as labels are
added to a stratum h, V_h(n_h) = N_h^2 S2_h / n_h - N_h S2_h.
What to label next (:func:`next_labels`): the stratum whose next label
lowers the variance most, one label at a time (greedy Neyman allocation:
n_h proportional to N_h S_h at the optimum), for the recommended
configuration's false-removal rate and pair recall together.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calib.estimates.design_weighted import Z95, design_pairs, estimate
from calib.estimates.stats import wilson


def _half_width(R: float, var: float) -> float:
    """Half-width of the Wilson interval at the effective size R(1-R)/var (as
    :func:`calib.estimates.design_weighted.stratified_ratio` reports it); z sqrt(var) when R is 0
    or 1 or unknown."""
    if not np.isfinite(var):
        return float("inf")
    if not (np.isfinite(R) and 0.0 < R < 1.0) or var <= 0:
        return float(Z95 * np.sqrt(max(var, 0.0)))
    n_eff = R * (1.0 - R) / var
    lo, hi = wilson(R * n_eff, n_eff)
    return float((hi - lo) / 2)


def _variance(N, n, s2, X) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(n > 0, N ** 2 * (1 - n / np.maximum(N, 1)) * s2 / np.maximum(n, 1), np.where(N > 0, np.inf, 0))
    return float(v.sum() / X ** 2)


def next_labels(frame: pd.DataFrame, design, *, width: float = 0.05, rates_: tuple[str, ...] = (
        "false_removal_rate", "pair_recall"), k: int | None = None, limit: int = 200_000) -> dict:
    """Greedy Neyman allocation of the next labels.

    Returns ``allocation`` (extra labels per stratum, ``k`` of them, or as
    many as bring every rate's projected 95% half-width z sqrt(V) to ``width``),
    and per rate: ``half_width`` now and ``labels_needed`` (extra labels, each
    rate allocated on its own, to reach ``width``; None beyond ``limit`` or
    when the strata run out; ``documents_limit`` True when the document
    sample's own variance, which labels do not lower, is already wider:
    draw more documents then). A label goes where it lowers
    sum_rates V_rate / V_target most, V_target = (width / z)^2."""
    N = np.asarray(design.population, dtype=float)
    H = len(N)
    n0 = np.bincount(frame["h"].to_numpy(np.int64), minlength=H).astype(float)
    target = (width / Z95) ** 2
    parts = {}
    for r in rates_:
        est = estimate(frame, design, r)
        s2 = est.s2 if est.s2 is not None else np.zeros(H)
        # the part of the variance beyond the stratified one (the document sample's, ultimate-cluster term)
        # does not shrink with more labels of the same documents: it stays as it is
        extra = max(est.variance - est.variance / est.deff, 0.0) if np.isfinite(est.variance) else 0.0
        parts[r] = (s2, est.total_x if np.isfinite(est.total_x) else 1.0, est.estimate, extra,
                    (est.high - est.low) / 2 if np.isfinite(est.estimate) else float("inf"))

    def greedy(which: tuple[str, ...], stop_k: int | None):
        n = n0.copy()
        added = 0
        while True:
            vs = {r: _variance(N, n, parts[r][0], parts[r][1]) + parts[r][3] for r in which}
            if stop_k is None and all(_half_width(parts[r][2], vs[r]) <= width for r in which):
                return n - n0, added, vs
            if stop_k is not None and added >= stop_k:
                return n - n0, added, vs
            room = n < N
            if not room.any() or added >= limit:
                return n - n0, None if stop_k is None else added, vs
            gain = np.zeros(H)
            for r in which:
                s2, X = parts[r][:2]
                with np.errstate(divide="ignore", invalid="ignore"):
                    # V_h(n) = N^2 S2/n - N S2: one more label lowers it by N^2 S2 / (n (n + 1))
                    g = np.where(n > 0, N ** 2 * s2 / np.maximum(n * (n + 1), 1), np.inf) / X ** 2
                # an unlabeled stratum (infinite variance) comes first: its gain stays infinite
                gain += np.where(np.isinf(g), np.inf, g / max(vs[r], target) if np.isfinite(vs[r]) else g)
            gain[~room] = -1
            # a batch of labels per step (1% of the labels so far) keeps this fast for large counts
            step = max(1, int(n.sum() // 100))
            best = int(np.argmax(gain))
            add = min(step, int(N[best] - n[best]), (stop_k - added) if stop_k is not None else step)
            n[best] += add
            added += add

    out = {"width": width, "rates": {}}
    for r in rates_:
        _, need, _ = greedy((r,), None)
        out["rates"][r] = {"estimate": parts[r][2], "half_width": float(parts[r][4]), "labels_needed": need,
                           # True: the document sample alone keeps the interval wider than the width
                           "documents_limit": _half_width(parts[r][2], parts[r][3]) > width}
    alloc, added, _ = greedy(rates_, k)
    out["allocation"] = pd.Series(alloc.astype(int), index=list(design.strata))
    out["labels"] = added
    return out


def cmd_more(a) -> int:
    """``calib draw --more K --out DIR``: label-next proposal and K more pairs."""
    import sys
    from pathlib import Path

    from calib.base.errors import CliError, claim
    from calib.labeling.draw import DrawError, more, read_drawn, write_drawn
    from calib.reading.samples import SampleError, load_sample
    from calib.search.sweep import Grid, Workspace, evaluate, recommend, sweep
    if a.more < 0:
        raise CliError(f"--more must be >= 0, got {a.more}")
    if not 0 < a.width < 0.5:
        raise CliError(f"--width must be in (0, 0.5), got {a.width:g}")
    if Path(a.out).is_dir():  # held from this read to the write: a second --more at once is refused, not lost
        claim(Path(a.out))
    try:
        drawn = read_drawn(a.out)
        sample = load_sample(a.out)
    except (DrawError, SampleError) as exc:
        raise CliError(str(exc))
    if not sample.pairs["is_duplicate"].any():
        raise CliError(f"{a.out}: no pair labeled duplicate yet: label some of pairs.csv first (every stratum)")
    ws = Workspace(sample)
    if a.config:
        from calib.production.export import load_config
        try:
            config = load_config(a.config)[0]
        except ValueError as exc:
            raise CliError(f"--config {a.config}: {exc}")
    else:
        best = recommend(sweep(ws, Grid()), max_false_removal_rate=a.budget)
        if best is None:
            raise CliError(f"no configuration keeps the false-removal rate <= {a.budget}; pass --config")
        from calib.search.config import Config
        config = Config.from_row(best)
    ev = evaluate(ws, config)
    frame = design_pairs(ws, config, ev.clustering)
    plan = next_labels(frame, sample.design, width=a.width, k=a.more)
    print(f"configuration: {config}", file=sys.stderr)
    for r, d in plan["rates"].items():
        need = ("more documents (a larger --docs): the document sample limits it" if d["documents_limit"] else
                "more than the strata hold" if d["labels_needed"] is None else f"{d['labels_needed']:,} more labels")
        print(f"{r}: {d['estimate']:.4f} +/- {d['half_width']:.4f}; +/-{a.width:g} needs {need}", file=sys.stderr)
    # drawn but unlabeled pairs are proposed first; only the rest is drawn anew
    unlabeled = (drawn.pairs["label"].str.strip() == "").groupby(drawn.pairs["stratum"]).sum()
    waiting = unlabeled.reindex(list(sample.design.strata)).fillna(0).astype(int)
    new = np.maximum(plan["allocation"].to_numpy() - waiting.to_numpy(), 0)
    try:
        grown = more(drawn, new)
    except DrawError as exc:
        raise CliError(str(exc))
    try:
        write_drawn(a.out, grown)  # the three files replaced as a set: pairs and design always agree
    except ValueError as exc:
        raise CliError(str(exc))
    table = pd.DataFrame({"stratum": list(sample.design.strata), "label next": plan["allocation"].to_numpy(),
                          "already drawn, unlabeled": waiting.to_numpy(), "newly drawn": new})
    print(table.to_string(index=False), file=sys.stderr)
    print(f"wrote {len(grown.pairs) - len(drawn.pairs):,} new pairs to {a.out}/pairs.csv (label empty)", file=sys.stderr)
    return 0
