"""Answer extraction through ``env.score``: drafts in reasoning, the size limit, hostile answers."""

from __future__ import annotations

import time

from gymkit.dsl.extract import MAX_ANSWER_CHARS

ANSWER = "<alpha>rank(-returns)</alpha>"
#: 126 KB answers inside the size limit that a quadratic scan took 30 s and more on.
HOSTILE = {
    "unclosed opens": "<think>" * 18000 + ANSWER,
    "many blocks": "<think>x</think>" * 7875 + ANSWER,
    "crossed names": "<think><reasoning></think>" * 4846 + "</reasoning>" + ANSWER,
}


def _score_time(env, answer: str) -> float:
    t0 = time.process_time()   # CPU time: preemption on a shared machine does not count
    env.score(answer)
    return time.process_time() - t0


def test_hostile_answers_cost_about_one_normal_answer(env):
    """Each hostile answer (valid: its opens are text or closed drafts) scores the same card
    as the plain answer, at most 3x its time (best of 7 each, interleaved, in-process)."""
    plain = env.score(ANSWER)
    for name, answer in HOSTILE.items():
        assert len(answer) <= MAX_ANSWER_CHARS
        card = env.score(answer)
        assert card.valid and card.formula == "rank(-returns)", name
        assert card.channels["cpcv"] == plain.channels["cpcv"], name
        t_plain = t_hostile = float("inf")
        for _ in range(7):
            t_plain = min(t_plain, _score_time(env, ANSWER))
            t_hostile = min(t_hostile, _score_time(env, answer))
        assert t_hostile < 3 * t_plain, (name, t_plain, t_hostile)


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
