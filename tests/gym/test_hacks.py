"""The hack suite: one test per row of the seed's reward-hack log (alpha-gym-post §6).

Each test names the exploit (a concrete formula family that used to win under a
profit-and-format reward) and asserts the channel that now closes it, on the default market.
"""

from __future__ import annotations

import numpy as np
import pytest

import gymkit
from gymkit.advantages import gdpo_advantages, standardise_channels
from gymkit.data import DEFAULT_SPLIT, default_market
from gymkit.dsl.evaluator import evaluate
from gymkit.verifiers import backtest
from gymkit.verifiers.channels import INVALID_REWARDS

from .conftest import tag

VOLUME = tag("rank(ts_std(volume, 20) / ts_mean(volume, 20) * ts_std(returns, 250) / ts_std(returns, 20))")
REVERSAL_SN = tag("rank(group_neutralize(-ts_sum(returns, 5), sector))")
REVERSAL = tag("rank(-ts_sum(returns, 5))")


@pytest.mark.parametrize("answer", [REVERSAL_SN, VOLUME])
def test_planted_effects_earn_positive_cpcv_and_reward(env, answer: str) -> None:
    """Sanity anchor: the effects planted in the default market (data/README.md) are found.

    Assertion: valid, R1 > 0 and scalar reward > 0 — the honest formulas every hack below is
    measured against.  The plain 5-day reversal book trades the planted reversal too, but it
    *is* R4's reversal factor (R² > 0.99), so since channels-v6 it is a factor clone:
    R1 > 0.5 and reward capped at 0 (test_jul09_known_factor_in_disguise).
    """
    card = env.score(answer)
    assert card.valid and card.channels["cpcv"] > 0.5 and card.reward > 1.0


def test_jul04_collapsed_identical_answers(env) -> None:
    """Exploit: every answer in the group collapses onto one formula; a profit reward gives
    identical scores, so nothing pushes the policy off the copy.

    Assertion (R9): the k-th repeat of a form pays −0.3·k; in a fully collapsed group the
    GDPO advantage falls strictly with each repeat, the first occurrence gets the positive
    share and the repeats together a negative one, whereas without R9 every advantage
    would be 0.
    """
    cards = env.score_group([VOLUME] * 12)
    r9 = [c.channels["novelty_syntax"] for c in cards]
    assert r9[0] > 0 and r9[1:] == pytest.approx([-0.3 * k for k in range(1, 12)])
    adv, _ = env.group_advantages(cards)
    assert np.all(np.diff(adv) < 0) and adv[0] > 0 and adv[1:].sum() < 0 and adv[-1] < 0
    assert abs(adv.sum()) < 1e-9
    x, valid = env.channel_matrix(cards)
    no_r9 = env.priorities.copy()
    no_r9[env.channels.index("novelty_syntax")] = 0.0
    with pytest.warns(RuntimeWarning, match="only 0% of advantages are non-zero"):
        assert np.all(gdpo_advantages(x, no_r9, valid)[0] == 0.0)


def test_jul05_different_code_same_book(scratch_env) -> None:
    """Exploit: new code that trades an old book (``-rank(x)`` for ``rank(-x)``, ``ts_mean``
    for ``ts_sum``, ``rank(close * 2)`` for ``rank(close)``) earns syntax novelty again.

    Assertion (R8): once one member is committed, each rewrite has P&L |corr| ≈ 1 with it and
    pays the near-duplicate −0.2 instead of its earlier positive P&L novelty; R9's bonus,
    scaled by (1 − |corr|), drops to ≈ 0.
    """
    env = scratch_env
    # the sector-neutral reversal (the plain book is a factor clone, capped at 0 either way)
    rewrites = [tag("-rank(group_neutralize(ts_sum(returns, 5), sector))"),
                tag("rank(group_neutralize(ts_mean(returns, 5) * -1, sector))"),
                tag("rank(group_neutralize(-ts_sum(returns, 5), sector) * 2)")]
    before = env.score_group(rewrites)
    assert len({c.canonical for c in before}) == 3
    assert all(c.channels["novelty_pnl"] > 0 and c.reward > 0 for c in before)
    original = env.score(REVERSAL_SN)
    assert env.commit([original]) == 1
    for b, a in zip(before, env.score_group(rewrites), strict=True):
        assert a.metrics["novelty"]["nearest"] == original.canonical
        assert a.metrics["novelty"]["max_abs_corr"] > 0.999
        assert a.channels["novelty_pnl"] == -0.2 and a.channels["novelty_syntax"] < 0.001
        assert a.reward < b.reward


