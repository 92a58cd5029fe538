"""ts_median's kernel against pandas ``rolling(d, min_periods=d).median()``.

The kernel is ``gymkit.dsl.kernels.rolling.ts_median``.  Parity is exact: a median is one
of the window's values (d odd) or the mean of two of them (d even), so there is no
rounding for the two to disagree on.  Non-finite inputs count as missing (the full-window
rule), and -0.0 comes out as +0.0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from gymkit.dsl.kernels.rolling import ts_median

from .inputs import make_inputs


def pandas_median(x: np.ndarray, d: int) -> np.ndarray:
    a = np.array(x, dtype=np.float64)
    a[~np.isfinite(a)] = np.nan
    return pd.DataFrame(a).rolling(d, min_periods=d).median().to_numpy()


def _same(ours: np.ndarray, ref: np.ndarray) -> bool:
    return bool(np.array_equal(np.isnan(ours), np.isnan(ref))
                and np.array_equal(ours[~np.isnan(ours)], ref[~np.isnan(ref)]))


@pytest.mark.parametrize("data", sorted(make_inputs()))
@pytest.mark.parametrize("d", (1, 2, 3, 4, 5, 10, 30, 252))
def test_ts_median_equals_pandas_on_random_and_adversarial_panels(data, d):
    x = make_inputs()[data]
    assert _same(ts_median(x, d), pandas_median(x, d)), (data, d)


_VALUES = st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.5, 1e300, -1e300, 5e-324, np.nan, np.inf,
                           -np.inf]) | st.floats(-1e6, 1e6)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(arrays(np.float64, st.tuples(st.integers(1, 40), st.integers(1, 5)), elements=_VALUES),
       st.integers(1, 12))
def test_ts_median_property_ties_zeros_and_gaps(x, d):
    ours = ts_median(x, d)
    assert _same(ours, pandas_median(x, d))
    assert not np.signbit(ours[ours == 0.0]).any()  # -0.0 is returned as +0.0
    assert ours.flags.c_contiguous and ours.dtype == np.float64


def test_ts_median_bad_window_is_a_one_line_error():
    with pytest.raises(ValueError, match=r"ts_median: window must be an integer >= 1, got 0"):
        ts_median(np.zeros((3, 2)), 0)
