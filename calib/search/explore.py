"""The search's second step: every axis, from the first pass's best rows, until nothing gains.

A *setting* is a configuration without its cut: the representation (normalization, shingle kind and
size, weighting, boilerplate stripping), the measure and the clustering policy. Its cut (threshold,
hash count, split) is not walked step by step: for each setting the ceiling scan
(:mod:`calib.search.screen`) finds the best threshold under a perfect split, and the expected rates
choose a hash count and a steep split for it. So a move of the setting is re-cut whole, and moves
compose:

    settings <- the settings of the first pass's best rows
    round:   the best setting not yet moved, moved along every axis (one move) -> ceilings;
             the moves that raised a setting's ceiling, also taken two and three at a time;
             the best settings by ceiling not measured yet -> their best cuts -> measured rows
    stop:    a round raises neither the best ceiling nor the best measured row by MIN_GAIN,
             or the rounds or the settings (the effort: 4 rounds, 32 settings at effort 1) are spent

The ceiling is an upper bound a split can only approach, so the settings are ranked by it and the
recommendation is still made on measured rows (and the seed check after them).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from calib.search.capabilities import CALIB, Capabilities
from calib.search.config import Config, config_from_row
from calib.search.recommend import ranked
from calib.search.screen import Ceiling, best_cuts, ceiling as scan
from calib.search.stored import array_text, config_key, kept, labels_digest, text_array
from calib.search.sweep import sweep_configs
from calib.search.unverified import unverified_cuts
from calib.search.watch import stopped

MIN_GAIN = 0.002     # pair recall: less than this is no gain
ROUNDS = 4           # rounds at effort 1
EXPAND = 1           # settings moved per round (the best not yet moved)
MEASURE = 4          # settings measured per round (best cuts each)
CUTS = 3             # configurations measured per setting
STRIP_SHARE = 0.02   # boilerplate: lines held by more than this share of the documents
BOILERPLATE_CHARS = 40  # a boilerplate line is at least this long
COMBINE = 3          # the best gaining moves of a setting combined two and three at a time
SETTINGS = 32        # settings scanned (ceilings) at effort 1


@dataclass(frozen=True)
class Move:
    """A change of one axis of a setting: Representation fields and Config fields."""

    axis: str
    rep: tuple = ()
    cfg: tuple = ()

    def __add__(self, other: "Move") -> "Move":
        return Move(f"{self.axis}+{other.axis}", self.rep + other.rep, self.cfg + other.cfg)

    def apply(self, cfg: Config) -> Config | None:
        """The moved setting, or None where the combination has no meaning (containment of weights)."""
        changes = dict(self.rep)
        weighted = changes.get("weighting", cfg.rep.weighting) != "none"
        if weighted != (cfg.rep.weighting != "none"):  # a weighted scheme sketches weights; a set, the default
            changes["scheme"] = "dart" if weighted else "prefix"
        rep = cfg.rep.with_(**changes)
        kw = dict(self.cfg)
        if weighted:
            if kw.get("measure", cfg.measure) == "containment":
                return None
            kw["measure"] = "weighted_jaccard"
        elif cfg.rep.weighting != "none" and "measure" not in kw:
            kw["measure"] = "jaccard"
        measure = kw.get("measure", cfg.measure)
        kw["representative"] = "longest" if measure == "containment" else (
            "first" if cfg.measure == "containment" else cfg.representative)
        try:
            return replace(cfg, rep=rep, **kw)
        except ValueError:
            return None


def setting_of(cfg: Config, target: Capabilities = CALIB) -> Config:
    """``cfg`` with its cut reset: the setting's canonical form (one fingerprint per setting), as
    ``target`` runs it (a tool banding the whole signature: b=1, r=num_perm)."""
    s = replace(cfg, rep=cfg.rep.with_(num_perm=128), b=1, r=1, threshold=None if cfg.threshold is None else 1.0)
    return target.project(s) or s


def _moved(mv: Move, s: Config, target: Capabilities) -> Config | None:
    """The moved setting as ``target`` runs it; None where it has no meaning or the tool runs no change."""
    moved = mv.apply(s)
    if moved is not None and moved.b < target.min_bands:
        # the canonical cut (b=1) is no tool's split: project the setting with one it takes, then reset the cut
        projected = target.project(replace(moved, b=target.min_bands))
        moved = None if projected is None else replace(projected, b=moved.b)
    else:
        moved = None if moved is None else target.project(moved)
    return None if moved is None or moved.fingerprint() == s.fingerprint() else moved


def axis_values(cfg: Config) -> dict:
    """The setting's value on each axis, in words (the knobs table's rows)."""
    rep = cfg.rep
    return {"normalization": rep.normalization_label(), "shingle": f"{rep.shingle}{rep.k}",
            "measure": cfg.measure, "weighting": rep.weighting, "strip_lines": rep.strip_lines,
            "policy": str(cfg.policy)}


@dataclass
class Limits:
    """What the sample allows: shingle sizes (at least 5 shingles in a median document), and whether
    any line is boilerplate (a line of :data:`BOILERPLATE_CHARS` characters or more held by more than
    :data:`STRIP_SHARE` of the documents, and by >= 2: a header or footer, not a keyword)."""

    max_word: int
    max_char: int
    boilerplate: bool = True
    weighting: bool = True

    @classmethod
    def of(cls, ws) -> "Limits":
        texts = pd.Series(ws.sample.texts, dtype=object).astype(str)
        words = float(texts.str.split().str.len().median())
        chars = float(texts.str.len().median())
        lines = pd.Series([line for t in texts for line in {x.strip() for x in t.splitlines()}
                           if len(line) >= BOILERPLATE_CHARS])
        held = lines.value_counts()
        boilerplate = bool(len(held)) and int(held.iloc[0]) >= max(2, STRIP_SHARE * len(texts))
        return cls(max(1, min(12, int(words // 5))), max(3, min(16, int(chars // 5))), boilerplate)


def moves(cfg: Config, limits: Limits) -> list[Move]:
    """Every one-axis move of a setting the sample allows (:class:`Limits`)."""
    rep = cfg.rep
    out = [Move("normalization", rep=(("strip_punct", not rep.strip_punct),)),
           Move("case", rep=(("lowercase", not rep.lowercase),))]
    top = limits.max_word if rep.shingle == "word" else limits.max_char
    low = 1 if rep.shingle == "word" else 2
    for dk in (-1, 1, 2):
        if low <= rep.k + dk <= top:
            out.append(Move("shingle", rep=(("k", rep.k + dk),)))
    other = ((5,) if rep.shingle == "word" else (3,))
    kind = "char" if rep.shingle == "word" else "word"
    for k in other:
        if k <= (limits.max_char if kind == "char" else limits.max_word):
            out.append(Move("shingle", rep=(("shingle", kind), ("k", k))))
    if cfg.measure != "weighted_jaccard":
        out.append(Move("measure", cfg=(("measure", "jaccard" if cfg.measure == "containment" else "containment"),)))
    if limits.weighting or rep.weighting != "none":
        out.append(Move("weighting", rep=(("weighting", "none" if rep.weighting != "none" else "idf"),)))
    if limits.boilerplate or rep.strip_lines:
        out.append(Move("strip_lines", rep=(("strip_lines", 0.0 if rep.strip_lines else STRIP_SHARE),)))
    out.append(Move("policy", cfg=(("policy", "star" if str(cfg.policy) == "connected" else "connected"),)))
    return out


@dataclass
class Exploration:
    """What the exploration looked at: every setting's ceiling, the measured rows, the rounds."""

    ceilings: dict = field(default_factory=dict)    # setting fingerprint -> (setting, Ceiling)
    rows: list = field(default_factory=list)        # measured DataFrames
    rounds: list = field(default_factory=list)      # one line per round
    measured: set = field(default_factory=set)      # setting fingerprints whose cuts were measured
    expanded: set = field(default_factory=set)

    def table(self) -> pd.DataFrame:
        """One row per setting looked at: its axes, ceiling pair recall and best threshold."""
        out = []
        for fp, (s, c) in self.ceilings.items():
            best = c.best
            out.append({**axis_values(s), "setting": fp, "ceiling_pair_recall": c.value,
                        "ceiling_threshold": np.nan if best is None else best[0], "measured": fp in self.measured})
        return pd.DataFrame(out)


