"""R10 closes the factor clone that `gymkit train` converged on (issue 20's read-out, seed 0).

Under channels-v5 the default run's seed 0 shipped a checkpoint whose 50 probe answers were all
factor bets: at least 80% of each positive train Sharpe explained by the six R4 factors, mean
residual Sharpe −0.00, mean reward +0.79.  Its family, ``-ts_sum(volume, 5) /
ts_std(returns, 188) * rank(volume) / ts_std(returns, 188)``, is a size (β +0.59) and price-level
(β −0.58) bet: raw Sharpe 0.42, residual 0.04; R4 charged it −0.152 and left it +0.88.  The
5-day reversal book, which *is* R4's reversal factor (R² > 0.99), earned +1.35.  R4 prices the
explained Sharpe at 0.4 × 0.4 per unit against R1's 3.0, so a known factor kept nearly all of
its reward.  channels-v6: a book, at any turnover, whose positive raw Sharpe is at least
``factor_clone_share`` (0.8) explained by the factors triggers R10: reward capped at 0 and no
positive GDPO advantage.  ``factor_clone_share = 0`` (channels-v5) is kept reachable so the test
shows the old protocol fails.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gymkit
from gymkit.report.why import channel_reasons
from gymkit.verifiers.channels import (
    AnswerFacts,
    ChannelParams,
    is_factor_clone,
    motif_guard_triggered,
)

#: Seed 0's shipped family (channels-v5, step 500) and the reversal factor itself.
CLONES = ["-ts_sum(volume, 5) / ts_std(returns, 188) * rank(volume) / ts_std(returns, 188)",
          "rank(-ts_sum(returns, 5))"]
#: The planted effects traded with an edge the factors do not explain.
HONEST = ["rank(group_neutralize(-ts_sum(returns, 5), sector))",
          "rank(ts_std(volume, 20) / ts_mean(volume, 20) * ts_std(returns, 250) / ts_std(returns, 20))"]
OTHERS = ["rank(ts_corr(close, volume, 10))", "rank(-ts_delta(close, 3))"]


def _tag(f: str) -> str:
    return f"<alpha>{f}</alpha>"


@pytest.fixture(scope="module")
def envs():
    return (gymkit.make("us46-default"),
            gymkit.make("us46-default", thresholds={"factor_clone_share": 0.0}))


@pytest.mark.parametrize("clone", CLONES)
def test_the_old_protocol_pays_a_factor_clone_and_its_group_s_top_advantage(envs, clone):
    _, old = envs
    card = old.score(_tag(clone))
    fx = card.metrics["factors"]
    assert card.valid and not card.motif_capped and card.metrics["turnover"] >= 0.06
    assert fx["raw_sharpe"] > 0 and fx["residual_sharpe"] <= 0.2 * fx["raw_sharpe"]
    assert card.reward > 0.8  # +0.88 and +1.35
    cards = old.score_group([_tag(f) for f in [clone, *OTHERS]])
    adv, _ = old.group_advantages(cards)
    assert adv[0] > 0 and adv[0] == adv.max()


@pytest.mark.parametrize("clone", CLONES)
def test_the_guard_caps_a_factor_clone_and_gdpo_gives_it_no_positive_advantage(envs, clone):
    new, _ = envs
    card = new.score(_tag(clone))
    assert card.valid and card.motif_capped and card.reward == 0.0
    assert card.channels["motif_guard"] == -1.0
    assert "factor clone" in channel_reasons(card, new.config.channel_params)["motif_guard"]
    assert any(n.startswith("motif_guard: factor clone") for n in card.notes)
    cards = new.score_group([_tag(f) for f in [clone, *OTHERS]])
    adv, _ = new.group_advantages(cards)
    assert adv[0] <= 0.0 < adv[1:].max()


@pytest.mark.parametrize("honest", HONEST)
def test_an_edge_the_factors_do_not_explain_keeps_its_reward(envs, honest):
    new, old = envs
    card = new.score(_tag(honest))
    fx = card.metrics["factors"]
    assert card.valid and not card.motif_capped
    assert fx["residual_sharpe"] > 0.3
    assert card.reward == old.score(_tag(honest)).reward > 1.5


def _facts(raw: float, residual: float, turnover: float = 0.3) -> AnswerFacts:
    return AnswerFacts(valid=True, turnover=turnover, ic=0.05, raw_sharpe=raw,
                       residual_sharpe=residual, is_price_only=False, is_single_motif=False)


@pytest.mark.parametrize(("raw", "residual", "fires"), [
    (1.0, 0.2, True),       # exactly 80% explained
    (1.0, 0.21, False),     # 79%
    (0.9, 0.003, True),     # the reversal factor
    (0.42, 0.043, True),    # seed 0's family
    (1.11, 0.37, False),    # the sector-neutral reversal: 67%
    (0.8, -0.2, True),      # the factors explain more than all of it
    (-0.5, -2.0, False),    # a losing book is not rewarded anyway
    (0.0, -1.0, False),
    (math.nan, math.nan, False),
])
def test_factor_clone_boundaries(raw, residual, fires):
    p = ChannelParams()
    assert is_factor_clone(_facts(raw, residual), p) is fires
    assert motif_guard_triggered(_facts(raw, residual), p) is fires
    assert not motif_guard_triggered(_facts(raw, residual), ChannelParams(factor_clone_share=0.0))
    assert not is_factor_clone(AnswerFacts(valid=False, raw_sharpe=raw, residual_sharpe=residual), p)


@settings(max_examples=300, deadline=None)
@given(raw=st.floats(-5, 5), residual=st.floats(-5, 5), turnover=st.floats(0.02, 2.0),
       share=st.floats(0.05, 1.0))
def test_a_clone_at_one_share_is_a_clone_at_every_lower_share(raw, residual, turnover, share):
    """Monotone in the threshold and blind to turnover: lowering the share never un-guards a
    book, and the test does not read the turnover."""
    f = _facts(raw, residual, turnover)
    lower = ChannelParams(factor_clone_share=share / 2)
    if is_factor_clone(f, ChannelParams(factor_clone_share=share)):
        assert is_factor_clone(f, lower)
    assert is_factor_clone(f, ChannelParams()) is is_factor_clone(_facts(raw, residual, 0.05),
                                                                  ChannelParams())


def test_the_card_says_whether_the_cap_bound(envs, cli):
    """R10 firing on an answer whose reward is negative anyway caps nothing: the why line, the
    note and ``gymkit score`` say so (they used to say "reward capped at 0" on a −1.68)."""
    new, _ = envs
    motif = "((close - open) / ((high - low) + .001))"  # alpha#101: a price-only motif, IC < 0.005
    card = new.score(_tag(motif))
    assert card.motif_capped and card.reward < 0
    why = channel_reasons(card, new.config.channel_params)["motif_guard"]
    assert why.endswith("its reward is negative already, so the cap does not bind")
    assert any(n.startswith("motif_guard:") and n.endswith("so the cap does not bind")
               for n in card.notes)
    assert not any("capped at 0" in n for n in card.notes)
    rc, out, _ = cli("score", motif)
    assert rc == 0 and "capped at 0 by the motif guard" not in out and "cap does not bind" in out
    clone = new.score(_tag(CLONES[1]))
    assert channel_reasons(clone, new.config.channel_params)["motif_guard"].endswith(
        "reward capped at 0, no positive advantage (ranked below every eligible answer)")
    rc, out, _ = cli("score", CLONES[1])
    assert rc == 0 and "capped at 0 by the motif guard" in out
