"""The research gym through verifiers' own loader and multi-turn rollout (evaluate) against a
fake OpenAI-compatible server on 127.0.0.1 that plays a scripted policy."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

vf = pytest.importorskip("verifiers", reason="verifiers is an optional extra")
if not hasattr(vf, "MultiTurnEnv"):
    pytest.skip("the installed verifiers has no MultiTurnEnv", allow_module_level=True)

from gymkit.adapters.common import brief_text_of  # noqa: E402

from .conftest import HONEST  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "fake_openai", Path(__file__).resolve().parents[1] / "adapters" / "fake_openai.py")
fake_openai = importlib.util.module_from_spec(_spec)
sys.modules["fake_openai"] = fake_openai
_spec.loader.exec_module(fake_openai)

MODULE = "gymkit.adapters.research_verifiers"
POLICY = ['<tool_call>{"name": "backtest", "arguments": {"formula": "rank(ts_delta(close, 5))"}}'
          "</tool_call>",
          f'<tool_call>{{"name": "backtest", "arguments": {{"formula": "{HONEST}"}}}}</tool_call>',
          f"<alpha>{HONEST}</alpha>"]


def test_multi_turn_rollout_reward_is_the_episode_reward(renv, monkeypatch) -> None:
    monkeypatch.setenv("GYMKIT_FAKE_KEY", "not-a-key")
    venv = vf.load_environment(MODULE, split="probe", budget=4)
    assert isinstance(venv, vf.MultiTurnEnv) and len(venv.dataset) == 50
    server = fake_openai.FakeOpenAI(POLICY)
    try:
        client = vf.ClientConfig(api_base_url=server.url, api_key_var="GYMKIT_FAKE_KEY",
                                 max_retries=0)
        out = venv.evaluate_sync(client=client, model="fake", num_examples=1,
                                 rollouts_per_example=1)
    finally:
        server.close()
    row = out["outputs"][0]
    assert len(server.requests) == 3                      # three model turns, then it stopped
    ep = renv.episode(brief_text_of(row["info"]["brief_id"]), budget=4)
    for a in POLICY:
        res = ep.step(a)
    assert res.done and row["reward"] == res.reward
    assert row["metrics"]["research_trials"] == 2.0 and row["metrics"]["research_calls"] == 2.0
