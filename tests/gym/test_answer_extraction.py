"""Answer extraction through ``env.score``: drafts in reasoning, the size limit, hostile answers."""

from __future__ import annotations

from gymkit.dsl.extract import MAX_ANSWER_CHARS, extract

ANSWER = "<alpha>rank(-returns)</alpha>"
#: 126 KB answers inside the size limit that a quadratic scan took 30 s and more on.
HOSTILE = {
    "unclosed opens": "<think>" * 18000 + ANSWER,
    "many blocks": "<think>x</think>" * 7875 + ANSWER,
    "crossed names": "<think><reasoning></think>" * 4846 + "</reasoning>" + ANSWER,
}


def test_hostile_answers_cost_about_one_normal_answer(env, counting_str):
    """Each hostile answer (valid: its opens are text or closed drafts) scores the same card
    as the plain answer, and extraction scans it linearly: all ``str.find`` calls together
    scan at most 8x its length (one pass per tag pattern), where the quadratic scan this
    closes rescans from every open. Deterministic: counts characters, not seconds."""
    plain = env.score(ANSWER)
    for name, answer in HOSTILE.items():
        assert len(answer) <= MAX_ANSWER_CHARS
        card = env.score(answer)
        assert card.valid and card.formula == "rank(-returns)", name
        assert card.channels["cpcv"] == plain.channels["cpcv"], name
        counting_str.scanned = 0
        assert extract(counting_str(answer)).formula == "rank(-returns)"
        assert 0 < counting_str.scanned <= 8 * len(answer), (name, counting_str.scanned)


def test_the_scan_counter_sees_a_quadratic_scan(counting_str):
    """The counter would catch the old scan: searching for the close again from every
    open of the unclosed-opens answer scans over 1000x its length."""
    answer = counting_str(HOSTILE["unclosed opens"])
    i = answer.find("<think>")
    while i >= 0:
        answer.find("</think>", i)
        i = answer.find("<think>", i + 1)
    assert counting_str.scanned > 1000 * len(answer)


def test_a_draft_inside_reasoning_is_not_the_answer(env):
    card = env.score("<think>maybe <alpha>rank(close)</alpha></think>" + ANSWER)
    assert card.valid and card.formula == "rank(-returns)" and card.channels["format"] == 0.05
    only_draft = env.score("<think><alpha>rank(-returns)</alpha></think>")
    assert not only_draft.valid and only_draft.error.code == "missing_tag"


def test_answer_too_long_is_one_clear_gate_error(env):
    card = env.score(" " * MAX_ANSWER_CHARS + ANSWER)
    assert not card.valid and card.error.code == "answer_too_long" and card.error.layer == "gate"
    assert str(MAX_ANSWER_CHARS) in card.error.message and len(card.error.message) < 120
    assert card.channels["cpcv"] == -0.8   # a limit error, not a tag failure
