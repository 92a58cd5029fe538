"""evaluate(): corpus parity with the pandas reference, cache invisibility, read-only
results, availability errors."""

from __future__ import annotations

import csv
import threading
from importlib import resources

import numpy as np
import pytest

from gymkit.data import Panel
from gymkit.data.default import default_market
from gymkit.dsl import parse
from gymkit.dsl.ast import Call, Field, Level, Num, Window
from gymkit.dsl.cache import EvalCache
from gymkit.dsl.errors import DSLError
from gymkit.dsl.evaluator import evaluate
from gymkit.dsl.kernels import ELEMENTWISE, KERNELS

from .inputs import assert_parity
from .pandas_reference import REFERENCE, reference_evaluate

ROWS = list(csv.DictReader(
    resources.files("gymkit.dsl").joinpath("alpha101.tsv").open(encoding="ascii"),
    delimiter="\t"))


@pytest.fixture(scope="module")
def market() -> Panel:
    return default_market()


def _node_atol(op: str, args: list) -> float | np.ndarray:
    """Absolute slack for results that are sums of terms cancelling to ~0 (see test_kernels).

    Scaled by the magnitude of the terms, computed with the reference: eps-level rounding
    of Σ|terms| on both sides cannot be relative to a result that cancels to ~0.
    """
    arrays = [a for a in args if isinstance(a, np.ndarray) and a.ndim == 2]
    if op in ("ts_sum", "ts_mean", "ts_decay_linear"):
        return 1e-12 * REFERENCE[op](np.abs(arrays[0]), args[1])
    if op == "ts_cov":
        return 1e-12 * (REFERENCE["ts_mean"](np.abs(arrays[0]), args[2])
                        * REFERENCE["ts_mean"](np.abs(arrays[1]), args[2]))
    if op == "ts_corr":
        return 1e-12  # dimensionless; a correlation that is exactly 0 is a cancelled sum
    if op in ("group_neutralize", "scale"):
        finite = np.where(np.isnan(arrays[0]), 0.0, np.abs(arrays[0]))
        return 1e-12 * finite.max(axis=1, keepdims=True)
    return 0.0


def _walk_with_parity(node, panel):
    """Evaluate bottom-up with the kernels; at every call compare with the reference
    applied to the SAME inputs (identical NaN masks, rtol 1e-9).  Returns the value."""
    if isinstance(node, Num):
        return float(node.value)
    if isinstance(node, Field):
        return panel.field(node.name)
    args = []
    for a in node.args:
        if isinstance(a, Window):
            args.append(a.days)
        elif isinstance(a, Level):
            args.append(panel.group_codes(a.name))
        else:
            v = _walk_with_parity(a, panel)
            if node.op not in ELEMENTWISE and not isinstance(v, np.ndarray):
                v = np.full((panel.T, panel.N), v)
            args.append(v)
    if node.op == "adv":
        args = [panel.field("close"), panel.field("volume"), node.args[0].days]
    ours = KERNELS[node.op](*args)
    if isinstance(ours, np.ndarray):
        ref = np.broadcast_to(REFERENCE[node.op](*args), ours.shape)
        assert_parity(ours, ref, atol=_node_atol(node.op, args), what=node.op)
    return ours


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_alpha101_parity_with_pandas_reference(row, market):
    """Every operator call of every alpha matches the reference on the same inputs, and
    evaluate() is exactly the composition of those kernel calls (bit for bit).

    Comparing whole formulas end to end against an independently rounded reference is
    not meaningful at 1e-9: rank() turns a last-ulp difference between two values that
    are equal in exact arithmetic (e.g. covariances of rank series) into a jump of 1/45.
    """
    expr = parse(row["formula"])
    composed = _walk_with_parity(expr, market)
    composed = np.broadcast_to(composed, (market.T, market.N))
    got = evaluate(expr, market, cache=None)
    assert got.tobytes() == np.ascontiguousarray(composed).tobytes()


@pytest.mark.parametrize("formula", [
    "rank(ts_max(volume / vwap, 11) / ts_mean(close, 21))",
    "rank(ts_std(volume / (high - low), 34))",
    "-1 * ts_corr(open, volume, 10)",
    "ts_rank(ts_decay_linear(returns, 9), 30) - scale(ts_sum(returns, 5))",
])
def test_end_to_end_parity_on_formulas_without_ties(formula, market):
    expr = parse(formula)
    assert_parity(evaluate(expr, market), reference_evaluate(expr, market), atol=1e-12,
                  what=formula)


TRICKY = [
    "close * -0.0", "close * 0.0", "-(-close)", "-(-(-close))", "volume + close",
    "close + volume", "min(0.0, -0.0 * close)", "max(-0.0 * close, 0.0)", "scale(scale(close))",
    "rank(rank(volume))", "1 + 2 * 3 - close", "(2 > 1) ? close : open", "sqrt(4) * close",
    "abs(abs(returns))", "sign(sign(returns))", "ts_corr(close, volume, 5)",
    "ts_corr(volume, close, 5)", "5", "-0.0", "close",
]


