"""Planted effects, hacks and parity on the default market and the real panel (with the DSL)."""

from __future__ import annotations

import numpy as np
import pytest

from gymkit.data import DEFAULT_SPLIT, Panel, Split, nyse_sessions
from gymkit.verifiers import RealisticCosts, TrainCosts, backtest, book_weights, sharpe

from .conftest import random_panel
from .test_oracle import check_parity

FORMULAS = [
    "rank(-ts_sum(returns, 5))",
    "ts_std(volume, 20) / ts_mean(volume, 20)",
    "(close - open) / ((high - low) + 0.001)",
    "ts_corr(close, volume, 10)",
    "sign(ts_delta(close, 1))",
    "-ts_rank(volume, 5)",
]
#: One year of holdout at the end of the real panel (2012-06-01 .. 2021-04-21).
REAL_SPLIT = Split("2012-06-01", "2020-04-21", "2020-04-22", "2021-04-21")


@pytest.fixture(scope="module")
def market():
    dm = pytest.importorskip("gymkit.data").default_market
    return dm()


@pytest.fixture(scope="module")
def evaluate():
    return pytest.importorskip("gymkit.dsl.evaluator").evaluate


def test_planted_effects_earn_a_clearly_positive_net_train_sharpe(market, evaluate):
    from gymkit.data.synthetic import PLANTED_EFFECTS

    for name, (formula, _) in PLANTED_EFFECTS.items():
        res = backtest(evaluate(formula, market), market)
        assert res.metrics.sharpe > 0.25, (name, res.metrics.sharpe)
        assert res.metrics.gross_sharpe > 0.75, (name, res.metrics.gross_sharpe)
        assert res.metrics.ic > 0.005, (name, res.metrics.ic)


def test_random_value_arrays_have_mean_sharpe_near_zero(market):
    rng = np.random.default_rng(0)
    gross, net = [], []
    for _ in range(200):
        v = np.cumsum(rng.normal(size=(market.T, market.N)), axis=0)  # persistent random signal
        v += rng.normal(size=v.shape) * 3.0
        res = backtest(v, market)
        gross.append(res.metrics.gross_sharpe)
        net.append(res.metrics.sharpe)
    gross, net = np.array(gross), np.array(net)
    se = gross.std(ddof=1) / np.sqrt(gross.size)
    assert abs(gross.mean()) < 4 * se + 0.05, (gross.mean(), se)
    assert np.all(net <= gross)  # costs never help
    assert net.mean() < 0.1


def test_self_cancelling_formula_has_zero_turnover(market, evaluate):
    res = backtest(evaluate("close - close", market), market)
    m = res.metrics
    assert m.turnover == 0.0 and m.sharpe == 0.0 and res.cpcv.score == 0.0
    assert np.all(res.weights == 0.0) and np.all(res.net == 0.0)


def _noisy_close_panel(seed: int = 0) -> Panel:
    """Efficient prices follow a random walk; the close carries transient noise (bid-ask
    bounce, closing-auction imbalance) that has reverted by the next open."""
    dates = nyse_sessions("2012-06-29", "2016-06-30")
    rng = np.random.default_rng(seed)
    t, n = dates.size, 30
    eff = 50 * np.exp(np.cumsum(rng.normal(0, 0.01, (t, n)), axis=0))
    close = eff * np.exp(rng.normal(0, 0.01, (t, n)))
    open_ = eff * np.exp(rng.normal(0, 0.001, (t, n)))
    high, low = np.maximum(open_, close) * 1.001, np.minimum(open_, close) * 0.999
    return Panel(dates, [f"N{i}" for i in range(n)], open_, high, low, close, np.full((t, n), 1e6))


def test_same_close_fill_hack_gains_nothing_under_next_open_fill():
    """The seed's Aug 9 look-ahead: signal and fill on the same close.  A close-to-close
    reversal trades the close's own noise; filled at close(t) it looks superb, filled at
    open(t+1) (our protocol) the noise is gone and it earns nothing."""
    p = _noisy_close_panel()
    split = Split("2012-06-29", "2015-06-30", "2015-07-01", "2016-06-30")
    c = np.array(p.close)
    values = np.full(c.shape, np.nan)
    values[1:] = -(c[1:] / c[:-1] - 1)  # -returns, known at close(t)
    w = book_weights(values)
    broken = (w[:-1] * (c[1:] / c[:-1] - 1)).sum(axis=1)[252 : split.train(p).T - 3]
    assert sharpe(broken) > 5.0  # the hack "works" under same-close fill
    ours = backtest(values, p, split)
    assert abs(ours.metrics.gross_sharpe) < 1.0 and ours.metrics.sharpe < 0
    assert abs(ours.metrics.ic) < 0.01


def test_parity_on_the_default_market(market, evaluate):
    for i, formula in enumerate(FORMULAS):
        v = evaluate(formula, market)
        check_parity(v, market, DEFAULT_SPLIT, "train", TrainCosts())
        if i % 2 == 0:
            check_parity(v, market, DEFAULT_SPLIT, "holdout", RealisticCosts())


@pytest.mark.real
def test_parity_on_the_real_panel(evaluate):
    data = pytest.importorskip("gymkit.data")
    if not data.REAL_DATA_PATH.exists():
        pytest.skip(f"real data absent: {data.REAL_DATA_PATH}")
    p = data.real_panel()
    for i, formula in enumerate(FORMULAS[:4]):
        v = evaluate(formula, p)
        check_parity(v, p, REAL_SPLIT, "train", TrainCosts())
        if i == 0:
            check_parity(v, p, REAL_SPLIT, "holdout", RealisticCosts())


def test_parity_with_gaps_on_a_long_random_panel():
    p = random_panel(21, end="2026-08-21", n=20, nan_frac=0.02)
    rng = np.random.default_rng(1)
    v = np.cumsum(rng.normal(size=(p.T, p.N)), axis=0)
    check_parity(v, p, DEFAULT_SPLIT, "train", TrainCosts())
    check_parity(v, p, DEFAULT_SPLIT, "holdout", RealisticCosts())