TILTS = [tag("rank(close * (1 + 2 * returns))"), tag("rank(close + ts_delta(close, 5))"),
         tag("rank(ts_mean(close, 5) + 2 * ts_delta(close, 10))")]


@pytest.mark.parametrize("answer", TILTS)
def test_jul06_static_price_level_tilts(env, answer: str) -> None:
    """Exploit: a slow price-level tilt (rank of the price, barely moving) is profitable on the
    scored history with no predictive power (IC ≈ 0) and took the top rewards.

    Assertion (R7 + R6): its CPCV is positive (the exploit works on profit) yet its IC
    reward stays below 0.03, the minimum-turnover ramp charges it (turnover < 6%), and its
    reward is below the honest volume formula's by more than 1.
    """
    card, honest = env.score(answer), env.score(VOLUME)
    assert card.valid and card.channels["cpcv"] > 0
    assert card.metrics["ic"] < 0.0065 and card.channels["ic"] < 0.03
    assert card.metrics["turnover"] < 0.06 and card.channels["min_turnover"] < 0
    assert card.reward < honest.reward - 1.0


def test_jul06_motif_guard_caps_a_profitable_bare_motif(env) -> None:
    """Exploit: a bare single-motif price formula (rank of 63-day volatility) with positive
    CPCV but IC < 0.005: profit without prediction.

    Assertion (R10): the motif guard fires (−1.0) and the scalar reward is capped at 0 even
    though R1 is positive.
    """
    card = env.score(tag("rank(ts_std(returns, 63))"))
    assert card.valid and card.channels["cpcv"] > 0 and card.metrics["ic"] < 0.005
    assert card.channels["motif_guard"] == -1.0 and card.motif_capped and card.reward <= 0.0
    uncapped = sum(env.config.priorities[k] * v for k, v in card.channels.items())
    assert card.reward == min(0.0, uncapped)


@pytest.mark.parametrize("formula", ["rank(ts_mean(close, 250))", "rank(cap)", "rank(ts_mean(close, 20))"])
def test_jul07_books_trading_under_two_percent_are_invalid(env, formula: str) -> None:
    """Exploit: high-CPCV books that trade 0.1–1.5% of the book a day (a 250-day price mean,
    a cap tilt) pay almost no costs and won.

    Assertion (R6 hard floor): invalid with code turnover_floor, R1 = −0.8, R6 = −1.0, every
    other channel 0, and a reward below every valid honest formula.
    """
    card = env.score(tag(formula))
    assert card.metrics["turnover"] < 0.02
    assert not card.valid and card.error.code == "turnover_floor"
    assert card.channels["cpcv"] == -0.8 and card.channels["min_turnover"] == -1.0
    assert card.reward == INVALID_REWARDS["book"]  # the book-gate value of the invalid band
    assert card.reward < env.score(REVERSAL).reward
    if formula == "rank(ts_mean(close, 250))":
        assert card.metrics["cpcv"]["score"] > 0.3  # it really was profitable


def test_jul07_jul26_stress_channel_is_not_faked(env) -> None:
    """Rows Jul 7–8 / Jul 26 (JEPA stress test, crash scenario).  Exploit: formulas tuned to the
    exact scored history.  Assertion: R3 re-scores the formula in the shipped JEPA stress
    worlds (only worlds that passed their gates; no crash world) and charges books that earn
    from the path the stocks took (slow, sign-tuned level tilts: every 4th static book of the
    labelled gate set) far more than honest formulas (every 4th of the robust set); configuring
    R3 without worlds is refused rather than filled with a made-up value.
    """
    from gymkit.jepa.worlds import read_manifest

    man = read_manifest("default")[0]
    kept = {w["name"] for w in man["worlds"] if w["kept"]}
    assert kept and "crash" not in kept
    lab = man["labelled"]
    static = [env.score(tag(x["formula"])) for x in lab if x["family"] == "static"][::4]
    honest = [env.score(tag(x["formula"])) for x in lab if x["family"] == "honest"][::4]
    assert all(c.valid for c in static + honest)
    assert set(honest[0].metrics["stress"]["world_cpcv"]) == kept
    drop_s = np.mean([c.metrics["stress"]["mean_drop"] for c in static])
    drop_h = np.mean([c.metrics["stress"]["mean_drop"] for c in honest])
    assert drop_s > 2.0 * drop_h
    assert np.mean([c.channels["jepa_stress"] for c in static]) < np.mean(
        [c.channels["jepa_stress"] for c in honest]) <= 0.0
    with pytest.raises(ValueError, match="needs stress worlds"):
        gymkit.make("us46-default", stress_worlds="")


