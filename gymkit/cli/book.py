"""``gymkit book``: the equal-weight and correlation-capped books of the valid answers, as JSON.

The books are :mod:`gymkit.book`'s; ``--window holdout`` claims the look in the holdout ledger
first (:mod:`gymkit.holdout`) and a forced look is announced on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys

from .options import add_holdout_args, add_market_args, make_env

__all__ = ["configure", "run"]


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gymkit book``."""
    p.add_argument("--answers", help="JSONL of {checkpoint?, brief_id?, completion} rows")
    p.add_argument("--corpus", choices=["alpha101"], help="use a built-in corpus")
    p.add_argument("--window", choices=["train", "holdout"], default="train",
                   help="window to report the books on (default: train)")
    p.add_argument("--max-corr", type=float, default=0.5, help="selector's P&L correlation cap")
    p.add_argument("--env", default="us46-default", help="environment id")
    add_holdout_args(p)
    add_market_args(p)


def run(args: argparse.Namespace) -> int:
    """Handler of ``gymkit book``: prints the report as JSON."""
    from gymkit.book import book_report
    from gymkit.card import json_safe
    from gymkit.holdout import forced_line
    from gymkit.probe import alpha101_answers, read_answers

    if bool(args.answers) == bool(args.corpus):
        raise ValueError("give exactly one of --answers FILE or --corpus alpha101")
    rows = read_answers(args.answers) if args.answers else alpha101_answers()
    env = make_env(args)
    rep = book_report(env, [r["completion"] for r in rows], args.window, args.max_corr,
                      force=args.force_holdout, ledger=args.ledger)
    if rep.get("holdout_look", {}).get("forced"):
        print(forced_line(rep["holdout_look"]["number"], args.ledger), file=sys.stderr)
    print(json.dumps(json_safe(rep), indent=2, sort_keys=True))
    return 0
