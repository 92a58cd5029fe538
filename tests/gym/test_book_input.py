"""The book of ``rank(x)`` is the book of ``x``, bit for bit: scoring skips root ranks.

``gymkit.scoring.book_input`` drops the root ``rank`` calls before evaluation, because the
book ranks each day itself.  That is only sound if every book number (weights, P&L, costs,
turnover, IC, metrics, CPCV, factor exposures) is bit-identical with and without the rank.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import gymkit
from gymkit.dsl import parse
from gymkit.dsl.ast import Call
from gymkit.dsl.evaluator import evaluate
from gymkit.scoring import book_input
from gymkit.seed_archive import alpha101_formulas
from gymkit.verifiers.oracle import backtest

from .conftest import tag

EXTRA = [
    "rank(-ts_sum(returns, 5))",
    "rank(sign(ts_delta(close, 1)))",  # ties on every day
    "rank(rank(volume / adv(20)))",
    "rank(group_neutralize(-ts_sum(returns, 5), sector))",
    "rank(log(close - 50))",  # NaN (invalid log) on some stock-days
    "rank(1 / (ts_delta(close, 1) * 0))",  # ±inf and NaN everywhere
    "rank(ts_corr(close, volume, 10))",
]


def _digest(bt) -> str:
    h = hashlib.sha256()
    for a in (bt.weights, bt.gross, bt.net, bt.cpcv.test_sharpes, bt.cpcv.is_sharpes,
              bt.cpcv.path_sharpes):
        h.update(np.ascontiguousarray(a).tobytes())
    h.update(repr((bt.metrics.to_dict(), bt.cpcv.score, bt.factors.to_dict())).encode())
    return h.hexdigest()


def _rank_rooted(env) -> list[str]:
    fields, levels = env.setup.fields, env.setup.levels
    out = []
    for _, text in alpha101_formulas():
        try:
            e = parse(text, fields=fields, levels=levels)
        except Exception:  # a field this market lacks
            continue
        if isinstance(e, Call) and e.op == "rank":
            out.append(text)
    return out + EXTRA


def test_book_of_rank_equals_book_of_its_argument(env):
    setup = env.setup
    texts = _rank_rooted(env)
    assert len(texts) >= 10
    for text in texts:
        e = parse(text, fields=setup.fields, levels=setup.levels)
        inner = book_input(e)
        assert not (isinstance(inner, Call) and inner.op == "rank")
        runs = []
        for expr in (e, inner):
            values = evaluate(expr, setup.train, cache=None)
            runs.append(_digest(backtest(values, setup.train, setup.split, "train", setup.costs,
                                         cpcv=setup.cpcv, burn_in=setup.burn_in)))
        assert runs[0] == runs[1], text


@pytest.mark.parametrize("formula", ["rank(-ts_sum(returns, 5))", "-rank(ts_std(returns, 20))"])
def test_book_input_only_strips_root_ranks(formula):
    e = parse(formula)
    inner = book_input(e)
    if formula.startswith("rank("):
        assert inner == e.args[0]
    else:
        assert inner is e


def test_cards_match_a_scorer_without_the_shortcut(env, monkeypatch):
    """End to end, R3 included: the shortcut must not move a card's bytes."""
    import gymkit.scoring as scoring

    answers = [tag(t) for t in EXTRA]
    fast = [c.to_dict(timings=False) for c in env.score_group(answers)]
    monkeypatch.setattr(scoring, "book_input", lambda expr: expr)
    slow_env = gymkit.make("us46-default")
    slow = [c.to_dict(timings=False) for c in slow_env.score_group(answers)]
    assert fast == slow
