"""One research environment per test session (building the archive is the slow part)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from gymkit.research import make_research

#: The planted reversal traded sector-neutral (the plain book is R4's reversal factor itself, a
#: factor clone whose reward R10 caps at 0 since channels-v6).
HONEST = "rank(group_neutralize(-ts_sum(returns, 5), sector))"


def adapters_module(name: str):
    """A helper module of tests/adapters (not a package), loaded by its path."""
    spec = importlib.util.spec_from_file_location(
        f"adapters_{name}", Path(__file__).resolve().parents[1] / "adapters" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def real_verifiers():
    """The ``verifiers`` library with a ``MultiTurnEnv`` (skip otherwise), never the checkout's
    ``verifiers/`` folder, which ``python -m pytest`` puts first on sys.path."""
    vf = adapters_module("conftest").real_verifiers()
    if not hasattr(vf, "MultiTurnEnv"):
        pytest.skip("the installed verifiers has no MultiTurnEnv")
    return vf


@pytest.fixture(scope="session")
def renv():
    return make_research("us46-research")
