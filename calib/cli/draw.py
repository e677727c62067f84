"""``calib draw``: draw pairs to label from an unlabeled corpus, and ``--more``
to add pairs to a drawn set where they narrow the intervals most.

Argument handling over :mod:`calib.labeling.draw` (the stratified draw and its
files) and :mod:`calib.labeling.weighted` (the labels-next planner).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from calib.base.errors import CliError, check_input, check_out_dir, check_rate, claim
from calib.labeling.draw import (CANDIDATES, DEFAULT_REP, FILES, DrawError, draw, inclusion_note, more, read_drawn,
                                 strata_table, write_drawn)
from calib.reading.design import DEFAULT_EDGES, Design
from calib.sketches.represent import Representation



# the strata tables' columns as printed (the tables themselves keep the machine names)
HEADERS = {"drawn_share": "share drawn", "x_document_factor": "x document factor",
           "inclusion_probability": "inclusion probability", "P_candidate_at_lower_edge": "P(candidate) at lower edge"}


def fraction_words(x: float, whole: str = "100%") -> str:
    """A share or a probability as read aloud (:func:`calib.estimates.figures.probability`: one decimal,
    ``whole`` at 1, '> 99.9%' just below it), and "1 in N" below 0.1%, where a draw's small inclusion
    probabilities are read."""
    from calib.estimates.figures import probability
    if 0 < x < 0.001:
        return f"1 in {round(1 / x):,}"
    return probability(x, whole)


def _in_words(table: pd.DataFrame) -> str:
    """A strata table as printed: counts with thousands separators, shares and probabilities in words; the
    uniform stratum of a corpus draw needs no loose pass (it is drawn from every corpus pair), said so."""
    t = table.copy()
    for c in ("pairs", "drawn", "labeled"):
        if c in t:
            t[c] = [f"{int(v):,}" for v in t[c]]
    if "drawn_share" in t:
        t["drawn_share"] = [fraction_words(v, "all") for v in t["drawn_share"]]
    for c in ("x_document_factor", "inclusion_probability"):
        if c in t:
            t[c] = [fraction_words(v) for v in t[c]]
    if "P_candidate_at_lower_edge" in t:
        t["P_candidate_at_lower_edge"] = ["none needed: drawn from every pair" if s == "uniform" else fraction_words(v)
                                          for s, v in zip(t["stratum"], t["P_candidate_at_lower_edge"])]
    return t.rename(columns=HEADERS).to_string(index=False)

def _edges(text: str) -> tuple[float, ...]:
    try:
        e = tuple(float(x) for x in text.split(",") if x.strip())
        Design(DEFAULT_REP.to_dict(), e, 2, 2, (0,) * len(e), (0,) * len(e), 0)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc))
    return e


def add_parser(sub) -> None:
    """``calib draw``: its options and handler."""
    d = sub.add_parser("draw", help="draw pairs to label from an unlabeled corpus (stratified by similarity)",
                       description="Streams the corpus, finds candidate pairs among all its documents with a "
                                   "loose LSH pass and draws --pairs pairs stratified by similarity band plus a "
                                   "uniform stratum of all corpus pairs (--design sample: among a uniform sample of "
                                   "--docs documents instead). Writes documents.jsonl, pairs.csv (label empty) and "
                                   "design.json; fill the labels (or use the Label page) and run calib sweep "
                                   "--sample OUT. --more adds pairs to a drawn set.")
    d.add_argument("--corpus", help="corpus: .jsonl[.gz] or .parquet with id and text fields (with --more of a "
                   "corpus draw: where its corpus is now, if moved; the same bytes, checked by sha256)")
    d.add_argument("--out", required=True, help="output folder (with --more: the drawn set to extend)")
    d.add_argument("--design", choices=("corpus", "sample"), default="corpus",
                   help="corpus (default): pairs from every document, through a loose LSH pass over the whole "
                        "corpus (docs/corpus-draw.md); sample: pairs among a uniform sample of --docs documents, "
                        "every pair above the floor enumerated exactly with no loose pass: for a corpus of at most "
                        "a few thousand documents, where the sample is the whole corpus")
    d.add_argument("--loose", default="120x5", help="with --design corpus: the loose pass's split BxR "
                   "(default 120x5: P(0.4) = 0.71, P(0.5) = 0.98, P(0.6) = 1.00)")
    d.add_argument("--loose-scheme", choices=("prefix", "oph"), default="oph",
                   help="with --design corpus: MinHash scheme of the loose pass (default oph, one-permutation "
                        "hashing: its S-curve and verify estimate follow the independent-permutation formulas "
                        "within the noise of bench/results/loose_curve.md, at a fraction of prefix's cost)")
    d.add_argument("--engine", choices=("local", "spark"), default="local",
                   help="with --design corpus: local (default), or spark: the same passes as a Spark job, the same "
                        "drawn pairs for the same seed (pip install 'calib[spark]' and a Java runtime; master from "
                        "CALIB_SPARK_MASTER, default local[*]; docs/spark-cluster.md)")
    d.add_argument("--docs", type=int, default=None,
                   help="with --design sample: documents in the uniform sample (default 2000)")
    d.add_argument("--pairs", type=int, default=500, help="pairs to draw (default 500)")
    d.add_argument("--seed", type=int, default=0, help="seed of the document sample and the draw (default 0)")
    d.add_argument("--shingle", default="char5", help="representation whose exact J defines the strata, e.g. "
                   "char5, word3 (default char5, lower+nfkc+ws)")
    d.add_argument("--edges", type=_edges, default=None,
                   help="band edges, the first is the floor (default 0.1,0.2,...,1.0; --design corpus: "
                        "0.3,0.4,...,1.0)")
    d.add_argument("--uniform-share", type=float, default=None,
                   help="share of --pairs drawn uniformly from the pairs below the floor (default 0.2); with "
                        "--design corpus: drawn from all corpus pairs (default 0.1)")
    d.add_argument("--max-pairs", type=int, default=None,
                   help="pairs above the floor (--design corpus: loose candidate pairs) beyond which the draw "
                        "stops with an error (default 5000000; --design corpus: 50000000)")
    d.add_argument("--slice-fields", metavar="F,G", default=None,
                   help="with --design corpus: fields of the corpus to slice the estimates by (e.g. source, "
                        "language): design.json counts the corpus's documents per value, documents.jsonl keeps "
                        "each drawn document's values, and calib sweep --by-slice gives every figure per value")
    d.add_argument("--id-field", default="id", help="id field/column (default: id)")
    d.add_argument("--text-field", default="text", help="text field/column (default: text)")
    d.add_argument("--overwrite", action="store_true", help="replace an existing --out (default: refuse)")
    d.add_argument("--more", type=int, metavar="K", default=None,
                   help="add K pairs to the drawn set in --out, allocated to narrow the recommended configuration's "
                        "intervals most (Neyman allocation; needs labels); --config picks another configuration")
    d.add_argument("--config", help="with --more: exported config.json whose intervals to narrow")
    d.add_argument("--width", type=float, default=0.05,
                   help="with --more: target interval half-width for the labels-needed estimate (default 0.05)")
    d.add_argument("--budget", type=float, default=0.01,
                   help="with --more: false-removal budget of the recommendation (default 0.01)")
    d.set_defaults(func=cmd_draw)


def _parse_shingle(text: str) -> Representation:
    m = re.fullmatch(r"(word|char)(\d+)", text.strip())
    if not m:
        raise DrawError(f"--shingle {text!r}: expected word<k> or char<k>, e.g. char5")
    try:
        return Representation(shingle=m.group(1), k=int(m.group(2)))
    except ValueError as exc:
        raise DrawError(f"--shingle {text!r}: {exc}") from None


def cmd_draw(a) -> int:
    try:
        if a.more is not None:
            return cmd_more(a)
        if a.corpus is None:
            raise CliError("--corpus is required (except with --more)")
        if a.engine == "spark" and a.design != "corpus":
            raise CliError("--engine spark draws with --design corpus only")
        if a.engine == "local" or "://" not in a.corpus:  # Spark also reads object storage (s3a://, hdfs://)
            check_input(a.corpus, "--corpus")
        rep = _parse_shingle(a.shingle)
        out = check_out_dir(a.out, a.overwrite)
        try:
            from calib.base.atomic import check_replaceable
            check_replaceable(out, FILES + (CANDIDATES,))
        except ValueError as exc:
            raise CliError(str(exc))
        if a.design == "corpus":
            if a.docs is not None:
                raise CliError("--docs sizes the document sample of --design sample; the corpus design (the "
                               "default) draws from every document: drop --docs, or add --design sample")
            return _draw_corpus(a, rep, out)
        if a.slice_fields:
            raise CliError("--slice-fields needs --design corpus (a document-sample draw's estimates are for the "
                           "whole corpus)")
        drawn = draw(a.corpus, docs=2000 if a.docs is None else a.docs, pairs=a.pairs, seed=a.seed, rep=rep,
                     edges=DEFAULT_EDGES if a.edges is None else a.edges,
                     uniform_share=0.2 if a.uniform_share is None else a.uniform_share,
                     max_pairs=5_000_000 if a.max_pairs is None else a.max_pairs,
                     id_field=a.id_field, text_field=a.text_field)
        write_drawn(out, drawn)
    except DrawError as exc:
        raise CliError(str(exc))
    d = drawn.design
    if d.corpus_docs > d.sample_docs:
        print(f"note: pairs were drawn among {d.sample_docs:,} of {d.corpus_docs:,} documents; the corpus design "
              "(the default, without --design sample) draws from every document", file=sys.stderr)
    print(f"{d}\nwrote {Path(out) / 'documents.jsonl'} ({d.sample_docs:,} documents), pairs.csv ({len(drawn.pairs):,} pairs, "
          f"label empty), design.json", file=sys.stderr)
    print(inclusion_note(d), file=sys.stderr)
    print(_in_words(strata_table(d)), file=sys.stderr)
    return 0


def _draw_corpus(a, rep: Representation, out: Path) -> int:
    from calib.cli.apply import tqdm_bar
    from calib.labeling.corpus_draw import draw_corpus
    from calib.labeling.corpus_strata import corpus_strata_table
    from calib.reading.corpus_design import DEFAULT_CORPUS_EDGES
    from calib.labeling.corpus_slices import count_slices, parse_fields, with_slices
    m = re.fullmatch(r"\s*(\d+)\s*[x*]\s*(\d+)\s*", a.loose)
    if not m:
        raise CliError(f"--loose {a.loose!r}: expected BxR, e.g. 120x5")
    options = dict(pairs=a.pairs, seed=a.seed, rep=rep, edges=DEFAULT_CORPUS_EDGES if a.edges is None else a.edges,
                   uniform_share=0.1 if a.uniform_share is None else a.uniform_share,
                   loose=(int(m.group(1)), int(m.group(2))),
                   max_pairs=50_000_000 if a.max_pairs is None else a.max_pairs, id_field=a.id_field,
                   text_field=a.text_field, scheme=a.loose_scheme)
    try:
        from calib.base.budget import MemoryBudgetError
        from calib.labeling.corpus_draw import check_scan_options
        from calib.labeling.drawn import MAX_PAIRS, check_options
        check_options(options["pairs"], options["uniform_share"], options["seed"], MAX_PAIRS)  # before any pass
        check_scan_options(rep, options["edges"], options["loose"], options["scheme"], options["max_pairs"])
        fields = parse_fields(a.slice_fields, id_field=a.id_field, text_field=a.text_field)
        if fields and a.engine == "spark" and "://" in a.corpus:
            raise CliError("--slice-fields: the slice pass reads the corpus on this machine; give a local --corpus")
        counts = count_slices(a.corpus, fields, id_field=a.id_field, text_field=a.text_field) if fields else None
        if a.engine == "spark":
            from calib.cli.draw_spark import spark_draw
            drawn = spark_draw(a.corpus, **options)
        else:
            drawn = draw_corpus(a.corpus, bar=tqdm_bar, **options)
        if counts is not None:
            drawn = with_slices(drawn, counts)
        from dataclasses import replace  # the fields --more re-reads the corpus by
        drawn = replace(drawn, design=replace(drawn.design, id_field=a.id_field, text_field=a.text_field))
        write_drawn(out, drawn)
    except (DrawError, MemoryBudgetError) as exc:
        raise CliError(str(exc))
    d = drawn.design
    print(f"{d}\nwrote {out}/documents.jsonl ({d.sample_docs:,} documents of the drawn pairs), pairs.csv "
          f"({len(drawn.pairs):,} pairs, label empty), design.json, candidates.npy ({d.candidates:,} loose "
          f"candidates, {sum(d.population[:-1]):,} in the bands: "
          f"{'estimated' if getattr(d, 'strata_by', 'exact') == 'estimate' else 'exact'} J >= {d.floor:g})",
          file=sys.stderr)
    print(_in_words(corpus_strata_table(d)), file=sys.stderr)
    for f, per in d.slice_docs.items():
        shown = ", ".join(f"{v} {c:,}" for v, c in list(per.items())[:8])
        more_values = f" and {len(per) - 8:,} more values" if len(per) > 8 else ""
        print(f"documents per {f}: {shown}{more_values}", file=sys.stderr)
    return 0


def cmd_more(a) -> int:
    """``calib draw --more K --out DIR``: label-next proposal and K more pairs."""
    from calib.estimates.design_weighted import design_pairs
    from calib.labeling.weighted import next_labels
    from calib.reading.files import SampleError
    from calib.reading.samples import load_sample
    from calib.search.grid import Grid
    from calib.search.workspace import Workspace
    from calib.search.sweep import evaluate, sweep
    from calib.search.recommend import recommend
    if a.more < 0:
        raise CliError(f"--more must be >= 0, got {a.more}")
    if not 0 < a.width < 0.5:
        raise CliError(f"--width must be in (0, 0.5), got {a.width:g}")
    check_rate(a.budget, "--budget")
    if Path(a.out).is_dir():  # held from this read to the write: a second --more at once is refused, not lost
        claim(Path(a.out))
    try:
        drawn = read_drawn(a.out)
        sample = load_sample(a.out)
        corpus = None
        if getattr(drawn.design, "kind", "") == "corpus":  # what --more reads, checked before the sweep
            from calib.labeling.corpus_draw import check_same_corpus
            if drawn.candidates is None:
                raise DrawError(f"{Path(a.out) / CANDIDATES}: no such file; --more draws a corpus design's band "
                                "pairs from it")
            corpus = check_same_corpus(drawn.design, a.corpus)
    except (DrawError, SampleError) as exc:
        raise CliError(str(exc))
    if not sample.pairs["is_duplicate"].any():
        raise CliError(f"{a.out}: no pair labeled duplicate yet: label some of pairs.csv first (every stratum)")
    ws = Workspace(sample)
    if a.config:
        from calib.production.document import load_config
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
    from calib.estimates.figures import RATE_NAMES, rate_text
    for r, d in plan["rates"].items():
        limit = ("the loose pass's misses limit it (a looser --loose)" if getattr(sample.design, "kind", "") == "corpus"
                 else "the document sample limits it: draw from every document (calib draw without --design "
                      "sample)")
        need = (limit if d["documents_limit"] else
                "more than the strata hold" if d["labels_needed"] is None else f"{d['labels_needed']:,} more labels")
        # the rate as sweep and export write it (the same row: the drawn set's design-weighted estimate)
        print(f"{RATE_NAMES.get(r, r)} {rate_text(ev.row, r)}; +/-{a.width:g} needs {need}", file=sys.stderr)
    # drawn but unlabeled pairs are proposed first; only the rest is drawn anew
    unlabeled = (drawn.pairs["label"].str.strip() == "").groupby(drawn.pairs["stratum"]).sum()
    waiting = unlabeled.reindex(list(sample.design.strata)).fillna(0).astype(int)
    new = np.maximum(plan["allocation"].to_numpy() - waiting.to_numpy(), 0)
    try:
        grown = more(drawn, new, corpus=corpus)
    except DrawError as exc:
        raise CliError(str(exc))
    try:
        write_drawn(a.out, grown)  # the three files replaced as a set: pairs and design always agree
    except ValueError as exc:
        raise CliError(str(exc))
    table = pd.DataFrame({"stratum": list(sample.design.strata), "label next": plan["allocation"].to_numpy(),
                          "already drawn, unlabeled": waiting.to_numpy(), "newly drawn": new})
    print(table.to_string(index=False), file=sys.stderr)
    print(f"wrote {len(grown.pairs) - len(drawn.pairs):,} new pairs to {Path(a.out) / 'pairs.csv'} (label empty)", file=sys.stderr)
    return 0