def explore(ws, first: pd.DataFrame, *, budget: float = 0.01, objective: str = "pair_recall", effort: float = 1.0,
            max_pairs: int | None = 20_000_000, num_perms=(128, 256), progress=None,
            confidence: float | None = None, target: Capabilities = CALIB) -> tuple[pd.DataFrame, Exploration]:
    """(the measured rows the exploration adds, search_pass 2; what it looked at): module docstring.
    ``confidence``: the measured rows are ranked by the budget on the false-removal rate's one-sided
    upper bound at it (:func:`calib.search.recommend.ranked`). ``target``: every setting and configuration
    as that tool runs it (a move it does not run is no move); for a tool that verifies nothing, a
    setting's cuts are its unverified steep splits."""
    progress = progress or (lambda f, m: None)
    limits = Limits.of(ws)
    ex = Exploration()
    rounds = max(1, int(round(ROUNDS * effort)))

    starts = _start_settings(first, budget, objective, target, confidence=confidence)
    max_settings = max(len(starts) + 1, int(round(SETTINGS * effort)))

    def ceil_of(cfg: Config) -> Ceiling | None:
        """The setting's ceiling; None once the budget of settings is spent."""
        s = setting_of(cfg, target)
        fp = s.fingerprint()
        if fp not in ex.ceilings:
            if len(ex.ceilings) >= max_settings:
                return None
            ex.ceilings[fp] = (s, ceiling(ws, s, budget))
        return ex.ceilings[fp][1]

    def best_measured(rows: pd.DataFrame) -> float:
        ok = ranked(rows, max_false_removal_rate=budget, objective=objective, confidence=confidence)
        return float(ok[objective].iloc[0]) if len(ok) else 0.0

    done = first
    for k, s in enumerate(starts):
        if stopped():
            break
        progress(0.1 * k / max(1, len(starts)), f"ceiling of {_name(s)}")
        ceil_of(s)
    best_ceiling, best_row = _best_ceiling(ex), best_measured(first)
    for rnd in range(rounds):
        base = 0.1 + 0.9 * rnd / rounds
        todo = [fp for fp in _by_ceiling(ex) if fp not in ex.expanded][:EXPAND]
        for n_done, fp in enumerate(todo):
            ex.expanded.add(fp)
            s, c = ex.ceilings[fp]
            gains = []
            # idf weights cost a weighted join: tried from each round's best setting only
            allowed = limits if n_done == 0 else replace(limits, weighting=False)
            for mv in moves(s, allowed):
                moved = _moved(mv, s, target)
                if moved is None:
                    continue
                if stopped():  # asked to stop (calib.search.watch): what was measured stands
                    break
                progress(base + 0.5 / rounds * n_done / len(todo), f"round {rnd + 1}: {_name(moved)}")
                moved_ceiling = ceil_of(moved)
                if moved_ceiling is None:
                    break
                gain = moved_ceiling.value - c.value
                if gain > MIN_GAIN:
                    gains.append((gain, mv))
            gains = [mv for _, mv in sorted(gains, key=lambda g: -g[0])[:COMBINE]]
            for size in (2, 3):  # the best gaining moves of different axes, together
                for combo in itertools.combinations(gains, size):
                    if len({m.axis for m in combo}) < size:
                        continue
                    moved = _moved(sum(combo[1:], combo[0]), s, target)
                    if moved is not None and not stopped():
                        progress(base + 0.5 / rounds * n_done / len(todo), f"round {rnd + 1}: {_name(moved)}")
                        ceil_of(moved)
        configs = []
        for fp in [fp for fp in _by_ceiling(ex) if fp not in ex.measured][:MEASURE]:
            ex.measured.add(fp)
            s, c = ex.ceilings[fp]
            configs += (cuts(ws, s, c, budget, num_perms) if target.verifies else
                        unverified_cuts(ws, s, budget, keep=CUTS, whole=target.whole_signature,
                                        min_bands=target.min_bands))
        have = set(done["config_fingerprint"])
        configs = [c for c in target.fixed(configs) if c.fingerprint() not in have]
        if configs:
            rows = sweep_configs(ws, configs, max_pairs,
                                 progress=lambda f, m: progress(base + 0.5 / rounds + 0.5 / rounds * f, m))
            rows = rows.assign(search_pass=2)
            ex.rows.append(rows)
            done = pd.concat([done, rows], ignore_index=True)
        new_ceiling, new_row = _best_ceiling(ex), best_measured(done)
        ex.rounds.append(f"round {rnd + 1}: {len(todo)} settings moved, {len(configs)} configurations measured, "
                         f"best ceiling {new_ceiling:.3f}, best measured {new_row:.3f}")
        spent = len(ex.ceilings) >= max_settings and all(fp in ex.measured for fp in _by_ceiling(ex)[:MEASURE])
        if stopped():
            break
        if (new_ceiling < best_ceiling + MIN_GAIN and new_row < best_row + MIN_GAIN and rnd > 0) or spent:
            break
        best_ceiling, best_row = max(best_ceiling, new_ceiling), max(best_row, new_row)
    progress(1.0, "exploration done")
    added = pd.concat(ex.rows, ignore_index=True) if ex.rows else first.iloc[:0]
    return added, ex


