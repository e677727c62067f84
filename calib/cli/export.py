"""``calib export``: write a configuration's config JSON, production targets and
report-only manifest.

The configuration is given (``--config``), taken from a sweep's results table
(``--from-sweep``, checked against the sample it was swept on), or found by the
default search; it is evaluated on the sample and exported by
:func:`calib.production.export.write_export`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from calib.base.errors import CliError, check_input, check_out_dir, check_rate
from calib.base.inputs import CONFIG_MAX_BYTES, RESULTS_MAX_BYTES
from calib.cli.sweep import add_target_option
from calib.cli._common import (LINE_COUNTS_HELP, NO_LABELS, _arg_type, _idf_source, _line_corpus, _load_exported,
                               _no_labels, _review_store, _say_if_sampled, _strs, add_confidence_option,
                               add_missing_option, check_reviews, check_sweep_memory, load, tqdm_progress,
                               workspace_sources)


def row_from_sweep(path: str, fingerprint: str | None):
    """The row of a results table to export: ``fingerprint``'s, or the recommended one."""
    import io

    import pandas as pd

    from calib.base.inputs import InputError, read_regular
    p = Path(path)
    try:  # read whole through the one input check (a FIFO never blocks, the size is bounded)
        data = read_regular(p, max_bytes=RESULTS_MAX_BYTES, what="a results table", name=str(p))
    except InputError as exc:
        raise CliError(f"--from-sweep {exc}") from None
    try:
        if p.suffix.lower() == ".parquet":
            results = pd.read_parquet(io.BytesIO(data))
        else:
            from calib.base.atomic import csv_values
            results = csv_values(pd.read_csv(io.BytesIO(data)))  # text cells as before the CSV-injection guard
    except Exception as exc:  # noqa: BLE001 - any unreadable table is one user error
        raise CliError(f"--from-sweep {p}: not a readable results table ({exc})")
    if "config_fingerprint" not in results:
        raise CliError(f"--from-sweep {p}: no config_fingerprint column: not a calib sweep table")
    if fingerprint:
        rows = results[results["config_fingerprint"].astype(str) == fingerprint]
        if rows.empty:
            raise CliError(f"--from-sweep {p}: no row has config_fingerprint {fingerprint}")
        return rows.iloc[0]
    if "recommended" not in results:
        raise CliError(f"--from-sweep {p}: no 'recommended' column (a table from an older calib): pass --fingerprint")
    rows = results[results["recommended"].astype(str).str.lower() == "true"]
    if rows.empty:
        raise CliError(f"--from-sweep {p}: no recommended row (nothing fit the sweep's budget): pass --fingerprint")
    chosen = rows["config_fingerprint"].astype(str).unique()
    if len(chosen) > 1:  # one sweep marks one configuration: an edited or concatenated table
        raise CliError(f"--from-sweep {p}: {len(chosen)} configurations are marked recommended "
                       f"({', '.join(chosen[:3])}{', ...' if len(chosen) > 3 else ''}): pass --fingerprint")
    return rows.iloc[0]


def check_within_budget(path: str, row, budget: float, confidence: float | None = None, swept=None) -> None:
    """The recommended row of a results table still fits ``--budget``: its false-removal rate (with
    ``confidence``, the rate's one-sided upper bound at it) measured and at most the budget (a table edited
    to mark another row is refused, not exported as a recommendation). ``swept``: the table's row, when
    ``row`` is the rate measured now; where the two differ the refusal names what differs."""
    from calib.search.recommend import held_rate
    import pandas as pd
    rate = pd_number(row.get("false_removal_rate"))
    bound = rate if confidence is None else float(held_rate(pd.DataFrame([dict(row)]), confidence).iloc[0])
    if not bound <= budget:
        shown = "not measured" if rate != rate else f"{rate:.4f}"
        if confidence is not None and rate == rate:
            shown += f" (its {100 * confidence:g}% one-sided upper bound {bound:.4f})"
        why = ""
        recorded = pd_number((swept if swept is not None else row).get("budget"))
        if recorded == recorded and recorded != budget:
            why = f" (the sweep recommended it under --budget {recorded:g})"
        if swept is not None:
            then = pd_number(swept.get("false_removal_rate"))
            ignored = str(swept.get("ignored_categories") or "")
            now_ignored = str(row.get("ignored_categories") or "")
            if ignored != now_ignored and ignored != "nan":
                why = (f" (the sweep stored {then:.4f} with --ignore-categories {ignored or '(none)'}; this export "
                       f"counts {'every category' if not now_ignored else 'all but ' + now_ignored}): pass "
                       f"--ignore-categories as the sweep did")
        raise CliError(f"--from-sweep {path}: row {row.get('config_fingerprint')} is marked recommended, but its "
                       f"false-removal rate {shown} exceeds --budget {budget:g}{why}: pass the sweep's --budget"
                       f"{' and --confidence' if confidence is not None else ''}, or "
                       "--fingerprint to export it as a chosen row")


