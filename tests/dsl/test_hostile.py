"""Hostile inputs: every one is a DSLError (never another exception), cheaply."""

from __future__ import annotations

import pytest

from gymkit.dsl import DSLError, extract, parse

HOSTILE = [
    "__import__('os').system('ls')",
    "close.__class__",
    "eval(close)",
    "exec('1')",
    "getattr(close, 'x')",
    "close; rm -rf /",
    "rank(close) # comment",
    "`close`",
    "$close",
    "close\x00",
    "\x00",
    "rank(close)\x1b[31m",
    "rаnk(close)",          # Cyrillic a
    "close＋open",          # full-width plus
    "close − open",         # unicode minus
    "ｒａｎｋ(close)",
    "close\u200b",          # zero-width space
    "1e309",
    "-1e309 + close",
    "9" * 400,
    "ts_mean(close, " + "9" * 400 + ")",
    "(" * 10_000 + "close" + ")" * 10_000,
    "(" * 45 + "close" + ")" * 45,
    "-" * 300 + "close",
    "close" + "^close" * 200,
    "close ? " * 100 + "close" + " : close" * 100,
    "rank(" * 1000,
    "x" * 1_000_000,
    "close " * 200_000,
    "IndClass.__globals__",
    "group_neutralize(close, IndClass.__dict__)",
    "adv99999999999999999999999",
    "close\r\n+\topen\f" * 600,
    "{close}",
    "'close'",
    '"close"',
    "close[0]",
    "lambda: close",
    "None",
    "1 if close else 2",
]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_text_raises_dslerror(text):
    with pytest.raises(DSLError) as info:
        parse(text)
    message = str(info.value)
    assert "\n" not in message and len(message) < 200
    assert "Traceback" not in message


def test_non_string_input():
    for bad in (None, 5, b"close", ["close"]):
        with pytest.raises(DSLError):
            parse(bad)  # type: ignore[arg-type]


def test_error_messages_do_not_echo_long_input():
    secret = "A" * 500
    with pytest.raises(DSLError) as info:
        parse(f"rank({secret})")
    assert secret[:100] not in str(info.value)


def test_giant_inputs_are_rejected_before_lexing():
    with pytest.raises(DSLError) as info:
        parse("(" * 10_000)
    assert info.value.code == "too_long"
    with pytest.raises(DSLError) as info:
        parse("(" * 4000)
    assert info.value.code in {"nesting", "tokens"}


@pytest.mark.parametrize("answer", [
    "<alpha>" * 100_000,
    "<alpha>\x00</alpha>",
    "<alpha>rаnk(close)</alpha>",
])
def test_hostile_answers(answer):
    with pytest.raises(DSLError):
        parse(extract(answer).formula)


def _corpus() -> list[str]:
    from pathlib import Path

    rows = (Path(__file__).resolve().parents[2] / "dsl" / "alpha101.tsv").read_text().splitlines()
    return [r.split("\t")[1] for r in rows[1:] if r.strip() and not r.startswith("#")]


def test_every_prefix_of_every_corpus_formula_parses_or_raises_dslerror():
    """Truncated answers (a policy cut off mid-formula) never raise anything but DSLError.

    `group_neutralize(close,` once raised IndexError from the level parser.
    """
    levels = ("sector", "industry")
    for formula in [*_corpus(), "group_neutralize(close, sector)"]:
        for cut in range(len(formula)):
            try:
                parse(formula[:cut], levels=levels)
            except DSLError:
                pass
