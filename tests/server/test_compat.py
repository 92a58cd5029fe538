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
    assert got["rewards"] == [w.reward for w in want] == got["scores"]
    assert got["extra_logs"]["valid"] == [1.0, 1.0, 0.0]
    assert got["extra_logs"]["cpcv"] == [w.channels["cpcv"] for w in want]
    with srv.client() as c:
        r = c.post("/get_reward", json={"query": queries, "prompts": ["p"]})
    assert r.status_code == 422 and "prompts" in r.json()["error"]["message"]


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
