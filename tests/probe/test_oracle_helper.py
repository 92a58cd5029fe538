"""One oracle helper (formula -> backtest) and one holdout module: the same bits as the paths
they replace, and as scoring."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gymkit.adapters.common import get_env
from gymkit.dsl import parse
from gymkit.dsl.evaluator import evaluate
from gymkit.holdout import holdout_backtest, holdout_figures, holdout_run
from gymkit.oracle import backtest_formula, env_backtest
from gymkit.verifiers.costs import cost_model_from_dict
from gymkit.verifiers.cpcv import CPCV
from gymkit.verifiers.oracle import backtest

SERIES = ("weights", "gross", "net", "cost", "turnover", "market", "ic")


@pytest.fixture(scope="module")
def env():
    return get_env("us46-default")


def _same(a, b) -> None:
    for name in SERIES:
        assert getattr(a, name).tobytes() == getattr(b, name).tobytes(), name
    assert a.cpcv.score == b.cpcv.score and a.metrics == b.metrics


def test_holdout_run_is_the_old_inline_holdout_backtest(env):
    """probe's former holdout_backtest, written out: parse, evaluate on the whole market,
    backtest the holdout with the config's realistic costs, CPCV and burn-in."""
    formula = "rank(-ts_sum(returns, 5)) * ts_std(close, 20)"
    cfg = env.config
    expr = parse(formula, fields=env.setup.fields, levels=env.setup.levels)
    values = evaluate(expr, env.market)
    want = backtest(values, env.market, cfg.split_obj, "holdout",
                    cost_model_from_dict(cfg.holdout_costs), cpcv=CPCV(**cfg.cpcv),
                    burn_in=cfg.burn_in)
    run = holdout_run(env, formula)
    assert run.values.tobytes() == values.tobytes()
    _same(run.result, want)
    _same(holdout_backtest(env, formula), want)
    assert want.costs == cost_model_from_dict(cfg.holdout_costs).to_dict() != env.setup.costs.to_dict()
    fig = holdout_figures(want)
    assert fig["holdout_return"] == float(np.prod(1.0 + want.net) - 1.0)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(d=st.integers(1, 20), field=st.sampled_from(["close", "volume", "returns", "vwap"]),
       sign=st.sampled_from(["", "-"]))
def test_the_train_window_gives_the_card_its_pnl_bit_for_bit(env, d, field, sign):
    """The helper's train window is scoring's: the card's daily P&L equals its net series."""
    formula = f"{sign}rank(ts_delta({field}, {d}))"
    card = env.score(f"<alpha>{formula}</alpha>")
    run = env_backtest(env, formula, "train")
    assert card.valid and card.pnl is not None
    assert np.asarray(card.pnl).tobytes() == run.result.net.tobytes()
    assert card.channels["cpcv"] == pytest.approx(np.clip(run.result.cpcv.score, -5, 5), abs=0)
    uncached = env_backtest(env, run.expr, "train", cached=False)
    assert uncached.values.tobytes() == run.values.tobytes()


def test_text_and_ast_agree_and_bad_input_is_one_line(env):
    s = env.setup
    text = "rank(ts_delta(close, 3))"
    a = backtest_formula(text, s.train, split=s.split, costs=s.costs, cpcv=s.cpcv, burn_in=s.burn_in)
    b = backtest_formula(parse(text), s.train, split=s.split, costs=s.costs, cpcv=s.cpcv,
                         burn_in=s.burn_in)
    _same(a.result, b.result)
    with pytest.raises(ValueError, match=r"^window must be one of \('train', 'holdout'\), got 'test'$"):
        env_backtest(env, text, "test")
    with pytest.raises(ValueError, match=r"^window must be one of"):
        backtest_formula(text, s.train, "both")
