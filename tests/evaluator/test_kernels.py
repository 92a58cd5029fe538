"""Every kernel against the pandas reference, on random and adversarial inputs.

Parity is identical NaN masks and |ours - ref| <= atol + 1e-9·|ref|.  ``atol`` is 0
except where a result is a difference of nearly equal terms, so the reference's own
rounding is not relative to the (tiny) result; those bounds are listed in
:data:`ATOL` with the reason.
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction

import numpy as np
import pytest

from gymkit.dsl import kernels as K
from gymkit.dsl.operators import EXPR, OPERATORS, WINDOW

from .inputs import assert_parity, make_inputs
from .pandas_reference import (
    REFERENCE,
    pandas_ts_corr,
    pandas_ts_cov,
    pandas_ts_mean,
    pandas_ts_std,
    pandas_ts_sum,
)

INPUTS = make_inputs()
WINDOWS = (1, 2, 3, 5, 10, 30)  # ts_rank: d <= 20 run engines compiled per d, 30 the generic one
TS_OPS = tuple(name for name, spec in OPERATORS.items() if spec.args == (EXPR, WINDOW))
PAIR_OPS = ("ts_corr", "ts_cov")


def _scale(x: np.ndarray) -> float:
    return float(np.nanmax(np.abs(np.where(np.isfinite(x), x, np.nan))))


# Absolute slack, as a multiple of eps·max|x|·d (cancelling sums/differences of inputs),
# or a fixed value for dimensionless results whose numerator cancels (skew ~ 0, kurt).
def ATOL(op: str, x: np.ndarray, d: int) -> float:
    eps = np.finfo(float).eps
    if op in ("ts_sum", "ts_mean", "ts_delta", "ts_decay_linear", "ts_ema", "ts_slope",
              "ts_cov"):
        # a sum of d terms that nearly cancels: both sides carry ~eps·Σ|x| of rounding
        return 8 * eps * _scale(x) * max(d, 2) * (_scale(x) if op == "ts_cov" else 1.0)
    if op in ("ts_skew", "ts_kurt", "ts_corr"):
        return 1e-10  # third/fourth central moment (or covariance) ~ 0 in a symmetric window
    return 0.0


def test_kernels_cover_every_registry_operator():
    assert set(K.KERNELS) == set(OPERATORS)
    assert set(REFERENCE) == set(OPERATORS)


@pytest.mark.parametrize("op", TS_OPS)
@pytest.mark.parametrize("data", sorted(INPUTS))
def test_time_series_kernel_matches_pandas(op, data):
    x = INPUTS[data]
    if op in ("ts_skew", "ts_kurt", "ts_std", "ts_slope") and data == "walk":
        pytest.skip("price-level moments: pandas loses digits; see test_moments_on_price_level")
    for d in WINDOWS:
        ours = K.KERNELS[op](x, d)
        assert_parity(ours, REFERENCE[op](x, d), atol=ATOL(op, x, d), what=f"{op}({data}, {d})")
        pandas_op = {"ts_std": pandas_ts_std, "ts_sum": pandas_ts_sum,
                     "ts_mean": pandas_ts_mean}.get(op)
        if pandas_op is not None:  # pandas' own rolling, on these well-scaled inputs
            assert_parity(ours, pandas_op(x, d), atol=ATOL(op, x, d),
                          what=f"pandas {op}({data}, {d})")


@pytest.mark.parametrize("op", PAIR_OPS)
@pytest.mark.parametrize("pair", [("normal", "ties"), ("ties", "const"), ("normal", "infs"),
                                  ("positive", "normal"), ("const", "const")])
def test_pair_kernel_matches_pandas(op, pair):
    """Against pandas' own rolling corr/cov and against the two-pass reference."""
    x, y = INPUTS[pair[0]], INPUTS[pair[1]]
    pandas_op = {"ts_corr": pandas_ts_corr, "ts_cov": pandas_ts_cov}[op]
    for d in WINDOWS:
        atol = ATOL(op, x, d) * (_scale(y) if op == "ts_cov" else 1.0)
        ours = K.KERNELS[op](x, y, d)
        assert_parity(ours, pandas_op(x, y, d), atol=atol, what=f"pandas {op}({pair}, {d})")
        assert_parity(ours, REFERENCE[op](x, y, d), atol=atol, what=f"{op}({pair}, {d})")


