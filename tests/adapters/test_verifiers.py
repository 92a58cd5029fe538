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
from .fake_openai import FAIL, FakeOpenAI

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
    assert set(row["info"]) == {"brief_id", "brief"} and "task" not in venv.dataset.column_names
    assert common.brief_text_of(row["info"]["brief_id"]) == row["info"]["brief"]


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


def test_briefs_of_another_seed_are_scored_with_their_brief(env, fake) -> None:
    """``brief_seed=1`` (a documented option): verifiers' evaluate loop gives each rollout the
    reward of its answer scored with its seed-1 brief (R13 counts), as ``gymkit score --brief``."""
    seeded = vf.load_environment(MODULE, split="train", n_briefs=40, brief_seed=1)
    client = vf.ClientConfig(api_base_url=fake.url, api_key_var="GYMKIT_FAKE_KEY",
                             max_retries=0)
    out = seeded.evaluate_sync(client=client, model="fake", num_examples=1,
                               rollouts_per_example=len(GROUP))
    briefed = 0
    for r in out["outputs"]:
        text = r["info"]["brief"]
        assert common.brief_text_of(r["info"]["brief_id"]) is None  # not a default brief
        card = env.score_group([completion_text(r["completion"])], brief=text)[0]
        assert r["reward"] == card.reward
        briefed += card.valid and card.channels["brief_compliance"] < 0
    assert briefed  # R13 bit on some answer: the brief was really used


def test_internal_error_is_flagged(venv, env, fake, monkeypatch) -> None:
    def boom(c, brief=None):
        raise RuntimeError("worker died")
    monkeypatch.setattr(env, "score_group", boom)
    client = vf.ClientConfig(api_base_url=fake.url, api_key_var="GYMKIT_FAKE_KEY",
                             max_retries=0)
    out = venv.evaluate_sync(client=client, model="fake", num_examples=1, rollouts_per_example=1)
    (r,) = out["outputs"]
    assert r["reward"] == common.INTERNAL_REWARD and r["metrics"]["gymkit_internal"] == 1.0


def test_failed_model_call_is_not_scored_as_an_answer(venv, env, monkeypatch) -> None:
    """A provider error (HTTP 500) is flagged gymkit_model_error, never scored as a missing tag.

    verifiers 0.2 records the failure in the rollout's ``error`` and still runs the rubric; the
    old adapter scored the empty completion, so the failure read as the policy's invalid answer.
    """
    monkeypatch.setenv("GYMKIT_FAKE_KEY", "not-a-key")
    calls = []
    real = env.score_group
    monkeypatch.setattr(env, "score_group",
                        lambda c, brief=None: calls.append(c) or real(c, brief=brief))
    server = FakeOpenAI([FAIL, GROUP[0]])
    try:
        client = vf.ClientConfig(api_base_url=server.url, api_key_var="GYMKIT_FAKE_KEY",
                                 max_retries=0)
        out = venv.evaluate_sync(client=client, model="fake", num_examples=1,
                                 rollouts_per_example=2, max_concurrent=1)
    finally:
        server.close()
    rows = out["outputs"]
    failed = [r for r in rows if r.get("error")]
    answered = [r for r in rows if not r.get("error")]
    assert len(failed) == 1 and len(answered) == 1, [r.get("error") for r in rows]
    (f,), (a,) = failed, answered
    assert f["metrics"]["gymkit_model_error"] == 1.0
    assert f["metrics"]["gymkit_valid"] == 0.0 and f["metrics"]["gymkit_internal"] == 0.0
    assert f["reward"] == common.INTERNAL_REWARD
    assert all(f["metrics"][f"gymkit_{c}"] == 0.0 for c in env.channels)
    card = env.score_group([GROUP[0]], brief=brief_text_of(a["info"]["brief_id"]))[0]
    assert a["metrics"]["gymkit_model_error"] == 0.0 and a["reward"] == card.reward
    assert [GROUP[0]] in calls and all(c != [""] for c in calls)  # the failure was never scored
