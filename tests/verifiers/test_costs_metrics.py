"""Cost models (configuration objects) and metrics definitions."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gymkit.verifiers import (
    COST_MODELS,
    CostInputs,
    RealisticCosts,
    TrainCosts,
    compute_metrics,
    cost_model_from_dict,
    max_drawdown,
    sharpe,
)


def test_train_costs_are_four_bps_per_unit_of_turnover():
    c = TrainCosts()
    assert c.bps_per_turnover == 4.0
    np.testing.assert_allclose(c.daily(np.zeros((3, 2)), np.array([0.0, 0.5, 2.0]), None), [0, 2e-4, 8e-4])


def test_environment_b_costs_are_configuration_only():
    b = TrainCosts().scaled(19)
    assert b.bps_per_turnover == pytest.approx(76.0)
    spec = json.loads(json.dumps(b.to_dict()))
    assert cost_model_from_dict(spec) == b
    assert cost_model_from_dict({"name": "train", "fee_bps": 70.5, "fixed_impact_bps": 0.0}).bps_per_turnover == 72.0


def test_cost_models_round_trip_and_reject_bad_config():
    for cls in COST_MODELS.values():
        m = cls()
        assert cost_model_from_dict(m.to_dict()) == m and m.to_dict()["name"] == cls.name
    with pytest.raises(ValueError, match="unknown cost model"):
        cost_model_from_dict({"name": "free"})
    with pytest.raises(ValueError, match="unknown parameter"):
        cost_model_from_dict({"name": "train", "fees": 1})
    with pytest.raises(ValueError, match="fee_bps"):
        TrainCosts(fee_bps=-1)


def test_realistic_costs_by_hand():
    w = np.array([[0.5, -0.5], [0.25, -0.25]])
    tov = np.array([1.0, 0.5])
    sigma = np.full((2, 2), 0.02)
    adv = np.array([[1e8, 4e8], [1e8, 1e6]])
    c = RealisticCosts(book_usd=1e6, capacity_adv_share=0.01, capacity_bps=10.0)
    got = c.daily(w, tov, CostInputs(sigma, adv))
    fees = 4e-4 * tov
    imp0 = 0.5 * 0.02 * np.sqrt(1e6 * 0.5 / 1e8) + 0.5 * 0.02 * np.sqrt(1e6 * 0.5 / 4e8)
    imp1 = 0.25 * 0.02 * np.sqrt(1e6 * 0.25 / 1e8) + 0.25 * 0.02 * np.sqrt(1e6 * 0.25 / 1e6)
    cap1 = 10e-4 * (0.25 * 1e6 - 0.01 * 1e6) / 1e6  # stock 1 holds $250k against a $10k cap
    borrow = 50e-4 / 252 * np.array([0.5, 0.25])
    np.testing.assert_allclose(got, fees + np.array([imp0, imp1 + cap1]) + borrow, rtol=1e-12)
    assert np.all(got >= TrainCosts().daily(w, tov, None))  # harsher than training


def test_sharpe_definition_and_degenerate_cases():
    r = np.array([0.01, -0.005, 0.002, 0.004])
    assert sharpe(r) == pytest.approx(r.mean() / r.std(ddof=1) * np.sqrt(252))
    assert sharpe(np.full(10, 0.001)) == 0.0 and sharpe(np.array([0.1])) == 0.0 and sharpe(np.array([])) == 0.0


def test_max_drawdown_on_compounded_equity():
    assert max_drawdown(np.array([0.1, -0.5, 0.2])) == pytest.approx(-0.5)
    assert max_drawdown(np.array([-0.1, 0.05])) == pytest.approx(-0.1)
    assert max_drawdown(np.array([0.01, 0.02])) == 0.0


def test_metrics_beta_corr_hit_rate_and_legs():
    rng = np.random.default_rng(0)
    m = rng.normal(0, 0.01, 500)
    net = 0.3 * m + rng.normal(0.0004, 0.005, 500)
    long_c = rng.normal(0, 0.004, 500)
    ic = np.where(rng.random(500) < 0.2, np.nan, rng.normal(0.02, 0.1, 500))
    got = compute_metrics(net, net + 1e-4, np.full(500, 0.3), ic, long_c, net + 1e-4 - long_c, m)
    assert got.beta == pytest.approx(np.cov(net, m)[0, 1] / np.var(m, ddof=1), rel=1e-10)
    assert got.corr == pytest.approx(np.corrcoef(net, m)[0, 1], rel=1e-10)
    assert got.hit_rate == pytest.approx(np.mean(net > 0))
    assert got.ic == pytest.approx(np.nanmean(ic)) and got.ic_days == int(np.sum(~np.isnan(ic)))
    assert got.long_contribution + got.short_contribution == pytest.approx(got.mean_gross_return)
    assert got.turnover == pytest.approx(0.3)
    assert json.dumps(got.to_dict())
