"""One default environment per session, shared with the adapters' per-process cache."""

from __future__ import annotations

import pytest

from gymkit.adapters.common import clear_memo, get_env
from gymkit.briefs import generate_briefs, probe_briefs

#: A group of answers: valid ones, a missing tag, a parse error, a static book.
GROUP = [
    "<alpha>rank(ts_std(volume, 8) / ts_std(close, 8))</alpha>",
    "<think>volume co-movement</think><alpha>-1 * ts_corr(rank(open), rank(volume), 10)</alpha>",
    "no tag at all",
    "<alpha>rank(close - open) / (high - low + 0.001)</alpha>",
    "<alpha>rank(ts_delta(close, 5)</alpha>",
    "<alpha>rank(ts_delta(volume, 3))</alpha>",
]
VALID = [True, True, False, True, False, True]


@pytest.fixture(scope="session")
def env():
    return get_env("us46-default")


@pytest.fixture(scope="session")
def brief_ids() -> list[str]:
    return [b.brief_id for b in probe_briefs(generate_briefs())]


@pytest.fixture(autouse=True)
def _fresh_memo():
    clear_memo()
    yield
    clear_memo()
