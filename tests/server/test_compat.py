"""Trainer compatibility routes and the answer extraction from chat-templated queries."""

from __future__ import annotations

import pytest

from gymkit.server.compat import nemo_response_text, response_of_query

from .conftest import running_server
from .corpus import VALID

ANSWER = "<think>reversal</think><alpha>rank(-ts_sum(returns, 5))</alpha>"
SYSTEM = "Answer with exactly one <alpha>formula</alpha>."

TEMPLATES = {
    "chatml": (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\nGo<|im_end|>\n"
               f"<|im_start|>assistant\n{ANSWER}<|im_end|>\n"),
    "llama3": (f"<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n{SYSTEM}<|eot_id|>"
               f"<|start_header_id|>assistant<|end_header_id|>\n\n{ANSWER}<|eot_id|>"),
    "deepseek": f"<｜begin▁of▁sentence｜>{SYSTEM}<｜User｜>Go<｜Assistant｜>{ANSWER}<｜end▁of▁sentence｜>",
    "gemma": f"<start_of_turn>user\n{SYSTEM}<end_of_turn>\n<start_of_turn>model\n{ANSWER}<end_of_turn>",
    "mistral": f"<s>[INST] {SYSTEM} [/INST]{ANSWER}</s>",
    "phi": f"<|system|>{SYSTEM}<|end|><|user|>Go<|end|><|assistant|>{ANSWER}<|end|>",
    "harmony": (f"<|start|>system<|message|>{SYSTEM}<|end|><|start|>assistant<|channel|>analysis"
                f"<|message|>thinking<|end|><|start|>assistant<|channel|>final<|message|>{ANSWER}"
                "<|return|>"),
}


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_answer_is_found_after_the_last_assistant_marker(env, name: str) -> None:
    """Assertion: the system prompt's example tag is left out; the card equals the answer's."""
    text, how = response_of_query(TEMPLATES[name])
    assert how == "marker" and ANSWER in text and SYSTEM not in text
    assert env.score(text).to_json() == env.score(ANSWER).to_json()


def test_fallbacks_prompt_prefix_plain_and_last_tag() -> None:
    """Assertion: prompt prefix, plain 'Assistant:' and the last-tag rule, in that order."""
    prompt = f"{SYSTEM}\nQuestion: go\n"
    assert response_of_query(prompt + ANSWER, prompt) == (ANSWER, "prompt_prefix")
    assert response_of_query(f"{SYSTEM}\nUser: go\nAssistant: {ANSWER}") == (f" {ANSWER}", "plain_marker")
    text, how = response_of_query(f"{SYSTEM} now {ANSWER}", "a prompt that does not match")
    assert how == "last_tag" and text == f". now {ANSWER}"
    assert response_of_query("nothing here") == ("nothing here", "whole")


def test_nemo_response_text_takes_the_last_assistant_message() -> None:
    """Assertion: reasoning items and user messages are skipped; output_text parts joined."""
    output = [{"type": "reasoning", "summary": []},
              {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "old"}]},
              {"type": "message", "role": "assistant",
               "content": [{"type": "output_text", "text": "<alpha>rank(close)"},
                           {"type": "output_text", "text": "</alpha>"}]}]
    assert nemo_response_text(output) == "<alpha>rank(close)</alpha>"
    assert nemo_response_text([]) == ""


@pytest.fixture(scope="module")
def srv(env):
    with running_server(env, workers=1) as s:
        yield s


def test_openrlhf_get_reward(srv, env) -> None:
    """Assertion: rewards = in-process card.reward per query, in order; extra_logs per channel."""
    queries = [TEMPLATES["chatml"], TEMPLATES["llama3"].replace(ANSWER, VALID[3]),
               "<|im_start|>assistant\nno tag<|im_end|>"]
    answers = [ANSWER, VALID[3], "\nno tag<|im_end|>"]
    with srv.client() as c:
        r = c.post("/get_reward", json={"query": queries, "prompts": ["p"] * 3,
                                        "labels": [None] * 3, "templates": "x"})
    assert r.status_code == 200
    got = r.json()
    want = [env.score(a) for a in answers]
    assert got["rewards"] == [w.reward for w in want]
    # scores: OpenRLHF's [0, 1] dynamic-filtering score, 1.0 = solved (valid and reward > 0)
    assert got["scores"] == [1.0 if w.valid and w.reward > 0 else 0.0 for w in want]
    assert got["extra_logs"]["valid"] == [1.0, 1.0, 0.0]
    assert got["extra_logs"]["cpcv"] == [w.channels["cpcv"] for w in want]
    with srv.client() as c:
        r = c.post("/get_reward", json={"query": queries, "prompts": ["p"]})
    assert r.status_code == 422 and "prompts" in r.json()["error"]["message"]


