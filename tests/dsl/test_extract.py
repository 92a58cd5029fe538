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
    ("<think>unclosed <alpha>rank(close)</alpha>", False),
    ("<think>draft <alpha>rank(open)</alpha></think><alpha>rank(close)</alpha>", True),
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


@pytest.mark.parametrize(("answer", "formula"), [
    # drafts inside reasoning are ignored; the answer is the tag outside the block
    ("<think>try <alpha>rank(open)</alpha>, no</think><alpha>rank(close)</alpha>", "rank(close)"),
    ("<reasoning><alpha>a</alpha><alpha>b</alpha></reasoning> <alpha>rank(close)</alpha>",
     "rank(close)"),
    # a tag after the block, reasoning after the answer, unclosed opens are plain text
    ("<alpha>rank(close)</alpha><think><alpha>rank(open)</alpha></think>", "rank(close)"),
    ("<think><think>x</think><alpha>rank(close)</alpha>", "rank(close)"),
])
def test_reasoning_is_not_the_answer(answer, formula):
    assert extract(answer).formula == formula


def test_a_tag_only_inside_reasoning_is_missing():
    with pytest.raises(DSLError) as info:
        extract("<think><alpha>rank(close)</alpha></think>")
    assert info.value.code == "missing_tag" and "inside the reasoning" in info.value.message
    with pytest.raises(DSLError) as info:
        extract("<reasoning>x</reasoning><alpha>rank(close)</alpha><alpha>rank(open)</alpha>")
    assert info.value.code == "multiple_tags"


def test_answer_size_limit():
    from gymkit.dsl.extract import MAX_ANSWER_CHARS

    ok = "<alpha>rank(close)</alpha>"
    fits = " " * (MAX_ANSWER_CHARS - len(ok)) + ok
    assert extract(fits).formula == "rank(close)"
    with pytest.raises(DSLError) as info:
        extract(fits + " ")
    assert info.value.code == "answer_too_long"
    assert str(MAX_ANSWER_CHARS) in info.value.message and "\n" not in info.value.message


HOSTILE = {  # unit -> how the answer ends
    "<think>": "<alpha>rank(-returns)</alpha>",
    "<reasoning>": "<alpha>rank(-returns)</alpha>",
    "<think>x</think>": "<alpha>rank(-returns)</alpha>",
    "<think></think>": "<alpha>rank(-returns)</alpha>",
    "<think><reasoning></think>": "</reasoning><alpha>rank(-returns)</alpha>",
    "</alpha>": "<alpha>x",
    "<think><alpha>": "</think><alpha>rank(-returns)</alpha>",
}


@pytest.mark.parametrize("unit", list(HOSTILE))
def test_hostile_answers_scan_in_linear_time(unit, counting_str):
    """Extraction scans each hostile answer linearly: all ``str.find`` calls together scan
    at most 8x its length (one pass per tag pattern; a quadratic scan rescans from every
    unit, thousands of times the length: the '<think>' * 18000 answer took 30 s before).
    Deterministic: counts characters, not seconds. The answer fits the answer limit."""
    from gymkit.dsl.extract import MAX_ANSWER_CHARS

    answer = unit * (MAX_ANSWER_CHARS // len(unit) - 8) + HOSTILE[unit]
    try:
        extract(counting_str(answer))
    except DSLError:
        pass
    assert 0 < counting_str.scanned <= 8 * len(answer), (unit, counting_str.scanned)
