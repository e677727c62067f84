"""``calib sweep``: evaluate a grid of configurations on a labeled sample.

Turns the grid flags into a :class:`calib.search.sweep.Grid` (the axes not given
are chosen from the sample), runs :func:`calib.search.from_sample.search`, writes
the results table with its recommended row, and optionally a review queue and
how contested reviews would move the recommendation.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from calib.base.errors import CliError, Outputs, check_input, check_rate
from calib.base.inputs import QUEUE_MAX_BYTES
from calib.cli._common import (LINE_COUNTS_HELP, NO_LABELS, _arg_type, _idf_source, _line_corpus, _no_labels,
                               _review_store, _say_if_sampled, _strs, add_confidence_option, add_missing_option,
                               check_sweep_memory, fit_default_pairs, load, tqdm_progress, workspace_sources)
from calib.estimates.figures import chain_text, pct
from calib.sketches.represent import HASH_FUNCTIONS, Representation


def _rep_choices(name: str) -> tuple[str, ...]:
    if name == "scheme":  # the registry, with old names ('fast') still accepted
        from calib.sketches.schemes import ALIASES, scheme_names
        return scheme_names() + tuple(ALIASES)
    return {"hashfunc": HASH_FUNCTIONS}[name]


def _effort(text: str) -> float:
    """--search-effort: a finite number from 0 to 10."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 10, got {text!r}") from None
    if not 0.0 <= v <= 10.0:  # NaN fails too
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 10, got {text!r}")
    return v


def _shown(v) -> str:
    """A default as the user would type it: 128,256 not (128, 256)."""
    if v is None:
        return "none"
    if isinstance(v, tuple):
        return ",".join(f"{x[0]}x{x[1]}" if isinstance(x, tuple) else str(x) for x in v)
    return str(v)


def add_grid_options(p: argparse.ArgumentParser) -> None:
    """The grid flags: one per :class:`calib.search.grid.Grid` field with a ``flag``
    (help and default from the field), plus the representation flags."""
    from dataclasses import fields

    from calib.search.grid import Grid
    defaults = Grid()
    shingles = tuple(dict.fromkeys(r.shingle_label() for r in defaults.representations))
    norms = tuple(dict.fromkeys(r.normalization_label() for r in defaults.representations))
    g = p.add_argument_group("grid", "shingles, thresholds, splits and hash counts not given are chosen from the "
                                     "sample (calib.search.grid); the other axes default to calib.Grid()'s")
    g.add_argument("--shingles", type=_strs, default=UNSET,
                   help=f"shingle types and sizes, e.g. word3,char5 (default: from the documents' lengths; "
                        f"calib.Grid(): {','.join(shingles)})")
    g.add_argument("--normalizations", type=_strs, default=norms,
                   help="normalizations, each a '+'-joined subset of lower,nfkc,nopunct,ws, or 'raw' "
                        f"(default: {','.join(norms)})")
    rep = {f.name: f for f in fields(Representation)}
    for name in ("hashfunc", "scheme"):
        f = rep[name]
        g.add_argument(f"--{name}", default=f.default, choices=_rep_choices(name),
                       help=f"{f.metadata['help']} (default: {f.default})")
    g.add_argument("--seed", type=int, default=rep["seed"].default,
                   help=f"{rep['seed'].metadata['help']} (default: {rep['seed'].default})")
    for f in fields(Grid):
        flag = f.metadata["flag"]
        if flag is None:
            continue
        shown = "all" if f.name == "splits" and getattr(defaults, f.name) is None else _shown(getattr(defaults, f.name))
        chosen = f.name in SAMPLE_AXES
        g.add_argument(flag, dest=f.name, type=_arg_type(f.metadata["parse"], flag),
                       default=UNSET if chosen else getattr(defaults, f.name),
                       help=f"{f.metadata['help']} (default: "
                            f"{'from the sample; calib.Grid(): ' if chosen else ''}{shown})")
    g.add_argument("--second-pass", dest="second_pass", action="store_true", default=None,
                   help="after the grid, sweep around the recommended row and the recall/false-removal front "
                        "(default: on unless --shingles, --thresholds, --splits and --num-perm are all given)")
    g.add_argument("--no-second-pass", dest="second_pass", action="store_false",
                   help="sweep the grid only")
    g.add_argument("--seed-check", dest="seed_check", action="store_true", default=None,
                   help="before recommending, re-run the 5 best rows on 4 more hash seeds and recommend the best that "
                        "holds the budget on every seed (default: on unless --shingles, --thresholds, --splits and "
                        "--num-perm are all given; off with several --seeds, whose means are used instead)")
    g.add_argument("--no-seed-check", dest="seed_check", action="store_false", help="recommend on seed --seed alone")
    g.add_argument("--search-effort", dest="effort", type=_effort, default=1.0,
                   help="the second pass's exploration of every axis (normalization, shingles, measure, weighting, "
                        "boilerplate, policy, each re-cut: threshold, hashes, split): up to 4 x EFFORT rounds, each "
                        "stopping early when it gains nothing; 0 turns it off, 2 searches about twice as long "
                        "(default: 1)")