def _exact(op: str, w: np.ndarray) -> float:
    """The statistic of one window (oldest first) from exact rational central moments.

    (A float two-pass is not exact enough here: the rounded mean of 500 + 1e-6 noise
    shifts every deviation by ~3e-14, i.e. ~3e-8 of the deviations themselves.)
    """
    n = w.size
    xs = [Fraction(float(v)) for v in w]
    m = sum(xs) / n
    c = [v - m for v in xs]
    m2, m3, m4 = (float(sum(v**p for v in c) / n) for p in (2, 3, 4))
    if op == "ts_std":
        return math.sqrt(m2 * n / (n - 1))
    if op == "ts_skew":
        return math.sqrt(n * (n - 1)) / (n - 2) * (m3 / m2**1.5)
    if op == "ts_kurt":
        return ((n * n - 1) * m4 / m2**2 - 3 * (n - 1) ** 2) / ((n - 2) * (n - 3))
    if op == "ts_slope":
        i = [Fraction(2 * k - (n - 1), 2) for k in range(n)]
        return float(sum(a * b for a, b in zip(i, c, strict=True)) / sum(a * a for a in i))
    raise KeyError(op)


@pytest.mark.parametrize("op", ["ts_std", "ts_skew", "ts_kurt", "ts_slope"])
def test_moments_on_price_level(op):
    """close ≈ 500 with noise 1e-6: running sums must not cancel (pandas itself drifts here)."""
    rng = np.random.default_rng(3)
    x = 500.0 + rng.normal(0, 1e-6, (400, 3))
    x[:, 1] = 500.0 + np.cumsum(rng.normal(0, 1e-4, 400))  # a slow walk
    x[:, 2] += np.linspace(0, 50, 400)                        # a strong trend
    for d in (5, 21, 63):
        ours = K.KERNELS[op](x, d)
        for t in range(d - 1, 400, 23):
            for j in range(3):
                want = _exact(op, x[t - d + 1:t + 1, j])
                got = ours[t, j]
                tol = 1e-9 * abs(want) + (1e-9 if op in ("ts_skew", "ts_kurt") else 0.0)
                assert abs(got - want) <= tol, (op, d, t, j, got, want)


def test_corr_cov_on_price_level():
    rng = np.random.default_rng(4)
    x = 500.0 + rng.normal(0, 1e-6, (300, 2))
    y = 0.5 * x + rng.normal(0, 1e-6, (300, 2)) + 100.0
    for d in (5, 21, 63):
        corr, cov = K.ts_corr(x, y, d), K.ts_cov(x, y, d)
        for t in range(d - 1, 300, 5):
            for j in range(2):
                a, b = x[t - d + 1:t + 1, j], y[t - d + 1:t + 1, j]
                ca, cb = a - a.mean(), b - b.mean()
                want_cov = (ca @ cb) / (d - 1)
                want_corr = (ca @ cb) / np.sqrt((ca @ ca) * (cb @ cb))
                assert abs(cov[t, j] - want_cov) <= 1e-9 * abs(want_cov) + 1e-24
                assert abs(corr[t, j] - want_corr) <= 1e-9


def test_cross_sectional_kernels_match_pandas():
    for name, x in INPUTS.items():
        for op in ("rank", "scale"):
            assert_parity(K.KERNELS[op](x), REFERENCE[op](x), what=f"{op}({name})")
        codes = np.array([0, 1, 0, -1, 2, 1, 0])
        assert_parity(K.group_neutralize(x, codes), REFERENCE["group_neutralize"](x, codes),
                      atol=8 * np.finfo(float).eps * _scale(x), what=f"group_neutralize({name})")


