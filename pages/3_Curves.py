"""Curves: S-curve vs measured collision rates, MinHash error, optimizer check."""

import dataclasses

import numpy as np
import pandas as pd
import streamlit as st

from appui import charts, engine, frame, state, tables
from appui.errors import guard
from appui.text import md
from calib.candidates import lsh
from calib.search.config import Verify, config_from_row
from calib.candidates.ensemble import Ensemble, containment_s_curve, lookup
from calib.estimates.metrics import expected_at_or_above, rate_at_or_above
from calib.sketches.minhash import estimate_errors


R_VALUE = "curve_r_value"  # r as chosen, in plain state: the r slider's key changes with its range


def split_inputs(cfg) -> tuple[int, int, float]:
    """b, r and threshold sliders, starting at the current configuration. b*r may not
    exceed num_perm: when a larger b leaves fewer rows per band, r is lowered and the
    page says so. The r slider's key names its range (``curve_r_1_5``): a slider whose
    maximum changes under the same key kept its old position in the browser (r drawn at 1
    while the page used 5), so a new range draws a new slider, at the r in plain state."""
    m = cfg.rep.num_perm
    ss = st.session_state
    # the sliders start at the current configuration: reset on request, and whenever the configuration is
    # another than the one they were set for (else an old r read "r lowered from 6 to 5" though nothing moved)
    if st.button("Reset sliders to the current configuration", key="curve_reset") or \
            ss.get("curve_for") != cfg.fingerprint():
        for k in [k for k in ss if str(k).startswith("curve_r_")] + ["curve_b", "curve_t", R_VALUE]:
            ss.pop(k, None)
        ss["curve_for"] = cfg.fingerprint()
    ss.setdefault("curve_b", min(cfg.b, m))
    ss.setdefault(R_VALUE, cfg.r)
    ss.setdefault("curve_t", float(cfg.threshold or 0.0))  # no threshold when nothing is verified
    c = st.columns(3)
    b = c[0].slider("b (bands)", 1, m, key="curve_b") if m > 1 else 1
    rmax = lsh.max_rows(b, m)
    old = ss[R_VALUE]
    lowered = old > rmax
    if rmax > 1:
        r = c[1].slider("r (rows per band)", 1, rmax, value=min(old, rmax), key=f"curve_r_1_{rmax}")
    else:
        r = 1
        c[1].markdown("**r (rows per band)**: 1")
    ss[R_VALUE] = r
    t = c[2].slider("Final threshold (Jaccard)", 0.0, 1.0, step=0.01, key="curve_t")
    rule = (f"b x r may not exceed num_perm = {m}: each band hashes r of the signature's {m} values and no value "
            f"serves two bands, so with b = {b} bands r goes up to {m} // {b} = {rmax}.")
    if lowered:
        st.info(f"r lowered from {old} to {rmax}. {rule}")
    else:
        c[1].caption(rule)
    return b, r, t


def make_current(cfg, b: int, r: int, t: float) -> None:
    """The explored split (and threshold) as the current configuration."""
    new = dataclasses.replace(cfg, b=b, r=r, threshold=t)
    if new.fingerprint() == cfg.fingerprint():
        st.caption("The sliders show the current configuration.")
        return
    what = f"b={b}, r={r}" + ("" if cfg.verify is Verify.NONE else f", threshold {t:g}")
    if st.button(f"Make {what} the current configuration", key="curve_use", type="primary"):
        state.set_config(new, "explored on the Curves page")
        state.changed(f"Current configuration set to {state.config_label(new)}; the other pages now use it.")


def which_configuration(cfg) -> None:
    """Say which configuration the page draws: always the current one; after a sweep whose recommendation is
    another, say so and offer to make the recommendation current (the page then draws it)."""
    rec = state.recommended()
    source = st.session_state[state.CONFIG_SOURCE]
    if rec is None or rec["config_fingerprint"] == cfg.fingerprint():
        what = " (the sweep's recommendation)" if rec is not None else ""
        st.caption(f"This page draws the current configuration{what}: `{state.config_label(cfg)}` "
                   f"({md(source)}).")
        return
    rec_cfg = config_from_row(rec)
    st.info(f"This page draws the **current** configuration, `{state.config_label(cfg)}` ({md(source)}), not "
            f"the sweep's recommendation, `{state.config_label(rec_cfg)}`. Make the recommendation current to "
            "draw it here (the other pages follow).")
    if st.button("Use the recommended configuration", key="curve_use_recommended"):
        state.set_config(rec_cfg, "recommended by the sweep (from the Curves page)")
        state.changed(f"Current configuration set to the recommendation: {state.config_label(rec_cfg)}.")


