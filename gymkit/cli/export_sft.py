"""``gymkit export-sft``: verified pairs for supervised fine-tuning; arguments and handler in :mod:`gymkit.sft`."""

from __future__ import annotations

import argparse


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gymkit export-sft`` (``gymkit.sft.configure_cli``)."""
    from gymkit.sft import configure_cli

    configure_cli(p)


def run(args: argparse.Namespace) -> int:
    """Handler of ``gymkit export-sft`` (``gymkit.sft.run_export_cli``)."""
    from gymkit.sft import run_export_cli

    return int(run_export_cli(args))
