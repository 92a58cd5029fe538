"""The environment: groups, GDPO advantages, archive state, Gymnasium API, train isolation."""

from __future__ import annotations

import numpy as np
import pytest

import gymkit
from gymkit import scoring
from gymkit.data import DEFAULT_SPLIT, default_market
from gymkit.verifiers.pbo import rank_drop_penalty

from .conftest import tag

REVERSAL = tag("rank(group_neutralize(-ts_sum(returns, 5), sector))")
VOLUME = tag("rank(ts_std(volume, 20) / ts_mean(volume, 20) * ts_std(returns, 250) / ts_std(returns, 20))")
GROUP = [
    REVERSAL, VOLUME, tag("rank(-ts_delta(close, 3))"), tag("rank(ts_delta(close, 63))"),
    tag("rank(ts_corr(close, volume, 10))"), tag("rank(close - open)"), "no tag at all",
    tag("rank(ts_mean(close, 250))"), tag("rank(volume / adv(20))"), REVERSAL,
    tag("rank(-ts_mean(returns, 20))"), tag("rank(ts_std(returns, 63))"),
]


def test_group_fills_group_channels_and_advantages_respect_validity(env) -> None:
    cards = env.score_group(GROUP, brief="reversal or volume")
    assert len(cards) == 12 and [c.valid for c in cards].count(False) == 2
    pbo = np.array([c.channels["pbo"] for c in cards])
    ok = [c for c in cards if c.valid]
    is_ = np.array([c.metrics["cpcv"]["is_sharpes"] for c in ok])
    oos = np.array([c.metrics["cpcv"]["test_sharpes"] for c in ok])
    want = np.stack([rank_drop_penalty(is_[:, s], oos[:, s]) for s in range(15)], axis=1)
    want = want.mean(axis=1) + 0.0
    assert np.count_nonzero(want) >= 5  # R2 actually fires in a realistic group
    np.testing.assert_array_equal(pbo[[c.valid for c in cards]], want)
    assert np.all((pbo >= -0.48) & (pbo <= 0.0))
    assert all(c.channels["pbo"] == 0.0 for c in cards if not c.valid)
    assert cards[9].channels["novelty_syntax"] == -0.3  # the repeat of answer 0
    assert len({c.brief_digest for c in cards}) == 1 and cards[0].brief_digest is not None
    adv, info = env.group_advantages(cards)
    assert abs(adv.sum()) < 1e-9
    assert all(a <= 0.0 for a, c in zip(adv, cards, strict=True) if not c.valid)
    assert info.n_valid == 10
    np.testing.assert_allclose(info.scalar_reward, [c.reward for c in cards])
    x, valid = env.channel_matrix(cards)
    # briefed: the 12 active channels plus R13 (an unknown brief text is not checked: 0)
    assert x.shape == (12, 13) and valid.sum() == 10
    assert all(c.channels["brief_compliance"] == 0.0 for c in cards)


def test_single_answer_equals_group_of_one_and_pbo_is_zero(env) -> None:
    one = env.score(REVERSAL)
    assert one.channels["pbo"] == 0.0
    assert one.to_dict(timings=False) == env.score_group([REVERSAL])[0].to_dict(timings=False)
    with pytest.raises(TypeError, match="sequence"):
        env.score_group(REVERSAL)


def test_scoring_never_changes_the_archive(env) -> None:
    v, d = env.archive.version, env.archive.digest
    env.score_group(GROUP)
    assert (env.archive.version, env.archive.digest) == (v, d)


