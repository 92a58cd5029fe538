"""The train context's one-pass kernels keep the bits of the definitions they replaced.

On a wide market the context's build was dominated by stride-N column walks and fresh
temporaries (RESULTS.md, issue 22), so these run as Numba kernels: ``_rolling_mean`` /
``_rolling_std`` row-major (a day's N stocks a pass, each stock its own chain in day order),
the factor signals, the forward open-to-open returns and their finite split in one pass
each.  The references here are the per-cell and numpy definitions they replaced.  Equal
bits, not a tolerance: R4, the book and every factor statistic are recorded to the bit.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gymkit.verifiers.book import forward_open_returns, split_forward_returns
from gymkit.verifiers.factors import (
    LOW_VOL_WINDOW,
    MOMENTUM_LOOKBACK,
    MOMENTUM_SKIP,
    REVERSAL_WINDOW,
    SIZE_ADV_WINDOW,
    _rolling_mean,
    _rolling_std,
    factor_signals,
)


def _mean_per_cell(x: np.ndarray, d: int) -> np.ndarray:
    t_n, n = x.shape
    out = np.full((t_n, n), np.nan)
    for j in range(n):
        for t in range(d - 1, t_n):
            w = x[t - d + 1 : t + 1, j]
            if not np.isfinite(w).all():
                continue
            s = 0.0
            for v in w:
                s += float(v)
            out[t, j] = s / d
    return out


def _std_per_cell(x: np.ndarray, d: int) -> np.ndarray:
    m = _mean_per_cell(x, d)
    out = np.full_like(m, np.nan)
    for j in range(x.shape[1]):
        for t in range(d - 1, x.shape[0]):
            if not np.isfinite(m[t, j]):
                continue
            ss = 0.0
            for v in x[t - d + 1 : t + 1, j]:
                e = float(v) - m[t, j]
                ss += e * e
            out[t, j] = np.sqrt(ss / (d - 1))
    return out


_SPECIAL = st.sampled_from([np.nan, np.inf, -np.inf, 1e308, -1e308, 0.0])


@st.composite
def _panels(draw: st.DrawFn) -> tuple[np.ndarray, int]:
    t_n = draw(st.integers(1, 30))
    n = draw(st.integers(1, 7))
    d = draw(st.integers(2, 12))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.normal(0.0, draw(st.sampled_from([1e-3, 1.0, 1e6])), (t_n, n))
    for _ in range(draw(st.integers(0, 6))):  # NaN gaps, infinities, overflowing sums
        x[draw(st.integers(0, t_n - 1)), draw(st.integers(0, n - 1))] = draw(_SPECIAL)
    return x, d


def _ratio_numpy(num: np.ndarray, den: np.ndarray, lag_num: int, lag_den: int) -> np.ndarray:
    out = np.full(num.shape, np.nan)
    lag = max(lag_num, lag_den)
    if num.shape[0] > lag:
        a = num[lag - lag_num : num.shape[0] - lag_num]
        b = den[lag - lag_den : den.shape[0] - lag_den]
        with np.errstate(divide="ignore", invalid="ignore"):
            out[lag:] = a / b - 1.0
    out[~np.isfinite(out)] = np.nan
    return out


def _signals_numpy(close: np.ndarray, volume: np.ndarray, cap: np.ndarray | None) -> dict[str, np.ndarray]:
    size = np.array(cap) if cap is not None else _mean_per_cell(close * volume, SIZE_ADV_WINDOW)
    return {
        "size": -size,
        "momentum": _ratio_numpy(close, close, MOMENTUM_SKIP, MOMENTUM_LOOKBACK),
        "reversal": -_ratio_numpy(close, close, 0, REVERSAL_WINDOW),
        "low_vol": -_std_per_cell(_ratio_numpy(close, close, 0, 1), LOW_VOL_WINDOW),
        "price_level": np.where(close > 0.0, -close, np.nan),
    }


def _forward_numpy(o: np.ndarray) -> np.ndarray:
    out = np.full(o.shape, np.nan)
    if o.shape[0] >= 3:
        with np.errstate(divide="ignore", invalid="ignore"):
            a, b = o[1:-1], o[2:]
            r = b / a - 1.0
        r[~(np.isfinite(r) & (a > 0) & (b > 0))] = np.nan
        out[:-2] = r
    return out


def _same_bits(got: np.ndarray, want: np.ndarray) -> None:
    """Equal shapes, NaN in the same cells, every other cell the same 64 bits (signed zeros too)."""
    assert got.shape == want.shape and got.dtype == want.dtype == np.float64
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(got.view(np.int64)[~np.isnan(got)], want.view(np.int64)[~np.isnan(want)])


@settings(max_examples=150, deadline=None)
@given(_panels())
def test_rolling_mean_and_std_equal_the_per_cell_definition_bit_for_bit(case):
    x, d = case
    _same_bits(_rolling_mean(x, d), _mean_per_cell(x, d))
    _same_bits(_rolling_std(x, d), _std_per_cell(x, d))


@st.composite
def _prices(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    t_n = draw(st.integers(1, 300))
    n = draw(st.integers(1, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    close = 50.0 * np.exp(np.cumsum(rng.normal(0.0, 0.02, (t_n, n)), axis=0))
    volume = rng.integers(0, 10**6, (t_n, n)).astype(np.float64)
    for _ in range(draw(st.integers(0, 8))):  # listing gaps, bad prints, zero and signed-zero prices
        cell = draw(st.integers(0, t_n - 1)), draw(st.integers(0, n - 1))
        close[cell] = draw(st.sampled_from([np.nan, np.inf, 0.0, -0.0, -3.0, 1e-300]))
    cap = close * 1e6 if draw(st.booleans()) else None
    return close, volume, cap


@settings(max_examples=80, deadline=None)
@given(_prices())
def test_factor_signals_and_forward_returns_equal_the_numpy_definitions_bit_for_bit(case):
    close, volume, cap = case
    got, want = factor_signals(close, volume, cap), _signals_numpy(close, volume, cap)
    assert list(got) == list(want)
    for name in want:
        _same_bits(got[name], want[name])
    fwd = forward_open_returns(close)  # the same arithmetic on any price grid
    _same_bits(fwd, _forward_numpy(close))
    vals, mask = split_forward_returns(fwd)
    finite = np.isfinite(fwd)
    _same_bits(vals, np.where(finite, fwd, 0.0))
    _same_bits(mask, finite.astype(np.float64))


def test_a_window_with_a_gap_is_nan_and_the_next_full_window_is_not():
    x = np.arange(1.0, 9.0).reshape(8, 1)
    x[2, 0] = np.nan
    m = _rolling_mean(x, 3)
    assert np.isnan(m[:5, 0]).all()  # rows 0-1 too short, rows 2-4 hold the gap
    assert m[5, 0] == (4.0 + 5.0 + 6.0) / 3
    assert _rolling_std(x, 3)[5, 0] == 1.0


def test_forward_returns_and_their_split_refuse_a_grid_that_is_not_two_dimensional():
    with pytest.raises(ValueError, match=r"^forward_open_returns: expected a \(T, N\) float64 array, got shape \(4,\)$"):
        forward_open_returns(np.array([10.0, 11.0, 12.0, 13.0]))
    with pytest.raises(ValueError, match=r"^split_forward_returns: expected a \(T, N\) float64 array, got shape \(2, 3, 4\)$"):
        split_forward_returns(np.ones((2, 3, 4)))