def representations_from(shingles, normalizations, hashfunc="xxhash", scheme="prefix", seed=1) -> tuple[Representation, ...]:
    reps = []
    for norm in normalizations:
        parts = set() if norm == "raw" else set(norm.split("+"))
        unknown = parts - {"lower", "nfkc", "nopunct", "ws"}
        if unknown:
            raise CliError(f"--normalizations: unknown step(s) {sorted(unknown)} in {norm!r} (use lower, nfkc, nopunct, ws or raw)")
        for sh in shingles:
            kind = sh.rstrip("0123456789")
            size = sh[len(kind):]
            if kind not in ("word", "char") or not size:
                raise CliError(f"--shingles: {sh!r} is not like word3 or char5")
            try:
                reps.append(Representation(lowercase="lower" in parts, nfkc="nfkc" in parts,
                                           strip_punct="nopunct" in parts, collapse_ws="ws" in parts,
                                           shingle=kind, k=int(size), hashfunc=hashfunc, scheme=scheme, seed=seed))
            except ValueError as exc:
                raise CliError(f"--shingles {sh}: {exc}")
    return tuple(reps)


class _Unset:
    """The default of a grid axis the sample chooses: no flag's text parses to it."""

    def __repr__(self) -> str:
        return "<chosen from the sample>"


UNSET = _Unset()


SAMPLE_AXES = ("thresholds", "splits", "num_perms", "measures")  # and representations (--shingles)


def grid_from_args(a):
    """(Grid, the axes the user gave among representations, thresholds, splits, num_perms):
    axes not given hold calib.Grid()'s values until the sample chooses them."""
    from dataclasses import fields

    from calib.search.grid import Grid
    defaults = Grid()
    given = tuple(name for name in SAMPLE_AXES if getattr(a, name, UNSET) is not UNSET)
    shingles = a.shingles
    if shingles is not UNSET:
        given += ("representations",)
    else:
        shingles = tuple(dict.fromkeys(r.shingle_label() for r in defaults.representations))
    reps = representations_from(shingles, a.normalizations, a.hashfunc, a.scheme, a.seed)
    values = {f.name: getattr(a, f.name) for f in fields(Grid) if f.metadata["flag"] is not None}
    values = {k: getattr(defaults, k) if v is UNSET else v for k, v in values.items()}
    try:
        return Grid(representations=reps, **values), given
    except ValueError as exc:
        raise CliError(str(exc))


def write_table_atomic(frame, out: Path) -> None:
    """Results as .parquet or .csv, written atomically."""
    from calib.base.atomic import write_frame_atomic
    if Path(out).suffix.lower() not in (".parquet", ".csv"):
        raise CliError(f"{out}: output must end in .parquet or .csv")
    write_frame_atomic(frame, out)