def test_rank_sort_path_for_wide_rows():
    """More than 64 finite values per row takes the sorting path: same values as pandas."""
    rng = np.random.default_rng(5)
    x = rng.integers(0, 30, (50, 150)).astype(float)
    x[rng.random(x.shape) < 0.1] = np.nan
    assert_parity(K.rank(x), REFERENCE["rank"](x), rtol=0.0, what="rank wide")


ELEMENTWISE = ("add", "sub", "mul", "div", "power", "lt", "le", "gt", "ge", "eq", "ne", "and",
               "or", "signed_power", "min", "max")


@pytest.mark.parametrize("op", ELEMENTWISE)
def test_binary_elementwise_matches_reference(op):
    rng = np.random.default_rng(6)
    pool = np.array([0.0, -0.0, 1.0, -1.0, 2.0, 0.5, -2.5, 3.0, np.nan, np.inf, -np.inf, 1e300,
                     -1e-300, 7.25])
    a = rng.choice(pool, (60, 9))
    b = rng.choice(pool, (60, 9))
    for lhs, rhs in ((a, b), (a, 2.0), (-0.5, b), (a, 0.0)):
        assert_parity(K.KERNELS[op](lhs, rhs), np.broadcast_to(REFERENCE[op](lhs, rhs), a.shape),
                      rtol=1e-15, what=op)


@pytest.mark.parametrize("op", ["neg", "abs", "log", "sqrt", "sign"])
def test_unary_elementwise_matches_reference(op):
    x = INPUTS["infs"] * 3.0
    x[0, :3] = (0.0, -0.0, -4.0)
    assert_parity(K.KERNELS[op](x), REFERENCE[op](x), rtol=1e-15, what=op)


def test_where_semantics():
    c = np.array([[1.0, 0.0, np.nan, -2.0, 0.0]])
    a = np.array([[5.0, 5.0, 5.0, 5.0, np.nan]])
    b = np.array([[np.nan, 7.0, 7.0, 7.0, 7.0]])
    np.testing.assert_array_equal(K.where(c, a, b), [[5.0, 7.0, np.nan, 5.0, 7.0]])
    assert_parity(K.where(c, a, b), REFERENCE["where"](c, a, b), rtol=0.0)


@pytest.mark.parametrize("op", ["add", "mul", "min", "max", "eq", "ne", "and", "or"])
def test_commutative_elementwise_bit_identical(op):
    x, y = INPUTS["infs"], INPUTS["ties"] - 1.0
    x = np.where(np.arange(N_COLS := x.shape[1]) % 2 == 0, x, -0.0)  # signed zeros vs ties
    assert N_COLS == y.shape[1]
    assert K.KERNELS[op](x, y).tobytes() == K.KERNELS[op](y, x).tobytes()


@pytest.mark.parametrize("op", PAIR_OPS)
def test_pair_kernels_symmetric_bit_identical(op):
    x, y = INPUTS["walk"], INPUTS["normal"]
    for d in (2, 10, 30):
        assert K.KERNELS[op](x, y, d).tobytes() == K.KERNELS[op](y, x, d).tobytes()