def test_commit_adds_valid_answers_and_restore_undoes_it(scratch_env) -> None:
    env = scratch_env
    before = env.score(VOLUME)
    blob, v0, n0 = env.archive_snapshot(), env.archive.version, len(env.archive)
    cards = env.score_group([VOLUME, tag("rank(ts_mean(close, 250))"), "junk", VOLUME])
    assert env.commit(cards) == 1  # one valid form; the floor failure and junk are skipped
    assert env.archive.version == v0 + 1 and len(env.archive) == n0 + 1
    after = env.score(VOLUME)
    assert after.archive_version == v0 + 1 and after.archive_digest != before.archive_digest
    assert after.channels["novelty_syntax"] == -0.3 and after.channels["novelty_pnl"] == -0.2
    assert after.metrics["novelty"]["nearest"] == before.canonical
    assert env.commit([tag("rank(ts_corr(close, volume, 10))")]) == 1  # completions are scored
    env.archive_restore(blob)
    assert env.score(VOLUME).to_dict(timings=False) == before.to_dict(timings=False)


def test_cards_of_another_environment_are_refused(env) -> None:
    other = gymkit.make("us46-default", archive={"seed": "none"})
    card = other.score(REVERSAL)
    with pytest.raises(ValueError, match="another environment"):
        env.group_advantages([card])
    with pytest.raises(ValueError, match="another environment"):
        env.commit([card])
    assert len(other.archive) == 0 and card.channels["novelty_pnl"] == 0.4


def test_gymnasium_single_turn_api(env) -> None:
    with pytest.raises(RuntimeError, match="reset"):
        gymkit.make("us46-default").step(REVERSAL)
    obs, info = env.reset(seed=7, options={"briefs": ["alpha one", "alpha two", "alpha three"]})
    assert "<alpha>" in obs and info["brief"] in obs and info["env_fingerprint"] == env.fingerprint
    assert "jepa_stress" in info["channels"] and not any("jepa_stress" in n for n in info["notes"])
    obs2, info2 = env.reset(seed=7, options={"briefs": ["alpha one", "alpha two", "alpha three"]})
    assert (obs2, info2["brief"]) == (obs, info["brief"])
    out, reward, terminated, truncated, step_info = env.step(REVERSAL)
    assert (terminated, truncated) == (True, False) and out == obs
    assert reward == step_info["card"].reward > 0 and step_info["valid"]
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step(REVERSAL)
    env.reset(options={"brief": "b"})
    _, reward, _, _, step_info = env.step("nothing")
    assert reward < 0 and step_info["error"] == "missing_tag"


def test_scoring_never_reads_holdout_rows() -> None:
    """Garbage in every holdout row (prices x7, volume /9, cap NaN) changes no number on a card."""
    market = default_market()
    hold = DEFAULT_SPLIT.holdout_mask(market.dates)[:, None]
    fields = {k: np.where(hold, getattr(market, k) * 7.0, getattr(market, k))
              for k in ("open", "high", "low", "close")}
    fields["volume"] = np.where(hold, market.volume / 9.0, market.volume)
    fields["cap"] = np.where(hold, np.nan, market.cap)
    poisoned = market.replace(**fields)
    a = gymkit.make("us46-default", archive={"seed": "none"})
    b = gymkit.make("us46-default", market=poisoned, archive={"seed": "none"})
    assert b.config.market == "user" and a.data_fingerprint != b.data_fingerprint
    for answer in (REVERSAL, VOLUME, tag("rank(cap)")):
        ca, cb = a.score(answer).to_dict(timings=False), b.score(answer).to_dict(timings=False)
        for key in ("valid", "reward", "channels", "metrics", "error"):
            assert ca[key] == cb[key], (answer, key)


def test_evaluation_errors_fail_closed(env, monkeypatch) -> None:
    def broken(*args, **kwargs):
        raise FloatingPointError("kernel blew up")

    monkeypatch.setattr(scoring, "evaluate", broken)
    card = env.score(REVERSAL)
    assert not card.valid and card.error.code == "evaluation_failed"
    assert card.channels["cpcv"] == -0.8 and card.reward < 0
    # Internals never reach the policy: neither the exception type nor its text.
    assert "FloatingPointError" not in card.error.message and "blew" not in card.error.message


