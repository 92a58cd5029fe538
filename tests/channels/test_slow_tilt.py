"""R10 closes the slow factor tilt that `gymkit train` found (issue 20's read-out).

The default run's policy collapsed onto ``ts_std(ts_std(high, 50), 60)``: a book trading
2.8%/day, just above the 2% floor, whose train Sharpe (1.01) is 62% explained by the six
R4 factors (a price-level tilt: beta −0.83 to the price-level book, R² 0.70) and whose
probe holdout score was +0.16 against +0.80 on train.  Under channels-v3 it out-scored the
honest short-horizon reversal by 0.86 in scalar reward and took the group's top advantage.
channels-v4: a slow book (turnover < 6%/day) whose positive raw Sharpe is at least half
factor-explained triggers the guard: reward capped at 0 and no positive GDPO advantage.
The old protocol (``slow_tilt_turnover = 0``, and channels-v6's factor-clone test off) is kept
reachable so the test shows it fails.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gymkit
from gymkit.advantages import gdpo_advantages
from gymkit.report.why import channel_reasons
from gymkit.verifiers.channels import (
    AnswerFacts,
    ChannelParams,
    is_slow_factor_tilt,
    motif_guard_triggered,
)

TILT = "ts_std(ts_std(high, 50), 60)"
#: The same book with a token volume term: not price-only, not single-motif.
TILT_DISGUISED = "ts_std(ts_std(high, 50), 60) + 0.001 * rank(volume)"
#: The planted reversal, sector-neutral: residual Sharpe 0.37 (the plain reversal book is R4's
#: reversal factor itself, a factor clone since channels-v6: test_factor_clone.py).
HONEST = "rank(group_neutralize(-ts_sum(returns, 5), sector))"
#: What the channels-v3 read-out compared the tilt with: the plain reversal book among them.
V3_OTHERS = ["rank(-ts_sum(returns, 5))", "rank(ts_corr(close, volume, 10))",
             "rank(-(close - ts_mean(close, 10)))", "rank(-ts_delta(close, 3))"]
OTHERS = [HONEST, "rank(ts_corr(close, volume, 10))",
          "rank(-(close - ts_mean(close, 10)))", "rank(-ts_delta(close, 3))"]


def _tag(f: str) -> str:
    return f"<alpha>{f}</alpha>"


@pytest.fixture(scope="module")
def envs():
    return (gymkit.make("us46-default"),
            gymkit.make("us46-default", thresholds={"slow_tilt_turnover": 0.0,
                                                    "factor_clone_share": 0.0}))


def test_the_old_protocol_pays_the_tilt_above_an_honest_formula(envs):
    _, old = envs
    tilt, honest = old.score(_tag(TILT)), old.score(_tag(V3_OTHERS[0]))
    assert tilt.valid and honest.valid
    assert not tilt.motif_capped
    assert tilt.reward > honest.reward + 0.5
    cards = old.score_group([_tag(f) for f in [TILT, *V3_OTHERS]])
    adv, _ = old.group_advantages(cards)
    assert adv[0] > 0 and adv[0] == adv.max()


@pytest.mark.parametrize("formula", [TILT, TILT_DISGUISED])
def test_the_guard_caps_the_tilt_and_gdpo_gives_it_no_positive_advantage(envs, formula):
    new, _ = envs
    card = new.score(_tag(formula))
    m = card.metrics
    assert card.valid and card.motif_capped
    assert m["turnover"] < 0.06
    assert m["factors"]["factor_sharpe"] >= 0.5 * m["factors"]["raw_sharpe"] > 0
    assert card.reward == 0.0
    assert card.reward < new.score(_tag(HONEST)).reward
    assert "slow factor tilt" in channel_reasons(card, new.config.channel_params)["motif_guard"]
    assert any(n.startswith("motif_guard: slow factor tilt") for n in card.notes)
    assert not any("IC below" in n for n in card.notes)
    cards = new.score_group([_tag(f) for f in [formula, *OTHERS]])
    adv, _ = new.group_advantages(cards)
    assert adv[0] <= 0.0
    assert adv[0] < adv[1:].max()
    assert abs(float(adv.sum())) < 1e-9


def test_no_paper_alpha_is_a_slow_factor_tilt(envs):
    """The 101 alphas (the archive's seed corpus) all trade above the slow-book line."""
    new, _ = envs
    from gymkit.seed_archive import alpha101_formulas

    p = new.config.channel_params
    hits = []
    for _, f in alpha101_formulas():
        c = new.score(_tag(f))
        if not c.valid:
            continue
        fx = c.metrics["factors"]
        facts = AnswerFacts(valid=True, turnover=c.metrics["turnover"], ic=c.metrics["ic"],
                            raw_sharpe=fx["raw_sharpe"],
                            residual_sharpe=fx["raw_sharpe"] - fx["factor_sharpe"])
        if is_slow_factor_tilt(facts, p):
            hits.append(f)
    assert hits == []


def _facts(turnover: float, raw: float, residual: float) -> AnswerFacts:
    return AnswerFacts(valid=True, turnover=turnover, ic=0.05, raw_sharpe=raw,
                       residual_sharpe=residual, is_price_only=False, is_single_motif=False)


@pytest.mark.parametrize(("turnover", "raw", "residual", "fires"), [
    (0.059, 1.0, 0.5, True),     # half explained: fires
    (0.059, 1.0, 0.51, False),   # less than half
    (0.06, 1.0, 0.49, False),    # at the ramp's free point: not slow
    (0.03, -0.5, -2.0, False),   # a losing book is not rewarded anyway
    (0.03, 0.8, -0.2, True),     # factors explain more than all of it
    (0.03, math.nan, math.nan, False),
])
def test_slow_tilt_boundaries(turnover, raw, residual, fires):
    p = ChannelParams(factor_clone_share=0.0)  # this test alone (test_factor_clone.py)
    assert is_slow_factor_tilt(_facts(turnover, raw, residual), p) is fires
    assert motif_guard_triggered(_facts(turnover, raw, residual), p) is fires
    off = ChannelParams(slow_tilt_turnover=0.0, factor_clone_share=0.0)
    assert not motif_guard_triggered(_facts(turnover, raw, residual), off)


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 16).flatmap(lambda g: st.tuples(
    st.lists(st.lists(st.floats(-5, 5), min_size=3, max_size=3), min_size=g, max_size=g),
    st.lists(st.booleans(), min_size=g, max_size=g),
    st.lists(st.booleans(), min_size=g, max_size=g))))
def test_guarded_answers_never_get_a_positive_advantage(data):
    rows, valid, guarded = data
    x, v, g = np.array(rows), np.array(valid), np.array(guarded)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        adv, info = gdpo_advantages(x, np.array([3.0, 1.0, 0.4]), v, guarded=g)
    assert abs(float(adv.sum())) < 1e-9
    assert np.all(adv[g | ~v] <= 1e-12)
    if v.any() and (~v).any():
        assert adv[~v].max() <= adv[v].min() + 1e-12
    assert info.n_eligible == int((v & ~g).sum())
