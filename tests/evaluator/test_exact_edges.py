"""Edge values a formula can compare against: they must be exact, as in pandas.

Found by review: the block engine returned a constant window's mean a few ulps off (so
``close > ts_mean(close, 3)`` fired on flat stretches), and correlations of exactly linear
pairs a few ulps above 1 (so ``sign(1 - ts_corr(x, y, d))`` was −1 and ``sqrt(1 - corr)``
NaN).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gymkit.dsl import kernels as K

# values not exact in binary, price-like, and a rank output (1/45)
CONSTANTS = [500.13, 0.1, 1.0 / 45.0, 17.77, -3.3, 123456.789]


@pytest.mark.parametrize("d", [2, 3, 5, 10, 21])
@pytest.mark.parametrize("value", CONSTANTS)
def test_mean_of_a_constant_window_is_the_constant(value, d):
    rng = np.random.default_rng(d)
    x = np.full((4 * d + 3, 3), value)
    x[: d + 1, 1] = rng.normal(value, 1.0, size=d + 1)  # a stretch that becomes flat later
    got = K.ts_mean(x, d)
    want = pd.DataFrame(x).rolling(d).mean().to_numpy()
    flat = np.all(x[d + 1 :] == value, axis=1)
    tail = got[d + 1 :][flat]
    assert np.all(tail[:, [0, 2]] == value)
    assert np.all(K.gt(x, got)[2 * d + 1 :] == 0.0) and np.all(K.lt(x, got)[2 * d + 1 :] == 0.0)
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("d", [3, 5, 10, 30])
@pytest.mark.parametrize(("a", "b"), [(3.0, 7.0), (-3.0, 7.0), (0.001, -2.5), (1e6, 1.0)])
def test_correlation_of_a_linear_pair_stays_in_unit_interval(d, a, b):
    rng = np.random.default_rng(d)
    x = 500.0 + np.cumsum(rng.normal(size=(200, 6)), axis=0)
    y = a * x + b
    c = K.ts_corr(x, y, d)
    fin = c[np.isfinite(c)]
    assert fin.size and np.all(np.abs(fin) <= 1.0)
    assert np.all(np.abs(np.abs(fin) - 1.0) < 1e-9)
    assert not np.isnan(K.sqrt(K.sub(1.0, np.abs(c)))[d:]).any()