def test_openrlhf_without_template_or_prompts_never_scores_gymkit_s_own_prompt(srv, env) -> None:
    """Rule 4 on a query of gymkit's own prompt (no chat template, no ``prompts``): its system
    text names ``<alpha>formula</alpha>``; a response without a tag was scored as that tag (a
    parse error, -3.0) and now is a missing tag, as ``env.score`` of the response; a tagged
    response is found as before, with or without a brief."""
    from gymkit.briefs import generate_briefs
    from gymkit.dsl.operators import OPERATORS
    from gymkit.prompt import render_prompt

    fields, levels = env.setup.fields, env.setup.levels
    brief = generate_briefs(3, 0)[0].text
    plain = render_prompt(None, fields, levels, OPERATORS)
    briefed = render_prompt(brief, fields, levels, OPERATORS)
    cases = [(plain + "\nrank(-returns)", "\nrank(-returns)"),
             (briefed + "rank(-returns)", "rank(-returns)"),
             (briefed + "\n" + ANSWER, "\n" + ANSWER)]
    with srv.client() as c:
        r = c.post("/get_reward", json={"query": [q for q, _ in cases]})
    assert r.status_code == 200
    want = [env.score(a).reward for _, a in cases]
    assert r.json()["rewards"] == want and want[0] == env.score("no tag at all").reward
    assert want[2] == env.score(ANSWER).reward


def test_slime_rm(srv, env) -> None:
    """Assertion: reward and channels of the response's card; card_sha256 of its bytes."""
    with srv.client() as c:
        r = c.post("/v1/rm", json={"prompt": [{"role": "user", "content": "go"}],
                                   "response": ANSWER, "label": None})
    card = env.score(ANSWER)
    assert r.status_code == 200
    assert r.json()["reward"] == card.reward and r.json()["channels"] == card.channels


