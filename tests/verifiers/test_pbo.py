"""R2 rank-drop penalty, CSCV probability of backtest overfitting, deflated Sharpe ratio."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gymkit.verifiers import (
    cscv_pbo,
    deflated_sharpe_from_stats,
    deflated_sharpe_ratio,
    expected_max_sharpe,
    rank_drop_penalty,
)


def test_rank_drop_penalty_first_in_sample_last_out_of_sample_pays_the_cap():
    is_sr = np.array([3.0, 2.0, 1.0, 0.0])
    oos_sr = np.array([-1.0, 2.0, 1.0, 0.5])  # formula 0: IS rank 0, OOS rank 3
    pen = rank_drop_penalty(is_sr, oos_sr)
    np.testing.assert_allclose(pen, [-0.48, 0.0, 0.0, 0.0])  # others improved or held


def test_rank_drop_penalty_grows_with_the_drop_and_handles_ties_and_nan():
    pen = rank_drop_penalty(np.array([4.0, 3.0, 2.0, 1.0, 0.0]), np.array([2.0, 4.0, 3.0, 1.0, 0.0]))
    np.testing.assert_allclose(pen, [-0.48 * 2 / 4, 0, 0, 0, 0])
    ties = rank_drop_penalty(np.array([2.0, 1.0, 1.0]), np.array([0.0, 1.0, 1.0]))
    # IS ranks 0, 1.5, 1.5; OOS ranks 2, 0.5, 0.5
    np.testing.assert_allclose(ties, [-0.48, 0.0, 0.0])
    nan = rank_drop_penalty(np.array([2.0, np.nan, 1.0]), np.array([0.0, 5.0, 1.0]))
    np.testing.assert_allclose(nan, [-0.48, 0.0, 0.0])
    assert np.all(rank_drop_penalty(np.array([1.0]), np.array([0.0])) == 0)
    assert np.all(pen >= -0.48)


def test_pbo_is_zero_for_a_dominant_strategy():
    rng = np.random.default_rng(0)
    x = rng.normal(0, 0.01, (400, 8))
    x[:, 3] += 0.02
    res = cscv_pbo(x, n_subsets=8)
    assert res.n_combinations == math.comb(8, 4) and res.pbo == 0.0 and np.all(res.logits > 0)


def test_pbo_hand_example_is_one_when_the_in_sample_winner_always_loses():
    # two halves, three strategies: the best of one half is the worst of the other
    a = np.array([0.03, 0.01, 0.02, 0.04])
    half1 = np.column_stack([a, a - 0.01, a - 0.02])  # strategy 0 best
    half2 = np.column_stack([a - 0.02, a - 0.01, a])  # strategy 0 worst, strategy 2 best
    res = cscv_pbo(np.vstack([half1, half2]), n_subsets=2)
    # each combination: IS winner ranks 1 of 3 out of sample -> omega = 1/4, logit = ln(1/3)
    np.testing.assert_allclose(res.logits, [math.log(1 / 3)] * 2)
    assert res.pbo == 1.0


def test_pbo_of_pure_noise_is_near_one_half():
    rng = np.random.default_rng(1)
    res = cscv_pbo(rng.normal(0, 0.01, (1000, 30)), n_subsets=10)
    assert 0.25 < res.pbo < 0.75


def test_pbo_rejects_bad_input():
    with pytest.raises(ValueError, match="even"):
        cscv_pbo(np.zeros((100, 3)), n_subsets=5)
    with pytest.raises(ValueError, match="M >= 2"):
        cscv_pbo(np.zeros((100, 1)))


def test_deflated_sharpe_reproduces_bailey_lopez_de_prado_2014_example():
    # Bailey & López de Prado (2014), numerical example: N = 100 trials with variance
    # of annualised SR 0.5, selected SR 2.5 annualised, T = 1250 daily observations,
    # skewness -3, kurtosis 10 -> SR0 ≈ 0.1132 (non-annualised), DSR ≈ 0.9004.
    sr0 = expected_max_sharpe(100, math.sqrt(0.5 / 250))
    assert sr0 == pytest.approx(0.1132, abs=5e-4)
    dsr = deflated_sharpe_from_stats(2.5 / math.sqrt(250), 1250, -3.0, 10.0, sr0)
    assert dsr == pytest.approx(0.9004, abs=1e-3)


def test_deflated_sharpe_matches_skfolio():
    skm = pytest.importorskip("skfolio.measures")
    rng = np.random.default_rng(2)
    r = rng.standard_t(5, 800) * 0.01 + 0.0008
    trials = rng.normal(0.02, 0.03, 40)
    assert deflated_sharpe_ratio(r, trials) == pytest.approx(skm.deflated_sharpe_ratio(r, trials), rel=1e-9)
