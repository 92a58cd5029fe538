"""``gymkit briefs``: design briefs and their split; arguments and handler in :mod:`gymkit.adapters.datasets`."""

from __future__ import annotations

import argparse


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gymkit briefs`` (``gymkit.adapters.datasets.configure_briefs_cli``)."""
    from gymkit.adapters.datasets import configure_briefs_cli

    configure_briefs_cli(p)


def run(args: argparse.Namespace) -> int:
    """Handler of ``gymkit briefs`` (``gymkit.adapters.datasets.run_briefs_cli``)."""
    from gymkit.adapters.datasets import run_briefs_cli

    return int(run_briefs_cli(args))
