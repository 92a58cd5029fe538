"""lookback, node_count, fields_used, motifs."""

from __future__ import annotations

import pytest

from gymkit.dsl import fields_used, lookback, motifs, node_count, parse


@pytest.mark.parametrize(("text", "expected"), [
    ("close", 0),
    ("returns", 1),
    ("adv20", 20),
    ("delay(close, 5)", 5),
    ("ts_delta(close, 5)", 5),
    ("ts_mean(close, 5)", 4),
    ("ts_corr(close, delay(open, 3), 10)", 12),
    ("ts_mean(returns, 5) + delay(close, 2)", 5),
    ("rank(ts_rank(adv(10), 5))", 14),
    ("group_neutralize(ts_std(close, 20), sector)", 19),
])
def test_lookback(text, expected):
    assert lookback(parse(text)) == expected
    assert lookback(text) == expected  # text, as evaluate() and canonical() take it


def test_node_count_excludes_windows_and_levels():
    assert node_count(parse("ts_mean(close, 5)")) == 2
    assert node_count(parse("adv(20)")) == 1
    assert node_count(parse("group_neutralize(close + 1, sector)")) == 4


def test_fields_used():
    assert fields_used(parse("rank(open - close) * adv20")) == {"open", "close", "volume"}
    assert fields_used(parse("1 + 2")) == frozenset()


@pytest.mark.parametrize(("text", "price_only", "single"), [
    ("rank(ts_delta(close, 5))", True, True),
    ("-ts_delta(close, 5)", True, True),
    ("rank(close - open)", True, True),
    ("ts_corr(close, volume, 10)", False, False),
    ("rank(volume)", False, True),
    ("ts_delta(close, 5) * ts_rank(close, 10)", True, False),
    ("close / adv20", False, False),
    ("rank(cap)", False, True),
])
def test_motifs(text, price_only, single):
    m = motifs(parse(text))
    assert (m.is_price_only, m.is_single_motif) == (price_only, single)


def test_motif_families():
    m = motifs(parse("ts_corr(rank(close), rank(volume), 10) > 0 ? 1 : -1"))
    assert {"correlation", "rank", "comparison", "conditional"} <= m.families
    assert m.data == {"price", "volume"}
