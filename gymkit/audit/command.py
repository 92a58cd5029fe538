"""``gymkit audit``: the playbook's pre-run checklist as a command (argument setup + handler).

Import-light: the checks (and the numba engine) are imported when the command runs.
"""

from __future__ import annotations

import argparse
import sys
import time

__all__ = ["configure", "run"]


def configure(p: argparse.ArgumentParser) -> None:
    """Add the audit's options to its subparser."""
    which = p.add_mutually_exclusive_group()
    which.add_argument("--env", default=None, help="registered environment id (default: us46-default)")
    which.add_argument("--config", default=None, help="environment TOML file (EnvConfig.save)")
    p.add_argument("--market", default=None,
                   help="'default', 'real' (../shared/data/real) or a panel file (default: the config's)")
    p.add_argument("--answers", default=None,
                   help="sample answers: .json groups, .jsonl {group, completion} or text "
                        "(blank-line separated groups); default: the built-in sampler")
    p.add_argument("--json", default=None, metavar="OUT", help="also write the report as JSON to OUT")
    p.add_argument("--checks", default=None, help="comma-separated subset of the checks (--list)")
    p.add_argument("--list", action="store_true", help="list the checks and exit")
    p.add_argument("-v", "--verbose", action="store_true", help="print every check's details")
    from gymkit.cli.options import add_market_args

    add_market_args(p, market=False)


def run(args: argparse.Namespace) -> int:
    """Run the audit; exit code 0 when every check passes, 1 otherwise."""
    from .checks import CHECK_NAMES, CHECKS, run_checks
    from .report import checklist_line, header_lines, report_dict, report_text, write_json
    from .target import build_target

    if args.list:
        for c in CHECKS:
            print(f"{c.name:<20} {c.question}  ({c.source})")
        return 0
    names = None if args.checks is None else [n.strip() for n in args.checks.split(",") if n.strip()]
    if names is not None:
        unknown = [n for n in names if n not in CHECK_NAMES]
        if unknown:
            raise ValueError(f"unknown audit check(s) {unknown}; known: {list(CHECK_NAMES)}")
    from gymkit.cli.options import parse_split, read_market

    t0 = time.perf_counter()
    market = args.market
    if market not in (None, "default", "real") and (args.lenient or args.columns or args.adjust):
        market = read_market(args, market)  # the options need the loader; a panel travels
    target = build_target(args.env or "us46-default", config=args.config, market=market,
                          answers=args.answers, split=parse_split(args.split))
    print("\n".join(header_lines(target)) + "\n", flush=True)
    results = run_checks(target, names,
                         progress=lambda r: print(checklist_line(r, args.verbose), flush=True))
    seconds = time.perf_counter() - t0
    summary = report_text(target, results, seconds).splitlines()[-1]
    print("\n" + summary, flush=True)
    if args.json:
        write_json(args.json, report_dict(target, results, seconds))
        print(f"report written to {args.json}", file=sys.stderr)
    return 0 if all(r.passed for r in results) else 1