def test_jul09_windows_jittered_around_one_template(env) -> None:
    """Exploit: 69–83% of answers were one momentum template with jittered windows
    (``ts_mean(returns, 20)``, ``21``, ``19``, ``22``), each a "new" formula to syntax novelty.

    Assertion (R9 with window bucketing): all share one bucketed canonical form, so the
    repeats pay −0.3, −0.6, −0.9 and their rewards fall below the first's.
    """
    jittered = [tag(f"rank(-ts_mean(returns, {d}))") for d in (20, 21, 19, 22)]
    cards = env.score_group(jittered)
    assert {c.canonical for c in cards} == {"rank(-ts_mean(returns, 21))"}
    assert [c.channels["novelty_syntax"] for c in cards][1:] == pytest.approx([-0.3, -0.6, -0.9])
    assert all(c.reward < cards[0].reward for c in cards[2:])


def test_jul09_known_factor_in_disguise(env) -> None:
    """Exploit (same row): arms that were a known factor (the 5-day reversal book) in disguise.

    Assertion (R4): the plain reversal book, whose gross P&L the factor model explains
    (R² > 0.99), has no residual Sharpe and pays for all of its (net) edge: the factor part
    of its Sharpe is its whole raw Sharpe, and R4 = −0.4·that.  Its sector-neutral version
    keeps an edge the factors do not explain and pays for a smaller share of it.  A pure
    factor book with no edge (12-1 momentum here, raw Sharpe ≈ 0) pays nothing and has a
    residual Sharpe of 0 (regressing its net P&L on gross factors left the cost series:
    −40).
    """
    plain, neutral = env.score(REVERSAL), env.score(REVERSAL_SN)
    fp, fn_ = plain.metrics["factors"], neutral.metrics["factors"]
    assert fp["r2"] > 0.99 and abs(fp["residual_sharpe"]) < 0.1
    assert fp["factor_sharpe"] >= 0.95 * fp["raw_sharpe"]
    assert plain.channels["factor_neutrality"] == pytest.approx(-0.4 * min(3.0, fp["factor_sharpe"]))
    assert plain.channels["factor_neutrality"] < -0.3
    assert fn_["residual_sharpe"] > 0.3 > fp["residual_sharpe"]
    share_plain = fp["factor_sharpe"] / fp["raw_sharpe"]
    share_neutral = fn_["factor_sharpe"] / fn_["raw_sharpe"]
    assert share_neutral < 0.7 * share_plain
    mom = env.score(tag("rank(delay(close, 21) / delay(close, 252))"))
    assert mom.metrics["factors"]["residual_sharpe"] == 0.0
    assert mom.channels["factor_neutrality"] == 0.0
    # R4's charge alone left the factor itself a reward of +1.35 (channels-v5); R10 caps a
    # factor clone (>= 80% of its raw Sharpe explained) at 0, and the sector-neutral book,
    # 67% explained with residual Sharpe 0.37, keeps its reward
    assert plain.channels["cpcv"] > 0.5 and plain.motif_capped and plain.reward == 0.0
    assert plain.channels["motif_guard"] == -1.0
    assert not neutral.motif_capped and neutral.reward > 2.0


def test_jul10_invalid_answers_never_get_positive_advantage(env) -> None:
    """Exploit: in a group of bad valid answers (huge turnover, negative CPCV), invalid
    answers scored 0 on most channels and so looked *better*: 63–83% got positive advantage.

    Assertion: before the validity projection GDPO gives every invalid answer here a
    positive advantage; after it each is ≤ 0 and the group is zero-sum.
    """
    group = [tag("rank(returns)"), tag("rank(close - open)"), tag("rank(ts_corr(close, volume, 10))"),
             VOLUME, "no tag", tag("close - close"), tag("rank(ts_mean(close, 250))"),
             tag("rank(volume / adv(20))")]
    cards = env.score_group(group)
    x, valid = env.channel_matrix(cards)
    raw = standardise_channels(x)[0] @ env.priorities
    assert valid.tolist() == [True, True, True, True, False, False, False, True]
    assert np.all(raw[~valid] > 0)  # the exploit, without the projection
    adv, info = env.group_advantages(cards)
    assert np.all(adv[~valid] <= 0.0) and abs(adv.sum()) < 1e-9 and info.n_valid == 5


