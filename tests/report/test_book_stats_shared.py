"""The book command and the tear sheet report one set of market-relative book statistics."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from gymkit.book import book_stats, market_relative
from gymkit.report.analysis import book_stats as sheet_book_stats

_days = st.integers(2, 300)


@settings(max_examples=60, deadline=None)
@given(_days.flatmap(lambda d: st.tuples(
    arrays(np.float64, d, elements=st.floats(-0.2, 0.2)),
    arrays(np.float64, d, elements=st.floats(-0.2, 0.2)))))
def test_both_views_report_the_same_shared_figures(bm) -> None:
    """Return, Sharpe, beta, corr and drawdown are the same numbers in `gymkit book` and the
    tear sheet; only the down-day sets differ by design (below -1.5 % vs below 0)."""
    book, market = bm
    rel = market_relative(book, market)
    cmd = book_stats(book, market, book[:, None])
    sheet = sheet_book_stats("b", book, market, 1, 1.0)
    assert {k: cmd[k] for k in rel} == rel
    assert (sheet.total_return, sheet.sharpe, sheet.beta, sheet.corr, sheet.max_drawdown) == (
        rel["return"], rel["sharpe"], rel["beta"], rel["corr"], rel["max_drawdown"])


def test_market_relative_on_known_series() -> None:
    """A book that is twice the market has beta 2 and corr 1; a flat market gives 0, not NaN."""
    m = np.array([0.01, -0.02, 0.015, 0.0, -0.005])
    rel = market_relative(2 * m, m)
    assert np.isclose(rel["beta"], 2.0) and np.isclose(rel["corr"], 1.0)
    assert np.isclose(rel["return"], np.prod(1 + 2 * m) - 1)
    flat = market_relative(m, np.full(5, 0.001))
    assert flat["beta"] == 0.0 and flat["corr"] == 0.0
