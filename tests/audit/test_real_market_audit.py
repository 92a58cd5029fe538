"""The audit on markets without the default's planted effects: tickers that are English
words never trip a check; hand_play and non_triviality say what they test there."""

from __future__ import annotations

import pytest

from gymkit.audit.canary import check_error_hygiene
from gymkit.audit.checklist import check_hand_play, check_non_triviality
from gymkit.audit.target import build_target
from gymkit.config import EnvConfig
from gymkit.data import default_market

#: Real S&P 500 tickers that are English words (LOW is also a DSL field), padded to 46.
WORDS = ("ALL", "ARE", "HAS", "KEY", "LOW", "CAT", "ICE", "NOW", "SEE", "WELL", "FAST", "PEAK",
         "BEN", "DOW", "ROST", "TEL", "VAR", "WAT", "ZION", "IT", "ON", "A", "T", "O", "D", "K",
         "L", "MO", "HOG", "MAS", "LIN", "AIR", "BALL", "BIG", "CARS", "COST", "DAY", "EAT",
         "FUN", "GAS", "HOPE", "JOB", "LIFE", "MAN", "NICE", "PLAY")


@pytest.fixture(scope="module")
def worded():
    m = default_market()
    assert len(WORDS) == m.N
    panel = m.__class__(m.dates, WORDS, m.open, m.high, m.low, m.close, m.volume, cap=m.cap,
                        sector=m.sector, industry=m.industry)
    return build_target(config=EnvConfig(archive={"seed": "none"}), market=panel)


def test_english_word_tickers_do_not_trip_error_hygiene(worded) -> None:
    result = check_error_hygiene(worded)
    assert result.passed, result.detail


def test_hand_play_and_non_triviality_state_what_they_test(worded) -> None:
    hand = check_hand_play(worded)
    assert hand.passed and any("what it tests" in d for d in hand.detail)
    naive = check_non_triviality(worded)
    assert naive.passed and any("what it tests" in d for d in naive.detail)
