"""``gymkit score-file``: bulk scoring of a file of answers; arguments and handler in :mod:`gymkit.scorefile`."""

from __future__ import annotations

import argparse


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gymkit score-file`` (``gymkit.scorefile.configure``)."""
    from gymkit.scorefile import configure as configure_command

    configure_command(p)


def run(args: argparse.Namespace) -> int:
    """Handler of ``gymkit score-file`` (``gymkit.scorefile.run_cli``)."""
    from gymkit.scorefile import run_cli

    return int(run_cli(args))
