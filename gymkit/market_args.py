"""Moved to :mod:`gymkit.cli.options`; these names stay importable from here for the command
modules outside the CLI package that read a market (score-file, export-sft, jepa)."""

from gymkit.cli.options import add_market_args, make_env, note, parse_split, read_market

__all__ = ["add_market_args", "make_env", "note", "parse_split", "read_market"]