def swept_rule(path: str, row, confidence: float | None, ignore: tuple[str, ...]):
    """(the confidence, the ignored categories) an export of a sweep's row uses: each as given, else as the
    sweep recorded them with the row (said on stderr), so the export measures the row as the sweep did.
    Categories given that differ from the sweep's are refused, naming both."""
    recorded = pd_number(row.get("confidence"))
    if confidence is None and recorded == recorded:
        confidence = recorded
        print(f"--from-sweep {path}: recommended with --confidence {recorded:g} (as the sweep was)", file=sys.stderr)
    swept = row.get("ignored_categories")
    swept = () if swept is None or swept != swept else tuple(c for c in str(swept).split(",") if c)
    if not ignore and swept:
        print(f"--from-sweep {path}: --ignore-categories {','.join(swept)} (as the sweep was: those labeled pairs "
              "count neither right nor wrong)", file=sys.stderr)
        return confidence, swept
    if tuple(sorted(ignore)) != tuple(sorted(swept)) and "ignored_categories" in row:
        raise CliError(f"--from-sweep {path}: row {row.get('config_fingerprint')} was swept with --ignore-categories "
                       f"{','.join(swept) or '(none)'}, this export has --ignore-categories {','.join(ignore)}: its "
                       "figures would count other labeled pairs; pass the sweep's --ignore-categories")
    return confidence, tuple(ignore)


