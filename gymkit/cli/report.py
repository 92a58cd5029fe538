"""``gymkit report``: the HTML tear sheet; arguments and handler in :mod:`gymkit.report.command`."""

from __future__ import annotations

import argparse


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gymkit report`` (``gymkit.report.command.configure``)."""
    from gymkit.report.command import configure as configure_command

    configure_command(p)


def run(args: argparse.Namespace) -> int:
    """Handler of ``gymkit report`` (``gymkit.report.command.run``)."""
    from gymkit.report.command import run as run_command

    return int(run_command(args))
