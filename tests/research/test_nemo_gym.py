"""The research gym as a NeMo-Gym resources server, over real HTTP on 127.0.0.1, driven the way
NeMo-Gym's simple agent drives a resources server: /seed_session with the dataset row, one POST
/{tool} per function call with its JSON arguments (cookies of the last answer only), /verify
with the final Responses object, /aggregate_metrics.  Shapes validated by nemo-gym's own models
when it is importable, else by its contract as read from its source."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from gymkit.adapters.research_nemo_gym import (
    END_REASON,
    SESSION_COOKIE,
    create_app,
    dataset_rows,
    warm_up,
)
from gymkit.research import NO_SUBMIT_REWARD
from gymkit.server.episodes import EpisodeSettings

from .conftest import HONEST
from .test_server_episodes import app_server, serving

OTHER = "rank(ts_delta(close, 5))"


@contextmanager
def nemo_server(env, settings: EpisodeSettings | None = None, clock=None) -> Iterator[str]:
    warm_up(env)  # as `python -m gymkit.adapters.research_nemo_gym` does before listening
    with serving(app_server(create_app(env, settings, clock))) as url:
        yield url


def _nemo():
    """nemo-gym's models, or None (not installed: contract checks only)."""
    try:
        from nemo_gym.base_resources_server import BaseMultiRewardVerifyResponse
        from nemo_gym.config_types import AggregateMetrics
        from nemo_gym.openai_utils import NeMoGymResponse, NeMoGymResponseCreateParamsNonStreaming
        from nemo_gym.reward_profile import compute_aggregate_metrics
    except ImportError:
        return None
    return (BaseMultiRewardVerifyResponse, AggregateMetrics, NeMoGymResponse,
            NeMoGymResponseCreateParamsNonStreaming, compute_aggregate_metrics)


def _fc(i: int, name: str, args: dict) -> dict:
    return {"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}", "name": name,
            "arguments": json.dumps(args), "status": "completed"}


