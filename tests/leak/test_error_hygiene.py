"""Error-message hygiene: messages returned to the policy contain only the answer's own text
and public vocabulary — no panel value, ticker, group label, date, file path or internal name.

Hypothesis fuzzes answers (random text, formula-shaped token soup, tag damage) through the
text gate; the audit check runs 350 seeded fuzz answers through the whole scoring path (book
errors included).  ``message_problems`` is the rule; the broken variants put a data value,
a ticker and a file path into messages and show each is flagged.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gymkit.audit.canary import check_error_hygiene, message_problems, template_words
from gymkit.dsl.errors import DSLError
from gymkit.dsl.operators import VOCABULARY
from gymkit.scoring import gate_text

WORDS = template_words()
_tokens = st.sampled_from([*VOCABULARY, "(", ")", ",", "+", "-", "*", "/", "^", "<", ">=", "==",
                           "&&", "||", "?", ":", "1", "2.5", "0", "253", "1e9", "x", "Close",
                           "foo", "IndClass.sector", "'", "\\", "é", "\x00", "<alpha>"])
_soup = st.lists(_tokens, min_size=0, max_size=25).map(" ".join)
_answers = st.one_of(
    st.text(max_size=60),
    _soup.map(lambda s: f"<alpha>{s}</alpha>"),
    _soup,
    st.tuples(_soup, st.sampled_from(["<alpha>", "</alpha>", "<think>", "</think>"]))
      .map(lambda t: t[1] + t[0]),
)


def _private(env) -> tuple[str, ...]:
    m = env.market
    labels = {x for lv in (m.sector, m.industry) if lv for x in lv if len(x) >= 4}
    return (*m.tickers, *sorted(labels), str(m.dates[0]), str(m.dates[-1]))


@settings(max_examples=300, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(answer=_answers)
def test_gate_messages_carry_only_the_answer_and_public_words(target, answer) -> None:
    st_ = gate_text(answer, target.env.setup)
    if st_.error is None:
        return
    assert message_problems(st_.error.message, answer, WORDS,
                            private=_private(target.env)) == [], st_.error


def test_scoring_path_fuzz_is_clean(audit) -> None:
    res = audit["error_hygiene"]
    assert res.passed, res.detail
    assert "0 messages with foreign content" in res.figure


@pytest.mark.parametrize("message,why", [
    ("unknown field 'clos' at 5; close was 101.2345 on 2025-08-20", "number 101.2345"),
    ("unknown field 'clos' at 5 (panel SYN07)", "private text 'SYN07'"),
    ("cannot read /work/main/data/default_market.npz", "contains '/'"),
    ("Traceback (most recent call last): KeyError", "contains 'traceback'"),
    ("unknown field 'clos' at 5; mean close 101.2345", "number 101.2345"),
    ("the formula could not be evaluated (ZeroDivisionError)", "word 'ZeroDivisionError'"),
    ("unknown field 'volumes' at 5", "quoted text 'volumes' is not from the answer"),
])
def test_leaky_messages_are_flagged(target, message, why) -> None:
    """Broken variants: each message carries something that is not the answer's or public."""
    problems = message_problems(message, "<alpha>rank(clos)</alpha>", WORDS,
                                private=_private(target.env))
    assert any(why in p for p in problems), problems


def test_clean_messages_pass(target) -> None:
    answer = "<alpha>ts_mean(close, 1e3) + rank(clos)</alpha>"
    for message in ("ts_mean expects an integer literal window 1–252 at 15, got 1000",
                    "unknown field 'clos' at 30; did you mean close?",
                    "no <alpha> tag: write the formula as <alpha>formula</alpha>"):
        assert message_problems(message, answer, WORDS, private=_private(target.env)) == []


def test_a_verifier_that_leaks_data_into_errors_is_caught(monkeypatch, cheap_target) -> None:
    """Broken variant: the parser's errors append the last close of the first stock."""
    import gymkit.scoring as scoring

    real = scoring.parse
    last = float(np.asarray(cheap_target.market.close)[-300, 0])

    def leaky(text, **kw):
        try:
            return real(text, **kw)
        except DSLError as err:
            raise DSLError(err.code, err.position, f"{err.message} (close was {last:.4f})") from None

    monkeypatch.setattr(scoring, "parse", leaky)
    res = check_error_hygiene(cheap_target, n=40)
    assert not res.passed
    assert any(f"number {last:.4f}" in d for d in res.detail), res.detail
