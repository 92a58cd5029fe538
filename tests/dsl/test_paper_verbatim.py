"""The 101 Formulaic Alphas exactly as printed: non-integer windows floored (the paper's own
rule), every alias resolved; on the default market all 101 evaluate and backtest."""

from __future__ import annotations

from pathlib import Path

import pytest

import gymkit
from gymkit.dsl import DSLError, parse, to_text

PAPER = Path(__file__).resolve().parents[3] / "shared" / "alpha101" / "formulas.tsv"
needs_paper = pytest.mark.skipif(not PAPER.is_file(), reason=f"{PAPER} is absent")


def paper() -> list[tuple[str, str]]:
    rows = [ln.split("\t", 1) for ln in PAPER.read_text(encoding="utf-8").splitlines() if ln.strip()]
    return [(n.strip(), f.strip()) for n, f in rows]


@pytest.mark.parametrize(("text", "printed"), [
    ("ts_sum(close, 9.91565)", "ts_sum(close, 9)"),
    ("decay_linear(close, 8.2)", "ts_decay_linear(close, 8)"),
    ("correlation(close, volume, 3.)", "ts_corr(close, volume, 3)"),
    ("Ts_Rank(volume, 1.5)", "ts_rank(volume, 1)"),
])
def test_decimal_windows_are_floored_and_print_as_integers(text: str, printed: str) -> None:
    assert to_text(parse(text)) == printed
    assert parse(to_text(parse(text))) == parse(text)


def test_decimal_windows_below_one_and_exponents_stay_errors() -> None:
    for text in ("ts_sum(close, 0.9)", "ts_sum(close, 1e1)", "ts_sum(close, 252.5e0)"):
        with pytest.raises(DSLError) as info:
            parse(text)
        assert info.value.code == "window_type"
    with pytest.raises(DSLError) as info:
        parse("ts_sum(close, 300.5)")
    assert info.value.code == "window_range"


@needs_paper
def test_all_101_parse_as_printed() -> None:
    rows = paper()
    assert len(rows) == 101
    failed = []
    for n, f in rows:
        try:
            parse(f)
        except DSLError as exc:
            failed.append((n, str(exc)))
    assert not failed, failed


@needs_paper
def test_all_101_evaluate_and_backtest_on_the_default_market() -> None:
    env = gymkit.make("us46-default", archive={"seed": "none"})
    cards = env.score_group([f"<alpha>{f}</alpha>" for _, f in paper()])
    errors = {c.error.code for c in cards if c.error is not None}
    assert errors <= {"turnover_floor", "degenerate_book"}, errors  # book gates, not failures
    assert sum(c.valid for c in cards) >= 95
