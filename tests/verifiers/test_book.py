"""Book construction: weights, timing, NaN rules, turnover (DESIGN §4)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from gymkit.verifiers import book_pnl, book_weights, forward_open_returns

from .conftest import load_reference

REF = load_reference()


def test_weights_are_centred_ranks_with_gross_one():
    w = book_weights(np.array([[3.0, 1.0, 2.0, 4.0]]))
    # ranks 3,1,2,4 -> centred 0.5,-1.5,-0.5,1.5 -> /4
    np.testing.assert_array_equal(w, [[0.125, -0.375, -0.125, 0.375]])


def test_ties_get_average_rank_and_nan_is_excluded():
    w = book_weights(np.array([[1.0, 1.0, np.nan, 3.0, np.inf]]))
    # finite: 1,1,3 -> ranks 1.5,1.5,3 -> centred -0.5,-0.5,1 -> /2
    np.testing.assert_array_equal(w, [[-0.25, -0.25, 0.0, 0.5, 0.0]])


def test_fewer_than_two_finite_values_hold_nothing():
    w = book_weights(np.array([[np.nan, 5.0, np.nan], [np.nan] * 3]))
    assert np.all(w == 0.0) and not np.any(np.signbit(w))


def test_constant_cross_section_holds_nothing_not_nan():
    w = book_weights(np.full((3, 5), 7.0))
    assert np.all(w == 0.0)


@settings(max_examples=60, derandomize=True, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 8), st.integers(1, 9)),
              elements=st.one_of(st.sampled_from([np.nan, 0.0, 1.0, -1.0]),
                                 st.floats(-1e6, 1e6, allow_nan=False))))
def test_weights_match_pandas_reference(x):
    got = book_weights(x)
    want = REF.weights(pd.DataFrame(x)).to_numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    gross = np.abs(got).sum(axis=1)
    assert np.all((np.abs(gross - 1.0) < 1e-12) | (gross == 0.0))
    assert np.all(np.abs(got.sum(axis=1)) < 1e-12)


def test_fill_at_next_open_and_earn_open_to_open():
    # 2 stocks; the book at t earns open(t+1) -> open(t+2)
    open_ = np.array([[10.0, 10.0], [10.0, 20.0], [11.0, 18.0], [12.0, 18.0]])
    fwd = forward_open_returns(open_)
    np.testing.assert_allclose(fwd[0], [0.1, -0.1])
    assert np.all(np.isnan(fwd[-2:]))
    values = np.array([[1.0, 0.0]] * 4)  # long stock 0, short stock 1
    res = book_pnl(values, fwd, slice(0, 2))
    np.testing.assert_allclose(res.gross, [0.5 * 0.1 - 0.5 * -0.1, 0.5 * (12 / 11 - 1) - 0.0])
    np.testing.assert_allclose(res.turnover, [1.0, 0.0])  # first day builds from zero
    np.testing.assert_allclose(res.long + res.short, res.gross)


def test_nan_forward_return_counts_as_zero_and_book_is_not_renormalised():
    open_ = np.array([[10.0, 10.0, 10.0], [10.0, 10.0, 10.0], [11.0, np.nan, 9.0]])
    fwd = forward_open_returns(open_)
    values = np.array([[3.0, 2.0, 1.0]] * 3)
    res = book_pnl(values, fwd, slice(0, 1))
    w = res.weights[0]
    np.testing.assert_array_equal(w, [0.5, 0.0, -0.5])
    np.testing.assert_allclose(res.gross, [0.5 * 0.1 + (-0.5) * (-0.1)])
    values2 = np.array([[3.0, 1.0, 2.0]] * 3)  # the missing stock is now short
    res2 = book_pnl(values2, fwd, slice(0, 1))
    np.testing.assert_allclose(res2.weights[0], [0.5, -0.5, 0.0])
    np.testing.assert_allclose(res2.gross, [0.05])  # short leg held flat: earns 0


def test_turnover_is_sum_of_absolute_weight_changes():
    rng = np.random.default_rng(1)
    v = rng.normal(size=(30, 7))
    fwd = rng.normal(0, 0.01, (30, 7))
    res = book_pnl(v, fwd, slice(5, 25))
    w = res.weights
    expect = np.abs(np.diff(np.vstack([np.zeros(7), w]), axis=0)).sum(axis=1)
    np.testing.assert_allclose(res.turnover, expect, rtol=1e-14)
    # weights of a row depend only on that row's values
    np.testing.assert_array_equal(w, book_weights(v)[5:25])


def test_self_cancelling_book_has_zero_turnover_and_pnl():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(40, 9))
    res = book_pnl(x - x, rng.normal(0, 0.01, (40, 9)), slice(0, 38))
    assert np.all(res.turnover == 0.0) and np.all(res.gross == 0.0) and np.all(np.isnan(res.ic))


def test_bad_values_get_a_clear_error():
    import pytest

    with pytest.raises(ValueError, match="2-D"):
        book_weights(np.zeros(5))
    with pytest.raises(ValueError, match="step 1"):
        book_weights(np.zeros((5, 2)), slice(0, 5, 2))


def test_wide_rows_use_the_shared_sort_path_and_match_pandas():
    """More than 64 finite names per row: the shared rank kernel sorts; same weights and IC."""
    rng = np.random.default_rng(21)
    x = rng.integers(0, 40, (30, 90)).astype(float)
    x[rng.random(x.shape) < 0.1] = np.nan
    got = book_weights(x)
    want = REF.weights(pd.DataFrame(x)).to_numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    fwd = rng.normal(0, 0.01, x.shape)
    fwd[rng.random(x.shape) < 0.05] = np.nan
    res = book_pnl(x, fwd, slice(0, 30))
    np.testing.assert_array_equal(res.weights, got)
    ok = np.isfinite(x) & np.isfinite(fwd)
    for t in range(30):
        want_ic = np.corrcoef(got[t][ok[t]], fwd[t][ok[t]])[0, 1]
        assert abs(res.ic[t] - want_ic) < 1e-12
