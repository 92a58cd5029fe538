"""Look-ahead, static: every registry operator declares a lookback rule it keeps.

``check_static_lookback`` applies each operator to panel fields, perturbs one row and measures
which rows change.  Each test below injects a deliberately broken test-only operator into the
registry (monkeypatch: gone after the test) to show the check catches it.
"""

from __future__ import annotations

from gymkit.audit.lookahead import check_static_lookback, observed_lookback, synthetic_panel
from gymkit.dsl.analysis import lookback
from gymkit.dsl.ast import Call, Field, Window
from gymkit.dsl.operators import LB_MAX, OPERATORS

from .conftest import inject_operator, lag_kernel, lead_kernel


def test_every_operator_declares_and_keeps_its_lookback(audit) -> None:
    res = audit["static_lookback"]
    assert res.passed, res.detail
    assert f"{len(OPERATORS)}/{len(OPERATORS)} operators declare a rule" in res.figure


def test_a_lead_operator_is_caught_as_look_ahead(monkeypatch) -> None:
    """Broken variant: ``lead(x, d) = x[t + d]`` registered as if it were a lag."""
    inject_operator(monkeypatch, "lead", lead_kernel)
    res = check_static_lookback()
    assert not res.passed
    assert any(p.startswith("lead: LOOK-AHEAD") for p in res.detail), res.detail
    _memory, ahead = observed_lookback(Call("lead", (Field("close"), Window(1))), synthetic_panel())
    assert ahead == 1


def test_an_under_declared_lookback_is_caught(monkeypatch) -> None:
    """Broken variant: a 5-day lag that declares the element-wise rule (lookback 0)."""
    inject_operator(monkeypatch, "sneaky_lag", lag_kernel, lookback=LB_MAX)
    assert lookback(Call("sneaky_lag", (Field("close"), Window(5)))) == 0
    res = check_static_lookback()
    assert not res.passed
    assert any(p.startswith("sneaky_lag:") and "depends on data 7 sessions back, declares 0" in p
               for p in res.detail), res.detail


def test_an_operator_without_a_declared_rule_is_caught(monkeypatch) -> None:
    """Broken variant: a row whose lookback rule is not one of the LB_* rules (the lookback
    calculator would silently treat it as ``d``)."""
    inject_operator(monkeypatch, "undeclared", lag_kernel, lookback="whatever")
    res = check_static_lookback()
    assert not res.passed
    assert "undeclared: lookback rule 'whatever' is not one of the declared rules" in res.detail


def test_an_operator_without_a_kernel_is_caught(monkeypatch) -> None:
    from gymkit.dsl.kernels import KERNELS

    inject_operator(monkeypatch, "orphan", lag_kernel)
    monkeypatch.delitem(KERNELS, "orphan")
    res = check_static_lookback()
    assert not res.passed and "orphan: no kernel in KERNELS" in res.detail
