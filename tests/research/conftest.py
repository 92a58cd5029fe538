"""One research environment per test session (building the archive is the slow part)."""

from __future__ import annotations

import pytest

from gymkit.research import make_research

HONEST = "rank(-ts_sum(returns, 5))"


@pytest.fixture(scope="session")
def renv():
    return make_research("us46-research")
