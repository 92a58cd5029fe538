"""The research gym through verifiers' own loader and multi-turn rollout (evaluate) against a
fake OpenAI-compatible server on 127.0.0.1 that plays a scripted policy."""

from __future__ import annotations

from .conftest import HONEST, adapters_module, real_verifiers

# the library, never the checkout's verifiers/ folder (``python -m pytest`` puts the checkout
# first on sys.path, where that folder shadowed the library and this module skipped itself)
vf = real_verifiers()

from gymkit.adapters.common import brief_text_of  # noqa: E402

fake_openai = adapters_module("fake_openai")

MODULE = "gymkit.adapters.research_verifiers"
POLICY = ['<tool_call>{"name": "backtest", "arguments": {"formula": "rank(ts_delta(close, 5))"}}'
          "</tool_call>",
          f'<tool_call>{{"name": "backtest", "arguments": {{"formula": "{HONEST}"}}}}</tool_call>',
          f"<alpha>{HONEST}</alpha>"]


def _one_rollout(monkeypatch, answers: list[str]) -> tuple[dict, int]:
    """One rollout through verifiers' loader and evaluate against a fake server playing
    ``answers``: (the output row, the number of requests the server got)."""
    monkeypatch.setenv("GYMKIT_FAKE_KEY", "not-a-key")
    venv = vf.load_environment(MODULE, split="probe", budget=4)
    assert isinstance(venv, vf.MultiTurnEnv) and len(venv.dataset) == 50
    server = fake_openai.FakeOpenAI(answers)
    try:
        client = vf.ClientConfig(api_base_url=server.url, api_key_var="GYMKIT_FAKE_KEY",
                                 max_retries=0)
        out = venv.evaluate_sync(client=client, model="fake", num_examples=1,
                                 rollouts_per_example=1)
    finally:
        server.close()
    return out["outputs"][0], len(server.requests)


def test_multi_turn_rollout_reward_is_the_episode_reward(renv, monkeypatch) -> None:
    row, n_requests = _one_rollout(monkeypatch, POLICY)
    assert n_requests == 3                      # three model turns, then it stopped
    ep = renv.episode(brief_text_of(row["info"]["brief_id"]), budget=4)
    for a in POLICY:
        res = ep.step(a)
    assert res.done and row["reward"] == res.reward
    assert row["metrics"]["research_trials"] == 2.0 and row["metrics"]["research_calls"] == 2.0
    assert row["metrics"]["research_model_error"] == 0.0


def test_a_failed_model_call_is_flagged_not_read_as_no_submission(renv, monkeypatch) -> None:
    """The provider fails the second turn (HTTP 500): verifiers stops the rollout with its
    error; the reward is the no-submission floor and ``research_model_error`` says why."""
    from gymkit.research import NO_SUBMIT_REWARD

    row, n_requests = _one_rollout(monkeypatch, [POLICY[0], fake_openai.FAIL])
    assert row.get("error") and n_requests == 2
    assert row["reward"] == NO_SUBMIT_REWARD and row["metrics"]["research_model_error"] == 1.0
    assert row["metrics"]["research_calls"] == 0.0  # the episode never returned an outcome
