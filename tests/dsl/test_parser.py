"""Parser: precedence, aliases, literal rules, argument slots, error codes and positions."""

from __future__ import annotations

import pytest

from gymkit.dsl import DSLError, parse
from gymkit.dsl.ast import Call, Field, Level, Num, Window

C, OPN, V = Field("close"), Field("open"), Field("volume")


def call(op, *args):
    return Call(op, tuple(args))


@pytest.mark.parametrize(("text", "tree"), [
    ("close + open * volume", call("add", C, call("mul", OPN, V))),
    ("close - open - volume", call("sub", call("sub", C, OPN), V)),
    ("close ^ open ^ volume", call("power", C, call("power", OPN, V))),
    ("-close ^ 2", call("neg", call("power", C, Num(2.0)))),
    ("-2 ^ 2", call("neg", call("power", Num(2.0), Num(2.0)))),
    ("-2 * close", call("mul", Num(-2.0), C)),
    ("-(2)", call("neg", Num(2.0))),
    ("close ^ -2", call("power", C, Num(-2.0))),
    ("close < open && open < volume || close", call("or", call("and", call("lt", C, OPN), call("lt", OPN, V)), C)),
    ("close < open == volume", call("eq", call("lt", C, OPN), V)),
    ("close ? open : volume ? close : open", call("where", C, OPN, call("where", V, C, OPN))),
    ("close > 0 ? open + 1 : -volume", call("where", call("gt", C, Num(0.0)), call("add", OPN, Num(1.0)), call("neg", V))),
    ("close * -open", call("mul", C, call("neg", OPN))),
    ("- - close", call("neg", call("neg", C))),
])
def test_precedence_and_associativity(text, tree):
    assert parse(text) == tree


@pytest.mark.parametrize(("text", "tree"), [
    ("correlation(close, open, 10)", call("ts_corr", C, OPN, Window(10))),
    ("Ts_ArgMax(close, 5)", call("ts_argmax", C, Window(5))),
    ("STDDEV(close, 5)", call("ts_std", C, Window(5))),
    ("decay_linear(close, 5)", call("ts_decay_linear", C, Window(5))),
    ("SignedPower(close, 2.)", call("signed_power", C, Num(2.0))),
    ("IndNeutralize(close, IndClass.subindustry)", call("group_neutralize", C, Level("industry"))),
    ("indneutralize(close, IndClass.sector)", call("group_neutralize", C, Level("sector"))),
    ("group_neutralize(close, industry)", call("group_neutralize", C, Level("industry"))),
    ("adv20", call("adv", Window(20))),
    ("adv(20)", call("adv", Window(20))),
    ("min(close, 5)", call("ts_min", C, Window(5))),
    ("max(close, (5))", call("ts_max", C, Window(5))),
    ("max(close, 0)", call("max", C, Num(0.0))),
    ("min(close, 5.0)", call("min", C, Num(5.0))),
    ("min(close, open)", call("min", C, OPN)),
    ("product(close, 3)", call("ts_product", C, Window(3))),
    ("Log(close) + Sign(open) + Abs(volume)", call("add", call("add", call("log", C), call("sign", OPN)), call("abs", V))),
    ("add(close, open)", call("add", C, OPN)),
    (".001 + 2.", call("add", Num(0.001), Num(2.0))),
    ("1e-3", Num(0.001)),
    ("CLOSE", C),
])
def test_aliases_and_argument_slots(text, tree):
    assert parse(text) == tree