def test_overrides_change_channels_priorities_and_floor(env) -> None:
    lean = gymkit.make("us46-default", channels=("cpcv", "turnover", "min_turnover"),
                       priorities={"cpcv": 1.0}, thresholds={"min_turnover_floor": 0.3, "min_turnover_free": 0.4},
                       archive={"seed": "none"})
    card = lean.score(VOLUME)  # turnover ~0.20 is now below the floor
    assert list(card.channels) == ["cpcv", "turnover", "min_turnover"]
    assert not card.valid and card.error.code == "turnover_floor"
    ok = lean.score(REVERSAL)
    assert ok.valid and ok.reward == pytest.approx(ok.channels["cpcv"] + ok.channels["turnover"])
    assert "pbo: disabled by configuration" in ok.notes


def test_archive_is_seeded_from_the_alpha101_corpus(env) -> None:
    """98 of the 101 alphas pass the gate on the default market (#7 and #97 trade below the
    floor, #96 is empty); each is pinned, and the seed is cached per environment."""
    from gymkit.seed_archive import alpha101_formulas

    assert len(alpha101_formulas()) == 101
    fresh = gymkit.make("us46-default")
    assert fresh.archive is not env.archive
    assert fresh.archive_snapshot() == gymkit.make("us46-default").archive_snapshot()
    assert len(fresh.archive) == 98 and fresh.archive.capacity == 1024
    assert fresh.archive.n_days == env.n_days == 3050
    # Alpha#3, -1 * correlation(rank(open), rank(volume), 10): bucketed window 10 -> 5
    assert fresh.archive.forms[2] == "-ts_corr(rank(open), rank(volume), 5)"


@pytest.mark.parametrize(("answer", "code"), [
    (None, "missing_tag"),
    ("<alpha>" + "(" * 5000 + "close" + ")" * 5000 + "</alpha>", "too_long"),
    ("<alpha>" + "rank(" * 30 + "close" + ")" * 30 + "</alpha>", "depth"),
    ("<alpha>rank(close)</alpha><alpha>rank(open)</alpha>", "multiple_tags"),
    ("<alpha>   </alpha>", "empty_tag"),
    ("<alpha>__import__('os')</alpha>", "bad_char"),
])
def test_hostile_answers_become_invalid_cards(env, answer, code) -> None:
    card = env.score(answer)
    assert not card.valid and card.error.code == code and card.reward < 0
    assert len(card.error.message) < 200 and "\n" not in card.error.message


def test_brief_compliance_channel_scores_the_brief_when_switched_on(env) -> None:
    """R13 is off in us46-default (cards keep the seed's 12 channels); switched on, it scores
    each valid answer against the generated brief's checkable facets, and is 0 without one."""
    from gymkit.briefs import check_compliance, generate_briefs
    from gymkit.dsl import parse

    assert "brief_compliance" not in env.channels
    on = gymkit.make("us46-default", channels=[*env.channels, "brief_compliance"])
    brief = generate_briefs(24)[5]
    answers = [REVERSAL, tag("rank(sign(ts_corr(close - vwap, volume, 168)))"), tag("rank(clos)")]
    cards = on.score_group(answers, brief=brief.text)
    # the second answer follows this brief (vwap deviation, ~168 days, sign of a ts_corr)
    assert cards[1].channels["brief_compliance"] == 0.0 > cards[0].channels["brief_compliance"]
    for answer, card in zip(answers[:2], cards[:2], strict=True):
        formula = answer.removeprefix("<alpha>").removesuffix("</alpha>")
        want = check_compliance(parse(formula), brief).score
        assert card.channels["brief_compliance"] == want + 0.0 and -1.0 <= want <= 0.0
    assert cards[2].channels["brief_compliance"] == 0.0  # invalid answers score 0 here
    assert {c.channels["brief_compliance"] for c in on.score_group(answers[:2])} == {0.0}
    assert on.fingerprint != env.fingerprint