def test_cache_is_invisible_on_the_corpus_and_tricky_cases(market):
    cache = EvalCache()
    formulas = [r["formula"] for r in ROWS] + TRICKY
    for _round in range(2):  # cold cache, then all hits
        for f in formulas:
            off = evaluate(f, market, cache=None)
            on = evaluate(f, market, cache=cache)
            assert off.tobytes() == on.tobytes(), f
    assert cache.hits > 0 and len(cache) > 0


def test_shared_subtrees_are_computed_once(market):
    cache = EvalCache()
    evaluate("rank(ts_std(volume, 34))", market, cache=cache)
    misses = cache.misses
    evaluate("ts_std(volume, 34) + rank(ts_std(volume, 34))", market, cache=cache)
    # the sum and nothing else is new: ts_std(...) and rank(...) hit
    assert cache.misses == misses + 1
    other = market.replace(volume=market.volume * 2.0)
    evaluate("ts_std(volume, 34)", other, cache=cache)  # another fingerprint: a miss
    assert cache.misses == misses + 2


def test_cache_is_bounded_lru():
    arr = np.zeros((10, 10))
    cache = EvalCache(max_bytes=3 * arr.nbytes)
    for i in range(5):
        cache.put((str(i), "fp"), np.zeros((10, 10)))
        assert cache.nbytes <= cache.max_bytes
    assert cache.get(("0", "fp")) is None and cache.get(("4", "fp")) is not None
    cache.get(("2", "fp"))  # 2 becomes most recent: 3 is evicted next
    cache.put(("5", "fp"), np.zeros((10, 10)))
    assert cache.get(("3", "fp")) is None and cache.get(("2", "fp")) is not None
    cache.put(("big", "fp"), np.zeros((100, 100)))  # larger than the bound: not stored
    assert cache.get(("big", "fp")) is None
    cache.clear()
    assert len(cache) == 0 and cache.nbytes == 0
    with pytest.raises(ValueError, match="max_bytes"):
        EvalCache(max_bytes=-1)


def test_cache_is_thread_safe(market):
    formulas = [r["formula"] for r in ROWS[:24]]
    want = {f: evaluate(f, market, cache=None).tobytes() for f in formulas}
    cache = EvalCache(max_bytes=40 * market.T * market.N * 8)  # small: evictions race too
    errors: list[str] = []

    def work(order):
        for f in order:
            if evaluate(f, market, cache=cache).tobytes() != want[f]:
                errors.append(f)

    threads = [threading.Thread(target=work, args=(formulas[i:] + formulas[:i],))
               for i in range(0, 24, 6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and cache.nbytes <= cache.max_bytes


def test_results_are_read_only_and_never_expose_panel_or_cache(market):
    cache = EvalCache()
    for f in ("close", "rank(close)", "close + 1", "3"):
        out = evaluate(f, market, cache=cache)
        assert out.shape == (market.T, market.N) and out.dtype == np.float64
        assert not out.flags.writeable
        with pytest.raises(ValueError):
            out.setflags(write=True)
        with pytest.raises(ValueError):
            out[0, 0] = 1.0
    before = evaluate("rank(close)", market, cache=cache).copy()
    evaluate("rank(close)", market, cache=cache).copy()[:] = 0.0  # a copy is the caller's
    assert evaluate("rank(close)", market, cache=cache).tobytes() == before.tobytes()


def test_scalars_broadcast_and_feed_panel_operators(market):
    shape = (market.T, market.N)
    np.testing.assert_array_equal(evaluate("2 * 3", market), np.full(shape, 6.0))
    r = evaluate("rank(5)", market, cache=None)
    assert (r == 0.5).all()
    m = evaluate("ts_mean(1 + 1, 3)", market, cache=None)
    assert np.isnan(m[:2]).all() and (m[2:] == 2.0).all()


def test_text_and_ast_agree(market):
    text = "rank(ts_delta(close, 5))"
    assert evaluate(text, market).tobytes() == evaluate(parse(text), market).tobytes()


def _panel_without_optional(market: Panel) -> Panel:
    rows = slice(0, 40)
    return Panel(market.dates[rows], market.tickers, market.open[rows], market.high[rows],
                 market.low[rows], market.close[rows], market.volume[rows])


def test_missing_field_or_group_is_a_dsl_error(market):
    bare = _panel_without_optional(market)
    with pytest.raises(DSLError) as info:
        evaluate("rank(cap)", bare)
    assert info.value.code == "field_unavailable"
    with pytest.raises(DSLError) as info:
        evaluate("group_neutralize(close, sector)", bare)
    assert info.value.code == "group_unavailable"
    # the same through an AST (no text positions)
    with pytest.raises(DSLError) as info:
        evaluate(Call("rank", (Field("cap"),)), bare, cache=None)
    assert info.value.code == "field_unavailable"
    with pytest.raises(DSLError) as info:
        evaluate(Call("group_neutralize", (Field("close"), Level("industry"))), bare)
    assert info.value.code == "group_unavailable"
