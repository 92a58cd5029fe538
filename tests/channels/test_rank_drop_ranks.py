"""R2's group ranking: the O(G²) count must equal scipy's average ranks bit for bit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import rankdata

from gymkit.verifiers.pbo import _descending_ranks, rank_drop_penalty

_VALUES = st.one_of(st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.5]),
                    st.floats(-5, 5, allow_nan=False, allow_infinity=False))


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.lists(_VALUES, min_size=1, max_size=300))
def test_descending_ranks_equal_scipy_average_ranks(values):
    """Ties (many repeated values, ±0.0) get the average rank; both paths (≤ 256 and > 256)."""
    x = np.array(values, dtype=np.float64)
    got = _descending_ranks(x)
    want = rankdata(-x, method="average") - 1.0
    assert got.dtype == np.float64
    assert np.array_equal(got, want)


@settings(max_examples=100, derandomize=True, deadline=None)
@given(st.lists(st.tuples(_VALUES, _VALUES), min_size=2, max_size=40))
def test_rank_drop_penalty_matches_the_scipy_definition(pairs):
    """The penalty is −0.48·max(0, rank_oos − rank_is)/(G − 1), ranks from scipy's definition."""
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    want = -0.48 * np.maximum(0.0, (rankdata(-b) - 1) - (rankdata(-a) - 1)) / (len(a) - 1) + 0.0
    assert np.array_equal(rank_drop_penalty(a, b), want)


def test_large_group_uses_the_same_ranks():
    x = np.repeat(np.arange(200.0), 2)  # 400 entries, every value tied twice
    assert np.array_equal(_descending_ranks(x), rankdata(-x) - 1.0)
