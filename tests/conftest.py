"""Suite-wide isolation: the holdout ledger of every test lives in a temporary file.

Without this, ``probe --holdout`` / ``book --window holdout`` in one test run would be
refused in the next (the ledger is persistent by design: ``gymkit.holdout``).  Subprocesses
inherit the variable.  Tests that need a fresh ledger set their own.
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def _isolated_holdout_ledger(tmp_path_factory: pytest.TempPathFactory):
    old = os.environ.get("GYMKIT_HOLDOUT_LEDGER")
    os.environ["GYMKIT_HOLDOUT_LEDGER"] = str(tmp_path_factory.mktemp("ledger") / "holdout.sqlite")
    yield
    if old is None:
        os.environ.pop("GYMKIT_HOLDOUT_LEDGER", None)
    else:
        os.environ["GYMKIT_HOLDOUT_LEDGER"] = old
