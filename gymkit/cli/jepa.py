"""``gymkit jepa``: JEPA training, stress worlds and their checks; arguments and handler in :mod:`gymkit.jepa.train`."""

from __future__ import annotations

import argparse


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gymkit jepa`` (``gymkit.jepa.train.configure``)."""
    from gymkit.jepa.train import configure as configure_command

    configure_command(p)


def run(args: argparse.Namespace) -> int:
    """Handler of ``gymkit jepa`` (``gymkit.jepa.train.run``)."""
    from gymkit.jepa.train import run as run_command

    return int(run_command(args))