def s_curve_section() -> None:
    cfg = state.config()
    m = cfg.rep.num_perm
    which_configuration(cfg)
    st.subheader("S-curve against measured collision rates")
    st.caption(f"Representation {cfg.rep.shingle_label()} [{cfg.rep.normalization_label()}], {m} hashes. "
               "Move b, r and the threshold: only the banding step reruns (shingles and signatures are cached).")
    weighted = cfg.rep.weighting != "none"
    if weighted:
        st.caption(f"Weighted MinHash ({cfg.rep.weighting} weights, ICWS): a signature column collides with "
                   "probability the weighted Jaccard J_w = Σ min(w) / Σ max(w), so the S-curve is the same "
                   "1-(1-s^r)^b at s = J_w, and the pairs below are binned by their exact J_w.")
    b, r, t = split_inputs(cfg)
    make_current(cfg, b, r, t)

    with st.spinner("Measuring collision rates..."):
        emp = engine.collision(cfg.rep, b, r)
    hits, pairs, measured = rate_at_or_above(emp, t)
    expected = expected_at_or_above(emp, t)
    k = st.columns(3) + st.columns(3)  # two rows: six in one cut the values to "94…" at 1000 px
    k[0].metric("P at threshold", f"{lsh.s_curve(t, b, r):.1%}",
                help="Probability that a pair with Jaccard = threshold becomes an LSH candidate")
    k[1].metric("50% point", f"{lsh.s_at_probability(b, r, 0.5):.3f}")
    k[2].metric("(1/b)^(1/r)", f"{lsh.threshold_approx(b, r):.3f}")
    k[3].metric("Measured, J ≥ t", "n/a" if np.isnan(measured) else f"{measured:.1%}",
                help=f"Measured candidate rate of pairs with exact J >= threshold: "
                     f"{hits:,} of {pairs:,} pairs collide")
    k[4].metric("Expected, J ≥ t", "n/a" if np.isnan(expected) else f"{expected:.1%}",
                help="The same pairs' mean of P(J) = 1-(1-J^r)^b at their exact Jaccard: the measured rate "
                     "averaged over hash seeds, no seed needed")
    k[5].metric("Hashes used", f"{b * r}/{m}", help="b x r of num_perm")
    what = "Exact weighted Jaccard J_w" if weighted else "Exact Jaccard similarity"
    st.altair_chart(charts.s_curve_chart(b, r, t, emp, f"{what} ({cfg.rep.shingle_label()} shingles)"),
                    width="stretch")
    with st.expander("Collision rates per bin (table)"):
        frame, config = tables.view(emp, percent=("rate", "rate_low", "rate_high", "expected", "theory"),
                                    formats=dict.fromkeys(("bin_low", "bin_high", "mean_similarity"), "%.2f"))
        st.dataframe(frame, hide_index=True, width="stretch", column_config=config)


def error_section() -> None:
    cfg = state.config()
    st.subheader("MinHash estimate vs exact Jaccard")
    if cfg.measure != "jaccard":
        st.info(f"The current configuration verifies {cfg.measure}: the pairs below show its exact value and its "
                "estimate from the signatures (the Jaccard estimate converted with the exact set sizes) on the "
                "Jaccard axes; the grey band is the Jaccard estimate's spread.")
    with st.spinner("Evaluating the current configuration..."):
        ev = engine.evaluation(cfg)
    lab = ev.labeled
    kind = np.select([lab["label"] == 1, lab["label"] == 0], ["duplicate", "not duplicate"], "unlabeled")
    frames = [pd.DataFrame({"exact": lab["exact"], "estimated": lab["estimated"], "kind": kind,
                            "id_a": lab["id_a"], "id_b": lab["id_b"], "category": lab["category"]})]
    v = ev.verified
    if v is not None and len(v.i):
        s = state.sample()
        unl = v.label == -1
        frames.append(pd.DataFrame({"exact": v.exact[unl], "estimated": v.estimated[unl], "kind": "unlabeled",
                                    "id_a": s.ids[v.i[unl]], "id_b": s.ids[v.j[unl]], "category": "(verified)"}))
    df = pd.concat(frames, ignore_index=True)
    if len(df) > 5000:
        df = df.sample(5000, random_state=0)
    t = cfg.threshold
    err = estimate_errors(df["exact"], df["estimated"], t)
    c = st.columns(4)
    c[0].metric("Pairs shown", f"{len(df):,}")
    # short labels (long ones were cut at 1000 px), the formula in the help
    c[1].metric("Mean error", f"{err['mean_abs']:.3f}", help="Mean |estimate - exact| over the pairs shown")
    c[2].metric("Largest error", f"{err['max_abs']:.3f}", help="Largest |estimate - exact| over the pairs shown")
    if t is not None:
        c[3].metric(f"Flipped at {t:g}", f"{err['flips']:,}",
                    help="Estimate and exact Jaccard disagree on whether the pair passes the threshold")
    st.altair_chart(charts.estimate_scatter(df, cfg.rep.num_perm, t), width="stretch")


RATIOS = (1, 2, 4, 8, 16)
# two different chances of a pair of size ratio x, named apart (one word, "P at threshold", had stood for both)
AT_T = "P(candidate) at c = threshold"
CEILING = "highest P(candidate), at c = 1"