def test_documented_choices():
    x = np.array([[1.0], [3.0], [3.0], [2.0], [np.nan], [4.0], [5.0], [6.0]])
    # argmax/argmin ties: the earliest occurrence (largest count back from today)
    np.testing.assert_array_equal(K.ts_argmax(x, 3)[2:4, 0], [1.0, 2.0])
    np.testing.assert_array_equal(K.ts_argmin(np.array([[2.0], [1.0], [1.0]]), 3)[2], [1.0])
    # ts_rank d = 1 is 0.5; ts_rank ties count half
    np.testing.assert_array_equal(K.ts_rank(x, 1)[:4, 0], [0.5] * 4)
    assert K.ts_rank(x, 3)[2, 0] == 0.75  # 3 vs (1, 3): one below, one equal
    # ts_ema: seeded with the first full window mean, NaN restarts the seed
    e = K.ts_ema(x, 2)[:, 0]
    assert np.isnan(e[0]) and e[1] == 2.0 and e[2] == pytest.approx(8.0 / 3.0, rel=1e-15)
    assert np.isnan(e[4]) and np.isnan(e[5]) and e[6] == 4.5
    # std of a constant window is 0.0, d = 1 gives NaN; corr of a constant window NaN; cov 0
    c = np.array([[2.0, 1.0], [2.0, 2.0], [2.0, 4.0]])
    # std of (1, 2, 4) with ddof 1 is sqrt(7/3): the kernel returns it correctly rounded
    # (np.std's own summation order lands 1 ulp below), exactly 0.0 on the constant column.
    exact = float((decimal.Decimal(7) / decimal.Decimal(3)).sqrt(decimal.Context(prec=50)))
    np.testing.assert_array_equal(K.ts_std(c, 3)[2], [0.0, exact])
    assert np.isnan(K.ts_std(c, 1)).all()
    assert np.isnan(K.ts_corr(c, c[:, ::-1].copy(), 3)[2]).all()
    assert (K.ts_cov(c, c[:, ::-1].copy(), 3)[2] == 0.0).all()
    assert np.isnan(K.ts_slope(c, 1)).all() and K.ts_slope(c, 3)[2, 0] == 0.0
    # delay before the start is NaN
    assert np.isnan(K.delay(x, 2)[:2]).all() and K.delay(x, 2)[3, 0] == 3.0
    # cross-sectional: one finite value -> 0.5, none -> NaN, zero row of scale -> NaN
    r = K.rank(np.array([[np.nan, 4.0, np.nan], [np.nan] * 3, [1.0, 1.0, 2.0]]))
    np.testing.assert_array_equal(r, [[np.nan, 0.5, np.nan], [np.nan] * 3, [0.25, 0.25, 1.0]])
    assert np.isnan(K.scale(np.array([[0.0, 0.0, np.nan]]))).all()
    # element-wise edge cases
    assert np.isnan(K.div(np.array([[1.0, 0.0]]), 0.0)).all()
    assert np.isnan(K.power(np.array([[-8.0, 0.0]]), np.array([[1 / 3, -1.0]]))).all()
    assert K.sign(np.array([[0.0, -0.0]])).tolist() == [[0.0, 0.0]]
    assert np.isnan(K.and_(np.array([[0.0]]), np.nan)).all()
    big = np.array([[1e200], [1e200], [1e200]])
    assert np.isnan(K.ts_product(big, 2)[1:]).all() and np.isnan(K.mul(big, big)).all()


def test_time_series_kernels_never_look_ahead():
    rng = np.random.default_rng(8)
    x = INPUTS["normal"]
    for op in TS_OPS:
        for d in (1, 3, 30):
            base = K.KERNELS[op](x, d)
            for k in (0, 57, 150):
                y = x.copy()
                y[k + 1:] = rng.normal(size=y[k + 1:].shape)
                assert K.KERNELS[op](y, d)[:k + 1].tobytes() == base[:k + 1].tobytes(), (op, d, k)


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "5"])
def test_bad_window_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="ts_mean: window must be an integer >= 1"):
        K.ts_mean(INPUTS["normal"], bad)


def test_bad_shape_is_a_clear_error():
    with pytest.raises(ValueError, match=r"ts_std: expected a \(T, N\) float64 array"):
        K.ts_std(np.zeros(5), 2)
    with pytest.raises(ValueError, match="ts_corr: x and y shapes differ"):
        K.ts_corr(np.zeros((5, 2)), np.zeros((5, 3)), 2)


def test_window_longer_than_history_is_all_nan():
    for op in TS_OPS:
        assert np.isnan(K.KERNELS[op](INPUTS["normal"][:5], 9)).all(), op


def test_kernels_return_fresh_c_contiguous_arrays():
    x = INPUTS["normal"]
    for op in ("ts_mean", "rank", "add"):
        args = (x, 3) if op == "ts_mean" else (x,) if op == "rank" else (x, x)
        out = K.KERNELS[op](*args)
        assert out.flags.c_contiguous and out.flags.writeable and not np.shares_memory(out, x)
