"""The block-sum engines (ts_sum ts_mean ts_std ts_skew ts_kurt ts_cov ts_corr ts_slope
ts_decay_linear) on adversarial inputs, against the two-pass reference.

Every window sum is a suffix sum of the previous block of d rows plus a prefix sum of the
current block, of powers of x - x[b0] (b0 = the block's first row).  What can go wrong
there is tested here: windows straddling block boundaries and ending exactly on them,
T not a multiple of d, d in {1, 2, T-1, T, T+1}, NaN/inf runs shorter than, equal to and
longer than d (the shift row itself NaN), constant runs of d-1, d and d+1 rows, a huge
value entering and leaving the window, price levels with tiny variance and a trend.
"""

from __future__ import annotations

import numpy as np
import pytest

from gymkit.dsl import kernels as K

from .inputs import assert_parity
from .pandas_reference import REFERENCE

T = 97  # prime: no window length divides it
EPS = np.finfo(float).eps
SINGLE = ("ts_sum", "ts_mean", "ts_std", "ts_skew", "ts_kurt", "ts_slope", "ts_decay_linear")
PAIR = ("ts_cov", "ts_corr")
WINDOWS = (1, 2, 3, 4, 7, 10, 32, T - 1, T, T + 1)


def _adversarial(seed: int) -> np.ndarray:
    """(T, 9) columns, each one hazard."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(T, 9))
    x[:, 1] = 500.0 + rng.normal(0, 1e-6, T)                      # price level, tiny variance
    x[:, 2] = 500.0 + np.linspace(0, 40, T) + rng.normal(0, 1e-4, T)  # a trend on a level
    x[:, 3] = np.repeat(rng.normal(size=T // 4 + 1), 4)[:T]      # runs of 4 equal values
    x[30:40, 3] = 1.5                                             # a run of 10
    x[5:12, 4] = np.nan                                           # NaN runs of 7, 1, 10
    x[20, 4] = np.nan
    x[50:60, 4] = np.nan
    x[::10, 5] = np.nan                                           # NaN on block-start rows
    x[33, 6] = 1e12                                               # a huge value passes by
    x[44, 6] = np.inf
    x[70, 6] = -np.inf
    x[:, 7] = 2.5                                                 # never moves
    x[:, 8] = rng.integers(0, 3, T).astype(float)                 # many ties
    return x


def _atol(op: str, x: np.ndarray, y: np.ndarray | None, d: int) -> np.ndarray:
    """Per-column slack for the reference's own rounding (as test_kernels.ATOL, per column:
    a sum of d terms that nearly cancels carries ~eps·Σ|x|; skew/kurt/corr ~ 0 1e-10)."""
    scale = np.nanmax(np.abs(np.where(np.isfinite(x), x, np.nan)), axis=0)
    if op in ("ts_skew", "ts_kurt", "ts_corr"):
        return np.full(x.shape[1], 1e-10)
    if op == "ts_cov":
        ys = np.nanmax(np.abs(np.where(np.isfinite(y), y, np.nan)), axis=0)
        return 8 * EPS * scale * ys * max(d, 2) * scale
    if op == "ts_std":
        return np.zeros(x.shape[1])
    return 8 * EPS * scale * max(d, 2)


@pytest.mark.parametrize("op", SINGLE)
def test_single_block_engines_match_two_pass_reference(op):
    x = _adversarial(1)
    for d in WINDOWS:
        ours = K.KERNELS[op](x, d)
        ref = REFERENCE[op](x, d)
        for j in range(x.shape[1]):
            assert_parity(ours[:, [j]], ref[:, [j]], atol=_atol(op, x[:, [j]], None, d),
                          what=f"{op}(col {j}, {d})")


@pytest.mark.parametrize("op", PAIR)
def test_pair_block_engine_matches_two_pass_reference(op):
    x = _adversarial(2)
    y = _adversarial(3)[:, ::-1].copy()  # every hazard meets a different one
    for d in WINDOWS:
        ours = K.KERNELS[op](x, y, d)
        ref = REFERENCE[op](x, y, d)
        for j in range(x.shape[1]):
            assert_parity(ours[:, [j]], ref[:, [j]],
                          atol=_atol(op, x[:, [j]], y[:, [j]], d), what=f"{op}(col {j}, {d})")
        assert ours.tobytes() == K.KERNELS[op](y, x, d).tobytes()  # symmetric bit for bit


@pytest.mark.parametrize("op", SINGLE + PAIR)
def test_block_engines_treat_each_stock_alone(op):
    """A stock's values do not depend on its neighbours, bit for bit (same blocks, same
    shifts), and do not depend on data after t (no look-ahead through the block's shift)."""
    x = _adversarial(4)
    y = _adversarial(5)
    args = (lambda a, b: (a, b)) if op in PAIR else (lambda a, b: (a,))
    for d in (2, 5, 13):
        full = K.KERNELS[op](*args(x, y), d)
        for j in (1, 4, 6):
            alone = K.KERNELS[op](*args(np.ascontiguousarray(x[:, [j]]),
                                        np.ascontiguousarray(y[:, [j]])), d)
            assert alone.tobytes() == np.ascontiguousarray(full[:, [j]]).tobytes(), (op, d, j)
        for k in (d - 1, 2 * d - 1, 2 * d, 60):  # cut on and next to block boundaries
            x2, y2 = x.copy(), y.copy()
            x2[k + 1:] = 7.0
            y2[k + 1:] = -3.0
            cut = K.KERNELS[op](*args(x2, y2), d)
            assert cut[:k + 1].tobytes() == full[:k + 1].tobytes(), (op, d, k)


def test_constant_windows_are_exact():
    """A constant window: std 0.0, cov +0.0, slope 0.0, corr/skew/kurt NaN -- exactly, on
    a price level and right after a jump (the shift is a window value, so u = 0 exactly)."""
    x = np.empty((40, 2))
    x[:, 0] = 512.125
    x[:20, 1] = 3.0
    x[20:, 1] = 1e9 + 0.1  # a jump, then constant
    y = np.arange(80.0).reshape(40, 2)
    for d in (2, 3, 5, 8):
        last = slice(20 + d - 1, 40)
        for out in (K.ts_std(x, d), K.ts_cov(x, y, d), K.ts_slope(x, d)):
            assert (out[d - 1:, 0] == 0.0).all() and not np.signbit(out[d - 1:, 0]).any()
            assert (out[last, 1] == 0.0).all() and not np.signbit(out[last, 1]).any()
        for out in (K.ts_corr(x, y, d), K.ts_skew(x, d), K.ts_kurt(x, d)):
            assert np.isnan(out[:, 0]).all() and np.isnan(out[last, 1]).all()
        mean = K.ts_mean(x, d)[last, 1]  # a plain sum of d equal values: within d/2 ulps
        assert (np.abs(mean - (1e9 + 0.1)) <= d * np.spacing(1e9)).all()


def test_decay_and_sums_after_a_huge_value():
    """1e12 in the window, then gone: later windows carry no trace of it (no running sum)."""
    x = np.ones((60, 1))
    x[10, 0] = 1e12
    for d in (3, 7, 16):
        for op in ("ts_sum", "ts_mean", "ts_decay_linear"):
            out = K.KERNELS[op](x, d)
            assert (out[10 + d:, 0] == (d if op == "ts_sum" else 1.0)).all(), (op, d)
        assert (K.ts_std(x, d)[10 + d:, 0] == 0.0).all()
