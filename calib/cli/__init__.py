"""Command line: ``calib sweep | export | apply | draw | samples ...``.

Errors a user can fix (bad file, bad option) print one readable line on
stderr and exit with status 2; nothing prints a traceback for them.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from calib.base.budget import MemoryBudgetError
from calib.base.errors import (CliError, _claims, check_input, check_out_dir,  # noqa: F401 (the CLI's names too)
                               check_out_file, check_rate)
from calib.sketches.represent import HASH_FUNCTIONS, Representation


def _rep_choices(name: str) -> tuple[str, ...]:
    if name == "scheme":  # the registry, with old names ('fast') still accepted
        from calib.sketches.minhash import ALIASES, scheme_names
        return scheme_names() + tuple(ALIASES)
    return {"hashfunc": HASH_FUNCTIONS}[name]


APPLY_MAX_PAIRS = 50_000_000  # calib apply's default pair budget (lowered to fit memory when it does not)
NO_LABELS = 3  # exit status of a sweep on a sample without duplicate labels (nothing can be recommended)


def _arg_type(parse, flag: str):
    """An argparse type from a Grid field's parser: its ValueError becomes a one-line usage error."""
    def convert(text: str):
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc))
    convert.__name__ = flag.lstrip("-")
    return convert


def _shown(v) -> str:
    """A default as the user would type it: 128,256 not (128, 256)."""
    if v is None:
        return "none"
    if isinstance(v, tuple):
        return ",".join(f"{x[0]}x{x[1]}" if isinstance(x, tuple) else str(x) for x in v)
    return str(v)


def _strs(s: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in s.split(",") if x.strip())


def add_grid_options(p: argparse.ArgumentParser) -> None:
    """The grid flags: one per :class:`calib.sweep.Grid` field with a ``flag``
    (help and default from the field), plus the representation flags."""
    from dataclasses import fields

    from calib.search.sweep import Grid
    defaults = Grid()
    shingles = tuple(dict.fromkeys(r.shingle_label() for r in defaults.representations))
    norms = tuple(dict.fromkeys(r.normalization_label() for r in defaults.representations))
    g = p.add_argument_group("grid", "shingles, thresholds, splits and hash counts not given are chosen from the "
                                     "sample (calib.search); the other axes default to calib.Grid()'s")
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


def add_missing_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--missing-values", type=lambda s: _strs(s) if s.strip() else (), default=None, metavar="LIST",
                   help="spellings read as a missing value in group, label and slice columns, comma-separated, "
                        "case-insensitive (default: NA,nan,NULL,None,N/A; empty cells always); "
                        "--missing-values '' keeps those spellings as ordinary values")


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
SAMPLE_AXES = ("thresholds", "splits", "num_perms")  # and representations (--shingles)


def grid_from_args(a):
    """(Grid, the axes the user gave among representations, thresholds, splits, num_perms):
    axes not given hold calib.Grid()'s values until the sample chooses them."""
    from dataclasses import fields

    from calib.search.sweep import Grid
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


def load(path: str, pairs: str | None = None, missing: tuple[str, ...] | None = None):
    from calib.reading.samples import MISSING_VALUES, SampleError, load_sample
    check_input(path, "--sample")
    check_input(pairs, "--pairs")
    try:
        sample = load_sample(path, pairs, missing_values=MISSING_VALUES if missing is None else missing)
        for w in sample.warnings:  # e.g. one group holding most documents
            print(f"warning: {path}: {w}", file=sys.stderr)
        return sample
    except SampleError as exc:
        raise CliError(str(exc))
    except FileNotFoundError as exc:
        raise CliError(f"{exc.filename or path}: no such file or directory")


PROGRESS_EVERY = 10.0  # seconds between plain progress lines when stderr is not a terminal


def plain_progress(desc: str, every: float = PROGRESS_EVERY, stream=None):
    """Progress as plain lines on stderr (a log, a pipe, nohup): at the start, then at most
    every ``every`` seconds, and at the end."""
    stream = stream or sys.stderr
    state = {"last": None}

    def progress(fraction: float, message: str) -> None:
        now = time.monotonic()
        if state["last"] is None or fraction >= 1.0 or now - state["last"] >= every:
            state["last"] = now
            print(f"{desc}: {100 * fraction:3.0f}% {message}", file=stream, flush=True)
    return progress


