"""Options several commands share: the market's (``--market FILE --lenient --columns --adjust
--split``) and the holdout ledger's (``--force-holdout --ledger``).

``add_market_args(p)`` adds them to a subcommand; ``read_market(args)`` loads the file (or
returns None for the environment's own market), printing the loader's notes, warnings and
lenient report to stderr, one line each; ``make_env(args)`` builds the environment through
``gymkit.make`` so the split is resolved by the one rule (``gymkit.config.split_for_market``)
and the derived split is announced on stderr.  No command reads a market any other way.
``add_holdout_args(p)`` adds the holdout ledger's options (:mod:`gymkit.holdout`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_holdout_args", "add_market_args", "make_env", "non_negative_int", "note",
           "parse_split", "positive_int", "read_market"]


def add_market_args(p: argparse.ArgumentParser, *, market: bool = True, split: bool = True) -> None:
    """Add ``--market FILE``, ``--lenient``, ``--columns``, ``--adjust`` and ``--split``
    (``split=False``: a command whose own ``--split`` means something else)."""
    if market:
        p.add_argument("--market", default=None, metavar="FILE",
                       help="your own panel (CSV, CSV.GZ or Parquet; long or wide) instead of "
                            "the environment's market")
    p.add_argument("--lenient", action="store_true",
                   help="mask/drop rows that break a rule and report them, instead of failing")
    p.add_argument("--columns", default=None, metavar="MAP",
                   help="map schema names to your columns, e.g. date=Date,ticker=Name")
    p.add_argument("--adjust", action="store_true",
                   help="apply the file's split/dividend columns to prices and volume")
    if not split:
        return
    p.add_argument("--split", default=None, metavar="KEYS",
                   help="a (partial) split, e.g. train_end=2019-12-31 (default: the last 252 "
                        "sessions of your market are the holdout)")


def parse_split(text: str | None) -> dict[str, str] | None:
    """``train_end=2019-12-31,holdout_end=...`` -> dict (None when not given)."""
    if not text:
        return None
    out: dict[str, str] = {}
    for part in (p for p in text.split(",") if p.strip()):
        key, eq, value = part.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise ValueError(f"--split entry {part[:40]!r} is not KEY=YYYY-MM-DD "
                             "(keys: train_start, train_end, holdout_start, holdout_end)")
        out[key.strip()] = value.strip()
    return out


def _int_at_least(text: str, low: int) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if n < low:
        raise argparse.ArgumentTypeError(f"must be >= {low}, not {n}")
    return n


def positive_int(text: str) -> int:
    """An argparse ``type``: an integer >= 1 (else argparse's usage error naming the option,
    exit 2), for counts such as ``--workers`` where 0 or less has no meaning."""
    return _int_at_least(text, 1)


def non_negative_int(text: str) -> int:
    """An argparse ``type``: an integer >= 0 (else argparse's usage error naming the option,
    exit 2), for seeds."""
    return _int_at_least(text, 0)


def note(text: str) -> None:
    """Print one note line to stderr."""
    print(f"gymkit: note: {text}", file=sys.stderr)


def read_market(args: Any, path: str | None = None, *, listed: str = "brief") -> Any:
    """Load ``path`` (default ``args.market``) with the command's options; None when absent.

    Strict unless ``--lenient``; every column note, data-quality warning and lenient action
    is printed to stderr.  A warning lists its first few rows (``listed="brief"``, what the
    scoring commands print, with where to see more) or the report's first twenty
    (``listed="full"``: ``gymkit market FILE``).  Errors are one-line ``ValueError`` naming
    the file.
    """
    path = path if path is not None else getattr(args, "market", None)
    if path is None:
        return None
    from gymkit.data.columns import parse_mapping
    from gymkit.data.loaders import load_panel_with_report

    columns = parse_mapping(args.columns) if getattr(args, "columns", None) else None
    panel, report = load_panel_with_report(
        path, strict=not getattr(args, "lenient", False), adjust=getattr(args, "adjust", False),
        columns=columns)
    for line in report.notes:
        note(f"{path}: {line}")
    for rule, line in report.warned_first.items():
        short = report.warned_brief.get(rule, line) if listed == "brief" else line
        more = f"; 'gymkit market {path}' lists more" if short != line else ""
        note(f"{path}: warning {short}{more}")
    if not report.ok:  # the summary's counts, then where each rule fired first
        note(f"{path}: --lenient: {report.summary()}")
        for rule, line in report.first.items():
            note(f"{path}: --lenient: {line} (first of {report.counts[rule]} row(s))")
    return panel


def make_env(args: Any, env_id: str | None = None, **overrides: Any) -> Any:
    """``gymkit.make`` on the command's environment, market and split (module doc)."""
    import gymkit

    panel = read_market(args)
    split = parse_split(getattr(args, "split", None))
    if split is not None:
        overrides["split"] = split
    env = gymkit.make(env_id or getattr(args, "env", None) or "us46-default", market=panel,
                      **overrides)
    if env.split_note:
        note(env.split_note)
    return env


def add_holdout_args(p: argparse.ArgumentParser) -> None:
    """Add ``--force-holdout`` and ``--ledger`` (the holdout ledger, :mod:`gymkit.holdout`)."""
    p.add_argument("--force-holdout", action="store_true",
                   help="look at the holdout again although the ledger has a look (printed and "
                        "recorded)")
    p.add_argument("--ledger", default=None, metavar="FILE",
                   help="holdout ledger (default $GYMKIT_HOLDOUT_LEDGER or "
                        "~/.cache/gymkit/holdout-ledger.sqlite)")
