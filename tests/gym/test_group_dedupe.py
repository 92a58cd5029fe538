"""A group's copies of one formula are backtested once and score exactly like the first copy."""

from __future__ import annotations

import json

import gymkit.scoring as scoring

from .conftest import tag


def _untimed(card) -> str:
    return json.dumps(card.to_dict(timings=False), sort_keys=True)


def test_copies_share_one_backtest_and_match_a_lone_score(env, monkeypatch):
    """Exploit guarded: none (a speed path) — but it must be invisible in results.

    Equal canonical_key (here ``a + b`` vs ``b + a`` and an exact copy) means bit-identical
    values, so the second and third copies reuse the first backtest; every card must still be
    what scoring the answer alone gives, and the R9 in-group duplicate count must still grow.
    """
    calls = []
    real = scoring.run_oracle

    def counting(st, setup):
        calls.append(st.completion)
        real(st, setup)

    monkeypatch.setattr(scoring, "run_oracle", counting)
    a = tag("rank(ts_delta(close, 3) + ts_delta(open, 3))")
    b = tag("rank(ts_delta(open, 3) + ts_delta(close, 3))")
    other = tag("rank(-ts_sum(returns, 5))")
    bad = tag("rank(clos)")
    cards = env.score_group([a, b, other, a, bad])
    assert calls == [a, other, bad]  # one oracle run per distinct valid formula (+ the invalid)
    assert [c.valid for c in cards] == [True, True, True, True, False]
    assert cards[1].metrics["novelty"]["group_duplicates"] >= 1
    assert cards[3].metrics["novelty"]["group_duplicates"] >= 1
    monkeypatch.setattr(scoring, "run_oracle", real)
    lone = env.score_group([a])[0]
    for c in (cards[0], cards[1], cards[3]):
        assert c.metrics["cpcv"] == lone.metrics["cpcv"]
        assert c.metrics["sharpe"] == lone.metrics["sharpe"]
        assert c.pnl is not None and lone.pnl is not None and (c.pnl == lone.pnl).all()
    assert cards[3].timings["book"] == 0.0 and cards[0].timings["book"] > 0.0


def test_a_collapsed_group_scores_like_one_answer(env):
    """Twelve samples of one formula: twelve identical cards apart from the duplicate count."""
    a = tag("rank(ts_std(volume, 20) / ts_mean(volume, 20))")
    cards = env.score_group([a] * 12)
    lone = env.score_group([a])[0]
    assert _untimed(cards[0]) == _untimed(lone)
    dups = [c.metrics["novelty"]["group_duplicates"] for c in cards]
    assert dups == list(range(12))
