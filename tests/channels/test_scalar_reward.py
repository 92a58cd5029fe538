"""The scalar reward's order guarantee: every invalid answer below every valid one.

Property tests drive the real reward path (``verifiers.channels.scalar_reward`` on the
channel table's own facts), then plain GRPO on the result; the end-to-end tests go through
``env.score_group``, verl's ``compute_score`` and the demo's GRPO comparison.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gymkit.advantages import gdpo_advantages, grpo_advantages
from gymkit.verifiers.channels import (
    CHANNEL_NAMES,
    INVALID_REWARDS,
    VALID_FLOOR_WIDTH,
    AnswerFacts,
    ChannelParams,
    scalar_reward,
    soft_floor,
)

P = ChannelParams()
CODES = {"tag": ["missing_tag", "empty_tag", "multiple_tags", "unclosed_tag"],
         "text": ["syntax", "lookback", "unknown_field", "answer_too_long", "depth"],
         "book": ["turnover_floor", "degenerate_book", "evaluation_failed"]}
LAYER_OF = {c: layer for layer, cs in CODES.items() for c in cs}
ALL_CODES = sorted(LAYER_OF)
NAMES = [n for n in CHANNEL_NAMES if n != "brief_compliance"]

# channel values far beyond every documented range (R9 and R11 are unbounded below)
values = st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.sampled_from([0.0, -0.8, -1.0]))
answer = st.tuples(st.booleans(), st.sampled_from(ALL_CODES),
                   st.lists(values, min_size=len(NAMES), max_size=len(NAMES)),
                   st.booleans(), st.floats(-1.0, 1.0))


def _reward(valid: bool, code: str, row: list[float], single_motif: bool, ic: float,
            prio: dict[str, float]) -> float:
    facts = AnswerFacts(valid=valid, error_code=None if valid else code,
                        is_single_motif=single_motif, ic=ic)
    r, _ = scalar_reward(dict(zip(NAMES, row, strict=True)), prio, facts, P)
    assert math.isfinite(r)
    return r


@settings(max_examples=200, deadline=None)
@given(group=st.lists(answer, min_size=2, max_size=16),
       prio=st.lists(st.floats(-10, 10, allow_nan=False), min_size=len(NAMES),
                     max_size=len(NAMES)))
def test_every_invalid_scalar_is_below_every_valid_one(group, prio):
    prio_of = dict(zip(NAMES, prio, strict=True))
    rewards = np.array([_reward(*a, prio_of) for a in group])
    valid = np.array([a[0] for a in group])
    if valid.any():
        assert rewards[valid].min() >= -VALID_FLOOR_WIDTH
    if valid.any() and (~valid).any():
        assert rewards[~valid].max() < rewards[valid].min()
        adv = grpo_advantages(rewards)
        assert adv[~valid].max() < adv[valid].min()   # plain GRPO never prefers garbage
    # the invalid values follow the gate layer: tag < text < book, whatever the channels
    for (ok, code, *_), r in zip(group, rewards, strict=True):
        if not ok:
            assert r == INVALID_REWARDS[LAYER_OF[code]]
    assert INVALID_REWARDS["tag"] < INVALID_REWARDS["text"] < INVALID_REWARDS["book"] \
        < -VALID_FLOOR_WIDTH


@settings(max_examples=200, deadline=None)
@given(x=st.floats(-1e308, 1e308, allow_nan=False), y=st.floats(-1e308, 1e308, allow_nan=False))
def test_soft_floor_keeps_order_and_leaves_non_negative_rewards_alone(x, y):
    lo, hi = min(x, y), max(x, y)
    assert soft_floor(lo) <= soft_floor(hi)
    assert -VALID_FLOOR_WIDTH <= soft_floor(lo) <= 0.0 or lo >= 0.0
    if hi >= 0.0:
        assert soft_floor(hi) == hi
    if lo < hi and hi < 0 and hi - lo > 1e-6 * abs(lo) and lo > -1e6:
        assert soft_floor(lo) < soft_floor(hi)   # strictly increasing where floats can tell


@settings(max_examples=100, deadline=None)
@given(n=st.integers(2, 12), seed=st.integers(0, 2**31))
def test_gdpo_diagnostics_use_the_same_banded_scalar(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 5, (n, 4))
    valid = rng.random(n) < 0.5
    _, info = gdpo_advantages(x, np.array([3.0, 1.0, 0.4, 0.2]), valid)
    if valid.any() and (~valid).any():
        assert info.scalar_reward[~valid].max() < info.scalar_reward[valid].min()
        assert info.grpo_advantage[~valid].max() < info.grpo_advantage[valid].min()


# ------------------------------------------------------------ through the real doors
BAD_VALID = ["<alpha>rank(-returns)</alpha>",                        # reward −7.39 raw
             "<alpha>-1 * ts_corr(rank(ts_delta(log(volume), 2)), rank((close - open) / open), 6)"
             "</alpha>"]
INVALID = {"oops": "tag", "<alpha>rank(close</alpha>": "text", "<alpha>close - close</alpha>": "book",
           "<alpha>rank(ts_mean(close, 250))</alpha>": "book"}


@pytest.fixture(scope="module")
def env():
    import gymkit

    return gymkit.make("us46-default")


def test_env_cards_put_garbage_below_bad_formulas(env):
    cards = env.score_group(BAD_VALID + list(INVALID))
    valid = [c for c in cards if c.valid]
    invalid = [c for c in cards if not c.valid]
    assert len(valid) == 2 and len(invalid) == 4
    raw_sum = sum(env._priority_of[k] * v for k, v in valid[0].channels.items())
    assert raw_sum < -5   # a genuinely bad formula: the old scalar was below every invalid one
    assert max(c.reward for c in invalid) < min(c.reward for c in valid)
    for c, layer in zip(invalid, INVALID.values(), strict=True):
        assert c.reward == INVALID_REWARDS[layer], c.error.code
    _, info = env.group_advantages(cards)
    ok = np.array([c.valid for c in cards])
    assert info.grpo_advantage[~ok].max() < info.grpo_advantage[ok].min()
    assert valid[0].channels["cpcv"] < 0   # raw channels are unchanged: still the CPCV score


def test_verl_compute_score_ranks_a_syntax_error_below_a_bad_formula(env):
    from gymkit.adapters import verl

    bad = verl.compute_score("gymkit/us46-default", "<alpha>rank(close</alpha>", None, {})
    poor = verl.compute_score("gymkit/us46-default", "<alpha>rank(-returns)</alpha>", None, {})
    missing = verl.compute_score("gymkit/us46-default", "no tag", None, {})
    assert missing["score"] < bad["score"] < poor["score"]
    assert bad["valid"] == 0.0 and poor["valid"] == 1.0


def test_demo_plain_grpo_never_ranks_an_invalid_answer_above_a_valid_one():
    from gymkit.demo import SAMPLE_GROUP, score_demo

    group = [*SAMPLE_GROUP, ("oops", "oops"), ("rank(-returns)", BAD_VALID[0])]
    run = score_demo("us46-default", group)
    ok = np.array([c.valid for c in run.cards])
    grpo = run.info.grpo_advantage
    assert (~ok).any() and ok.any()
    assert grpo[~ok].max() < grpo[ok].min()
    assert grpo[-2] < grpo[-1]


def test_soft_floor_is_monotone_where_rounding_b_minus_s_broke_it():
    """Hypothesis found B·s/(B − s) in floats out of order: B − s rounds first.  Exact
    rationals rounded once keep the order, here and at a binade crossing of B − s (s ≈ −6)."""
    assert soft_floor(-1.8014398509481988e+16) <= soft_floor(-1.2009599006321322e+16)
    s = np.nextafter(-6.0, -np.inf)
    xs = [s, -6.0, np.nextafter(-6.0, 0.0)]
    for _ in range(200):
        xs.append(np.nextafter(xs[-1], 0.0))
    ys = [soft_floor(float(x)) for x in sorted(xs)]
    assert ys == sorted(ys)
    assert soft_floor(-6.0) == -1.5 and soft_floor(-2.0) == -1.0   # exact where B·s/(B − s) is