def with_reviews(sample, db: str):
    """(the sample with the reviews as pair labels, the contested pairs: id_a, id_b). ``db``: a path,
    a postgresql:// URL, or a filled queue CSV of calib sweep --review-queue. A review store's
    decisions become labels by the label rule (:mod:`calib.review.adjudication`): adjudicated, else
    unanimous, else contested and left out (counted on stderr)."""
    import pandas as pd

    from calib.review.labels import queue_labels, with_review_labels
    from calib.review.postgres import is_postgres_url, redact_url
    contested = pd.DataFrame({"id_a": [], "id_b": []}, dtype=str)
    rule = ""
    if not is_postgres_url(db) and Path(db).suffix.lower() == ".csv":  # a filled queue of calib sweep --review-queue
        check_input(db, "--reviews", folder=False, max_bytes=QUEUE_MAX_BYTES, kind="a review queue")
        try:
            labels = queue_labels(db)
        except ValueError as exc:
            raise CliError(str(exc))
    else:
        from calib.review.adjudication import decisions_of, pair_verdicts, review_labels
        with _review_store(db, "--reviews") as store:
            decisions = decisions_of(store)
        labels, counts = review_labels(decisions)
        v = pair_verdicts(decisions)
        contested = v.loc[v["status"] == "contested", ["id_a", "id_b"]].reset_index(drop=True)
        rule = f" by the label rule: {counts}"
    sample, used, skipped = with_review_labels(sample, labels)
    print(f"reviews: {used} pair label(s) from {redact_url(db)}{rule}" + (
        f", {skipped} naming documents not in the sample" if skipped else ""), file=sys.stderr)
    return sample, contested


