"""The <alpha> tag contract and reasoning-block recognition."""

from __future__ import annotations

import pytest

from gymkit.dsl import DSLError, extract


def test_single_tag():
    answer = "some words <alpha> rank(close) </alpha> trailing"
    got = extract(answer)
    assert got.formula == "rank(close)"
    assert answer[got.span[0]:got.span[1]] == "rank(close)"
    assert not got.has_reasoning


@pytest.mark.parametrize(("answer", "expected"), [
    ("<think>momentum fades</think><alpha>rank(close)</alpha>", True),
    ("<reasoning>\nshort-term reversal\n</reasoning>\n<alpha>rank(close)</alpha>", True),
    ("<think>   </think><alpha>rank(close)</alpha>", False),
    ("I think reversal works.<alpha>rank(close)</alpha>", False),
    ("<alpha>rank(close)</alpha><think>after</think>", False),
    ("<think>unclosed <alpha>rank(close)</alpha></think>", False),
])
def test_reasoning_block(answer, expected):
    assert extract(answer).has_reasoning is expected


@pytest.mark.parametrize(("answer", "code"), [
    ("rank(close)", "missing_tag"),
    ("rank(close)</alpha>", "missing_tag"),
    ("<ALPHA>rank(close)</ALPHA>", "missing_tag"),
    ("<alpha>   </alpha>", "empty_tag"),
    ("<alpha></alpha>", "empty_tag"),
    ("<alpha>rank(close)</alpha><alpha>rank(open)</alpha>", "multiple_tags"),
    ("<alpha>rank(close)</alpha></alpha>", "multiple_tags"),
    ("</alpha><alpha>rank(close)</alpha>", "multiple_tags"),
    ("<alpha>rank(close)", "unclosed_tag"),
    ("", "missing_tag"),
])
def test_tag_errors_are_distinct(answer, code):
    with pytest.raises(DSLError) as info:
        extract(answer)
    assert info.value.code == code
