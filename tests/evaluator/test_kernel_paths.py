"""The speed paths of the kernels, each against the pandas reference and against each other.

ts_max/min/argmax/argmin use block extremes (van Herk) with NaN-sticky comparisons; ts_rank
counts every window directly (an engine compiled per window length up to 20, a generic one
above); the cross-sectional rank (shared with the
verifiers' book) counts rows of <= 64 finite values and sorts wider ones; ts_sum/ts_mean
are block sums whose arithmetic carries the full-window NaN rule.  Every path must give
the reference's values, and paths that compute the same thing must agree bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from gymkit.dsl import kernels as K

from .inputs import assert_parity, make_inputs
from .pandas_reference import REFERENCE

INPUTS = make_inputs()
EXTREMES = ("ts_max", "ts_min", "ts_argmax", "ts_argmin")


def _scan_extreme(x: np.ndarray, d: int, op: str) -> np.ndarray:
    """Plain per-window scan (the definition): NaN if the window is short or holds a
    non-finite value, else its earliest max/min, or the sessions since it."""
    sgn = 1.0 if op in ("ts_max", "ts_argmax") else -1.0
    out = np.full(x.shape, np.nan)
    for t in range(d - 1, x.shape[0]):
        w = x[t - d + 1:t + 1]
        for j in range(x.shape[1]):
            col = w[:, j]
            if not np.isfinite(col).all():
                continue
            i = 0
            for k in range(1, d):
                if sgn * col[k] > sgn * col[i]:
                    i = k
            out[t, j] = (d - 1 - i) if op in ("ts_argmax", "ts_argmin") else col[i]
    return out


@pytest.mark.parametrize("op", EXTREMES)
@pytest.mark.parametrize("data", sorted(INPUTS))
def test_block_extremes_match_a_plain_scan_bit_for_bit_and_the_reference(op, data):
    x = INPUTS[data]
    for d in (1, 2, 3, 4, 5, 7, 11, 40, 239, 240, 300):
        ours = K.KERNELS[op](x, d)
        assert ours.tobytes() == _scan_extreme(x, d, op).tobytes(), (op, data, d)
        assert_parity(ours, REFERENCE[op](x, d), rtol=0.0, what=f"{op}({data}, {d})")


def test_extremes_keep_the_earliest_of_tied_signed_zeros():
    x = np.array([[0.0], [-0.0], [0.0], [-0.0], [0.0], [-0.0], [1.0], [1.0]])
    for d in (2, 3, 5, 6):
        for op in ("ts_max", "ts_argmax"):
            out = K.KERNELS[op](x, d)
            for t in range(d - 1, x.shape[0]):
                window = x[t - d + 1:t + 1, 0]
                i = int(np.argmax(window))  # numpy: the first of the equal maxima
                if op == "ts_argmax":
                    assert out[t, 0] == d - 1 - i
                else:
                    assert out[t, 0] == window[i] and np.signbit(out[t, 0]) == np.signbit(window[i])


@pytest.mark.parametrize("d", [2, 25, 60, 252])
def test_ts_rank_long_windows_match_reference(d):
    rng = np.random.default_rng(11)
    x = rng.integers(0, 6, (400, 5)).astype(float)  # many ties
    x[rng.random(x.shape) < 0.01] = np.nan
    x[:, 1] = rng.normal(size=400)
    assert_parity(K.ts_rank(x, d), REFERENCE["ts_rank"](x, d), rtol=0.0, what=f"ts_rank {d}")


def test_ts_rank_matches_reference_on_ties_nan_inf_and_signed_zeros():
    """ts_rank's exact counts on ties, NaN, +-inf and -0.0, for short and long windows."""
    rng = np.random.default_rng(5)
    x = np.round(rng.normal(size=(260, 9)) * 2.0, 0)  # ties everywhere
    x[rng.random(x.shape) < 0.03] = np.nan
    x[rng.random(x.shape) < 0.01] = np.inf
    x[rng.random(x.shape) < 0.01] = -np.inf
    x[x == 0.0] = -0.0
    x[:, 0] = rng.normal(size=260)  # one untied column
    for d in (1, 2, 7, 21, 60):
        assert_parity(K.ts_rank(x, d), REFERENCE["ts_rank"](x, d), rtol=0.0, what=f"ts_rank {d}")


@pytest.mark.parametrize("width", [1, 2, 3, 7, 63, 64, 65, 130])
def test_rank_count_and_sort_paths_match_reference(width):
    rng = np.random.default_rng(width)
    for x in (rng.integers(0, 9, (60, width)).astype(float), rng.normal(size=(60, width))):
        x[rng.random(x.shape) < 0.1] = np.nan
        x[rng.random(x.shape) < 0.02] = np.inf
        x[0] = np.nan
        assert_parity(K.rank(x), REFERENCE["rank"](x), rtol=0.0, what=f"rank width {width}")