def cmd_sweep(a) -> int:
    from dataclasses import replace

    from calib.search.grid import CHOSEN_AXES, grid_from_sample
    from calib.search.from_sample import RESEED_TOP, search
    from calib.search.grid import Grid
    from calib.search.workspace import Workspace, check_design_representation
    from calib.search.seeds import across_seeds
    from calib.search.recommend import held_words, recommendation_line, standing_text, with_recommendation
    from calib.search.knobs import knobs_text
    from calib.clusters.truth import ignored_pair_codes
    check_rate(a.budget, "--budget")
    outputs = Outputs(a.overwrite)  # every file this sweep writes, checked alike before any work
    out = outputs.file("--out", a.out, (".parquet", ".csv"))
    check_input(a.idf_corpus, "--idf-corpus")
    grid, given = grid_from_args(a)  # every option checked before the sample is read
    default_pairs = Grid.__dataclass_fields__["max_pairs"].default
    grid = replace(grid, max_pairs=fit_default_pairs(grid.max_pairs, default_pairs, "sweep"))
    second = a.second_pass if a.second_pass is not None else not set(CHOSEN_AXES) <= set(given)  # a typed grid: as typed
    if second:  # its knobs table is written beside the results
        knobs_out = outputs.beside("--out", "knobs", "the knobs table")
    if grid.seeds is not None and len(grid.seeds) > 1:
        agg_out = outputs.beside("--out", "across_seeds", "the across-seed table")
    queue_out = outputs.file("--review-queue", a.review_queue, (".csv",)) if a.review_queue else None
    slices_out = outputs.file("--by-slice", a.by_slice, (".parquet", ".csv")) if a.by_slice else None
    sample = load(a.sample, a.pairs, a.missing_values)
    if sample.design is not None:  # a drawn set's design is refused before anything else is said of it
        try:
            check_design_representation(sample.design)
        except ValueError as exc:
            raise CliError(f"{a.sample}: {exc}")
    # nothing to measure: said before any work, nothing written (fewer than 2 documents: refused as such below)
    if sample.n >= 2 and _no_labels(sample) and not a.reviews:
        waiting = sample.unlabeled_pairs()
        raise CliError(f"{a.sample} has no duplicate labels ({len(sample.pairs):,} labeled pairs"
                       + (f"; {waiting:,} pairs not labeled yet: fill their label in pairs.csv, or on the Label "
                          "page" if waiting else "") + f"): recall and false-removal rates cannot be measured and "
                       f"nothing is recommended; nothing swept (exit status {NO_LABELS})", status=NO_LABELS)
    sample_hash = sample.content_hash()  # as loaded (before --reviews): what export --from-sweep loads and checks
    try:  # an ignored category no pair of the sample has, before any work
        ignored_pair_codes(sample, grid.ignore_categories)
    except ValueError as exc:
        raise CliError(f"{a.sample}: {exc}")
    contested = None
    if a.reviews:  # a review replaces a pair's label and category: its new label counts
        sample, contested = with_reviews(sample, a.reviews)
        present = set(sample.pairs["category"].astype(str))
        grid = replace(grid, ignore_categories=tuple(c for c in grid.ignore_categories if c in present))
    if set(CHOSEN_AXES) <= set(given):  # a typed grid: its memory is known before the sample is shingled
        check_sweep_memory(sample.n, grid.max_pairs, grid.num_perms,
                           max(b for m in grid.num_perms for b, _ in grid.splits_for(m)))
    try:  # refuses a sample of fewer than 2 documents, before any work
        ws = Workspace(sample, ignore_categories=grid.ignore_categories, line_corpus=_line_corpus(a), **_idf_source(a),
                       **workspace_sources(a), disk=a.disk_cache)
    except ValueError as exc:
        raise CliError(f"{a.sample}: {exc}")
    no_labels = _no_labels(sample)
    if no_labels:
        print(f"calib sweep: {a.sample} has no duplicate labels: recall and false-removal rates cannot be "
              f"measured and nothing is recommended (exit status {NO_LABELS})", file=sys.stderr)
    choice = None
    if not set(CHOSEN_AXES) <= set(given):
        grid, choice = grid_from_sample(ws, grid, given=given)
        # the second pass may double num_perm (and b with it): checked at that size
        check_sweep_memory(sample.n, grid.max_pairs, (2 * max(grid.num_perms),),
                           2 * max(b for m in grid.num_perms for b, _ in grid.splits_for(m)))
    print(f"{sample}\n{grid}" + (f"\n{choice.text(grid)}" if choice else ""), file=sys.stderr)
    _say_if_sampled(ws.truth)
    checked = a.seed_check if a.seed_check is not None else choice is not None
    target = target_of(a.target)
    if target.name != "calib":
        print(target_text(target), file=sys.stderr)
    found = search(ws, grid, given=CHOSEN_AXES, max_false_removal_rate=a.budget, second_pass=second,
                   check_top=RESEED_TOP if checked else 0, effort=a.effort, confidence=a.confidence,
                   skip=choice is not None, progress=tqdm_progress("sweep"), target=target)
    runs = "" if target.name == "calib" else f" {target.name} runs"
    measured = "" if target.name == "calib" else f", measured as {target.name} runs it"
    if not no_labels:
        print(found.added_text(), file=sys.stderr)
        if found.exploration is not None:
            print("; ".join(found.exploration.rounds), file=sys.stderr)
    results, over = found.results, ""
    table = results
    if grid.seeds is not None and len(grid.seeds) > 1:  # the grid's own seeds: recommend on the across-seed figures
        table = across_seeds(results)
        over = f" (mean over seeds {table['seed_list'].iloc[0]})"
        table = with_recommendation(table, max_false_removal_rate=a.budget, confidence=a.confidence)
    else:  # the search's pick (after its seed check: the third pass's rows are other seeds of the same few)
        fp = None if found.best is None else found.best["config_fingerprint"]
        table = results.assign(recommended=(results["config_fingerprint"] == fp).to_numpy(bool))
    # The per-seed table marks the row that describes the recommended configuration
    # (across_seeds keeps the lowest seed's fingerprint), so --from-sweep exports it.
    chosen = set(table.loc[table["recommended"], "config_fingerprint"])
    # The rule the mark was made by goes with the table, so export --from-sweep checks the row by the same rule
    results = results.drop(columns=["recommended"], errors="ignore").assign(
        recommended=results["config_fingerprint"].isin(chosen).to_numpy(bool), sample_hash=sample_hash,
        budget=float(a.budget), confidence=float("nan") if a.confidence is None else float(a.confidence))
    write_table_atomic(results, out)
    print(f"wrote {len(results)} rows to {out}", file=sys.stderr)
    if not no_labels and second:
        knob_table = found.knobs()
        write_table_atomic(knob_table, knobs_out)
        print(f"{knobs_text(knob_table)} (every value: {knobs_out})", file=sys.stderr)
    if over:
        write_table_atomic(table, agg_out)
        print(f"wrote {len(table)} across-seed rows (mean, min, max per configuration) to {agg_out}", file=sys.stderr)
    if no_labels:
        return NO_LABELS
    if not len(results):  # the grid's every configuration skipped: the search's text said why
        print(f"no configuration keeps the false-removal rate <= {a.budget}{over}", file=sys.stderr)
    elif not (results["status"] == "ok").any():
        counts = ", ".join(f"{n} {s}" for s, n in results["status"].value_counts().sort_index().items())
        print(f"nothing was measured: every configuration exceeded the pair budget ({counts}); raise "
              "--max-pairs (memory permitting) or narrow the grid (higher --thresholds, longer bands r in --splits)",
              file=sys.stderr)
    elif not table["recommended"].any():
        print(f"no configuration{runs} keeps the {held_words(a.confidence)} <= {a.budget}{over}", file=sys.stderr)
    else:
        best = table[table["recommended"]].iloc[0]
        spread = (f"; pair recall over the seeds {pct(best['pair_recall_min'], 'pair_recall')}-"
                  f"{pct(best['pair_recall_max'], 'pair_recall')}" if over else "")
        print(recommendation_line(best, budget=a.budget, confidence=a.confidence,
                                  note=f"{over}{measured}; column 'recommended'", extra=spread), file=sys.stderr)
        standing = standing_text(best)
        if standing:
            print(f"it stands on: {standing}", file=sys.stderr)
        if found.chain is not None:
            print(chain_text(found.chain), file=sys.stderr)
        if queue_out is not None:
            write_review_queue(ws, best, queue_out)
        if slices_out is not None:
            from calib.cli.sweep_slices import write_by_slice
            write_by_slice(ws, best, slices_out)
    if slices_out is not None and not table["recommended"].any():
        print(f"--by-slice: no recommended configuration, {slices_out} not written", file=sys.stderr)
    if contested is not None and len(contested):
        say_contested_sensitivity(ws, results, contested, a.budget, grid.max_pairs)
    return 0


