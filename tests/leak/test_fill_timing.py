"""Fill timing (the seed's Aug 9 hack): the book formed at close(t) fills at open(t+1) and earns
open(t+1) → open(t+2).  ``rank(returns)`` ranks the close-to-close return the book would
"earn" if it were credited at the same close: a perfect predictor under that broken protocol,
nothing under the real one.  The broken variant swaps the oracle's forward returns for the
same-close returns and shows the check then fails (and the hack then wins)."""

from __future__ import annotations

import numpy as np

import gymkit.verifiers.context as context
from gymkit.audit.lookahead import check_fill_timing
from gymkit.verifiers import clear_context_cache


def test_next_open_fill_and_the_hack_earns_nothing(audit) -> None:
    res = audit["fill_timing"]
    assert res.passed, res.detail
    assert "oracle = next-open" in res.figure


def test_same_close_fill_is_caught_and_would_pay_the_hack(monkeypatch, cheap_target) -> None:
    env = cheap_target.env
    train = env.setup.train
    same_close = np.array(train.field("returns"))  # fwd[t] := the return up to close(t)
    monkeypatch.setattr(context, "forward_open_returns",
                        lambda open_: same_close.copy() if open_.shape == same_close.shape
                        else np.full(open_.shape, np.nan))
    clear_context_cache()
    try:
        res = check_fill_timing(cheap_target)
        card = env.score("<alpha>rank(returns)</alpha>")
    finally:
        monkeypatch.undo()
        clear_context_cache()
    assert not res.passed, res.figure
    assert card.valid and card.channels["cpcv"] > 3.0  # under the broken protocol the hack wins
    assert env.score("<alpha>rank(returns)</alpha>").channels["cpcv"] < 0  # restored
