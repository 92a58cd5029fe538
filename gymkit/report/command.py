"""``gymkit report``: argument setup and handler (light to import: heavy modules load in :func:`run`)."""

from __future__ import annotations

import argparse
import sys

EXAMPLES = (
    "gymkit report 'rank(-ts_sum(returns, 5))' --out report/",
    "gymkit report --answers answers.jsonl --out group-report/",
    "gymkit report 'rank(ts_std(volume, 20))' --no-holdout --no-timestamp --out r/",
)


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gymkit report``."""
    p.add_argument("formula", nargs="?", default=None,
                   help="a formula (e.g. 'rank(-ts_sum(returns, 5))') or a whole <alpha> answer")
    p.add_argument("--answers", metavar="FILE", default=None,
                   help="a file of answers to report as one group: JSONL with 'completion' or "
                        "'formula' (optional 'label'), or one answer per line")
    p.add_argument("--env", default="us46-default", help="environment id (default: us46-default)")
    p.add_argument("--out", metavar="DIR", required=True, help="output folder (index.html is written there)")
    p.add_argument("--holdout", action="store_true",
                   help="also show the holdout: one look per formula set and holdout sessions, "
                        "recorded in the holdout ledger (default: train figures only)")
    p.add_argument("--no-holdout", action="store_true",
                   help="train figures only (the default; kept for older scripts)")
    from gymkit.cli.options import add_holdout_args, add_market_args

    add_holdout_args(p)
    add_market_args(p)
    p.add_argument("--no-timestamp", action="store_true",
                   help="omit the 'generated at' line: identical inputs give identical bytes")


def generated_line() -> str:
    """The current UTC time as the report's 'generated at' line."""
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _claim(env: object, texts: list[str], args: argparse.Namespace) -> str:
    """Claim the report's holdout look in the ledger (gymkit.holdout); print a forced look.
    Returns the page's note of the look (a forced one says so)."""
    from gymkit.holdout import claim_answers, default_ledger_path, forced_line
    from gymkit.report.analysis import as_completion

    look = claim_answers(env, [as_completion(t) for t in texts], command="gymkit report --holdout",
                         force=args.force_holdout, ledger=args.ledger)
    if look.forced:
        line = forced_line(look.number, args.ledger)
        print(line)
        return line
    return (f"holdout: first look at this holdout and formula set, recorded in "
            f"{args.ledger or default_ledger_path()}")


def run(args: argparse.Namespace) -> int:
    """Write the tear sheet; print its path.  Exit 2 when neither or both inputs are given."""
    if (args.formula is None) == (args.answers is None):
        print("gymkit report: error: give either a FORMULA or --answers FILE (one of them)",
              file=sys.stderr)
        return 2
    import matplotlib

    matplotlib.use("Agg")  # the CLI never opens a window
    from gymkit.cli.options import make_env
    from gymkit.report.api import answers_report, formula_report, read_answers

    stamp = None if args.no_timestamp else generated_line()
    env = make_env(args)
    holdout = (args.holdout or args.force_holdout) and not args.no_holdout
    if args.answers is not None:
        labels, texts = read_answers(args.answers)
    else:
        labels, texts = None, [args.formula]
    look = _claim(env, texts, args) if holdout else None
    if args.answers is not None:
        path = answers_report(env, texts, args.out, labels=labels, holdout=holdout,
                              generated_at=stamp, look_note=look)
    else:
        path = formula_report(env, args.formula, args.out, holdout=holdout,
                              generated_at=stamp, look_note=look)
    print(f"tear sheet: {path.resolve()}")
    return 0