def target_of(name: str):
    """The capabilities of target ``name`` (calib.production.targets.capabilities), a CliError for another name."""
    from calib.production.targets import capabilities
    try:
        return capabilities(name)
    except ValueError as exc:
        raise CliError(f"--target: {exc}") from None


def target_text(target) -> str:
    """One line: what the search for ``target`` explores."""
    from calib.search.capabilities import STEPS as steps
    dropped = ", ".join(steps[s] for s in target.dropped())
    verify = ("verifies nothing: the split is the decision (steep splits ranked by their expected rates)"
              if not target.verifies else f"verifies {'/'.join(v for v in target.verify if v != 'none')}")
    return (f"target {target.name} ({target.tool}): the search explores what it runs: {'/'.join(target.shingles)} "
            f"shingles; {verify}; {'/'.join(target.policies)} clusters keeping {target.keep}"
            + (f"; without {dropped}" if dropped else "")
            + (f"; pre-steps {', '.join(steps[s] for s in target.pre_steps)}" if target.pre_steps else ""))


def say_contested_sensitivity(ws, results, contested, budget: float, max_pairs) -> None:
    """How the recommendation changes if the contested pairs (left out of the labels) went either way."""
    from calib.search.sensitivity import contested_sensitivity, summary_lines
    known = set(ws.sample.ids)
    contested = contested[contested["id_a"].isin(known) & contested["id_b"].isin(known)]
    if contested.empty:
        return
    table = contested_sensitivity(ws, results, contested, budget=budget, max_pairs=max_pairs)
    print(f"if the {len(contested)} contested pair(s) went the other way (the sweep's configurations scored again):",
          file=sys.stderr)
    print("\n".join(summary_lines(table)), file=sys.stderr)


