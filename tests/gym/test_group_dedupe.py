"""A group's copies of one formula are backtested once and score exactly like the first copy."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gymkit.scoring as scoring
from gymkit.report.why import channel_reasons

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


V = "ts_std(volume, 21) / ts_mean(volume, 21)"
#: Ways to write V's book again: the book ranks the signal every day, so a positive rescaling,
#: a shift, a monotone map or a rank of V trades exactly V's book (the red team's copies, and
#: the ones a trained policy wrote: ``rank(volume)`` / ``volume`` / ``log(volume)``,
#: ``ts_sum`` for ``ts_mean``, ``-rank(-x)``).
COPIES = (f"{V} + {V}", f"({V}) * 2", f"rank({V})", f"-rank(-({V}))", f"rank(1 ? {V} : close)",
          f"({V}) + 1", f"log({V})")


def test_a_cosmetic_copy_of_a_book_is_a_duplicate(env):
    """Exploit guarded: cosmetic copies in a group (red team, issue 20).  ``V + V``, ``V * 2``
    and friends have V's book but not V's canonical form; R9 counted only equal forms, so each
    copy earned the unseen-form bonus instead of −0.3 per duplicate (0.3–0.9 reward per copy).
    They are now counted by their book: the same daily net P&L bit for bit."""
    cards = env.score_group([tag(V), *(tag(c) for c in COPIES)])
    assert all(c.valid for c in cards), [c.error for c in cards]
    first = cards[0].pnl
    for k, (text, card) in enumerate(zip(COPIES, cards[1:], strict=True), start=1):
        assert card.pnl is not None and np.array_equal(card.pnl, first), text  # the same book
        assert card.metrics["novelty"]["group_duplicates"] == k, text
        assert card.channels["novelty_syntax"] == -0.3 * k, text
    assert cards[0].channels["novelty_syntax"] > 0.0  # the first copy keeps its bonus
    why = channel_reasons(cards[1], env.setup.params)["novelty_syntax"]
    assert why == "a copy (1 earlier in the group with this form or this book): -0.3 × 1", why


def test_a_different_book_of_the_same_family_is_not_a_duplicate(env):
    """The book rule is exact: a jittered window out of the form's bucket trades another book
    and keeps its bonus; only the same book (or the same bucketed form) counts."""
    a, b = tag("rank(ts_std(volume, 21) / ts_mean(volume, 21))"), tag("rank(ts_std(volume, 60) / ts_mean(volume, 60))")
    cards = env.score_group([a, b])
    assert not np.array_equal(cards[0].pnl, cards[1].pnl)
    assert [c.metrics["novelty"]["group_duplicates"] for c in cards] == [0, 0]
    assert cards[1].channels["novelty_syntax"] > 0.0


@settings(max_examples=20, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations(range(4)), extra=st.sampled_from(COPIES))
def test_duplicate_counts_follow_group_order(env, order, extra):
    """In any order, the k-th answer trading one book has k − 1 duplicates before it; an
    unrelated valid answer and an invalid one count 0 and are not counted."""
    answers = [tag(V), tag(extra), tag("rank(-ts_sum(returns, 5))"), tag("rank(clos)")]
    group = [answers[i] for i in order]
    cards = env.score_group(group)
    seen_v = 0
    for i, c in zip(order, cards, strict=True):
        dups = c.metrics.get("novelty", {}).get("group_duplicates", 0)
        if i < 2:
            assert dups == seen_v
            seen_v += 1
        else:
            assert dups == 0


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3), st.one_of(st.none(), st.integers(0, 3))),
                max_size=30))
def test_duplicate_counts_are_the_pairwise_definition(answers):
    """``group_duplicate_counts`` (three counters, linear in the group) equals its definition:
    for each valid answer, the earlier valid answers with its form or its book (an answer with
    no backtest matches on its form only)."""
    from types import SimpleNamespace

    def state(valid, form, book):
        bt = None if book is None else SimpleNamespace(net=np.full(3, float(book)))
        return SimpleNamespace(valid=valid, canonical=f"f{form}", bt=bt)

    states = [state(*a) for a in answers]
    want = []
    for i, (valid, form, book) in enumerate(answers):
        want.append(0 if not valid else sum(
            1 for v, f, b in answers[:i]
            if v and (f == form or (book is not None and b == book))))
    assert scoring.group_duplicate_counts(states) == want