def pd_number(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def check_swept_row(path: str, row, config, sample) -> None:
    """The row describes ``config`` (its recorded fingerprint is the recomputed one: no edited
    cell) and was swept on ``sample`` (its recorded sample_hash, when the table has one)."""
    recorded = str(row.get("config_fingerprint"))
    if config.fingerprint() != recorded:
        raise CliError(f"--from-sweep {path}: row {recorded}: its configuration columns give fingerprint "
                       f"{config.fingerprint()}: the row was edited (or the table is damaged)")
    swept_on = row.get("sample_hash")
    if swept_on is None or (isinstance(swept_on, float) and swept_on != swept_on):
        print(f"warning: --from-sweep {path}: no sample_hash column (a table from an older calib): "
              f"cannot check it was swept on {sample.name}", file=sys.stderr)
    elif str(swept_on) != sample.content_hash():
        raise CliError(f"--from-sweep {path}: swept on another sample (sample_hash {str(swept_on)[:12]}..., "
                       f"this --sample {sample.content_hash()[:12]}...): sweep this sample, or pass the one swept")


STANDS_ON = (("idf", "idf weights' document frequencies", "--idf-corpus"),
             ("stoplist", "boilerplate stoplist", "--line-counts"))


def check_stands_on(path: str, row, config, ws) -> None:
    """The row's idf frequencies and stoplist (sha256 recorded by the sweep) are the ones this export
    computes: another --idf-corpus or --line-counts (or none) gives other weights and other figures
    under the same fingerprint, so a mismatch is refused; a table without the columns gets a warning."""
    now = ws.stands_on(config.rep)
    for what, label, flag in STANDS_ON:
        if f"{what}_sha256" not in now:
            continue
        swept = row.get(f"{what}_sha256")
        if swept is None or (isinstance(swept, float) and swept != swept):
            print(f"warning: --from-sweep {path}: no {what}_sha256 for row {config.fingerprint()} (a table from an "
                  f"older calib): cannot check the {label} are the ones it was swept with", file=sys.stderr)
        elif str(swept) != now[f"{what}_sha256"]:
            raise CliError(f"--from-sweep {path}: row {config.fingerprint()} was swept with the {label} of "
                           f"{row.get(f'{what}_source')} (sha256 {str(swept)[:12]}...), this export's are of "
                           f"{now[f'{what}_source']} (sha256 {now[f'{what}_sha256'][:12]}...): pass {flag} as the "
                           "sweep did")


def target_losses(out: Path, config, row) -> list[str]:
    """The loss lines (:func:`calib.production.targets.losses.loss_lines`) of the targets.json just written."""
    import json

    from calib.production import targets as T
    from calib.production.targets.losses import loss_lines
    doc = json.loads((out / "targets.json").read_text(encoding="utf-8"))["targets"]
    titles = {name: t.title for name, t in T.targets(config).items()}
    return loss_lines(row, {name: d.get("evidence") for name, d in doc.items()}, titles)


def cmd_export(a) -> int:
    from calib.production.export import write_export
    from calib.search.grid import CHOSEN_AXES, grid_from_sample
    from calib.search.from_sample import search
    from calib.search.grid import Grid
    from calib.search.workspace import Workspace
    from calib.search.config import config_from_row
    from calib.search.sweep import evaluate
    from calib.search.recommend import held_words, recommendation_line, standing_text
    from calib.cli.sweep import target_of, target_text
    check_rate(a.budget, "--budget")
    confidence, ignore = a.confidence, tuple(a.ignore_categories)
    target = target_of(a.target or "calib")
    if a.config and a.from_sweep:
        raise CliError("pass either --config or --from-sweep, not both")
    if a.fingerprint and not a.from_sweep:
        raise CliError("--fingerprint picks a row of --from-sweep RESULTS: pass --from-sweep too")
    check_input(a.config, "--config", folder=False, max_bytes=CONFIG_MAX_BYTES, kind="a config")
    check_input(a.from_sweep, "--from-sweep", folder=False, max_bytes=RESULTS_MAX_BYTES, kind="a results table")
    check_reviews(a.reviews)
    check_input(a.idf_corpus, "--idf-corpus")
    out = check_out_dir(a.out, a.overwrite)
    config = None
    if a.config:
        config, _ = _load_exported(a.config)
        selection = {"method": "given", "source": Path(a.config).name}
    elif a.from_sweep:
        row = row_from_sweep(a.from_sweep, a.fingerprint)
        try:
            config = config_from_row(row)
        except (ValueError, TypeError, KeyError) as exc:
            raise CliError(f"--from-sweep {a.from_sweep}: row {row.get('config_fingerprint')}: {exc}")
        confidence, ignore = swept_rule(a.from_sweep, row, confidence, ignore)
        selection = {"method": "chosen" if a.fingerprint else "recommend", "source": Path(a.from_sweep).name,
                     "config_fingerprint": config.fingerprint()}
        from calib.production.targets import measured_for
        swept_for = measured_for(row)
        if a.target is None:
            target = target_of(swept_for)
        elif swept_for != target.name:
            raise CliError(f"--from-sweep {a.from_sweep}: its rows were measured as {swept_for} runs them, not "
                           f"--target {target.name}: sweep with --target {target.name}, or export with --target "
                           f"{swept_for}")
        selection["target"] = target.name
        if not a.fingerprint:
            selection.update(max_false_removal_rate=a.budget, confidence=confidence)
            check_within_budget(a.from_sweep, row, a.budget, confidence)
    sample = load(a.sample, a.pairs, a.missing_values)
    if a.from_sweep:
        check_swept_row(a.from_sweep, row, config, sample)
    try:
        ws = Workspace(sample, ignore_categories=ignore, line_corpus=_line_corpus(a), **_idf_source(a),
                       **workspace_sources(a))
    except ValueError as exc:
        raise CliError(str(exc))
    if a.from_sweep:
        check_stands_on(a.from_sweep, row, config, ws)
    if config is None:
        if _no_labels(sample):
            raise CliError(f"{a.sample} has no duplicate labels: nothing can be recommended; pass --config or "
                           f"--from-sweep RESULTS --fingerprint FP", status=NO_LABELS)
        grid, choice = grid_from_sample(ws, Grid(ignore_categories=ignore))
        print(f"{sample}\nno --config: the default search (as calib sweep does): {choice.text(grid)}", file=sys.stderr)
        if target.name != "calib":
            print(target_text(target), file=sys.stderr)
        found = search(ws, grid, given=CHOSEN_AXES, max_false_removal_rate=a.budget, skip=True,
                       confidence=confidence, progress=tqdm_progress("sweep"), target=target)
        print(found.added_text(), file=sys.stderr)
        if found.best is None:
            runs = "" if target.name == "calib" else f" that {target.name} runs"
            raise CliError(f"no configuration{runs} of the default search keeps the {held_words(confidence)} <= "
                           f"{a.budget}; raise --budget{' or lower --confidence' if confidence is not None else ''} "
                           f"or pass --config")
        config = config_from_row(found.best)
        selection = {"method": "recommend", "objective": "pair_recall", "max_false_removal_rate": a.budget,
                     "confidence": confidence, "grid_size": int(len(found.results)), "search": choice.text(grid),
                     "second_pass": found.added_text(), "target": target.name}
    elif a.config:
        selection["target"] = target.name
    _say_if_sampled(ws.truth)
    if target.name != "calib":  # the tool must run the row as it was measured: else its figures are other ones
        from calib.production.targets import cannot_run
        refused = cannot_run(ws, config, target.name)
        if refused is not None:
            raise CliError(f"--target {target.name}: {refused}")
    check_sweep_memory(sample.n, 20_000_000, (config.rep.num_perm,), config.b)  # evaluate's default pair budget
    evaluation = evaluate(ws, config)
    if evaluation.clustering is None:
        raise CliError(f"configuration {config.fingerprint()} collides too many pairs on this sample: nothing to export")
    if a.from_sweep and not a.fingerprint:  # the rate measured now, not the table's cell
        check_within_budget(a.from_sweep, evaluation.row, a.budget, confidence, swept=row)
    store = _review_store(a.reviews)
    try:
        paths = write_export(out, config, evaluation=evaluation, sample=sample, review_store=store,
                             selection=selection, workspace=ws)
    except ValueError as exc:  # an --out folder holding files an export does not write
        raise CliError(str(exc))
    finally:
        if store is not None:
            store.close()
    r = evaluation.row
    as_run = "" if target.name == "calib" else f" (as {target.name} runs it)"
    print(f"exported {config} ({config.fingerprint()}) to {a.out}: {len(paths)} files{as_run} (proposed removals, "
          "report only)", file=sys.stderr)
    how = selection.get("method")
    print(recommendation_line(r, budget=a.budget, confidence=confidence, seeds=False,
                              lead="recommended" if how == "recommend" else
                              "the chosen row" if how == "chosen" else "the given configuration",
                              rule=None if how == "recommend" else f"not picked by a rule; budget {a.budget:.2%}"),
          file=sys.stderr)
    standing = standing_text(r)
    if standing:
        print(f"it stands on: {standing}", file=sys.stderr)
    if target.name == "calib":  # a pick for calib's engines: say which tool would run it otherwise
        for line in target_losses(out, config, r):
            print(f"where it runs otherwise: {line}", file=sys.stderr)
    if a.reviews:
        import json

        from calib.review.agreement import evidence_text
        from calib.review.postgres import redact_url
        evidence = json.loads((out / "config.json").read_text())["evidence"]["reviews"]
        print(f"reviews in {redact_url(a.reviews)}: {evidence_text(evidence)}", file=sys.stderr)
    return 0


def add_parser(sub) -> None:
    """``calib export``: its options and handler."""
    e = sub.add_parser("export", help="export a configuration: config JSON, production targets, report-only manifest")
    e.add_argument("--sample", required=True, help="labeled sample (directory, documents file, or inline-pairs JSONL)")
    e.add_argument("--pairs", help="pair-label file (when --sample is a documents file)")
    add_missing_option(e)
    e.add_argument("--config", help="exported config JSON to re-evaluate; default: run the default search and "
                                    "export its recommended row (the row calib sweep marks recommended)")
    e.add_argument("--from-sweep", metavar="RESULTS",
                   help="results table of calib sweep: export its recommended row without sweeping again")
    e.add_argument("--fingerprint", metavar="FP", help="with --from-sweep: export the row with this config_fingerprint")
    e.add_argument("--out", required=True, help="output directory")
    e.add_argument("--overwrite", action="store_true", help="replace existing output (default: refuse, before any work)")
    e.add_argument("--budget", type=float, default=0.01, help="false-removal-rate budget for the recommendation (default: 0.01)")
    add_confidence_option(e, from_sweep=True)
    add_target_option(e, None, "; with --from-sweep, the target its rows were measured for, and another is refused; "
                               "a configuration the target cannot run as measured is refused, naming what it lacks "
                               "and the figures it would give")
    e.add_argument("--line-counts", metavar="CORPUS", help=LINE_COUNTS_HELP)
    e.add_argument("--reviews", help="review store (a .sqlite file or a postgresql:// URL) whose latest decisions "
                                     "fill review_status; config.json's evidence.reviews records its label counts "
                                     "and the reviewers' agreement")
    e.add_argument("--ignore-categories", type=_arg_type(_strs, "--ignore-categories"), default=(), metavar="LIST",
                   help="pair categories that count neither right nor wrong (as calib sweep --ignore-categories); "
                        "named in the export's evidence; with --from-sweep: the sweep's (recorded with its rows), "
                        "and others are refused")
    e.add_argument("--idf-corpus", metavar="CORPUS", help="corpus (.jsonl[.gz] or .parquet, id and text fields) whose document frequencies give the idf "
                        "weights of --weighting idf (default: the sample's own); the one the rows were swept with)")
    e.set_defaults(func=cmd_export)
