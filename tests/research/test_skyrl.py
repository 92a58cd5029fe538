"""The research gym through skyrl_gym's registry, make and metric aggregation, in the order
of calls of SkyRL's generator (``SkyRLGymGenerator.agent_loop``: make → init → step until
done → get_metrics → close), multi-turn."""

from __future__ import annotations

import copy
import json

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym", reason="skyrl-gym is an optional extra")
from omegaconf import DictConfig  # noqa: E402

from gymkit.adapters.common import brief_text_of  # noqa: E402
from gymkit.adapters.research_skyrl import (  # noqa: E402
    ENV_CLASS,
    register_research_skyrl_envs,
    research_rows,
)
from gymkit.briefs import generate_briefs, split_briefs  # noqa: E402

from .conftest import HONEST  # noqa: E402

ACTIONS = ['<tool_call>{"name": "backtest", "arguments": {"formula": "rank(ts_delta(close, 5))"}}'
           "</tool_call>",
           "I think I should test this.",  # no tool call: a counted call with an error
           f'<tool_call>{{"name": "backtest", "arguments": {{"formula": "{HONEST}"}}}}</tool_call>',
           f"<think>the reversal is better</think><alpha>{HONEST}</alpha>"]


def _trajectory(row, actions, env_config):
    extras = {k: v for k, v in copy.deepcopy(row).items() if k not in ("prompt", "env_class")}
    env = skyrl_gym.make(row["env_class"], env_config=env_config, extras=extras)
    chat, _ = env.init(copy.deepcopy(row["prompt"]))
    outs = []
    for a in actions:
        outs.append(env.step(a))
        if outs[-1]["done"]:
            break
    metrics = env.get_metrics()
    env.close()
    return env, chat, outs, metrics


def test_multi_turn_trajectory_and_metrics(renv) -> None:
    register_research_skyrl_envs()
    register_research_skyrl_envs()  # idempotent
    rows = research_rows(split_briefs(generate_briefs(), "train")[:2], renv.env)
    assert rows[0]["env_class"] == ENV_CLASS
    all_metrics = []
    for row in rows:
        env, chat, outs, metrics = _trajectory(row, ACTIONS, DictConfig({"budget": 4}))
        assert chat[0]["role"] == "system" and '"backtest"' in chat[0]["content"]
        assert env.max_turns == 5
        assert [o["done"] for o in outs] == [False, False, False, True]
        assert json.loads(outs[0]["observations"][0]["content"])["result"]["valid"]
        assert "error" in json.loads(outs[1]["observations"][0]["content"])["result"]
        # the same actions through the Python API give the same reward
        ep = renv.episode(brief_text_of(row["extra_info"]["brief_id"]), budget=4)
        for a in ACTIONS:
            res = ep.step(a)
        assert outs[-1]["reward"] == res.reward and metrics["research_trials"] == 2.0
        assert metrics["research_calls"] == 3.0 and metrics["research_deflation"] > 0
        all_metrics.append(metrics)
    from skyrl_gym.metrics import aggregate_for_environment

    agg = aggregate_for_environment(ENV_CLASS, all_metrics)
    mean = sum(m["research_reward"] for m in all_metrics) / len(all_metrics)
    assert any(k.endswith("research_reward") and v == pytest.approx(mean) for k, v in agg.items())
