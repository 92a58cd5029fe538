"""GDPO and the motif guard (R10) on a market where the guard fires on most answers.

The seed's rule: a bare one-motif or price-only formula with IC below the threshold "loses its
positive reward".  On a real market most formulas have IC < 0.005 (the real S&P 500 file: five
of six typical answers), so treating every *fired* answer as guarded left one eligible answer
per group, and the zero-sum projection handed it the whole positive advantage however bad it
was (there: the worst CPCV of the group got +3.16, every other answer 0).  Guarded now means
the cap bound: the guard fired and Σ priority·channel was positive.

The market here is the default one with the IC threshold raised to 1.0, so the guard fires on
every single-motif answer, as it does on a real market at 0.005.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gymkit
from gymkit.advantages import gdpo_advantages
from gymkit.verifiers.channels import priority_sum

FIRED_LOSERS = ["rank(ts_sum(returns, 5))", "rank(ts_delta(close, 3))",
                "rank(close - ts_mean(close, 10))"]
#: Not a single motif (the guard cannot fire) and the worst reward of the group.
WORST_UNFIRED = "rank(ts_delta(close, 1)) - rank(ts_delta(volume, 1))"
#: Fires and has a positive uncapped reward: the cap binds.
CAPPED = "rank(-ts_sum(returns, 5))"


@pytest.fixture(scope="module")
def group():
    env = gymkit.make("us46-default", thresholds={"motif_ic_threshold": 1.0})
    cards = env.score_group([f"<alpha>{f}</alpha>" for f in [*FIRED_LOSERS, WORST_UNFIRED, CAPPED]])
    return env, cards


def test_the_group_is_what_the_test_needs(group):
    env, cards = group
    assert all(c.valid for c in cards)
    uncapped = [priority_sum(c.channels, env.config.priorities) for c in cards]
    assert [c.motif_capped for c in cards] == [True, True, True, False, True]
    assert all(u < 0 for u in uncapped[:4]) and uncapped[4] > 0
    assert cards[3].reward == min(c.reward for c in cards)  # the unfired answer is the worst
    assert cards[4].reward == 0.0                            # capped at 0


def test_the_worst_answer_is_not_rewarded_and_every_answer_carries_signal(group):
    env, cards = group
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no low-signal warning either
        adv, info = env.group_advantages(cards)
    assert abs(float(adv.sum())) < 1e-9
    assert info.n_eligible == 4 and info.share_nonzero == 1.0
    assert adv[3] < 0 and adv[3] == adv[:4].min()
    assert adv[:3].max() > 0
    # the answer the cap bound: no positive advantage, below every eligible answer
    assert adv[4] <= 0 and adv[4] <= adv[:4].min()


def test_guarding_every_fired_answer_pays_the_worst_one(group):
    """The old rule (guarded = the guard fired) on the same group: the worst answer, the only
    one the guard did not fire on, takes the group's whole positive advantage."""
    env, cards = group
    x, valid = env.channel_matrix(cards)
    prio = np.array([env.config.priorities[n] for n in cards[0].channels])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        old, info = gdpo_advantages(x, prio, valid, guarded=np.array([c.motif_capped for c in cards]))
    assert info.n_eligible == 1
    assert old[3] > 0 and old[3] == old.max()