def write_review_queue(ws, best, out: Path) -> None:
    """The recommended row's unlabeled removals, as a CSV review queue (atomically)."""
    from calib.review.queue import unlabeled_removal_queue
    from calib.search.config import config_from_row
    from calib.search.sweep import evaluate
    q = unlabeled_removal_queue(evaluate(ws, config_from_row(best)), ws)
    write_table_atomic(q, out)
    print(f"wrote {len(q)} unlabeled removal(s) of the recommended row to {out} for review: fill 'decision' "
          f"(duplicate, not_duplicate, unsure) and sweep with --reviews {out}", file=sys.stderr)


TARGETS = ("calib", "datasketch", "milvus", "datatrove", "text_dedup", "nemo_curator")  # calib.production.targets.TARGET_NAMES


def add_target_option(p, default: str | None = "calib", extra: str = "") -> None:
    p.add_argument("--target", default=default, choices=TARGETS,
                   help="the tool that will run the configuration: the search explores only what it runs, measures "
                        "every row as it runs it (the figures targets.json gives it) and recommends by them "
                        f"(default: calib, its local and Spark engines){extra}")


def add_parser(sub) -> None:
    """``calib sweep``: its options and handler."""
    s = sub.add_parser("sweep", help="evaluate a grid of configurations on a labeled sample")
    s.add_argument("--sample", required=True, help="sample directory, documents file, or inline-pairs JSONL")
    s.add_argument("--pairs", help="pair-label file (when --sample is a documents file)")
    add_missing_option(s)
    s.add_argument("--out", required=True, help="results file, .parquet or .csv")
    s.add_argument("--overwrite", action="store_true", help="replace existing output (default: refuse, before any work)")
    s.add_argument("--budget", type=float, default=0.01, help="false-removal-rate budget for the recommendation (default: 0.01)")
    s.add_argument("--no-cache", dest="disk_cache", action="store_false",
                   help="compute every step again and keep nothing on disk (default: a re-run on the same sample "
                        "loads the sets, signatures, joins, candidates, ceilings and rows an earlier run computed "
                        "with the same code, from CALIB_CACHE_DIR or ~/.cache/calib; CALIB_CACHE=off: likewise)")
    add_confidence_option(s)
    add_target_option(s)
    s.add_argument("--line-counts", metavar="CORPUS", help=LINE_COUNTS_HELP)
    s.add_argument("--reviews", help="review store (a .sqlite file or a postgresql:// URL), or a filled "
                                     "--review-queue CSV: its decisions are used as pair labels (a store's by the "
                                     "label rule: adjudicated, else unanimous; contested pairs are left out, and "
                                     "the summary says how the recommendation moves if they went either way)")
    s.add_argument("--review-queue", metavar="QUEUE.csv",
                   help="write the recommended row's unlabeled removals (each with its representative) as a review "
                        "queue, most informative first, with an empty decision column; sweep again with "
                        "--reviews QUEUE.csv once filled")
    s.add_argument("--by-slice", metavar="SLICES.csv",
                   help="write the recommended configuration's figures per slice value (.csv or .parquet): on a "
                        "corpus draw with slice fields (calib draw --slice-fields), pair recall, precision, "
                        "false-removal rate and documents removed per value, weighted to the corpus; on another "
                        "sample, the per-slice rates of the Clusters page")
    add_grid_options(s)
    s.add_argument("--idf-corpus", metavar="CORPUS", help="corpus (.jsonl[.gz] or .parquet, id and text fields) whose document frequencies give the idf "
                        "weights of --weighting idf (default: the sample's own)")
    s.set_defaults(func=cmd_sweep)