@pytest.mark.parametrize(("text", "code", "position"), [
    ("ts_mean(close, 0.5)", "window_type", 15),  # decimals >= 1 are floored (the paper)
    ("ts_mean(close, 1e1)", "window_type", 15),
    ("ts_mean(close, open)", "window_type", 15),
    ("ts_mean(close, -5)", "window_type", 15),
    ("ts_mean(close, 300)", "window_range", 15),
    ("ts_mean(close, 0)", "window_range", 15),
    ("adv0", "window_range", 0),
    ("adv300", "window_range", 0),
    ("min(close, 300)", "window_range", 0),
    ("foo(close)", "unknown_operator", 0),
    ("close(5)", "unknown_operator", 0),
    ("rank(closee)", "unknown_field", 5),
    ("ts_mean", "unknown_field", 0),
    ("sector", "unknown_field", 0),
    ("rank(close, 5)", "arity", 10),
    ("ts_mean(close)", "arity", 13),
    ("rank()", "arity", 5),
    ("group_neutralize(close, country)", "unknown_level", 24),
    ("group_neutralize(close, close + 1)", "level_type", 24),
    ("close +", "syntax", 7),
    ("close open", "syntax", 6),
    ("(close", "syntax", 6),
    ("close)", "syntax", 5),
    ("rank(close open)", "syntax", 11),
    ("close ? open", "syntax", 12),
    ("", "syntax", 0),
    ("   ", "syntax", 0),
    ("close = open", "bad_char", 6),
    ("close & open", "bad_char", 6),
    ("1e309", "number", 0),
    ("ts_sum(ts_sum(close, 200), 100)", "lookback", 0),
    ("delay(delay(close, 126), 127)", "lookback", 0),
])
def test_error_codes_and_positions(text, code, position):
    with pytest.raises(DSLError) as info:
        parse(text)
    err = info.value
    assert (err.code, err.position) == (code, position), str(err)
    assert "\n" not in str(err) and str(err) == err.message


def test_window_error_message_is_learnable():
    with pytest.raises(DSLError) as info:
        parse("ts_mean(close, 300)")
    assert str(info.value) == "ts_mean expects a window 1–252 at 15, got 300"


def test_unknown_name_suggests_vocabulary_only():
    with pytest.raises(DSLError) as info:
        parse("ts_meen(close, 5)")
    assert "ts_mean" in str(info.value)


def test_lookback_limit_is_inclusive():
    assert parse("delay(delay(close, 126), 126)") is not None
    assert parse("ts_sum(returns, 252)") is not None  # 1 + 251 = 252
    with pytest.raises(DSLError) as info:
        parse("ts_sum(ts_delta(close, 1), 253)")
    assert info.value.code == "window_range"
    with pytest.raises(DSLError) as info:
        parse("ts_sum(ts_delta(returns, 1), 252)")  # 2 + 251 = 253
    assert info.value.code == "lookback"


def test_depth_limit():
    ok = "rank(" * 15 + "close" + ")" * 15  # 16 levels
    assert parse(ok) is not None
    with pytest.raises(DSLError) as info:
        parse("rank(" * 16 + "close" + ")" * 16)
    assert info.value.code == "depth"


def test_token_limit():
    text = " + ".join(["close"] * 128)  # 255 tokens
    parse(text, limits=False)
    with pytest.raises(DSLError) as info:
        parse(text + " + close")
    assert info.value.code == "tokens"


def test_availability_checks():
    with pytest.raises(DSLError) as info:
        parse("rank(cap)", fields={"open", "close"})
    assert info.value.code == "field_unavailable"
    with pytest.raises(DSLError) as info:
        parse("group_neutralize(close, sector)", levels=())
    assert info.value.code == "group_unavailable"
    assert parse("group_neutralize(close, sector)", levels={"sector"}) is not None
    assert parse("rank(cap)") == call("rank", Field("cap"))


def test_limits_false_skips_only_tree_limits():
    assert parse("ts_sum(ts_sum(close, 200), 100)", limits=False) is not None
    with pytest.raises(DSLError):
        parse("(" * 50 + "close" + ")" * 50, limits=False)


def test_window_literal_ids_are_not_confused_with_later_nodes():
    # regression: a discarded window literal's id was reused by the next call node
    text = "max(rank(ts_decay_linear(close, 11)), ts_rank(ts_decay_linear(open, 17), 19))"
    tree = parse(text)
    assert tree.op == "max" and tree.args[1].op == "ts_rank"
    for _ in range(200):
        assert parse("ts_mean(close, 5) + max(ts_sum(open, 3), ts_rank(high, 4))").args[1].op == "max"
