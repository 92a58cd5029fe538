"""``gymkit probe``: the train-CPCV checkpoint table; ``--holdout`` scores the holdout once.

Input: ``--answers`` JSONL of ``{checkpoint, brief_id, completion}`` rows, or ``--corpus
alpha101``.  The protocol is :mod:`gymkit.probe`; the holdout look, its score and the result
file written once are :mod:`gymkit.holdout`'s.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from .options import add_holdout_args, add_market_args, make_env

__all__ = ["configure", "run"]


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gymkit probe``."""
    p.add_argument("--answers", help="JSONL of {checkpoint, brief_id, completion} rows")
    p.add_argument("--corpus", choices=["alpha101"], help="score a built-in corpus as one checkpoint")
    p.add_argument("--holdout", action="store_true",
                   help="also score the holdout once (realistic costs); written to --out")
    p.add_argument("--out", default="probe-results", help="folder for the holdout result and ledger")
    p.add_argument("--env", default="us46-default", help="environment id")
    p.add_argument("--json", action="store_true", help="print rows as JSON instead of the table")
    add_holdout_args(p)
    add_market_args(p)


def run(args: argparse.Namespace) -> int:
    """Handler of ``gymkit probe``: the table (or ``--json`` rows); with ``--holdout`` the
    result file's path, after the look is claimed in the holdout ledger."""
    from gymkit.holdout import HoldoutLedger, forced_line, write_holdout_once
    from gymkit.probe import alpha101_answers, format_table, probe, read_answers

    if bool(args.answers) == bool(args.corpus):
        raise ValueError("give exactly one of --answers FILE or --corpus alpha101")
    if args.answers:
        answers = read_answers(args.answers)
        sha = hashlib.sha256(Path(args.answers).read_bytes()).hexdigest()
    else:
        answers = alpha101_answers()
        sha = hashlib.sha256(json.dumps(answers, sort_keys=True).encode()).hexdigest()
    env = make_env(args)
    with HoldoutLedger(args.ledger) as ledger:
        rows = probe(env, answers, holdout=args.holdout, force=args.force_holdout,
                     ledger=ledger)
    if args.holdout:
        look = next((r.look for r in rows if r.look is not None), None)
        forced = look is not None and look.forced
        if forced:
            print(forced_line(look.number, ledger.path))
        result = {"answers_sha256": sha, "env_fingerprint": env.fingerprint,
                  "forced_holdout": forced, "rows": [r.to_dict() for r in rows]}
        path = write_holdout_once(result, sha, args.out, force=args.force_holdout)
        print(f"holdout result written once to {path}")
    if args.json:
        for r in rows:
            print(json.dumps(r.to_dict(), sort_keys=True))
    else:
        print(format_table(rows))
    return 0
