"""The nesting limit's message states the limit that is enforced (was off by one)."""

from __future__ import annotations

import pytest

from gymkit.dsl import DSLError, parse


def test_nesting_message_names_the_enforced_limit() -> None:
    """Assertion: 39 nested parentheses parse; 40 fail with "nested deeper than 39"."""
    parse("(" * 39 + "close" + ")" * 39)
    with pytest.raises(DSLError, match=r"nested deeper than 39 at"):
        parse("(" * 40 + "close" + ")" * 40)
