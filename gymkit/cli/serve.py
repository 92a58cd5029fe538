"""``gymkit serve``: the HTTP verifier server; arguments and handler in :mod:`gymkit.server.serve`."""

from __future__ import annotations

import argparse


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gymkit serve`` (``gymkit.server.serve.configure_serve``)."""
    from gymkit.server.serve import configure_serve

    configure_serve(p)


def run(args: argparse.Namespace) -> int:
    """Handler of ``gymkit serve`` (``gymkit.server.serve.run_serve``)."""
    from gymkit.server.serve import run_serve

    return int(run_serve(args))