def ceiling(ws, cfg: Config, budget: float) -> Ceiling:
    """:func:`calib.search.screen.ceiling` of ``cfg`` within ``budget``, kept on disk per setting, budget and
    labels when the workspace keeps its steps (:mod:`calib.search.stored`)."""
    def to_arrays(c: Ceiling) -> dict:
        return {"thresholds": c.thresholds, "recall": c.recall, "false_removal_rate": c.false_removal_rate,
                "labeled_removals": c.labeled_removals, "budget": np.array(c.budget)}

    def from_arrays(a: dict) -> Ceiling:
        return Ceiling(a["thresholds"], a["recall"], a["false_removal_rate"], a["labeled_removals"],
                       float(a["budget"]))

    return kept(ws, "ceilings", (config_key(cfg), float(budget), labels_digest(ws)),
                lambda: scan(ws, cfg, budget), to_arrays, from_arrays)


def cuts(ws, s: Config, c: Ceiling, budget: float, num_perms) -> list[Config]:
    """:func:`calib.search.screen.best_cuts` of setting ``s`` (of ceiling ``c``, which the key's setting,
    budget and labels determine), kept on disk like the ceiling."""
    return kept(ws, "cuts", (config_key(s), float(budget), [int(m) for m in num_perms], CUTS, labels_digest(ws)),
                lambda: best_cuts(ws, s, c, budget, num_perms=num_perms, keep=CUTS),
                lambda cs: text_array(json.dumps([json.loads(config_key(x)) for x in cs])),
                lambda a: [Config.from_dict(d) for d in json.loads(array_text(a))])


