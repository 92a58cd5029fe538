"""Printer round-trip, canonical form and canonical_key properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gymkit.dsl import canonical, canonical_key, parse, to_text
from gymkit.dsl.analysis import depth, lookback
from gymkit.dsl.ast import Call, Field, Num
from gymkit.dsl.canonical import bucket, exact_form

from .strategies import exprs

SETTINGS = settings(max_examples=600, derandomize=True, deadline=None)


@SETTINGS
@given(exprs())
def test_print_parse_round_trip(expr):
    assert parse(to_text(expr), limits=False) == expr
    if lookback(expr) <= 252 and depth(expr) <= 16:
        assert parse(to_text(expr)) == expr


@SETTINGS
@given(exprs())
def test_canonical_is_idempotent_and_printable(expr):
    canon = canonical(expr)
    assert canonical(canon) == canon
    assert parse(to_text(canon), limits=False) == canon
    assert exact_form(exact_form(expr)) == exact_form(expr)


@SETTINGS
@given(exprs(6), exprs(6), st.sampled_from(["add", "mul", "min", "max", "eq", "ne", "and", "or"]))
def test_commutative_operands_share_a_key(a, b, op):
    assert canonical_key(Call(op, (a, b))) == canonical_key(Call(op, (b, a)))
    assert canonical(Call(op, (a, b))) == canonical(Call(op, (b, a)))


@pytest.mark.parametrize(("left", "right"), [
    ("close + open", "open + close"),
    ("-(-close)", "close"),
    ("2 * 3 + close", "close + 6"),
    ("1 / 4 < 1", "1"),
    ("ts_mean(close, 5) * (1 + 2)", "3 * ts_mean(close, 5)"),
])
def test_key_equal(left, right):
    assert canonical_key(parse(left)) == canonical_key(parse(right))


@pytest.mark.parametrize(("left", "right"), [
    ("close - open", "open - close"),
    ("(close * 2) * 3", "close * 6"),         # no re-association: not bit-safe
    ("close * 1", "close"),                   # no identities in the exact key
    ("rank(rank(close))", "rank(close)"),
    ("ts_mean(close, 10)", "ts_mean(close, 11)"),
    ("log(2) * close", "0.6931471805599453 * close"),  # log never folds in the key
    ("1 / 0 + close", "close"),               # non-finite results never fold
])
def test_key_distinct(left, right):
    assert canonical_key(parse(left)) != canonical_key(parse(right))


@pytest.mark.parametrize(("text", "expected"), [
    ("rank(rank(close))", "rank(close)"),
    ("sign(sign(close))", "sign(close)"),
    ("abs(abs(close))", "abs(close)"),
    ("-1 * close", "-close"),
    ("0 - close", "-close"),
    ("close * 1 + 0", "close"),
    ("ts_mean(close, 10)", "ts_mean(close, 5)"),
    ("ts_mean(close, 13)", "ts_mean(close, 5)"),
    ("ts_mean(close, 14)", "ts_mean(close, 21)"),
    ("adv20", "adv(21)"),
    ("open * close", "close * open"),
    ("log(1) + close", "close"),
])
def test_canonical_rules(text, expected):
    assert to_text(canonical(parse(text))) == expected


def test_bucket_ties_go_down():
    assert [bucket(d) for d in (1, 13, 14, 42, 43, 94, 95, 189, 190, 252)] == [
        5, 5, 21, 21, 63, 63, 126, 126, 252, 252]


def test_printer_literal_rules():
    assert to_text(Call("neg", (Num(2.0),))) == "-(2)"
    assert to_text(Call("min", (Field("close"), Num(5.0)))) == "min(close, 5.0)"
    assert to_text(Call("power", (Num(-2.0), Field("close")))) == "(-2)^close"
    assert to_text(Num(-0.0)) == "-0.0"