def test_nemo_verify(srv, env) -> None:
    """Assertion: the request is echoed with reward and reward_components (= card channels)."""
    req = {"responses_create_params": {"input": [{"role": "user", "content": "go"}]},
           "response": {"id": "resp_1", "output": [
               {"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": ANSWER}]}]}}
    with srv.client() as c:
        r = c.post("/verify", json=req)
    card = env.score(ANSWER)
    got = r.json()
    assert r.status_code == 200 and got["reward"] == card.reward
    assert got["reward_components"] == card.channels
    assert got["responses_create_params"] == req["responses_create_params"]
    assert got["response"]["id"] == "resp_1"
    bad = {**req, "response": {"output": [{"content": "<alpha>x\ud800</alpha>"}]}}
    import json

    with srv.client() as c:
        r = c.post("/verify", content=json.dumps(bad), headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_unicode"


# ------------------------------------------------------------ NeMo-Gym's full contract
def _nemo_models():
    """NeMo-Gym's own pydantic models (nemo-gym is not on PyPI: installed from its source)."""
    try:
        from nemo_gym.base_resources_server import (
            BaseMultiRewardVerifyResponse,
            BaseSeedSessionResponse,
        )
        from nemo_gym.config_types import AggregateMetrics
        from nemo_gym.reward_profile import compute_aggregate_metrics
    except ImportError:
        return None
    return BaseMultiRewardVerifyResponse, BaseSeedSessionResponse, AggregateMetrics, \
        compute_aggregate_metrics


def _verify_req(text: str, task: int, rollout: int) -> dict:
    return {"responses_create_params": {"input": [{"role": "user", "content": "go"}]},
            "response": {"id": f"resp_{task}_{rollout}", "object": "response", "created_at": 0,
                         "model": "m", "parallel_tool_calls": False, "tool_choice": "auto",
                         "tools": [], "output": [
                             {"type": "message", "role": "assistant", "id": "msg_1",
                              "status": "completed",
                              "content": [{"type": "output_text", "text": text,
                                           "annotations": []}]}]},
            "_ng_task_index": task, "_ng_rollout_index": rollout}


def test_nemo_rollout_contract(srv, env) -> None:
    """Assertion: the standard agent's calls (seed_session, verify per rollout, aggregate_metrics)
    all answer 200 in NeMo-Gym's shapes, validated by its own models when installed; the
    aggregate is reward / valid share / channels per task and overall."""
    answers = [ANSWER, VALID[3], "no tag"]
    verified = []
    with srv.client() as c:
        for task in (0, 1):
            for rollout, text in enumerate(answers):
                seed = c.post("/seed_session", json={"responses_create_params": {"input": []}})
                assert seed.status_code == 200 and seed.json() == {}
                r = c.post("/verify", json=_verify_req(text, task, rollout))
                assert r.status_code == 200
                verified.append(r.json())
        agg = c.post("/aggregate_metrics", json={"verify_responses": verified})
        bad = c.post("/aggregate_metrics",
                     json={"verify_responses": [{"reward": 1.0, "_ng_task_index": "x"}]})
    assert agg.status_code == 200, agg.text
    assert bad.status_code == 422 and "_ng_task_index" in bad.json()["error"]["message"]
    cards = [env.score(a) for a in answers]
    got = agg.json()
    assert [g["_ng_task_index"] for g in got["group_level_metrics"]] == [0, 1]
    assert got["key_metrics"]["mean/reward"] == pytest.approx(
        sum(c.reward for c in cards) / 3, abs=1e-12)
    assert got["key_metrics"]["mean/valid"] == pytest.approx(2 / 3)
    assert got["agent_metrics"]["mean/cpcv"] == pytest.approx(
        sum(c.channels["cpcv"] for c in cards) / 3)
    models = _nemo_models()
    if models is None:
        pytest.skip("nemo-gym is not installed (not on PyPI; install it from its source "
                    "checkout): shapes above checked against its models as read from source")
    verify_model, seed_model, agg_model, nemo_aggregate = models
    for v in verified:
        m = verify_model.model_validate(v)
        assert m.reward == v["reward"] and m.reward_components == v["reward_components"]
    seed_model.model_validate({})
    agg_model.model_validate(got)
    theirs = nemo_aggregate(verified).agent_metrics
    for k in ("mean/reward", "std/reward", "median/reward", "max/reward", "min/reward",
              "mean/valid", "std/valid"):
        assert got["agent_metrics"][k] == pytest.approx(theirs[k], abs=1e-12), k


def test_aggregate_metrics_of_huge_rewards_are_figures_not_a_500(srv) -> None:
    """Assertion: rewards near float max (a client's own figures) aggregate to finite numbers
    (mean 1e308 of two 1e308; the std of ±1.7e308, beyond float range, as the largest float)
    instead of a 500 from an overflow; ordinary values keep their figures to the bit."""
    import sys

    with srv.client() as c:
        r = c.post("/aggregate_metrics", json={"verify_responses": [{"reward": 1e308}] * 2})
        s = c.post("/aggregate_metrics", json={"verify_responses": [{"reward": 1.7e308},
                                                                     {"reward": -1.7e308}]})
        o = c.post("/aggregate_metrics", json={"verify_responses": [{"reward": 0.1},
                                                                     {"reward": 0.7}]})
    assert r.status_code == 200 and s.status_code == 200, (r.text, s.text)
    assert r.json()["agent_metrics"]["mean/reward"] == 1e308
    assert r.json()["agent_metrics"]["median/reward"] == 1e308
    assert s.json()["agent_metrics"]["std/reward"] == sys.float_info.max
    assert s.json()["agent_metrics"]["mean/reward"] == 0.0
    import math
    import statistics

    assert o.json()["agent_metrics"]["mean/reward"] == math.fsum([0.1, 0.7]) / 2
    assert o.json()["agent_metrics"]["std/reward"] == statistics.stdev([0.1, 0.7])


def test_one_runaway_answer_costs_its_own_reward_not_the_batch(srv, env) -> None:
    """Assertion: an answer over gymkit's answer limit (131,072 characters, a long reasoning
    block) in a batch is scored as env.score scores it (invalid, answer_too_long, −3.0) on every
    trainer route, and the batch's other answers keep their cards; it used to fail the whole
    request with 422, so one runaway generation lost an OpenRLHF batch."""
    from gymkit.dsl.extract import MAX_ANSWER_CHARS

    long = "<think>" + "x" * (MAX_ANSWER_CHARS + 10) + "</think>" + ANSWER
    card, ok = env.score(long), env.score(ANSWER)
    assert not card.valid and card.error.code == "answer_too_long" and card.reward == -3.0
    with srv.client() as c:
        scored = c.post("/v1/score", json={"completions": [long, ANSWER]})
        rm = c.post("/get_reward", json={"query": [long, ANSWER], "prompts": ["p", "p"],
                                         "labels": [None, None]})
        slime = c.post("/v1/rm", json={"prompt": "go", "response": long, "label": None})
        nemo = c.post("/verify", json=_verify_req(long, 0, 0))
    assert scored.status_code == 200, scored.text[:300]
    cards = scored.json()["cards"]
    assert cards[0]["card"] == card.to_dict(timings=False)
    assert cards[1]["card"]["reward"] == ok.reward
    assert rm.status_code == 200 and rm.json()["rewards"] == [card.reward, ok.reward]
    assert slime.status_code == 200 and slime.json()["reward"] == card.reward
    assert nemo.status_code == 200 and nemo.json()["reward"] == card.reward
