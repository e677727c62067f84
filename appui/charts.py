"""Altair chart builders (titles, axis titles with units, tooltips)."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from appui.labels import category
from calib.candidates import lsh
from calib.sketches.minhash import estimate_sd

PCT = ".0%"
# Vega label expression: 0, 750, 12k, 1.5M (a shared SI prefix wrote 0 as "0M")
COMPACT = ("datum.value >= 1e6 ? format(datum.value / 1e6, '.3~f') + 'M' : datum.value >= 1e4 ? "
           "format(datum.value / 1e3, '.3~f') + 'k' : format(datum.value, ',')")
REP_ROLE, VERIFIED_ROLE, CHAINED_ROLE = ("kept (representative)", "removed, verified with the representative",
                                         "removed by chaining only")
ROLE_COLORS = {REP_ROLE: "#1f77b4", VERIFIED_ROLE: "#ff7f0e", CHAINED_ROLE: "#d62728"}
LABEL_COLORS = {"duplicate": "#2ca02c", "not duplicate": "#d62728", "unlabeled": "#9e9e9e"}


def length_histogram(docs: pd.DataFrame) -> alt.Chart:
    words = docs["text"].astype(str).str.split().str.len()
    df = pd.DataFrame({"words": words})
    return alt.Chart(df).mark_bar(color="#4c78a8").encode(
        x=alt.X("words:Q", bin=alt.Bin(maxbins=60), title="Words per document"),
        y=alt.Y("count():Q", title="Documents"),
        tooltip=[alt.Tooltip("words:Q", bin=alt.Bin(maxbins=60), title="Words"),
                 alt.Tooltip("count():Q", title="Documents")],
    ).properties(title="Length distribution", height=280)


def category_bars(pairs_by_category: dict, step: int = 24) -> alt.Chart:
    """Horizontal stacked bars, one row of ``step`` pixels per category, so
    every category label shows however many there are."""
    rows = [{"category": category(c), "label": category(k), "pairs": v}
            for c, d in pairs_by_category.items() for k, v in d.items()]
    df = pd.DataFrame(rows, columns=["category", "label", "pairs"])
    return alt.Chart(df).mark_bar().encode(
        y=alt.Y("category:N", title="Pair category", sort="-x",
                axis=alt.Axis(labelOverlap=False, labelLimit=220)),
        x=alt.X("sum(pairs):Q", title="Labeled pairs", axis=alt.Axis(tickCount=5, labelOverlap=True)),
        color=alt.Color("label:N", title="Label", scale=alt.Scale(domain=["duplicate", "not duplicate"],
                                                                  range=[LABEL_COLORS["duplicate"],
                                                                         LABEL_COLORS["not duplicate"]])),
        tooltip=["category", "label", alt.Tooltip("pairs:Q", title="Pairs")],
    ).properties(title="Labeled pairs per category", height=alt.Step(step))


def pareto_front(df: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """Rows not dominated in (lower x, higher y), sorted by x."""
    d = df.dropna(subset=[x, y]).sort_values([x, y], ascending=[True, False])
    best, keep = -np.inf, []
    for idx, v in zip(d.index, d[y]):
        if v > best:
            keep.append(idx)
            best = v
    return d.loc[keep]


OBJECTIVES = {"pair_recall": "Pair recall (duplicate pairs verified)",
              "candidate_recall": "Candidate recall (duplicate pairs colliding in LSH)"}


def rate_domain(values, *, include: float | None = None, margin: float = 0.04) -> list[float]:
    """[low, high] for a rate axis: the data (and ``include``, e.g. the budget) within
    [0, 1], widened by ``margin`` x span on both sides so points on the edge are not
    cut in half. Use with :func:`rate_axis`, which labels no tick outside [0, 1]."""
    v = pd.Series(values, dtype=float).dropna().clip(0.0, 1.0)
    if include is not None:
        v = pd.concat([v, pd.Series([include], dtype=float)])
    lo, hi = (float(v.min()), float(v.max())) if len(v) else (0.0, 1.0)
    pad = margin * max(hi - lo, 0.02)
    return [lo - pad, hi + pad]


def rate_axis(title: str, fmt: str, **kw) -> alt.Axis:
    """An axis for a rate in [0, 1]: ticks outside it (in the margin) are not labeled,
    so no axis reads -1% or 105%."""
    return alt.Axis(title=title, format=fmt, labelExpr="datum.value < -1e-9 || datum.value > 1 + 1e-9 ? '' : "
                    "datum.label", **kw)


def config_labels(results: pd.DataFrame) -> pd.Series:
    """'word5 m=128 b=16 r=8 exact t=0.8 connected' per row (for tooltips)."""
    t = results["threshold"].map(lambda v: "-" if pd.isna(v) else f"{v:g}")
    return (results["representation"] + " m=" + results["num_perm"].astype(str) + " b=" + results["b"].astype(str)
            + " r=" + results["r"].astype(str) + " " + results["verify"] + " t=" + t + " " + results["policy"])


REP_PARTS = r"^(?P<kind>[a-z]+)(?P<k>\d+)(?: \[(?P<norm>[^\]]*)\])?(?P<rest>.*)$"


def rep_parts(representation: pd.Series) -> pd.DataFrame:
    """'word5 [lower+nfkc+ws] idf' -> shingle_kind 'word', shingle_k 5, variant 'lower+nfkc+ws idf'
    (the normalization and what follows): the Pareto chart draws kind as colour, k as size and the
    variant as shape, so 17 representations need 2 + 5 + 3 legend entries, not 17 shapes reused."""
    got = representation.astype(str).str.extract(REP_PARTS)
    variant = (got["norm"].fillna("") + got["rest"].fillna("")).str.strip()
    return pd.DataFrame({"shingle_kind": got["kind"].fillna(representation.astype(str)),
                         "shingle_k": pd.to_numeric(got["k"], errors="coerce").fillna(0).astype(int),
                         "variant": variant.where(variant != "", "as given")}, index=representation.index)


def focus_domain(df: pd.DataFrame, objective: str, budget: float) -> tuple[list[float], int]:
    """(y domain, rows below it): from the lowest objective among the rows a choice is made among (false
    removals within max(3 x budget, 2%)) to the highest of all rows, so a few far-off rows at low recall
    do not squash the front into one strip at the top; the rows below are counted (they stay in the table)."""
    every = df[objective].dropna()
    near = df[df["false_removal_rate"] <= max(3 * budget, 0.02)][objective].dropna()
    # the lower end from the rows near the budget, the upper from every row (none is cut at the top)
    values = pd.concat([near, every.nlargest(1)]) if len(near) >= 3 else every
    domain = rate_domain(values)
    return domain, int((df[objective] < domain[0]).sum())


def pareto_chart(results: pd.DataFrame, objective: str, budget: float,
                 recommended_fp: str | None = None, current_fp: str | None = None) -> alt.LayerChart:
    """Objective (recall) against false-removal rate, one point per configuration:
    colour = shingle kind, size = shingle size k, shape = normalization variant (when there
    are several); the dashed step line is the Pareto front, the red rule the budget. Every
    legend is below the plot (none over it); both axes stay within 0-100%."""
    df = results[results["status"] == "ok"].copy()
    df["config"] = config_labels(df)
    parts = rep_parts(df["representation"])
    df = pd.concat([df.drop(columns=[c for c in parts if c in df]), parts], axis=1)
    x_title = "False-removal rate (of labeled removals)"  # whole at 800 px: the definition is in the help
    y_title = OBJECTIVES.get(objective, objective)
    x_domain = rate_domain(df["false_removal_rate"], include=budget)
    y_domain, below = focus_domain(df, objective, budget)
    x = alt.X("false_removal_rate:Q", axis=rate_axis(x_title, ".1%", tickCount=10),
              scale=alt.Scale(domain=x_domain, nice=False))
    y = alt.Y(f"{objective}:Q", axis=rate_axis(y_title.split(" (")[0], PCT),
              scale=alt.Scale(domain=y_domain, nice=False))
    tooltip = [alt.Tooltip("config:N", title="Configuration"),
               alt.Tooltip("representation:N", title="Representation"),
               alt.Tooltip("threshold:Q", title="Verify threshold", format=".2f"),
               alt.Tooltip("candidates:Q", title="Candidate pairs", format=","),
               alt.Tooltip("candidate_recall:Q", title="Candidate recall", format=".1%"),
               alt.Tooltip("expected_candidate_recall:Q", title="Expected candidate recall (no seed)", format=".1%"),
               alt.Tooltip("pair_recall:Q", title="Pair recall", format=".1%"),
               alt.Tooltip("expected_pair_recall:Q", title="Expected pair recall (no seed)", format=".1%"),
               alt.Tooltip("pair_recall_macro:Q", title="Pair recall per group (macro)", format=".1%"),
               alt.Tooltip(f"{objective}_low:Q", title="95% interval low", format=".1%"),
               alt.Tooltip(f"{objective}_high:Q", title="95% interval high", format=".1%"),
               alt.Tooltip(f"{objective}_interval:N", title="Interval"),
               alt.Tooltip("false_removal_rate:Q", title="False-removal rate", format=".2%"),
               alt.Tooltip("removed:Q", title="Documents removed", format=","),
               alt.Tooltip("config_fingerprint:N", title="Fingerprint")]
    kinds = sorted(df["shingle_kind"].unique())
    ks = sorted(int(k) for k in df["shingle_k"].unique())
    variants = sorted(df["variant"].unique())
    # below the plot, each legend a narrow column (side by side in a row they ran off the chart at 1000 px)
    below_legend = dict(orient="bottom", direction="vertical", labelLimit=180)
    enc = dict(
        x=x, y=y, tooltip=tooltip,
        color=alt.Color("shingle_kind:N", title="Shingles", scale=alt.Scale(domain=kinds, scheme="category10"),
                        legend=alt.Legend(symbolSize=120, **below_legend)),
        size=alt.Size("shingle_k:O", title="Shingle size k", scale=alt.Scale(domain=ks, range=[30, 300]),
                      legend=alt.Legend(symbolFillColor="#777", symbolStrokeColor="#777", **below_legend)))
    if len(variants) > 1:  # one normalization: every point a circle, no legend to read
        enc["shape"] = alt.Shape("variant:N", title="Normalization", scale=alt.Scale(domain=variants),
                                 legend=alt.Legend(symbolSize=120, symbolFillColor="#777", symbolStrokeColor="#777",
                                                   **below_legend))
    # mark_point keeps the shape channel (mark_circle would drop it); clip: rows below the focus stay off
    points = alt.Chart(df).mark_point(filled=True, opacity=0.6, clip=True).encode(**enc)
    expected = alt.Chart(df).mark_tick(color="#333", orient="horizontal", thickness=2, size=14, opacity=0.8,
                                       clip=True).encode(x=x, y=alt.Y(f"expected_{objective}:Q"), tooltip=tooltip)
    front = pareto_front(df, "false_removal_rate", objective)
    line = alt.Chart(front).mark_line(interpolate="step-after", color="#555", strokeDash=[4, 3], clip=True).encode(
        x=x, y=y)
    rule = alt.Chart(pd.DataFrame({"budget": [budget], "label": [f"budget {budget:.1%}"]}))
    budget_rule = rule.mark_rule(color="#d62728", strokeDash=[6, 4], size=2).encode(x="budget:Q")
    right_half = budget > (x_domain[0] + x_domain[1]) / 2  # label on the side with room for it
    budget_text = rule.mark_text(align="right" if right_half else "left", dx=-4 if right_half else 4, dy=2,
                                 color="#d62728", baseline="top").encode(x="budget:Q", y=alt.value(4), text="label:N")
    layers = [points, expected, line, budget_rule, budget_text]
    if f"{objective}_min" in df:  # results across seeds: the range the seeds showed
        layers.insert(0, alt.Chart(df).mark_rule(color="#888", size=1.5, clip=True).encode(
            x=x, y=alt.Y(f"{objective}_min:Q"), y2=f"{objective}_max:Q", tooltip=tooltip))
    marked = marked_rows(df, recommended_fp, current_fp)
    if len(marked):
        # a legend names the marks (text beside the points sat on the crowd of points near x = 0)
        domain = [k for k in MARKS if k in set(marked["mark"])]  # only the marks shown, as every legend here
        layers.append(alt.Chart(marked).mark_point(size=450, filled=False, strokeWidth=2.5).encode(
            x=x, y=y, tooltip=tooltip,
            shape=alt.Shape("mark:N", title="Marked", scale=alt.Scale(domain=domain,
                                                                     range=[MARKS[k][1] for k in domain]),
                            legend=MARK_LEGEND),
            color=alt.Color("mark:N", title="Marked", scale=alt.Scale(domain=domain,
                                                                     range=[MARKS[k][0] for k in domain]),
                            legend=MARK_LEGEND)))
    seeds = "; grey bar: range over seeds" if f"{objective}_min" in df else ""
    off = [f"{below} configuration{'s' if below != 1 else ''} with lower recall lie below the plot (see the table)."
           ] if below else []
    chart = alt.layer(*layers).resolve_scale(color="independent", shape="independent")
    return chart.properties(
        # a short title and subtitle lines that fit at 1000 px (one long title was cut)
        title=alt.TitleParams(f"{y_title.split(' (')[0]} vs false-removal rate", anchor="start", subtitle=[
            "Colour = shingles, size = shingle size k" + (", shape = normalization." if len(variants) > 1 else "."),
            f"Dark tick: {y_title.split(' (')[0].lower()} expected from exact J{seeds}."] + off),
        height=760).interactive()  # Streamlit fits title, legends and plot into this height (plot ~400 px)


# above the plot, alone in its row: inside the plot it covered points, beside the others it was cut
MARK_LEGEND = alt.Legend(orient="top", direction="horizontal", symbolSize=140)
MARKS = {"recommended": ("black", "diamond"), "current": ("#e377c2", "square"),
         "recommended = current": ("black", "diamond")}


def marked_rows(df: pd.DataFrame, recommended_fp: str | None, current_fp: str | None) -> pd.DataFrame:
    """The recommended and the current row with their mark ('recommended = current' when one row is both)."""
    marks = [(recommended_fp, "recommended"), (current_fp, "current")]
    if recommended_fp is not None and recommended_fp == current_fp:
        marks = [(recommended_fp, "recommended = current")]
    rows = [df[df["config_fingerprint"] == fp].head(1).assign(mark=label) for fp, label in marks if fp is not None]
    return pd.concat(rows, ignore_index=True) if rows else df.head(0).assign(mark="")


def s_curve_chart(b: int, r: int, threshold: float | None, empirical: pd.DataFrame | None = None,
                  similarity_label: str = "Exact Jaccard similarity") -> alt.LayerChart:
    s = np.linspace(0, 1, 201)
    theory = pd.DataFrame({"s": s, "p": lsh.s_curve(s, b, r), "curve": f"theory 1-(1-s^{r})^{b}"})
    x = alt.X("s:Q", title=similarity_label, scale=alt.Scale(domain=[0, 1]))
    y = alt.Y("p:Q", title="P(pair becomes a candidate)", axis=alt.Axis(format=PCT), scale=alt.Scale(domain=[0, 1]))
    layers = [alt.Chart(theory).mark_line(color="#4c78a8", size=2.5).encode(
        x=x, y=y, tooltip=[alt.Tooltip("s:Q", title="Similarity", format=".2f"),
                           alt.Tooltip("p:Q", title="P(candidate)", format=".1%")])]
    if empirical is not None and len(empirical):
        e = empirical[empirical["pairs"] > 0].copy()
        e["s"] = e["mean_similarity"]
        e["p"] = e["rate"]
        e["bin"] = e["bin_low"].map("{:.2f}".format) + "-" + e["bin_high"].map("{:.2f}".format)
        tip = [alt.Tooltip("bin:N", title="Exact-J bin"), alt.Tooltip("pairs:Q", title="Pairs", format=","),
               alt.Tooltip("candidates:Q", title="Candidates", format=","),
               alt.Tooltip("rate:Q", title="Measured rate", format=".1%"),
               alt.Tooltip("rate_low:Q", title="95% CI low", format=".1%"),
               alt.Tooltip("rate_high:Q", title="95% CI high", format=".1%"),
               alt.Tooltip("rate_interval:N", title="Interval"),
               alt.Tooltip("expected:Q", title="Expected (mean P(J) of the bin's pairs)", format=".1%"),
               alt.Tooltip("theory:Q", title="Theory at the bin's mean J", format=".1%")]
        base = alt.Chart(e)
        layers.append(base.mark_rule(color="#f58518", size=1.5).encode(
            x="s:Q", y="rate_low:Q", y2="rate_high:Q", tooltip=tip))
        layers.append(base.mark_tick(color="#4c78a8", orient="horizontal", thickness=2, size=14).encode(x="s:Q", y="expected:Q",
                                                                                 tooltip=tip))
        layers.append(base.mark_circle(color="#f58518", size=70, opacity=1).encode(x="s:Q", y="p:Q", tooltip=tip))
    s50 = lsh.s_at_probability(b, r, 0.5)
    # threshold label left of its line, 50%-point label right of its line, on different rows
    marks = [{"x": s50, "what": f"50% at s={s50:.2f}", "color": "#555", "dash": [2, 3],
              "align": "left", "dx": 5, "y": 22}]
    if threshold is not None:
        left = threshold <= s50
        marks.append({"x": threshold, "what": f"threshold {threshold:.2f}", "color": "#d62728", "dash": [6, 4],
                      "align": "right" if left else "left", "dx": -5 if left else 5, "y": 6})
        if not left:
            marks[0].update(align="right", dx=-5)
    for row in marks:
        if row["align"] == "left" and row["x"] > 0.85:  # keep the label inside the plot
            row.update(align="right", dx=-5)
        elif row["align"] == "right" and row["x"] < 0.15:
            row.update(align="left", dx=5)
        # left of a line the curve is low (label near the top), right of it high (label lower down)
        row["y"] = 6 if row["align"] == "right" else 250
        one = alt.Chart(pd.DataFrame([{"x": row["x"], "what": row["what"]}]))
        layers.append(one.mark_rule(color=row["color"], strokeDash=row["dash"], size=2).encode(x="x:Q"))
        layers.append(one.mark_text(color=row["color"], align=row["align"], baseline="top", dx=row["dx"],
                                    fontWeight="bold").encode(x="x:Q", y=alt.value(row["y"]), text="what:N"))
    # a short title; the key in a subtitle (one long title was cut at 1000 px)
    key = ("Orange: measured rate per exact-J bin, 95% interval; blue tick: expected." if empirical is not None
           else alt.Undefined)
    return alt.layer(*layers).properties(title=alt.TitleParams(f"S-curve for b={b} bands x r={r} rows", anchor="start",
                                                               subtitle=key), height=400)


def estimate_scatter(df: pd.DataFrame, num_perm: int, threshold: float | None) -> alt.LayerChart:
    """df: exact, estimated, kind, id_a, id_b, category."""
    s = np.linspace(0, 1, 101)
    sd = estimate_sd(s, num_perm)
    band = pd.DataFrame({"exact": s, "lo": np.clip(s - 2 * sd, 0, 1), "hi": np.clip(s + 2 * sd, 0, 1)})
    kinds = [k for k in LABEL_COLORS if k in set(df["kind"])]
    x = alt.X("exact:Q", title="Exact Jaccard of the shingle sets", scale=alt.Scale(domain=[0, 1]))
    y = alt.Y("estimated:Q", title=f"MinHash estimate ({num_perm} hashes)", scale=alt.Scale(domain=[0, 1]))
    layers = [
        alt.Chart(band).mark_area(opacity=0.18, color="#888").encode(x=x, y="lo:Q", y2="hi:Q"),
        alt.Chart(band).mark_line(color="#666", strokeDash=[3, 3]).encode(x=x, y=alt.Y("exact:Q")),
        alt.Chart(df).mark_circle(size=36, opacity=0.65).encode(
            x=x, y=y,
            # the legend names only the kinds plotted (it listed "unlabeled" with no such point)
            color=alt.Color("kind:N", title="Pair", scale=alt.Scale(domain=kinds,
                                                                   range=[LABEL_COLORS[k] for k in kinds])),
            tooltip=[alt.Tooltip("id_a:N", title="Doc A"), alt.Tooltip("id_b:N", title="Doc B"),
                     alt.Tooltip("category:N", title="Category"),
                     alt.Tooltip("exact:Q", title="Exact J", format=".3f"),
                     alt.Tooltip("estimated:Q", title="Estimate", format=".3f")]),
    ]
    if threshold is not None:
        t = alt.Chart(pd.DataFrame({"t": [threshold]}))
        layers.append(t.mark_rule(color="#d62728", strokeDash=[6, 4]).encode(x="t:Q"))
        layers.append(t.mark_rule(color="#d62728", strokeDash=[6, 4]).encode(y="t:Q"))
    return alt.layer(*layers).properties(
        title=alt.TitleParams("MinHash estimate vs exact Jaccard", anchor="start",
                              subtitle="Grey band: ±2 standard deviations of the estimate."),
        height=420)


def circle_layout(rows: np.ndarray, center: int | None) -> dict[int, tuple[float, float]]:
    """Deterministic positions: ``center`` at (0, 0), the rest on a unit circle by row order."""
    others = [int(x) for x in sorted(rows) if x != center]
    pos = {int(center): (0.0, 0.0)} if center is not None else {}
    for k, row in enumerate(others):
        a = 2 * np.pi * k / max(1, len(others)) + np.pi / 2
        pos[row] = (float(np.cos(a)), float(np.sin(a)))
    return pos


def cluster_frames(ev, sample, cid: int, sim_fn, verified_sim: np.ndarray, max_nodes: int = 60):
    """Node and edge frames for :func:`cluster_graph`: the representative in
    the centre, the other members on a circle, edges = verified pairs inside
    the shown members. Returns (nodes, edges, number of members)."""
    c = ev.clustering
    members = c.members(cid)
    rep = int(c.representative[members[0]])
    shown = members if len(members) <= max_nodes else np.union1d(members[:max_nodes - 1], [rep])
    pos = circle_layout(shown, rep)
    texts = sample.docs["text"]
    role = np.where(shown == rep, REP_ROLE, np.where(c.chained[shown], CHAINED_ROLE, VERIFIED_ROLE))
    nodes = pd.DataFrame({"row": shown, "id": sample.ids[shown], "x": [pos[int(x)][0] for x in shown],
                          "y": [pos[int(x)][1] for x in shown], "role": role,
                          "sim_to_rep": sim_fn(shown, np.full(len(shown), rep)),
                          "words": texts.iloc[shown].str.split().str.len().to_numpy(),
                          "preview": texts.iloc[shown].str.slice(0, 120).to_numpy()})
    v = ev.verified
    inside = np.isin(v.i, shown) & np.isin(v.j, shown)
    ei, ej, es = v.i[inside], v.j[inside], verified_sim[inside]
    edges = pd.DataFrame({"x": [pos[int(a)][0] for a in ei], "y": [pos[int(a)][1] for a in ei],
                          "x2": [pos[int(b)][0] for b in ej], "y2": [pos[int(b)][1] for b in ej],
                          "sim": es, "id_a": sample.ids[ei], "id_b": sample.ids[ej]})
    return nodes, edges, len(members)


def cluster_graph(nodes: pd.DataFrame, edges: pd.DataFrame, title: str) -> alt.LayerChart:
    """nodes: x, y, id, role, words, preview; edges: x, y, x2, y2, sim, id_a, id_b."""
    noaxis = alt.Axis(labels=False, ticks=False, grid=False, domain=False, title=None)
    sx = alt.Scale(domain=[-1.5, 1.5])  # room for the labels outside the circle
    xe = alt.X("x:Q", axis=noaxis, scale=sx)
    ye = alt.Y("y:Q", axis=noaxis, scale=sx)
    lo = float(edges["sim"].min()) if len(edges) else 0.0
    roles = [k for k in ROLE_COLORS if k in set(nodes["role"])]
    e = alt.Chart(edges).mark_rule(strokeWidth=3 if len(edges) <= 40 else 1.5, opacity=0.85).encode(
        x=xe, y=ye, x2="x2:Q", y2="y2:Q",
        # legends below the graph: on its right they left it a third of the width at 1000 px
        color=alt.Color("sim:Q", title="Verified similarity",
                        scale=alt.Scale(scheme="viridis", domain=[min(lo, 0.99), 1.0]),
                        legend=alt.Legend(orient="bottom", direction="vertical")),  # a row was cut at 800 px
        tooltip=[alt.Tooltip("id_a:N", title="Doc A"), alt.Tooltip("id_b:N", title="Doc B"),
                 alt.Tooltip("sim:Q", title="Similarity", format=".3f")])
    n = alt.Chart(nodes).mark_circle(size=380, opacity=1, stroke="white", strokeWidth=1.5).encode(
        x=xe, y=ye,
        # only the roles drawn (as the estimate scatter's legend)
        color=alt.Color("role:N", title="Document", scale=alt.Scale(domain=roles,
                                                                    range=[ROLE_COLORS[k] for k in roles]),
                        legend=alt.Legend(labelLimit=400, orient="bottom", direction="vertical")),
        tooltip=[alt.Tooltip("id:N", title="Id"), alt.Tooltip("role:N", title="Role"),
                 alt.Tooltip("sim_to_rep:Q", title="Exact J to representative", format=".3f"),
                 alt.Tooltip("words:Q", title="Words"), alt.Tooltip("preview:N", title="Text")])
    layers = [e, n]
    if len(nodes) <= 30:  # beyond that, ids only in the tooltips and the table
        lab = label_positions(nodes, edges)
        for align, part in lab.groupby("align", sort=True):
            layers.append(alt.Chart(part).mark_text(fontSize=11, align=align, baseline="middle").encode(
                x=alt.X("lx:Q", axis=noaxis, scale=sx), y=alt.Y("ly:Q", axis=noaxis, scale=sx), text="id:N"))
    return alt.layer(*layers).properties(title=title, height=560)  # graph and legends


def label_positions(nodes: pd.DataFrame, edges: pd.DataFrame | None = None, gap: float = 0.14) -> pd.DataFrame:
    """Where each node's id is written, clear of the edges: a member on the circle
    gets its label outside the circle (its edges go inwards); the node in the centre
    gets it in the middle of the widest angle between its own edges (``edges``: x, y,
    x2, y2; without them, every member counts as a neighbour). Adds lx, ly and align
    (text anchored on the side of the node)."""
    x, y = nodes["x"].to_numpy(float), nodes["y"].to_numpy(float)
    radius = np.hypot(x, y)
    centre = radius < 1e-9
    angle = np.arctan2(y, x)
    angle[centre] = widest_gap(spoke_angles(x[~centre], y[~centre], edges))
    reach = np.where(centre, 0.0, radius) + gap
    cos, sin = np.cos(angle), np.sin(angle)
    align = np.where(cos > 0.35, "left", np.where(cos < -0.35, "right", "center"))
    return nodes.assign(lx=reach * cos, ly=reach * sin, align=align)


def spoke_angles(x: np.ndarray, y: np.ndarray, edges: pd.DataFrame | None) -> np.ndarray:
    """Directions of the edges leaving the centre (0, 0); without ``edges``, of every member."""
    if edges is None:
        return np.arctan2(y, x)
    e = edges[["x", "y", "x2", "y2"]].to_numpy(float)
    at_centre = np.hypot(e[:, 0], e[:, 1]) < 1e-9
    ends = np.vstack([e[at_centre][:, 2:], e[np.hypot(e[:, 2], e[:, 3]) < 1e-9][:, :2]])
    return np.arctan2(ends[:, 1], ends[:, 0])


def widest_gap(angles: np.ndarray) -> float:
    """The direction halfway across the widest empty angle between ``angles`` (below the node if none)."""
    if len(angles) == 0:
        return -np.pi / 2
    a = np.sort(np.mod(angles, 2 * np.pi))
    gaps = np.diff(np.append(a, a[0] + 2 * np.pi))
    k = int(np.argmax(gaps))
    return float(a[k] + gaps[k] / 2)


def containment_curve_chart(curves: pd.DataFrame, threshold: float | None) -> alt.LayerChart:
    """P(candidate) against containment c, one line per size ratio x/q (``curves``: c, p, ratio, split)."""
    x = alt.X("c:Q", title="Containment |A∩B|/|A| of the smaller set A", scale=alt.Scale(domain=[0, 1]))
    y = alt.Y("p:Q", title="P(pair becomes a candidate)", axis=alt.Axis(format=PCT), scale=alt.Scale(domain=[0, 1]))
    color = alt.Color("ratio:N", title="Size ratio |B|/|A|", sort=None, scale=alt.Scale(scheme="viridis"))
    lines = alt.Chart(curves).mark_line(size=2.5).encode(
        x=x, y=y, color=color, tooltip=[alt.Tooltip("ratio:N", title="|B|/|A|"), alt.Tooltip("split:N", title="b x r"),
                                        alt.Tooltip("c:Q", title="Containment", format=".2f"),
                                        alt.Tooltip("p:Q", title="P(candidate)", format=".1%")])
    layers = [lines]
    if threshold is not None:
        layers.append(alt.Chart(pd.DataFrame({"c": [threshold]})).mark_rule(color="#d62728", strokeDash=[6, 4])
                      .encode(x="c:Q"))
    return alt.layer(*layers).properties(height=320, title=alt.TitleParams(
        "Candidacy by containment, per size ratio", anchor="start",
        subtitle="A larger B dilutes the Jaccard that banding sees."))
