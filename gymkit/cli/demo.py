"""``gymkit demo``: the sample group, its cards and the tear sheet; arguments and handler in :mod:`gymkit.demo`."""

from __future__ import annotations

import argparse


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gymkit demo`` (``gymkit.demo.configure``)."""
    from gymkit.demo import configure as configure_command

    configure_command(p)


def run(args: argparse.Namespace) -> int:
    """Handler of ``gymkit demo`` (``gymkit.demo.run_cli``)."""
    from gymkit.demo import run_cli

    return int(run_cli(args))
