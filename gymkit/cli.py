"""The ``gymkit`` command line.  Subcommands are rows of one table, ``COMMANDS``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Command:
    """One CLI subcommand: its name, one-line help, argument setup and handler."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def market_summary(panel: object, title: str) -> str:
    """Return a human-readable multi-line summary of a Panel (shape, span, fields, stats)."""
    from gymkit.data import DEFAULT_SPLIT, Panel

    assert isinstance(panel, Panel)
    r = panel.field("returns")[1:]  # row 0 has no previous close
    vol = np.nanstd(r, axis=0, ddof=1) * np.sqrt(252)
    mkt = np.nanmean(r, axis=1)
    train = DEFAULT_SPLIT.train(panel)
    hold = int(DEFAULT_SPLIT.holdout_mask(panel.dates).sum())
    opt = [n for n in ("cap", "sector", "industry") if getattr(panel, n) is not None]
    lines = [
        f"{title}",
        f"  sessions     {panel.T} ({panel.dates[0]} .. {panel.dates[-1]}, NYSE)",
        f"  stocks       {panel.N}: {' '.join(panel.tickers[:8])}{' ...' if panel.N > 8 else ''}",
        f"  split        train {train.T} sessions to {DEFAULT_SPLIT.train_end}, holdout {hold} sessions",
        f"  fields       open high low close volume | derived returns vwap | optional {' '.join(opt) or '-'}",
        f"  missing      {np.isnan(panel.close).mean():.2%} of close cells",
        f"  volatility   median {np.nanmedian(vol):.1%}/yr across stocks "
        f"(10%-90%: {np.nanpercentile(vol, 10):.1%}-{np.nanpercentile(vol, 90):.1%})",
        f"  market       equal-weight {np.nanmean(mkt) * 252:+.1%}/yr, vol {np.nanstd(mkt) * np.sqrt(252):.1%}/yr",
        f"  fingerprint  {panel.fingerprint}",
    ]
    if panel.sector is not None:
        lines.insert(4, f"  sectors      {len(set(panel.sector))} sectors"
                        + (f", {len(set(panel.industry))} industries" if panel.industry else ""))
    return "\n".join(lines)


def _cmd_market(args: argparse.Namespace) -> int:
    from gymkit.data import default_market, load_panel

    panel = default_market() if args.path is None else load_panel(args.path, adjust=args.adjust)
    title = "gymkit default market (synthetic, embedded)" if args.path is None else f"panel {args.path}"
    print(market_summary(panel, title))
    return 0


def _configure_market(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", nargs="?", default=None, help="a panel file (default: the embedded market)")
    p.add_argument("--adjust", action="store_true", help="apply split/dividend columns")


def _cmd_demo(args: argparse.Namespace) -> int:
    from gymkit.data import default_market
    from gymkit.demo import run_demo

    if not args.json:
        print(market_summary(default_market(), "gymkit default market (synthetic, embedded)"))
        print()
    print(run_demo(args.env, as_json=args.json))
    return 0


def _configure_demo(p: argparse.ArgumentParser) -> None:
    p.add_argument("--env", default="us46-default", help="environment id (default: us46-default)")
    p.add_argument("--json", action="store_true", help="print the score cards as JSON lines")


COMMANDS: tuple[Command, ...] = (
    Command("demo", "score a sample group of answers on the embedded market", _configure_demo, _cmd_demo),
    Command("market", "summarise the embedded default market or a panel file", _configure_market, _cmd_market),
)


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser with one subparser per row of ``COMMANDS``."""
    parser = argparse.ArgumentParser(prog="gymkit", description=__doc__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for cmd in COMMANDS:
        sp = sub.add_parser(cmd.name, help=cmd.help, description=cmd.help)
        cmd.configure(sp)
        sp.set_defaults(_run=cmd.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``gymkit`` console script; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "_run", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args._run(args))
    except (ValueError, KeyError, FileNotFoundError) as exc:
        print(f"gymkit {args.command}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