def containment_section() -> None:
    """P(candidate | containment c, size ratio |B|/|A|): banding sees J = c / (1 + ratio - c)."""
    cfg = state.config()
    st.subheader("Containment S-curve")
    st.caption("A short document A copied into a longer B has containment |A∩B|/|A| near 1 but Jaccard "
               "c / (1 + |B|/|A| - c): the longer B, the lower the banding's chance. One split for every size "
               "(plain banding), or an LSH Ensemble that partitions by size and picks (b, r) per size ratio for a "
               "containment threshold (Zhu et al. 2016, as datasketch's MinHashLSHEnsemble).")
    c = st.columns([2, 1, 1])
    mode = c[0].radio("Candidates from", ("the b x r split of the sliders above", "an LSH Ensemble"),
                      key="cont_mode", horizontal=True)
    t = c[1].slider("Containment threshold", 0.05, 1.0, float(cfg.threshold or 0.5) if cfg.measure == "containment"
                    else 0.5, 0.01, key="cont_t")
    m = cfg.rep.num_perm
    b0, r0 = st.session_state.get("curve_b", cfg.b), st.session_state.get(R_VALUE, cfg.r)
    cc = np.linspace(0, 1, 201)
    rows, table = [], []
    ens = Ensemble(t, m, m=min(8, m)) if mode == "an LSH Ensemble" and m >= 2 else None
    for ratio in RATIOS:
        if ens is not None:
            b, r = (int(v) for v in ens.table()[lookup(ens.table(), ratio, 1)])
        else:
            b, r = b0, r0
        keep = cc <= 1.0  # c can reach 1 whatever the ratio >= 1
        p = containment_s_curve(cc[keep], b, r, float(ratio))
        rows.append(pd.DataFrame({"c": cc[keep], "p": p, "ratio": f"{ratio}x", "split": f"{b}x{r}"}))
        table.append({"|B|/|A|": f"{ratio}x", "b x r": f"{b}x{r}",
                      AT_T: float(containment_s_curve(t, b, r, float(ratio))),
                      CEILING: float(containment_s_curve(1.0, b, r, float(ratio))), "ratio": ratio})
    c[2].metric("Hashes", f"{m:,}")
    st.altair_chart(charts.containment_curve_chart(pd.concat(rows, ignore_index=True), t), width="stretch")
    st.caption(ceiling_caption(table))
    # both chances a caption or a reader may quote, each under its own name
    st.table(tables.small_table(tables.percent_text(pd.DataFrame(table).drop(columns=["ratio"]), (AT_T, CEILING)),
                                "|B|/|A|"))


def ceiling_caption(table: list[dict]) -> str:
    """Why the curves of large size ratios stay near 0%: at containment c = 1 (all of A
    inside B) the Jaccard the banding sees is |A|/|B| = 1/ratio, the most a pair of that
    ratio can reach, and the split's S-curve at that Jaccard is each curve's ceiling."""
    def top(p: float) -> str:
        return tables.pct(p) if p >= 0.0005 else "below 0.1%"
    tops = "; ".join(f"{row['|B|/|A|']} (J ≤ {1 / row['ratio']:.4g}, {row['b x r']}): {top(row[CEILING])}"
                     for row in table if row["ratio"] > 1)
    text = ("Banding sees Jaccard, not containment: a pair whose larger set is x times the smaller has "
            "J = c / (1 + x - c), at most 1/x even when all of A is inside B (c = 1). So each curve stops at "
            f"its split's S-curve value at J = 1/x, the table's '{CEILING}' (not its chance at the containment "
            f"threshold, '{AT_T}'): {tops}.")
    flat = [row["|B|/|A|"] for row in table if row[CEILING] < 0.05]
    if flat:
        text += (f" The {', '.join(flat)} curves lie flat near 0%: their split cannot find a copy inside a document "
                 "that much longer (an LSH Ensemble picks a looser split per size ratio).")
    return text


def optimizer_section() -> None:
    st.subheader("What datasketch's optimizer would choose")
    c = st.columns([1, 1, 3])
    t = c[0].number_input("Threshold", 0.05, 0.99, 0.8, 0.01, key="opt_t")
    m = int(c[1].number_input("num_perm", 2, 1024, 128, 1, key="opt_m"))
    b, r = lsh.optimal_split(float(t), m)
    p = float(lsh.s_curve(t, b, r))
    s50 = lsh.s_at_probability(b, r, 0.5)
    with c[2]:
        msg = (f"For threshold **{t:g}** with **{m}** hashes the optimizer picks **b={b}, r={r}**. "
               f"A pair with Jaccard exactly {t:g} becomes a candidate with probability **{p:.2f}**; "
               f"the curve reaches 50% only at **J = {s50:.2f}**.")
        if p < 0.5:
            st.warning(msg + " Pairs at your threshold are more likely missed than found: the optimizer "
                       "balances false-positive and false-negative areas, it does not put 50% at the threshold.")
        else:
            st.info(msg)
    st.altair_chart(charts.s_curve_chart(b, r, float(t), None, "Jaccard similarity"), width="stretch")


with guard("The Curves page"):
    frame.page("Curves", "How the current configuration's split behaves on this sample, and how far MinHash estimates "
               "stray.")
    s_curve_section()
    containment_section()
    error_section()
    optimizer_section()