def tqdm_progress(total_desc: str):
    if not sys.stderr.isatty():
        return plain_progress(total_desc)
    from tqdm import tqdm
    bar = tqdm(total=1000, desc=total_desc, unit="‰", disable=None, file=sys.stderr,
               bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining} {postfix}")

    def progress(fraction: float, message: str) -> None:
        bar.n = int(round(1000 * fraction))
        bar.set_postfix_str(message[:60], refresh=False)
        bar.refresh()
        if fraction >= 1.0:
            bar.close()
    return progress


def write_table_atomic(frame, out: Path) -> None:
    """Results as .parquet or .csv, written atomically."""
    from calib.base.atomic import write_frame_atomic
    if Path(out).suffix.lower() not in (".parquet", ".csv"):
        raise CliError(f"{out}: output must end in .parquet or .csv")
    write_frame_atomic(frame, out)


def with_reviews(sample, db: str):
    """(the sample with the reviews as pair labels, the contested pairs: id_a, id_b). ``db``: a path,
    a postgresql:// URL, or a filled queue CSV of calib sweep --review-queue. A review store's
    decisions become labels by the label rule (:mod:`calib.adjudication`): adjudicated, else
    unanimous, else contested and left out (counted on stderr)."""
    import pandas as pd

    from calib.review.store import queue_labels, with_review_labels
    from calib.review.postgres import is_postgres_url, redact_url
    contested = pd.DataFrame({"id_a": [], "id_b": []}, dtype=str)
    rule = ""
    if not is_postgres_url(db) and Path(db).suffix.lower() == ".csv":  # a filled queue of calib sweep --review-queue
        check_input(db, "--reviews")
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


