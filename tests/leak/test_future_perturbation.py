"""Look-ahead, dynamic (the future-perturbation canary): scrambling every row after a cut day
leaves every formula value and book weight at or before the cut, and every P&L, cost,
turnover and IC entry realised by the cut (signal day t with t + 2 <= cut), bit-identical.

Formulas are hypothesis-built over the whole operator set (every registry row, windows,
group levels, literals, ``adv``) on a small seeded panel, backtested in train mode with a
short burn-in; the audit check runs the same comparison on the real train panel.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gymkit.audit.lookahead import (
    check_future_perturbation,
    future_perturbation_diff,
    scramble_after,
)
from gymkit.data import Panel, Split, nyse_sessions
from gymkit.dsl.ast import Call, Field, Level, Num, Window
from gymkit.dsl.operators import EXPR, FIELDS, LEVELS, OPERATORS, WINDOW
from gymkit.verifiers.cpcv import CPCV

from .conftest import inject_operator, lead_kernel

N = 6
DATES = nyse_sessions("2020-01-02", "2020-07-31")
T = DATES.size
SPLIT = Split(str(DATES[0]), str(DATES[-1]), "2020-08-03", "2020-12-31")
BURN_IN = 30
SMALL_CPCV = CPCV(n_blocks=4, n_test_blocks=1, purge=2, embargo=1)


def _panel(seed: int) -> Panel:
    rng = np.random.default_rng(seed)
    close = 50.0 * np.exp(np.cumsum(rng.normal(0, 0.02, (T, N)), axis=0))
    open_ = close * np.exp(rng.normal(0, 0.01, (T, N)))
    high = np.maximum(open_, close) * (1 + rng.uniform(0, 0.02, (T, N)))
    low = np.minimum(open_, close) * (1 - rng.uniform(0, 0.02, (T, N)))
    volume = rng.integers(1_000, 100_000, (T, N)).astype(float)
    for a in (open_, high, low, close, volume):
        a[:15, 4] = np.nan  # a listing gap
    return Panel(DATES, [f"S{i}" for i in range(N)], open_, high, low, close, volume,
                 cap=close * 1e6, sector=["a", "a", "b", "b", "", "c"],
                 industry=["x", "y", "y", "z", "z", "z"])


BASE = _panel(3)
_OPS = sorted(op for op in OPERATORS if op != "adv")
_leaves = st.one_of(
    st.sampled_from([0.0, -1.0, 0.5, 2.0, 1e-9]).map(Num),
    st.sampled_from(sorted(FIELDS)).map(Field),
    st.integers(1, 10).map(lambda d: Call("adv", (Window(d),))))


def _calls(children):
    def build(op):
        parts = [children if k == EXPR else st.integers(1, 10).map(Window) if k == WINDOW
                 else st.sampled_from(LEVELS).map(Level) for k in OPERATORS[op].args]
        return st.tuples(*parts).map(lambda args: Call(op, args))
    return st.sampled_from(_OPS).flatmap(build)


formulas = st.recursive(_leaves, _calls, max_leaves=6)


def _diff(expr, cut: int, seed: int) -> str | None:
    later = scramble_after(BASE, cut, seed)
    return future_perturbation_diff(expr, BASE, later, cut, SPLIT, burn_in=BURN_IN,
                                    cpcv=SMALL_CPCV)


@settings(max_examples=80, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(expr=formulas, cut=st.integers(BURN_IN + 5, T - 4), seed=st.integers(0, 2**16))
def test_no_value_weight_or_pnl_moves_when_the_future_is_scrambled(expr, cut, seed) -> None:
    assert _diff(expr, cut, seed) is None, expr


@pytest.mark.parametrize("op", sorted(OPERATORS))
def test_every_operator_alone_passes(op) -> None:
    spec = OPERATORS[op]
    fields = iter(("close", "volume", "open"))
    args = tuple(Field(next(fields)) if k == EXPR else Window(4) if k == WINDOW else Level("sector")
                 for k in spec.args)
    assert _diff(Call(op, args), T - 20, 1) is None


def test_a_lead_operator_is_caught(monkeypatch) -> None:
    """Broken variant: a test-only ``lead`` kernel (x[t + 1]) — values, then the book — differ."""
    inject_operator(monkeypatch, "lead", lead_kernel)
    assert _diff(Call("lead", (Field("close"), Window(1))), T - 20, 1).startswith("value at row")
    nested = Call("rank", (Call("sub", (Call("lead", (Field("open"), Window(2))), Field("open"))),))
    assert _diff(nested, T - 20, 1) is not None


def test_a_book_that_peeks_is_caught(monkeypatch) -> None:
    """Broken variant: values are honest but the oracle's book reads tomorrow's values
    (weights built from values[t + 1]): the weights at the cut differ."""
    import gymkit.verifiers.oracle as oracle

    real = oracle.book_pnl

    def peeking(values, fwd, rows, **kw):
        ahead = np.vstack([values[1:], values[-1:]])
        return real(np.ascontiguousarray(ahead), fwd, rows, **kw)

    monkeypatch.setattr(oracle, "book_pnl", peeking)
    where = _diff(Call("rank", (Field("close"),)), T - 20, 1)
    assert where is not None and where.startswith("weights"), where


def test_audit_check_passes_on_the_default_train_panel(audit) -> None:
    res = audit["future_perturbation"]
    assert res.passed, res.detail
    assert "0 of" in res.figure


def test_audit_check_fails_with_a_lead_operator(monkeypatch, cheap_target) -> None:
    inject_operator(monkeypatch, "lead", lead_kernel)
    res = check_future_perturbation(cheap_target, n_random=3, n_cuts=1)
    assert not res.passed
    assert any(d.startswith("lead: ") for d in res.detail), res.detail
