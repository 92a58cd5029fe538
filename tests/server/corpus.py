"""Answers the server tests score: valid, invalid and hostile (shared by several tests)."""

from __future__ import annotations


def tag(formula: str) -> str:
    """Wrap a formula in the answer tag."""
    return f"<alpha>{formula}</alpha>"


VALID = [
    tag("rank(-ts_sum(returns, 5))"),
    "<think>short-term reversal within sectors</think>" + tag("rank(group_neutralize(-ts_sum(returns, 5), sector))"),
    tag("rank(ts_std(volume, 20) / ts_mean(volume, 20) * ts_std(returns, 250) / ts_std(returns, 20))"),
    tag("-ts_corr(rank(open), rank(volume), 10)"),
    tag("rank(ts_delta(close, 5))"),
    tag("scale(-ts_delta(close, 3)) + 0.5 * rank(ts_mean(returns, 20))"),
]

INVALID = [
    "",
    "no tag at all",
    tag(""),
    tag("close - close"),
    tag("rank(close"),
    tag("ts_mean(close, 0)"),
    tag("ts_mean(ts_mean(close, 252), 252)"),
    tag("unknown_op(close)"),
    tag("rank(close)") + tag("rank(open)"),
    "<alpha>rank(close)",
    tag("rank(close) + foo"),
    tag("rank(ts_mean(close, 300))"),
]

HOSTILE = [
    tag("(" * 5000 + "close" + ")" * 5000),
    tag("close + " * 600 + "close"),
    tag("x" * 5000),
    tag("__import__('os').system('echo hi')"),
    tag("rank(close)\x00"),
    tag("rank(close) /* 🚀 */"),
    tag("log(close - close)"),
    tag("close / (close - close)"),
    tag("1e308 * 1e308 * rank(close)"),
    tag("rank(close)") + "</alpha>",
    "<think>" + "reasoning " * 2000 + "</think>" + tag("rank(-ts_sum(returns, 5))"),
    "\ud7ff\uffff" + tag("rank(close)"),
    tag("ts_rank(close, 252) ^ 1e9"),
    tag("where(close > open, 1, -1)"),
]

CORPUS = VALID + INVALID + HOSTILE
