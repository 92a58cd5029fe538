"""``gymkit train``: sft, rl and report of one run directory; arguments and handler in :mod:`gymkit.train.cli`."""

from __future__ import annotations

import argparse


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gymkit train`` (``gymkit.train.cli.configure``)."""
    from gymkit.train.cli import configure as configure_command

    configure_command(p)


def run(args: argparse.Namespace) -> int:
    """Handler of ``gymkit train`` (``gymkit.train.cli.run``)."""
    from gymkit.train.cli import run as run_command

    return int(run_command(args))