@pytest.mark.parametrize("pad", [0, 70])  # pad > 64 finite values: the sort path
def test_rank_rows2_gives_twice_the_average_rank(pad):
    for row, want in (([3.0, np.nan, 1.0, 3.0, -np.inf, 2.0], [7.0, 0.0, 2.0, 7.0, 0.0, 4.0]),
                      ([4.0, 3.0, 1.0, 2.0, 6.0, 5.0], [8.0, 6.0, 2.0, 4.0, 12.0, 10.0]),
                      ([0.0, -0.0, -1.0, np.inf, np.nan, 1.0], [5.0, 5.0, 2.0, 0.0, 0.0, 8.0])):
        src = np.array(row + [100.0 + i for i in range(pad)])
        ranks2, counts = K.rank_rows2(K.read_only(np.stack([src, src[::-1]])), 0, 2)
        assert ranks2[1].tobytes() == ranks2[0][::-1].tobytes()  # each row on its own
        out, n = ranks2[0], counts[0]
        assert n == np.isfinite(src).sum() == counts[1]
        np.testing.assert_array_equal(out[:6], want)
        np.testing.assert_array_equal(out[6:], 2.0 * (np.arange(pad) + n - pad + 1))


@pytest.mark.parametrize("width", [2, 5, 46, 64, 65, 120])
def test_rank_of_smooth_and_switching_signals_matches_reference(width):
    """Smooth rows, a noisy spell, ties, gaps and a row with one finite value."""
    rng = np.random.default_rng(100 + width)
    smooth = 100.0 + np.cumsum(rng.normal(0, 0.05, (400, width)), axis=0)
    smooth[150:230] = rng.normal(size=(80, width))  # a noisy spell
    smooth[300:310] = np.round(smooth[300:310])     # ties
    smooth[rng.random(smooth.shape) < 0.03] = np.nan
    smooth[50, :] = np.nan
    smooth[60, 1:] = np.inf
    assert_parity(K.rank(smooth), REFERENCE["rank"](smooth), rtol=0.0, what=f"smooth {width}")


@pytest.mark.parametrize("op", ["ts_sum", "ts_mean"])
def test_running_sums_reanchor_per_stock(op):
    """Stocks with different gaps re-anchor at different rows; each matches the reference."""
    rng = np.random.default_rng(3)
    x = 500.0 + rng.normal(0, 1e-3, (300, 9))
    x[50:53, 0] = np.nan
    x[10, 3] = np.inf
    x[::37, 5] = np.nan
    x[120, 7] = 1e12  # a huge value that leaves the window: drift re-anchoring
    for d in (1, 4, 10, 33):
        ours = K.KERNELS[op](x, d)
        assert_parity(ours, REFERENCE[op](x, d), atol=8 * np.finfo(float).eps * 1e12 * d,
                      what=f"{op} {d}")
        cols = np.concatenate([K.KERNELS[op](np.ascontiguousarray(x[:, [j]]), d)
                               for j in range(x.shape[1])], axis=1)
        assert ours.tobytes() == cols.tobytes()  # a stock's values ignore its neighbours


@pytest.mark.parametrize("exponent", [2.0, 2, np.float64(2.0), 0.5, np.float64(0.5), 1, 1.0])
@pytest.mark.parametrize("signed", [False, True])
def test_scalar_power_fast_paths_match_the_general_path(exponent, signed):
    """x^2, x^0.5 and x^1 (scalar exponent) take a multiply / sqrt / copy: the same NaN mask
    and sign bits as the pow path, values within 1 ulp, and exactly numpy's square / sqrt."""
    rng = np.random.default_rng(21)
    x = np.concatenate([[0.0, -0.0, 1.5, -2.5, np.nan, np.inf, -np.inf, 1e200, -1e200, 1e-320,
                         -1e-320, 4.0], rng.normal(size=2000) * 100]).reshape(-1, 4)
    fast = (K.signed_power if signed else K.power)(x, exponent)
    slow = (K._signed_power_any if signed else K._power_any)(x, exponent)
    assert (np.isnan(fast) == np.isnan(slow)).all()
    ok = ~np.isnan(slow)
    assert (np.signbit(fast[ok]) == np.signbit(slow[ok])).all()
    assert (np.abs(fast[ok] - slow[ok]) <= np.spacing(np.abs(slow[ok]))).all()
    with np.errstate(all="ignore"):
        e = float(exponent)
        mag = np.abs(x) ** 2 if e == 2.0 else np.sqrt(np.abs(x)) if e == 0.5 else np.abs(x)
        want = np.where(x < 0, -mag, mag) if signed else (
            x * x if e == 2.0 else np.sqrt(x) if e == 0.5 else x.copy())
    want = np.where(np.isfinite(want) & np.isfinite(x), want, np.nan)
    np.testing.assert_array_equal(fast, want)
    assert_parity(fast, REFERENCE["signed_power" if signed else "power"](x, exponent), rtol=1e-15,
                  what=f"power fast path {exponent}")


def test_scalar_power_keeps_other_exponents_and_scalar_operands_on_pow():
    x = np.array([[2.0, 3.0], [0.25, np.nan]])
    assert K.power(x, 3.0).tobytes() == K._power_any(x, 3.0).tobytes()
    assert K.power(2.0, 0.5) == K._power_any(2.0, 0.5)  # scalar base stays a scalar
    assert K.power(x, np.full(x.shape, 2.0)).tobytes() == K._power_any(x, 2.0).tobytes()