def _name(cfg: Config) -> str:
    w = "" if cfg.rep.weighting == "none" else f" {cfg.rep.weighting}"
    s = f" strip {cfg.rep.strip_lines:g}" if cfg.rep.strip_lines else ""
    return f"{cfg.rep.shingle_label()}{w}{s} {cfg.measure} {cfg.policy}"


def _by_ceiling(ex: Exploration) -> list[str]:
    return sorted(ex.ceilings, key=lambda fp: -ex.ceilings[fp][1].value)


def _best_ceiling(ex: Exploration) -> float:
    return max((c.value for _, c in ex.ceilings.values()), default=0.0)


def _start_settings(first: pd.DataFrame, budget: float, objective: str, target: Capabilities = CALIB,
                    top: int = 6, confidence: float | None = None) -> list[Config]:
    """The settings of the first pass's best rows within the budget, then of its rows nearest the budget."""
    ok = first[first["status"] == "ok"]
    within = ranked(ok, max_false_removal_rate=budget, objective=objective, confidence=confidence)
    near = ok.assign(_gap=(ok["false_removal_rate"] - budget).clip(lower=0)).sort_values(
        ["_gap", objective], ascending=[True, False], kind="stable")
    out: dict[str, Config] = {}
    for frame in (within, near):
        for _, row in frame.iterrows():
            s = setting_of(config_from_row(row), target)
            out.setdefault(s.fingerprint(), s)
            if len(out) >= top:
                return list(out.values())
    return list(out.values())


__all__ = ["Exploration", "Move", "axis_values", "explore", "moves", "setting_of"]
