"""verifiers adapter, through verifiers' own loader and rollout (evaluate) against a fake server.

The installed release picks the path: verifiers 0.2.x (the legacy SingleTurnEnv/Rubric API,
what the ``test`` extra installs) runs here; the 0.4 ``verifiers.v1`` path is tested by
``test_verifiers_v1.py`` where 0.4 is installed.  A fake OpenAI-compatible server on 127.0.0.1
returns canned completions; verifiers' own client, rollout and rubric produce the rewards, and
every one is compared with ``env.score`` of the completion text verifiers recorded.
"""

from __future__ import annotations

import pytest

from gymkit.adapters.common import brief_text_of, completion_text

from .conftest import GROUP, VALID, real_verifiers
from .fake_openai import FakeOpenAI

vf = real_verifiers()
from gymkit.adapters import common  # noqa: E402
from gymkit.adapters.verifiers_env import verifiers_api  # noqa: E402

if verifiers_api() != "legacy":
    pytest.skip("installed verifiers is >= 0.3 (v1 API): see test_verifiers_v1.py",
                allow_module_level=True)

MODULE = "gymkit.adapters.verifiers_env"


@pytest.fixture(scope="module")
def venv(env):
    """Loaded the way vf-eval and prime-rl load an environment module."""
    return vf.load_environment(MODULE, split="probe")


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setenv("GYMKIT_FAKE_KEY", "not-a-key")
    server = FakeOpenAI(GROUP)
    yield server
    server.close()


def test_loaded_by_verifiers_loader(venv, env) -> None:
    assert isinstance(venv, vf.SingleTurnEnv) and isinstance(venv.parser, vf.XMLParser)
    assert venv.env_id == MODULE and len(venv.dataset) == 50
    row = venv.dataset[0]
    assert set(row["info"]) == {"brief_id"} and "task" not in venv.dataset.column_names


def test_evaluate_rewards_are_env_score(venv, env, fake) -> None:
    """verifiers' evaluate → our rubric: every rollout's reward is card.reward of its text."""
    client = vf.ClientConfig(api_base_url=fake.url, api_key_var="GYMKIT_FAKE_KEY",
                             max_retries=0)
    out = venv.evaluate_sync(client=client, model="fake", num_examples=2,
                             rollouts_per_example=len(GROUP))
    rows = out["outputs"]
    assert len(rows) == 2 * len(GROUP) and len(fake.requests) == 2 * len(GROUP)
    assert all(p.endswith("/chat/completions") for p, _ in fake.requests)
    seen = []
    for r in rows:
        assert not isinstance(r["completion"][-1], dict)  # message objects, not dicts
        text = completion_text(r["completion"])
        seen.append(text)
        card = env.score_group([text], brief=brief_text_of(r["info"]["brief_id"]))[0]
        assert r["reward"] == card.reward
        assert r["metrics"]["gymkit_valid"] == float(card.valid)
        assert [r["metrics"][f"gymkit_{c}"] for c in env.channels] == \
            [card.channels[c] for c in env.channels]
    assert sorted(seen) == sorted(GROUP * 2)  # the answers themselves, not a repr
    valid_rewards = [r["reward"] for r in rows if r["metrics"]["gymkit_valid"] == 1.0]
    assert len(valid_rewards) == 2 * sum(VALID)


def test_internal_error_is_flagged(venv, env, fake, monkeypatch) -> None:
    def boom(c, brief=None):
        raise RuntimeError("worker died")
    monkeypatch.setattr(env, "score_group", boom)
    client = vf.ClientConfig(api_base_url=fake.url, api_key_var="GYMKIT_FAKE_KEY",
                             max_retries=0)
    out = venv.evaluate_sync(client=client, model="fake", num_examples=1, rollouts_per_example=1)
    (r,) = out["outputs"]
    assert r["reward"] == common.INTERNAL_REWARD and r["metrics"]["gymkit_internal"] == 1.0
