"""The one ranking routine (``rank`` and the book's weights): both paths agree exactly.

Panels of up to 64 stocks are ranked by a pair count, wider ones by NumPy's sort of packed
keys (the value's high bits and the column), with runs of equal high bits resolved on the
full keys (one tie group, an insertion sort up to 32 values, the radix sort above).
Every path must give pandas' average-tie rank mapped to [0, 1], exactly, and the book's
centred weights of scipy's average ranks, exactly.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import rankdata

from gymkit.dsl import kernels as K
from gymkit.verifiers import book_weights


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


@pytest.mark.parametrize("n", [2, 3, 15, 16, 17, 46, 64, 65, 130, 700])
@pytest.mark.parametrize("kind", ["smooth", "float32_clash", "ties_then_none", "nan_inf", "huge_tiny"])
def test_rank_equals_pandas_average_rank_on_every_path(kind, n):
    rng = np.random.default_rng(n * 7 + len(kind))
    x = np.ascontiguousarray(_rows(kind, rng, n))
    got = K.KERNELS["rank"](x)
    want = _reference(np.where(np.isfinite(x), x, np.nan))
    np.testing.assert_array_equal(got, want)


_SPECIAL = [0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, 1e300, -1e-310, 5e-324,
            1.0 + 2.0**-52, np.nextafter(1.0, 0.0)]


@st.composite
def _panels(draw) -> np.ndarray:
    """Rows of 1 … 200 values drawn from a small pool (ties), specials (NaN, ±inf, ±0,
    subnormals, neighbouring doubles) and random doubles."""
    n = draw(st.integers(1, 200))
    t = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    pool = np.concatenate([_SPECIAL, rng.normal(size=6), np.round(rng.normal(size=4) * 3)])
    x = pool[rng.integers(0, pool.size, (t, n))]
    wild = rng.random((t, n)) < draw(st.sampled_from([0.0, 0.5, 1.0]))
    return np.where(wild, rng.normal(size=(t, n)) * 10.0 ** rng.integers(-300, 300, (t, n)), x)


def _slow_weights(row: np.ndarray) -> np.ndarray:
    out = np.zeros(row.size)
    fin = np.isfinite(row)
    n = int(fin.sum())
    if n < 2:
        return out
    c = rankdata(row[fin], method="average") - 0.5 * (n + 1)
    g = float(np.abs(c).sum())  # multiples of 0.5: exact in any order
    if g:
        out[fin] = c / g
    return out


@settings(max_examples=300, deadline=None)
@given(_panels())
def test_rank_and_book_weights_are_exact_on_random_rows(x):
    """Ties, NaN, ±inf, -0.0, subnormals and huge values, on both sides of 64 values."""
    x = np.ascontiguousarray(x)
    want = _reference(np.where(np.isfinite(x), x, np.nan))
    assert K.KERNELS["rank"](x).tobytes() == want.tobytes()
    w = book_weights(x)
    for t in range(x.shape[0]):
        assert w[t].tobytes() == _slow_weights(x[t]).tobytes()


@pytest.mark.parametrize("n", [65, 300, 5000])
def test_near_ties_that_share_the_packed_keys_high_bits(n):
    """Distinct doubles one ulp apart share the sort key's high bits (the low bits hold the
    column): runs resolved by the insertion sort (small clusters), the radix sort (one wide
    cluster) and as one tie group (exact copies), mixed with NaN; exactly pandas' ranks."""
    rng = np.random.default_rng(n)
    ulp = 2.0**-52
    clusters = 1.0 + rng.integers(0, max(2, n // 6), (6, n)) * 2.0**-30 + rng.integers(0, 4, (6, n)) * ulp
    wide = 1.0 + rng.integers(0, 4 * n, (6, n)) * ulp                 # one run of every value
    copies = np.repeat(1.0 + rng.integers(0, 3, (6, 1)) * ulp, n, axis=1)
    copies[:, ::7] = 2.0
    x = np.concatenate([clusters, wide, copies, -wide])
    x[rng.random(x.shape) < 0.05] = np.nan
    assert len(np.unique(wide[0])) > n // 2  # many distinct values, all within 4n ulps of 1
    want = _reference(x)
    assert K.KERNELS["rank"](x).tobytes() == want.tobytes()
    w = book_weights(x)
    for t in range(x.shape[0]):
        assert w[t].tobytes() == _slow_weights(x[t]).tobytes()
