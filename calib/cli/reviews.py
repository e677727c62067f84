"""``calib reviews``: team review from the command line: the reviewers' agreement
(``calib reviews agreement``) and a team on a PostgreSQL store (``calib reviews team ...``,
:mod:`calib.cli.team`)."""

from __future__ import annotations

import json
import sys

from calib.base.errors import CliError
from calib.cli import team
from calib.cli._common import _review_store, check_reviews, load


def add_parser(sub) -> None:
    """``calib reviews agreement``: its options and handler."""
    r = sub.add_parser("reviews", help="team review: agreement between reviewers, a team's roles on PostgreSQL "
                                       "(calib reviews agreement -h, calib reviews team -h)")
    rs = r.add_subparsers(dest="reviews_command", required=True)
    ag = rs.add_parser("agreement", help="kappa between reviewers, overall, per category and per reviewer",
                       description="Cohen's kappa (two reviewers) or Fleiss' kappa (more) over the pairs rated by "
                                   "two or more reviewers, with 95%% percentile-bootstrap intervals over pairs; "
                                   "'unsure' abstains. Also prints how the reviews become labels (the label rule).")
    ag.add_argument("--reviews", required=True, help="review store: a .sqlite file or a postgresql:// URL")
    ag.add_argument("--sample", help="labeled sample: break the agreement down by its pair categories "
                                     "('(group)' for two documents of one group; pairs it does not label "
                                     "are 'unlabeled')")
    ag.add_argument("--pairs", help="pair-label file (when --sample is a documents file)")
    ag.add_argument("--replicates", type=int, default=1000, help="bootstrap resamples (default 1000)")
    ag.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    ag.add_argument("--json", action="store_true", help="print JSON (the table's rows and the label counts)")
    ag.set_defaults(func=cmd_agreement)
    team.add_parser(rs)


def format_table(table) -> str:
    """The kappa table as aligned text."""
    def kappa(r) -> str:
        if r["kappa"] != r["kappa"]:
            return "-"
        ci = "" if r["low"] != r["low"] else f" [{r['low']:.3f}, {r['high']:.3f}]"
        return f"{r['kappa']:.3f}{ci}"
    rows = [("scope", "group", "method", "kappa [95% CI]", "pairs", "agreed", "reviewers", "unsure")]
    rows += [(r["scope"], str(r["group"]), r["method"] or "-", kappa(r), f"{r['pairs']:,}", f"{r['agreed']:,}",
              str(r["reviewers"]), f"{r['unsure']:,}") for _, r in table.iterrows()]
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) if k < 4 else c.rjust(w) for k, (c, w) in enumerate(zip(row, widths)))
                     for row in rows)


def cmd_agreement(a) -> int:
    from calib.review.adjudication import RULE, decisions_of, review_labels
    from calib.review.agreement import agreement_table, sample_categories
    if a.replicates < 1:
        raise CliError(f"--replicates must be >= 1, got {a.replicates}")
    check_reviews(a.reviews)  # a path exists; a URL's server answers (never echoed with its password)
    sample = load(a.sample, a.pairs) if a.sample else None
    store = _review_store(a.reviews)
    try:
        decisions = decisions_of(store)
    finally:
        store.close()
    categories = sample_categories(sample, decisions) if sample is not None else None
    table = agreement_table(decisions, categories, replicates=a.replicates, seed=a.seed)
    _, counts = review_labels(decisions)
    if a.json:
        rows = [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
                for r in json.loads(table.to_json(orient="records"))]
        print(json.dumps({"agreement": rows, "labels": counts.as_dict(), "label_rule": RULE,
                          "interval": "95% percentile bootstrap over pairs", "unsure": "abstains (not in kappa)"},
                         indent=2))
        return 0
    print(format_table(table))
    o = table.iloc[0]
    print(f"\n{counts.double_reviewed:,} double-reviewed pair(s), {o['pairs']:,} of them rated twice or more "
          f"(in kappa); {counts.unsure:,} unsure decision(s) (abstentions, not in kappa)")
    print(f"labels: {counts}\nlabel rule: {RULE}", file=sys.stdout)
    return 0
