"""R4's factor model measures exposure: every factor book, scored as a formula, is all factor.

Each rank-book factor of verifiers/factors.py written as a DSL formula runs through the
oracle on the train panel exactly as an answer does (``env.score`` where the gate lets it
through; the turnover floor rejects the slow size and price-level books, so those go
through the same ``backtest`` call the scorer makes).
"""

from __future__ import annotations

import pytest

import gymkit
from gymkit.dsl import evaluate
from gymkit.verifiers import backtest
from gymkit.verifiers.factors import FACTOR_NAMES

#: The five rank-book factors as formulas (market is not a dollar-neutral book).
FACTOR_FORMULAS = {
    "size": "-cap",
    "momentum": "delay(close, 21) / delay(close, 252) - 1",
    "reversal": "-(close / delay(close, 5) - 1)",
    "low_vol": "-ts_std(returns, 63)",
    "price_level": "-log(close)",
}


@pytest.fixture(scope="module")
def env():
    return gymkit.make("us46-default")


def test_the_factor_table_names_six_factors():
    assert FACTOR_NAMES == ("market", "size", "momentum", "reversal", "low_vol", "price_level")
    assert set(FACTOR_FORMULAS) == set(FACTOR_NAMES[1:])


@pytest.mark.parametrize("name", list(FACTOR_FORMULAS))
def test_each_factor_book_has_no_residual_sharpe(env, name):
    s = env.setup
    values = evaluate(FACTOR_FORMULAS[name], s.train)
    bt = backtest(values, s.train, s.split, "train", s.costs, cpcv=s.cpcv, burn_in=s.burn_in)
    fx = bt.factors
    assert abs(fx.residual_sharpe) < 0.1, (name, fx.residual_sharpe)
    assert fx.r2 > 0.99 and abs(fx.betas[name] - 1.0) < 0.05, (name, fx.betas)
    assert fx.factor_sharpe == pytest.approx(fx.raw_sharpe, abs=0.1)
    card = env.score(f"<alpha>{FACTOR_FORMULAS[name]}</alpha>")
    if card.valid:   # R4 at its documented value: −0.4·clip(raw − residual, 0, 3)
        f = card.metrics["factors"]
        want = -0.4 * min(max(f["raw_sharpe"] - f["residual_sharpe"], 0.0), 3.0)
        assert card.channels["factor_neutrality"] == pytest.approx(want, abs=1e-12)
        assert abs(f["residual_sharpe"]) < 0.1
    else:
        assert card.error.code == "turnover_floor", name


def test_the_tear_sheet_factor_table_shows_the_card_numbers(env):
    """``gymkit report``'s factor rows are the card's metrics.factors (the R4 input)."""
    from gymkit.report.analysis import study_formula

    card = env.score("<alpha>rank(-ts_sum(returns, 5))</alpha>")
    study = study_formula(env, "<alpha>rank(-ts_sum(returns, 5))</alpha>", holdout=False)
    fx = study.train.factors
    f = card.metrics["factors"]
    assert (fx.raw_sharpe, fx.residual_sharpe, fx.factor_sharpe) == (
        f["raw_sharpe"], f["residual_sharpe"], f["factor_sharpe"])
    assert abs(fx.residual_sharpe) < 0.1   # was −18.99: the cost series left in the residual