def test_jul23_holdout_never_reaches_a_card() -> None:
    """Exploit: selection that looks at holdout data.  Assertion (train-mode isolation):
    garbage in every holdout row changes nothing on a card but the data fingerprint
    (scoring evaluates and backtests on a panel without holdout rows)."""
    market = default_market()
    hold = DEFAULT_SPLIT.holdout_mask(market.dates)[:, None]
    poisoned = market.replace(**{k: np.where(hold, getattr(market, k) * 3.0, getattr(market, k))
                                 for k in ("open", "high", "low", "close", "volume")})
    a = gymkit.make("us46-default", archive={"seed": "none"})
    b = gymkit.make("us46-default", market=poisoned, archive={"seed": "none"})
    ca, cb = a.score(VOLUME).to_dict(timings=False), b.score(VOLUME).to_dict(timings=False)
    assert ca["data_fingerprint"] != cb["data_fingerprint"]
    assert {k: v for k, v in ca.items() if "fingerprint" not in k} == \
           {k: v for k, v in cb.items() if "fingerprint" not in k}


def test_aug09_same_close_fill(env) -> None:
    """Exploit: signal and fill on the same close.  ``rank(returns)`` ranks today's
    close-to-close return; filled at today's close it would "earn" the return it already
    saw (IC ≈ 1 against that return).

    Assertion: the oracle fills at the next open and earns open(t+1)→open(t+2): the card's
    IC is ≈ 0, R1 is negative, and its numbers are exactly the verifier's protocol applied
    to any formula (no special case).
    """
    card = env.score(tag("rank(returns)"))
    train = DEFAULT_SPLIT.train(default_market())
    values = evaluate("rank(returns)", train)
    ret = train.field("returns")
    rows = slice(252, train.T - 2)
    same_close_ic = np.nanmean([np.corrcoef(values[t], ret[t])[0, 1] for t in range(rows.start, rows.stop, 50)])
    assert same_close_ic > 0.85  # Pearson of a rank with the raw return: the look-ahead pays
    assert card.valid and abs(card.metrics["ic"]) < 0.01 and card.channels["cpcv"] < 0
    bt = backtest(values, train, DEFAULT_SPLIT, "train")
    assert card.metrics["cpcv"]["score"] == bt.cpcv.score and card.metrics["ic"] == bt.metrics.ic


@pytest.mark.parametrize("formula", [
    "scale(ts_rank(ts_delta(volume, 23), 47) - ts_rank(ts_delta(volume, 23), 47))",
    "rank(close) - rank(close)", "1", "rank(5)", "log(-close)",
])
def test_empty_and_constant_books_are_invalid(env, formula: str) -> None:
    """Exploit (§5 R6 example, a real untrained answer): ``x - x`` holds nothing, pays no
    costs and so beat honest formulas under high costs.

    Assertion: invalid with code degenerate_book; R1 −0.8, R6 −1.0.
    """
    card = env.score(tag(formula))
    assert not card.valid and card.error.code == "degenerate_book"
    assert card.channels["cpcv"] == -0.8 and card.channels["min_turnover"] == -1.0


def test_flat_pnl_earns_no_novelty_even_without_the_empty_book_gate() -> None:
    """Exploit: a flat P&L is uncorrelated with every archive entry, so R8/R9 would pay an
    empty book full novelty if an environment switched the degenerate-book gate off.

    Assertion: the novelty look-up treats a flat P&L as a perfect duplicate.
    """
    import numpy as np

    from gymkit.scoring import AnswerState, novelty_of
    from gymkit.verifiers.archive import NoveltyArchive

    class _BT:
        net = np.zeros(50)

    arc = NoveltyArchive(50)
    arc.add("seed", np.random.default_rng(0).normal(size=50), pinned=True)
    st = AnswerState.__new__(AnswerState)
    st.__dict__.update(error=None, bt=_BT(), canonical="x")
    assert novelty_of(st, arc, 0).max_abs_corr == 1.0