def check_sweep_memory(n: int, max_pairs: int | None, num_perms, b: int) -> None:
    """The pair budget and the largest signatures and bands of a sweep fit in memory, before any work."""
    from calib.base.budget import check_banding, check_pair_budget
    check_pair_budget(max_pairs, "sweep", most_pairs=n * (n - 1) // 2)
    check_banding(n, max(num_perms), b, "the sample")


def fit_default_pairs(max_pairs: int | None, default: int, command: str) -> int | None:
    """The default pair budget lowered to what memory holds (said on stderr); a budget the user
    chose is kept, and refused before the work if it does not fit (:mod:`calib.budget`)."""
    from calib.base.budget import affordable_pairs, gib, memory_limit
    if max_pairs != default or max_pairs <= affordable_pairs(command):
        return max_pairs
    fit = affordable_pairs(command)
    print(f"note: --max-pairs lowered from the default {default:,} to {fit:,}, what the {gib(memory_limit())} "
          f"this process may use holds", file=sys.stderr)
    return fit


def _say_if_sampled(truth) -> None:
    if truth.sampled:
        print(f"note: the groups hold {truth.total_positive:,} duplicate pairs: rates over duplicate pairs are "
              f"measured on a seeded uniform sample of {truth.n_positive:,} of them", file=sys.stderr)


def _no_labels(sample) -> bool:
    from calib.clusters.truth import truth_from_sample
    return truth_from_sample(sample).n_positive == 0


def cmd_sweep(a) -> int:
    from dataclasses import replace

    from calib.search.from_sample import CHOSEN_AXES, grid_from_sample, search
    from calib.search.sweep import Grid, Workspace, across_seeds, standing_text, with_recommendation
    from calib.clusters.truth import ignored_pair_codes
    check_rate(a.budget, "--budget")
    out = check_out_file(a.out, (".parquet", ".csv"), a.overwrite)
    check_input(a.idf_corpus, "--idf-corpus")
    grid, given = grid_from_args(a)  # every option checked before the sample is read
    default_pairs = Grid.__dataclass_fields__["max_pairs"].default
    grid = replace(grid, max_pairs=fit_default_pairs(grid.max_pairs, default_pairs, "sweep"))
    queue_out = check_out_file(a.review_queue, (".csv",), a.overwrite, "--review-queue") if a.review_queue else None
    if grid.seeds is not None and len(grid.seeds) > 1:  # the across-seed table is written beside it
        check_out_file(str(out.with_name(f"{out.stem}.across_seeds{out.suffix}")), (out.suffix.lower(),), a.overwrite)
    sample = load(a.sample, a.pairs, a.missing_values)
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
    if set(given) == set(CHOSEN_AXES):  # a typed grid: its memory is known before the sample is shingled
        check_sweep_memory(sample.n, grid.max_pairs, grid.num_perms,
                           max(b for m in grid.num_perms for b, _ in grid.splits_for(m)))
    try:  # refuses a sample of fewer than 2 documents, before any work
        ws = Workspace(sample, ignore_categories=grid.ignore_categories, line_corpus=_line_corpus(a), **_idf_source(a))
    except ValueError as exc:
        raise CliError(f"{a.sample}: {exc}")
    no_labels = _no_labels(sample)
    if no_labels:
        print(f"calib sweep: {a.sample} has no duplicate labels: recall and false-removal rates cannot be "
              f"measured and nothing is recommended (exit status {NO_LABELS})", file=sys.stderr)
    choice = None
    if set(given) != set(CHOSEN_AXES):
        grid, choice = grid_from_sample(ws, grid, given=given)
        # the second pass may double num_perm (and b with it): checked at that size
        check_sweep_memory(sample.n, grid.max_pairs, (2 * max(grid.num_perms),),
                           2 * max(b for m in grid.num_perms for b, _ in grid.splits_for(m)))
    print(f"{sample}\n{grid}" + (f"\n{choice.text(grid)}" if choice else ""), file=sys.stderr)
    _say_if_sampled(ws.truth)
    second = a.second_pass if a.second_pass is not None else choice is not None  # a typed grid: as typed
    found = search(ws, grid, given=CHOSEN_AXES, max_false_removal_rate=a.budget, second_pass=second,
                   skip=choice is not None, progress=tqdm_progress("sweep"))
    if not no_labels:
        print(found.added_text(), file=sys.stderr)
    results, over = found.results, ""
    table = results
    if results["seed"].nunique() > 1:  # hash luck measured: recommend on the across-seed figures
        table = across_seeds(results)
        over = f" (mean over seeds {table['seed_list'].iloc[0]})"
    table = with_recommendation(table, max_false_removal_rate=a.budget)
    # The per-seed table marks the row that describes the recommended configuration
    # (across_seeds keeps the lowest seed's fingerprint), so --from-sweep exports it.
    chosen = set(table.loc[table["recommended"], "config_fingerprint"])
    results = results.drop(columns=["recommended"], errors="ignore").assign(
        recommended=results["config_fingerprint"].isin(chosen).to_numpy(bool), sample_hash=sample_hash)
    write_table_atomic(results, out)
    print(f"wrote {len(results)} rows to {out}", file=sys.stderr)
    if over:
        agg_out = out.with_name(f"{out.stem}.across_seeds{out.suffix}")
        write_table_atomic(table, agg_out)
        print(f"wrote {len(table)} across-seed rows (mean, min, max per configuration) to {agg_out}", file=sys.stderr)
    if no_labels:
        return NO_LABELS
    if not (results["status"] == "ok").any():
        counts = ", ".join(f"{n} {s}" for s, n in results["status"].value_counts().sort_index().items())
        print(f"nothing was measured: every configuration exceeded the pair budget ({counts}); raise "
              "--max-pairs (memory permitting) or narrow the grid (higher --thresholds, longer bands r in --splits)",
              file=sys.stderr)
    elif not table["recommended"].any():
        print(f"no configuration keeps the false-removal rate <= {a.budget}{over}", file=sys.stderr)
    else:
        best = table[table["recommended"]].iloc[0]
        spread = (f", seeds {best['pair_recall_min']:.3f}-{best['pair_recall_max']:.3f}" if over else "")
        print(f"recommended (max pair recall, false-removal rate <= {a.budget}{over}; column 'recommended'): "
              f"{best['representation']} num_perm={best['num_perm']} b={best['b']} r={best['r']} {best['verify']}"
              f"{'' if best.get('measure', 'jaccard') == 'jaccard' else ' ' + str(best['measure'])} "
              f"t={best['threshold']}: pair recall {best['pair_recall']:.3f} [{best['pair_recall_low']:.3f}, "
              f"{best['pair_recall_high']:.3f}{spread}], false-removal rate {best['false_removal_rate']:.4f} "
              f"({best['config_fingerprint']})", file=sys.stderr)
        standing = standing_text(best)
        if standing:
            print(f"it stands on: {standing}", file=sys.stderr)
        if queue_out is not None:
            write_review_queue(ws, best, queue_out)
    if contested is not None and len(contested):
        say_contested_sensitivity(ws, results, contested, a.budget, grid.max_pairs)
    return 0


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
    from calib.review.store import unlabeled_removal_queue
    from calib.search.sweep import config_from_row, evaluate
    q = unlabeled_removal_queue(evaluate(ws, config_from_row(best)), ws)
    write_table_atomic(q, out)
    print(f"wrote {len(q)} unlabeled removal(s) of the recommended row to {out} for review: fill 'decision' "
          f"(duplicate, not_duplicate, unsure) and sweep with --reviews {out}", file=sys.stderr)


def row_from_sweep(path: str, fingerprint: str | None):
    """The row of a results table to export: ``fingerprint``'s, or the recommended one."""
    import pandas as pd
    p = Path(path)
    try:
        if p.suffix.lower() == ".parquet":
            results = pd.read_parquet(p)
        else:
            from calib.base.atomic import csv_values
            results = csv_values(pd.read_csv(p))  # text cells as they were before the CSV-injection guard
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


def _load_exported(path: str):
    from calib.production.export import ExportError, load_config
    try:
        return load_config(path)
    except ExportError as exc:
        raise CliError(str(exc))


LINE_COUNTS_HELP = ("boilerplate stripping (--strip-lines): count line document frequencies on this corpus (JSONL or "
                    "Parquet with id and text fields, read whole into memory) instead of the sample")


def _line_corpus(a) -> list[str] | None:
    """The texts of --line-counts (None: the sample's lines are counted)."""
    if not getattr(a, "line_counts", None):
        return None
    from calib.production.engines.local import ApplyError, iter_corpus
    check_input(a.line_counts, "--line-counts")
    try:
        return [t for _, texts, _ in iter_corpus(a.line_counts) for t in texts]
    except ApplyError as exc:
        raise CliError(f"--line-counts {exc}")


def _load_stoplist(doc: dict, config_path: str):
    """The boilerplate stoplist beside an exported config (None when it strips nothing)."""
    from calib.production.export import ExportError, load_stoplist
    try:
        return load_stoplist(doc, lambda name: (Path(config_path).parent / name).read_text(encoding="utf-8"),
                             config_path)
    except ExportError as exc:
        raise CliError(str(exc))


def _idf_source(a) -> dict:
    """Workspace arguments for ``--idf-corpus``: idf weights counted on that corpus, not on the sample."""
    path = getattr(a, "idf_corpus", None)
    if not path:
        return {}
    from calib.production.engines.local import ApplyError, corpus_frequencies

    def frequencies(rep):
        try:
            return corpus_frequencies(path, rep)
        except ApplyError as exc:
            raise CliError(f"--idf-corpus {exc}")
    return {"frequencies": frequencies, "frequencies_source": f"corpus {Path(path).name}"}


def _load_frequencies(doc: dict, path: str):
    """A weighted config's document-frequency table (None when unweighted), one line if unusable."""
    from calib.production.export import ExportError, load_frequencies
    try:
        return load_frequencies(doc, path)
    except ExportError as exc:
        raise CliError(str(exc))


def _review_store(target: str | None, flag: str = "--reviews"):
    """The existing review store at ``target`` (None for None), opened read-only: a SQLite
    file, or a ``postgresql://`` URL (a team's shared store). A missing path, a folder,
    another application's table, a server that does not answer: one line (a URL's password
    shown as ***), and nothing is changed."""
    if target is None:
        return None
    from calib.review.store import ReviewStore, open_review_store
    from calib.review.postgres import is_postgres_url, redact_url
    if is_postgres_url(target):
        try:
            store = open_review_store(target, readonly=True)
        except ValueError as exc:  # the message names the URL without its password
            raise CliError(f"{flag} {exc}")
        if not store.exists:
            store.close()
            raise CliError(f"{flag} {redact_url(target)}: no review store in that database (no decisions table)")
        return store
    p = Path(target)
    if not p.exists():
        raise CliError(f"{flag} {target}: no such review store")
    if p.is_dir():
        raise CliError(f"{flag} {target}: is a folder, not a review store (a .sqlite file)")
    try:
        return ReviewStore(target, readonly=True)
    except ValueError as exc:  # not a review store, newer schema: the message names the file
        raise CliError(f"{flag} {exc}")
    except Exception as exc:  # sqlite3 errors
        raise CliError(f"{flag} {target}: not a usable review store ({exc})")


def check_reviews(target: str | None, flag: str = "--reviews") -> None:
    """Before any work: a review store path exists; a URL's server answers and holds a review store."""
    from calib.review.postgres import is_postgres_url
    if is_postgres_url(target):
        _review_store(target, flag).close()
    else:
        check_input(target, flag)


def cmd_export(a) -> int:
    from calib.production.export import write_export
    from calib.search.from_sample import CHOSEN_AXES, grid_from_sample, search
    from calib.search.sweep import Grid, Workspace, config_from_row, evaluate, standing_text
    check_rate(a.budget, "--budget")
    if a.config and a.from_sweep:
        raise CliError("pass either --config or --from-sweep, not both")
    if a.fingerprint and not a.from_sweep:
        raise CliError("--fingerprint picks a row of --from-sweep RESULTS: pass --from-sweep too")
    check_input(a.config, "--config")
    check_input(a.from_sweep, "--from-sweep")
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
        selection = {"method": "chosen" if a.fingerprint else "recommend", "source": Path(a.from_sweep).name,
                     "config_fingerprint": config.fingerprint()}
    sample = load(a.sample, a.pairs, a.missing_values)
    if a.from_sweep:
        check_swept_row(a.from_sweep, row, config, sample)
    try:
        ws = Workspace(sample, ignore_categories=a.ignore_categories, line_corpus=_line_corpus(a), **_idf_source(a))
    except ValueError as exc:
        raise CliError(str(exc))
    if config is None:
        if _no_labels(sample):
            raise CliError(f"{a.sample} has no duplicate labels: nothing can be recommended; pass --config or "
                           f"--from-sweep RESULTS --fingerprint FP", status=NO_LABELS)
        grid, choice = grid_from_sample(ws, Grid(ignore_categories=a.ignore_categories))
        print(f"{sample}\nno --config: the default search (as calib sweep does): {choice.text(grid)}", file=sys.stderr)
        found = search(ws, grid, given=CHOSEN_AXES, max_false_removal_rate=a.budget, skip=True,
                       progress=tqdm_progress("sweep"))
        print(found.added_text(), file=sys.stderr)
        if found.best is None:
            raise CliError(f"no configuration of the default search keeps the false-removal rate <= {a.budget}; "
                           f"raise --budget or pass --config")
        config = config_from_row(found.best)
        selection = {"method": "recommend", "objective": "pair_recall", "max_false_removal_rate": a.budget,
                     "grid_size": int(len(found.results)), "search": choice.text(grid),
                     "second_pass": found.added_text()}
    _say_if_sampled(ws.truth)
    check_sweep_memory(sample.n, 20_000_000, (config.rep.num_perm,), config.b)  # evaluate's default pair budget
    evaluation = evaluate(ws, config)
    if evaluation.clustering is None:
        raise CliError(f"configuration {config.fingerprint()} collides too many pairs on this sample: nothing to export")
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
    print(f"exported {config} ({config.fingerprint()}) to {a.out}: {len(paths)} files; "
          f"{r['removed']} proposed removals (report only), pair recall {r['pair_recall']:.3f}, "
          f"false-removal rate {r['false_removal_rate']:.4f} [{r['false_removal_rate_low']:.4f}, "
          f"{r['false_removal_rate_high']:.4f}]", file=sys.stderr)
    standing = standing_text(r)
    if standing:
        print(f"it stands on: {standing}", file=sys.stderr)
    return 0


def tqdm_bar(desc: str, total):
    from tqdm import tqdm
    return tqdm(total=total, desc=desc, unit="doc", disable=None, file=sys.stderr)


def cmd_apply(a) -> int:
    from calib.production.engines.local import ApplyError, apply_config, check_fields, write_apply
    from calib.reading.files import MISSING_VALUES
    if a.batch_size < 1:
        raise CliError(f"--batch-size must be >= 1, got {a.batch_size}")
    if a.max_pairs < 0:
        raise CliError(f"--max-pairs must be >= 0, got {a.max_pairs}")
    a.max_pairs = fit_default_pairs(a.max_pairs, APPLY_MAX_PAIRS, "apply")
    if a.engine == "spark":  # its own input/output checks: paths may be object-storage URIs
        from calib.cli.apply_spark import cli_apply
        try:
            return cli_apply(a)
        except ValueError as exc:  # ApplyError, ExportError: one line
            raise CliError(str(exc))
    check_input(a.config, "--config")
    check_input(a.corpus, "--corpus")
    check_reviews(a.reviews)
    check_out_dir(a.out, a.overwrite)
    config, doc = _load_exported(a.config)
    stop = _load_stoplist(doc, a.config)
    frequencies = _load_frequencies(doc, a.config)
    keep = tuple(f.strip() for f in (a.keep_fields or "").split(",") if f.strip())
    try:
        check_fields(a.corpus, keep, id_field=a.id_field, text_field=a.text_field)
    except ApplyError as exc:
        raise CliError(str(exc))
    store = _review_store(a.reviews)
    try:
        result = apply_config(config, a.corpus, batch_size=a.batch_size, id_field=a.id_field,
                              text_field=a.text_field, slice_fields=keep, bar=tqdm_bar, review_store=store,
                              max_pairs=a.max_pairs, stoplist=stop, frequencies=frequencies,
                              missing_values=MISSING_VALUES if a.missing_values is None else a.missing_values)
        paths = write_apply(a.out, result, corpus=a.corpus)
    except ApplyError as exc:
        raise CliError(str(exc))
    finally:
        if store is not None:
            store.close()
    s = result.summary()
    print(f"applied {config.fingerprint()} to {s['documents']} documents: {s['candidate_pairs']} candidate pairs, "
          f"{s['verified_pairs']} verified, {s['proposed_removals']} proposed removals (report only) -> "
          f"{paths['manifest.csv']}", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="calib", description="MinHash-LSH calibration workbench (report-only: nothing is ever deleted)")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sweep", help="evaluate a grid of configurations on a labeled sample")
    s.add_argument("--sample", required=True, help="sample directory, documents file, or inline-pairs JSONL")
    s.add_argument("--pairs", help="pair-label file (when --sample is a documents file)")
    add_missing_option(s)
    s.add_argument("--out", required=True, help="results file, .parquet or .csv")
    s.add_argument("--overwrite", action="store_true", help="replace existing output (default: refuse, before any work)")
    s.add_argument("--budget", type=float, default=0.01, help="false-removal-rate budget for the recommendation (default: 0.01)")
    s.add_argument("--line-counts", metavar="CORPUS", help=LINE_COUNTS_HELP)
    s.add_argument("--reviews", help="review store (a .sqlite file or a postgresql:// URL), or a filled "
                                     "--review-queue CSV: its decisions are used as pair labels (a store's by the "
                                     "label rule: adjudicated, else unanimous; contested pairs are left out, and "
                                     "the summary says how the recommendation moves if they went either way)")
    s.add_argument("--review-queue", metavar="QUEUE.csv",
                   help="write the recommended row's unlabeled removals (each with its representative) as a review "
                        "queue, most informative first, with an empty decision column; sweep again with "
                        "--reviews QUEUE.csv once filled")
    add_grid_options(s)
    s.add_argument("--idf-corpus", metavar="CORPUS", help="corpus (.jsonl[.gz] or .parquet, id and text fields) whose document frequencies give the idf "
                        "weights of --weighting idf (default: the sample's own)")
    s.set_defaults(func=cmd_sweep)
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
    e.add_argument("--line-counts", metavar="CORPUS", help=LINE_COUNTS_HELP)
    e.add_argument("--reviews", help="review store (a .sqlite file or a postgresql:// URL) whose latest decisions "
                                     "fill review_status; config.json's evidence.reviews records its label counts "
                                     "and the reviewers' agreement")
    e.add_argument("--ignore-categories", type=_arg_type(_strs, "--ignore-categories"), default=(), metavar="LIST",
                   help="pair categories that count neither right nor wrong (as calib sweep --ignore-categories); "
                        "named in the export's evidence")
    e.add_argument("--idf-corpus", metavar="CORPUS", help="corpus (.jsonl[.gz] or .parquet, id and text fields) whose document frequencies give the idf "
                        "weights of --weighting idf (default: the sample's own); the one the rows were swept with)")
    e.set_defaults(func=cmd_export)
    ap = sub.add_parser("apply", help="run an exported config on an unlabeled corpus (report only)")
    ap.add_argument("--config", required=True, help="exported config JSON")
    ap.add_argument("--corpus", required=True, help="corpus: .jsonl[.gz] or .parquet with id and text fields")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--overwrite", action="store_true", help="replace existing output (default: refuse, before any work)")
    ap.add_argument("--batch-size", type=int, default=10_000, help="documents per batch (default 10000)")
    ap.add_argument("--id-field", default="id", help="id field/column (default: id)")
    ap.add_argument("--text-field", default="text", help="text field/column (default: text)")
    ap.add_argument("--reviews", help="review store (a .sqlite file or a postgresql:// URL) whose latest decisions fill review_status")
    ap.add_argument("--keep-fields", metavar="F1,F2", default="",
                    help="corpus fields/columns to carry into the manifest (comma-separated, e.g. source,url); "
                         "default: none")
    ap.add_argument("--max-pairs", type=int, default=APPLY_MAX_PAIRS,
                    help="distinct candidate pairs above which the corpus is refused before any pair is materialized "
                         "(memory: ~40 bytes a pair; default 50000000)")
    add_missing_option(ap)
    ap.add_argument("--engine", choices=("local", "spark"), default="local",
                    help="local (default), or spark: the same job on Spark (calib.spark_apply; pip install "
                         "'calib[spark]' and a Java runtime; master from spark-submit, CALIB_SPARK_MASTER or local[*])")
    ap.set_defaults(func=cmd_apply)
    __import__("calib.labeling.draw", fromlist=["add_parser"]).add_parser(sub)  # calib draw (calib/draw.py)
    __import__("calib.cli.reviews", fromlist=["add_parser"]).add_parser(sub)  # calib reviews (calib/reviews_cli.py)
    sm = sub.add_parser("samples", help="build or summarize labeled samples (see calib samples -h)",
                        description="subcommands: build (rebuild data/sample from data/base, deterministic), "
                                    "extract-base (collect the base text, run once), corpus (rebuild the unlabeled corpus "
                                    "data/corpus/docs.jsonl.gz, deterministic), summary PATH [PAIRS] "
                                    "(a sample's counts as JSON); calib samples SUBCOMMAND -h for its options")
    sm.add_argument("args", nargs=argparse.REMAINDER, metavar="{build,extract-base,corpus,summary} ...")
    sm.set_defaults(func=lambda a: __import__("calib.shipped.sample", fromlist=["main"]).main(a.args))
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    a = parser.parse_args(argv)
    try:
        with _claims:
            return int(a.func(a) or 0)
    except (CliError, MemoryBudgetError) as exc:
        print(f"calib {a.command}: error: {exc}", file=sys.stderr)
        return getattr(exc, "status", 2)
    except OSError as exc:  # disk full, permission lost mid-run: one line, not a traceback
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"calib {a.command}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"calib {a.command}: interrupted; files written so far are complete", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