def _msg(text: str) -> dict:
    return {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def _cookie(resp: httpx.Response) -> dict[str, str]:
    """The Cookie header built from one answer's Set-Cookie (what the agent keeps)."""
    v = resp.cookies.get(SESSION_COOKIE)
    return {"cookie": f"{SESSION_COOKIE}={v}"} if v else {}


def agent_rollout(c: httpx.Client, row: dict, turns: list[list[dict]]) -> tuple[dict, list[str]]:
    """simple_agent.run: seed, then each model turn's function calls against /{name} (the
    last answer's cookies only), then /verify with the accumulated Responses object."""
    seed = c.post("/seed_session", json=row)
    assert seed.status_code == 200 and seed.json() == {}, seed.text
    cookies = _cookie(seed)
    outputs: list[dict] = []
    tool_texts: list[str] = []
    for turn in turns:
        outputs.extend(turn)
        for item in turn:
            if item["type"] != "function_call":
                continue
            r = c.post(f"/{item['name']}", json=json.loads(item["arguments"]), headers=cookies)
            cookies = _cookie(r)
            tool_texts.append(r.text)
            outputs.append({"type": "function_call_output", "call_id": item["call_id"],
                            "output": r.text})
    response = {"id": "resp_1", "object": "response", "created_at": 0, "model": "m",
                "parallel_tool_calls": False, "tool_choice": "auto", "tools": [],
                "output": outputs}
    v = c.post("/verify", json={**row, "response": response}, headers=cookies)
    assert v.status_code == 200, v.text
    return v.json(), tool_texts


def _local(renv, row: dict, actions: list, final: str | None):
    from gymkit.adapters.common import brief_text_of

    ep = renv.episode(brief_text_of(row["brief_id"]), budget=row["budget"])
    texts = [ep.step(a).observation for a in actions]
    if not ep.done:
        if final is not None:
            ep.submit(final)
        else:
            ep.end(END_REASON)
    return ep, texts


@pytest.fixture(scope="module")
def rows(renv):
    return dataset_rows("us46-research", split="probe", budget=4)


@pytest.fixture(scope="module")
def rollouts(renv, rows):
    """Three rollouts on each of two tasks through the server, with the Python episodes of
    the same actions: (verify answers, tool texts, Python episodes, tool observations,
    aggregate_metrics answer)."""
    calls = [("backtest", {"formula": OTHER}), ("backtest", {"formula": HONEST}),
             ("compare", {"formula_a": HONEST, "formula_b": OTHER})]
    plans = [  # (model turns, the Python actions, the final formula when submitted in text)
        ([[_fc(i, n, a)] for i, (n, a) in enumerate(calls)]
         + [[_fc(9, "submit", {"formula": HONEST})], [_msg("done")]],
         [{"name": n, "arguments": a} for n, a in calls]
         + [{"name": "submit", "arguments": {"formula": HONEST}}], None),
        ([[_fc(0, "describe", {})], [_msg(f"<think>ok</think><alpha>{HONEST}</alpha>")]],
         [{"name": "describe", "arguments": {}}], HONEST),
        ([[_fc(0, "backtest", {"formula": HONEST})], [_msg("I give up")]],
         [{"name": "backtest", "arguments": {"formula": HONEST}}], None),
    ]
    verified, texts, local = [], [], []
    with nemo_server(renv.env) as url, httpx.Client(base_url=url, timeout=120) as c:
        for task, row in enumerate(rows[:2]):
            for rollout, (turns, actions, final) in enumerate(plans):
                got, tt = agent_rollout(c, {**row, "_ng_task_index": task,
                                            "_ng_rollout_index": rollout}, turns)
                verified.append(got)
                texts.append(tt)
                local.append(_local(renv, row, actions, final))
        agg = c.post("/aggregate_metrics", json={"verify_responses": verified})
    assert agg.status_code == 200, agg.text
    return verified, texts, local, agg.json()


def test_rollouts_match_the_python_episode(renv, rows, rollouts) -> None:
    """Tool answers are the episode's observations byte for byte; verify's reward is the
    episode's research reward; aggregate_metrics is per task and overall."""
    verified, texts, local, out = rollouts
    for got, tt, (ep, want), row in zip(verified, texts, local, [rows[0]] * 3 + [rows[1]] * 3,
                                        strict=True):
        assert tt == want                                 # the tool messages, byte for byte
        assert got["reward"] == ep.result.reward and got["n_effective"] == ep.result.n_effective
        assert got["transcript_sha256"] == hashlib.sha256(
            ep.transcript_json().encode()).hexdigest()
        assert got["responses_create_params"] == row["responses_create_params"]
        assert set(got["reward_components"]) == {*renv.env.channels, "deflation", "tool_cost"}
    assert [v["submitted"] for v in verified[:3]] == [True, True, False]
    assert verified[2]["reward"] == NO_SUBMIT_REWARD and verified[2]["valid"] is False
    assert verified[0]["n_trials"] == 2 and 1.0 <= verified[0]["n_effective"] <= 3.0
    assert [g["_ng_task_index"] for g in out["group_level_metrics"]] == [0, 1]
    assert out["key_metrics"]["mean/reward"] == pytest.approx(
        sum(v["reward"] for v in verified) / len(verified), abs=1e-12)
    assert out["key_metrics"]["mean/valid"] == pytest.approx(4 / 6)


def test_shapes_are_nemo_gyms_own(rows, rollouts) -> None:
    """Rows, verify answers and the aggregate validate with nemo-gym's models; its
    RewardProfiler gives the same statistics."""
    verified, _, _, out = rollouts
    models = _nemo()
    if models is None:
        pytest.skip("nemo-gym is not importable here (the test extra does not install it): "
                    "the other tests check its contract as read from its source")
    verify_model, agg_model, response_model, params_model, theirs = models
    for row in rows:
        params_model.model_validate(row["responses_create_params"])
    for v in verified:
        m = verify_model.model_validate(v)
        assert m.reward == v["reward"] and m.reward_components == v["reward_components"]
        response_model.model_validate(v["response"])
    agg_model.model_validate(out)
    mine, ref = out["agent_metrics"], theirs(verified).agent_metrics
    for k in ("mean/reward", "std/reward", "max/reward", "mean/valid", "mean/n_effective",
              "mean/n_calls"):
        assert mine[k] == pytest.approx(ref[k], abs=1e-12), k


def test_sessions_cookies_budget_and_errors(renv, rows) -> None:
    """No cookie → 404; every answer re-sends the cookie; a spent budget ends the episode
    unsubmitted; a tool after the end → 409; verify twice answers the same; limits apply."""
    now = [0.0]
    settings = EpisodeSettings(max_sessions=2, ttl_s=60.0, max_budget=4, default_budget=2,
                               max_formula_chars=64)
    row = rows[0]
    with nemo_server(renv.env, settings, lambda: now[0]) as url, \
            httpx.Client(base_url=url, timeout=120) as c:
        r = c.post("/backtest", json={"formula": HONEST})
        assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_session"
        assert c.post("/seed_session", json={**row, "budget": 5}).json()["error"]["code"] == \
            "budget_too_large"
        seed = c.post("/seed_session", json={**row, "budget": 1})
        ck = _cookie(seed)
        r = c.post("/backtest", json={"formula": "x" * 65}, headers=ck)
        assert r.status_code == 422 and r.json()["error"]["code"] == "formula_too_long"
        assert _cookie(r) == ck                                   # re-sent on errors too
        r = c.post("/backtest", content=b"{not json", headers=ck)
        assert r.status_code == 200 and "not JSON" in r.json()["result"]["error"]
        r = c.post("/describe", json={}, headers=ck)               # budget 1 is spent
        assert "without a submission" in r.json()["error"] and _cookie(r) == ck
        r = c.post("/submit", json={"formula": HONEST}, headers=ck)
        assert r.status_code == 409 and r.json()["error"]["code"] == "episode_over"
        resp = {"output": [_msg(f"<alpha>{HONEST}</alpha>")]}
        v1 = c.post("/verify", json={**row, "response": resp}, headers=ck).json()
        v2 = c.post("/verify", json={**row, "response": resp}, headers=ck).json()
        assert v1 == v2 and v1["reward"] == NO_SUBMIT_REWARD and not v1["submitted"]
        c.post("/seed_session", json=row)
        r = c.post("/seed_session", json=row)
        assert r.status_code == 429 and r.json()["error"]["code"] == "too_many_sessions"
        now[0] = 61.0                                              # the sessions expire
        r = c.post("/verify", json={**row, "response": resp}, headers=ck)
        assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_session"
        r = c.post("/verify", json={"response": "x"}, headers=ck)
        assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request"
        r = c.post("/aggregate_metrics", json={"verify_responses": [{"_ng_task_index": "a"}]})
        assert r.status_code == 422 and "_ng_task_index" in r.json()["error"]["message"]


def test_rows_carry_the_episode_prompt_and_the_tools(renv, rows) -> None:
    row = rows[0]
    params = row["responses_create_params"]
    assert [m["role"] for m in params["input"]] == ["system", "user"]
    assert "4 tool calls" in params["input"][0]["content"]
    assert [t["name"] for t in params["tools"]] == ["backtest", "compare", "describe", "submit"]
    assert all(t["type"] == "function" and t["strict"] for t in params["tools"])
    assert len(rows) == 50 and len({r["brief_id"] for r in rows}) == 50
    with pytest.raises(ValueError, match="split"):
        dataset_rows(split="test")
