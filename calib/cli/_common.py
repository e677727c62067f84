"""What several subcommands of ``calib`` share: option helpers, loading a sample,
progress lines, review stores, the inputs a sweep and an export read alike.

Argument handling only: each helper turns a flag's value into what the library
takes (or one :class:`~calib.base.errors.CliError` line), then calls it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from calib.base.errors import CliError, check_input

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


def _strs(s: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in s.split(",") if x.strip())


def add_missing_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--missing-values", type=lambda s: _strs(s) if s.strip() else (), default=None, metavar="LIST",
                   help="spellings read as a missing value in group, label and slice columns, comma-separated, "
                        "case-insensitive (default: NA,nan,NULL,None,N/A; empty cells always); "
                        "--missing-values '' keeps those spellings as ordinary values")


def load(path: str, pairs: str | None = None, missing: tuple[str, ...] | None = None):
    from calib.reading.files import MISSING_VALUES, SampleError
    from calib.reading.samples import load_sample
    check_input(path, "--sample")
    check_input(pairs, "--pairs")
    try:
        sample = load_sample(path, pairs, missing_values=MISSING_VALUES if missing is None else missing)
        if getattr(sample.design, "kind", "") == "corpus" and pairs is None:  # and each row's J from its texts
            from calib.labeling.draw import DrawError, read_drawn
            try:
                read_drawn(path)
            except DrawError as exc:
                raise CliError(str(exc))
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


def check_sweep_memory(n: int, max_pairs: int | None, num_perms, b: int) -> None:
    """The pair budget and the largest signatures and bands of a sweep fit in memory, before any work."""
    from calib.base.budget import check_banding, check_pair_budget
    check_pair_budget(max_pairs, "sweep", most_pairs=n * (n - 1) // 2)
    check_banding(n, max(num_perms), b, "the sample")


def fit_default_pairs(max_pairs: int | None, default: int, command: str) -> int | None:
    """The default pair budget lowered to what memory holds (said on stderr); a budget the user
    chose is kept, and refused before the work if it does not fit (:mod:`calib.base.budget`)."""
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


def _load_exported(path: str):
    from calib.production.document import ExportError, load_config
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
    from calib.reading.corpus import ApplyError, iter_corpus
    check_input(a.line_counts, "--line-counts")
    try:
        texts = [t for _, texts, _ in iter_corpus(a.line_counts) for t in texts]
    except ApplyError as exc:
        raise CliError(f"--line-counts {exc}")
    if not texts:  # no line would be counted: --strip-lines would strip nothing, silently
        raise CliError(f"--line-counts {a.line_counts}: no document to count line frequencies on")
    return texts


def _idf_source(a) -> dict:
    """Workspace arguments for ``--idf-corpus``: idf weights counted on that corpus, not on the sample."""
    path = getattr(a, "idf_corpus", None)
    if not path:
        return {}
    from calib.reading.corpus import ApplyError
    from calib.production.engines.local import corpus_frequencies

    def frequencies(rep):
        try:
            return corpus_frequencies(path, rep)
        except ApplyError as exc:
            raise CliError(f"--idf-corpus {exc}")
    return {"frequencies": frequencies, "frequencies_source": f"corpus {Path(path).name}"}


def workspace_sources(a) -> dict:
    """What the sweep table records as the idf frequencies' and the stoplist's source: the corpora as named."""
    out = {}
    if getattr(a, "idf_corpus", None):
        out["idf"] = f"corpus {a.idf_corpus}"
    if getattr(a, "line_counts", None):
        out["stoplist"] = f"line counts of {a.line_counts}"
    return {"sources": out}


def _review_store(target: str | None, flag: str = "--reviews"):
    """The existing review store at ``target`` (None for None), opened read-only: a SQLite
    file, or a ``postgresql://`` URL (a team's shared store). A missing path, a folder,
    another application's table, a server that does not answer: one line (a URL's password
    shown as ***), and nothing is changed."""
    if target is None:
        return None
    from calib.review.sqlite import ReviewStore
    from calib.review.stores import open_review_store
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


def say_applied(s: dict, manifest, evidence: dict | None, engine: str = "") -> None:
    """Print :func:`summary_line`, and a warning when the corpus removes a larger share by chaining alone
    than the sample the configuration was chosen on (:func:`calib.clusters.growth.chained_share_warning`)."""
    from calib.clusters.growth import chained_share_warning
    print(summary_line(s, manifest, engine), file=sys.stderr)
    growth = chained_share_warning(evidence, s["chained_removals"], s["proposed_removals"])
    if growth:
        print(growth, file=sys.stderr)


def summary_line(s: dict, manifest, engine: str = "") -> str:
    """summary.json's counts in one line: what was compared, what is proposed, and how much of it rests on
    exact copies or on chaining alone (a removed document that is no verified pair with its representative)."""
    return (f"applied {s['config_fingerprint']} to {s['documents']:,} documents{engine}: {s['candidate_pairs']:,} "
            f"candidate pairs, {s['verified_pairs']:,} verified; {s['proposed_removals']:,} proposed removals "
            f"(report only) in {s['clusters_with_removals']:,} clusters, {s['exact_copies']:,} exact copies, "
            f"{s['chained_removals']:,} by chaining alone -> {manifest}")



CONFIDENCE_HELP = ("recommend the best row whose false-removal rate's one-sided upper bound at this confidence "
                   "holds --budget, e.g. 0.95: the corpus rate then exceeds the budget with probability at most "
                   "1 - CONFIDENCE (the normal approximation of the row's 95%% interval, "
                   "calib.estimates.exceedance); default: the rate itself (the point estimate)")


def _confidence(text: str) -> float:
    """--confidence: a number from 0.5 up to (not including) 1."""
    import argparse

    from calib.estimates.exceedance import check_confidence
    try:
        return check_confidence(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a confidence from 0.5 up to (not including) 1, e.g. 0.95, "
                                         f"got {text!r}") from None


def add_confidence_option(p, from_sweep: bool = False) -> None:
    """``--confidence`` (``calib sweep``, ``calib export``): the budget held on the upper bound at a confidence."""
    more = "; with --from-sweep: the confidence the sweep recommended with (recorded in its table)" if from_sweep else ""
    p.add_argument("--confidence", type=_confidence, default=None, metavar="LEVEL", help=CONFIDENCE_HELP + more)
