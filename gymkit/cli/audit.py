"""``gymkit audit``: the pre-run checklist; arguments and handler in :mod:`gymkit.audit.command`."""

from __future__ import annotations

import argparse


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gymkit audit`` (``gymkit.audit.command.configure``)."""
    from gymkit.audit.command import configure as configure_command

    configure_command(p)


def run(args: argparse.Namespace) -> int:
    """Handler of ``gymkit audit`` (``gymkit.audit.command.run``)."""
    from gymkit.audit.command import run as run_command

    return int(run_command(args))
