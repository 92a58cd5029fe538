"""Factor model (cached, planted exposures) and book-level tools."""

from __future__ import annotations

import numpy as np
import pytest

from gymkit.verifiers import (
    FACTOR_NAMES,
    FactorModel,
    correlation_capped_selection,
    effective_number_of_bets,
    equal_weight_book,
    window_context,
)

from .conftest import SMALL_SPLIT, load_reference, random_panel

REF = load_reference()


def test_regression_recovers_planted_betas_and_residual_sharpe():
    rng = np.random.default_rng(0)
    f = rng.normal(0, 0.01, (2000, 6))
    beta = np.array([0.5, -0.2, 0.0, 0.3, 0.1, -0.4])
    eps = rng.normal(0, 0.002, 2000)
    y = 0.0004 + f @ beta + eps
    cost = 0.0001 + rng.normal(0, 1e-5, 2000)
    fx = FactorModel(f).regress(y, cost)
    np.testing.assert_allclose(list(fx.betas.values()), beta, atol=0.02)
    pd = __import__("pandas")
    ref = REF.regress(pd.Series(y), pd.DataFrame(f), pd.Series(cost))
    np.testing.assert_allclose(list(fx.betas.values()), ref["betas"], rtol=1e-9)
    assert fx.alpha == pytest.approx(ref["alpha"], rel=1e-9)
    assert fx.residual_sharpe == pytest.approx(ref["residual_sharpe"], rel=1e-9)
    assert fx.factor_sharpe == pytest.approx(ref["factor_sharpe"], rel=1e-9)
    assert fx.raw_sharpe == pytest.approx(ref["raw_sharpe"], rel=1e-12)
    assert fx.r2 == pytest.approx(ref["r2"], rel=1e-9)
    assert fx.sharpe_explained == pytest.approx(fx.raw_sharpe - fx.residual_sharpe)


def test_a_pure_factor_book_has_its_sharpe_explained():
    rng = np.random.default_rng(1)
    f = rng.normal(0.001, 0.01, (1500, 6))
    fx = FactorModel(f).regress(f[:, 0] * 1.0)
    assert fx.betas["market"] == pytest.approx(1.0) and abs(fx.residual_sharpe) < 1e-6
    assert fx.share_explained == pytest.approx(1.0, abs=1e-6) and fx.r2 == pytest.approx(1.0)


def test_collinear_factor_gets_zero_beta():
    rng = np.random.default_rng(2)
    f = rng.normal(0, 0.01, (300, 6))
    f[:, 4] = 2 * f[:, 1]
    f[:, 2] = 0.0
    fx = FactorModel(f).regress(f[:, 1] + rng.normal(0, 0.001, 300))
    assert fx.betas["momentum"] == 0.0 and fx.betas["low_vol"] == 0.0
    assert fx.betas["size"] == pytest.approx(1.0, abs=0.05)


def test_factor_model_is_cached_per_panel_fingerprint_and_window():
    p = random_panel(3)
    a = window_context(p, SMALL_SPLIT, "train", 60)
    b = window_context(p, SMALL_SPLIT, "train", 60)
    assert a is b and a.factors is b.factors and a.factors.names == FACTOR_NAMES
    assert a.factors.fingerprint == SMALL_SPLIT.train(p).fingerprint
    assert window_context(p, SMALL_SPLIT, "holdout", 60) is not a


def test_equal_weight_book_and_effective_bets():
    rng = np.random.default_rng(3)
    x = rng.normal(0, 0.01, (2000, 4))
    np.testing.assert_allclose(equal_weight_book(x), x.mean(axis=1), rtol=1e-14)
    assert effective_number_of_bets(x) == pytest.approx(4.0, rel=0.02)
    same = np.column_stack([x[:, 0]] * 5)
    assert effective_number_of_bets(same) == pytest.approx(1.0)
    eig = np.linalg.eigvalsh(np.corrcoef(x.T))
    assert effective_number_of_bets(x) == pytest.approx(eig.sum() ** 2 / (eig**2).sum(), rel=1e-10)


def test_correlation_capped_selector_follows_the_seed_rules():
    rng = np.random.default_rng(4)
    base = rng.normal(0, 0.01, (1000, 3))
    pnl = np.column_stack([base[:, 0], base[:, 0] + rng.normal(0, 0.002, 1000), base[:, 1], base[:, 2], base[:, 2]])
    scores = np.array([0.9, 1.0, 0.5, 0.7, 0.8])
    turnover = np.array([0.1, 0.1, 0.1, 0.1, 0.01])  # formula 4: below the 2% floor
    # order by score: 1, 0 (corr with 1 ≈ 0.98 -> skip), 4 (turnover -> skip), 3, 2
    assert correlation_capped_selection(scores, turnover, pnl) == [1, 3, 2]
    assert correlation_capped_selection(scores, turnover, pnl, max_corr=1.01) == [1, 0, 3, 2]


def test_a_costly_factor_clone_has_no_residual_and_pays_for_its_net_sharpe():
    """Gross P&L = a factor return, minus a steady cost: regressing gross on gross leaves no
    residual (R² = 1, residual Sharpe 0, where regressing the net P&L left the cost series
    with a residual Sharpe below −20), and the factor part is the whole net Sharpe."""
    rng = np.random.default_rng(7)
    f = rng.normal(0.0005, 0.01, (3000, 6))
    model = FactorModel(f)
    cost = 0.0002 + rng.normal(0, 1e-6, 3000)
    fx = model.regress(f[:, 3], cost)
    assert fx.r2 == 1.0 and fx.residual_sharpe == 0.0
    net = f[:, 3] - cost
    assert fx.raw_sharpe == pytest.approx(np.mean(net) / np.std(net, ddof=1) * np.sqrt(252), rel=1e-9)
    assert fx.factor_sharpe == pytest.approx(fx.raw_sharpe, rel=1e-9)


def test_a_planted_orthogonal_effect_keeps_its_sharpe():
    """A P&L with an effect the factors do not carry (independent of them), on top of factor
    exposure, with costs: its residual Sharpe keeps >= 90% of the effect's own net Sharpe."""
    rng = np.random.default_rng(8)
    f = rng.normal(0.0003, 0.01, (3000, 6))
    effect = 0.0006 + rng.normal(0, 0.01, 3000)
    cost = np.full(3000, 0.0001)
    alone = FactorModel(f).regress(effect, cost)
    assert alone.r2 < 0.01
    assert alone.residual_sharpe >= 0.9 * alone.raw_sharpe > 0.5
    mixed = FactorModel(f).regress(effect + f @ np.array([0.0, 0.3, 0.0, -0.5, 0.0, 0.4]), cost)
    assert mixed.residual_sharpe == pytest.approx(
        alone.raw_sharpe * np.std(effect - cost, ddof=1) / np.std(
            effect + f @ np.array([0.0, 0.3, 0.0, -0.5, 0.0, 0.4]) - cost, ddof=1), rel=0.1)
