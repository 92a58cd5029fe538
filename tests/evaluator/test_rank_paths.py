"""The cross-sectional ``rank``: the float32 counting pass and the float64 fall-back agree.

``rank`` counts on float32 keys first and falls back to the float64 count (ties, float32
clashes, rows of more than 64 values), skipping the float32 pass after tied rows.  Every
path must give pandas' average-tie rank mapped to [0, 1], exactly.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gymkit.dsl import kernels as K


def _reference(x: np.ndarray) -> np.ndarray:
    r = pd.DataFrame(x).rank(axis=1, method="average")
    n = pd.DataFrame(x).notna().sum(axis=1).to_numpy()[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (r.to_numpy() - 1.0) / (n - 1)
    out[(n == 1) & np.isfinite(x)] = 0.5
    return out


def _rows(kind: str, rng: np.random.Generator, n: int) -> np.ndarray:
    if kind == "smooth":
        return 100 + np.cumsum(rng.normal(size=(40, n)), axis=0)
    if kind == "float32_clash":  # distinct doubles that round to one float32 key
        return 500.0 + rng.integers(0, 4, size=(40, n)) * 1e-10 + rng.integers(0, 2, size=(40, n))
    if kind == "ties_then_none":  # tied rows, then untied ones: the float32 pass must resume
        x = rng.normal(size=(40, n))
        x[:20] = np.round(x[:20])
        return x
    if kind == "nan_inf":
        x = rng.normal(size=(40, n))
        x[rng.random(x.shape) < 0.3] = np.nan
        x[0, :2] = [np.inf, -np.inf]
        x[1, 1:] = np.nan  # one finite value: 0.5
        return x
    if kind == "huge_tiny":  # beyond float32's range and below its normal range
        x = rng.normal(size=(40, n)) * 1e300
        x[::2] = rng.normal(size=(20, n)) * 1e-310
        return x
    raise AssertionError(kind)


@pytest.mark.parametrize("n", [2, 3, 15, 16, 17, 46, 64, 65, 130])
@pytest.mark.parametrize("kind", ["smooth", "float32_clash", "ties_then_none", "nan_inf", "huge_tiny"])
def test_rank_equals_pandas_average_rank_on_every_path(kind, n):
    rng = np.random.default_rng(n * 7 + len(kind))
    x = np.ascontiguousarray(_rows(kind, rng, n))
    got = K.KERNELS["rank"](x)
    want = _reference(np.where(np.isfinite(x), x, np.nan))
    np.testing.assert_array_equal(got, want)
