"""An internal scoring error never outranks an answer: every adapter that hands a trainer one
number hands it the table's lowest reward, flagged as internal (so no output can raise its
reward by making scoring fail)."""

from __future__ import annotations

import pytest

import gymkit.adapters.common as common
from gymkit.verifiers.channels import INVALID_REWARDS


class _Broken:
    """An environment whose scoring raises (what a bug or a hostile input would do)."""

    fingerprint = "broken"

    class archive:  # the attribute the memo key reads
        version = 0

    def score_group(self, *args, **kwargs):
        raise RuntimeError("boom")


@pytest.fixture
def broken(monkeypatch):
    common.clear_memo()
    monkeypatch.setattr(common, "get_env", lambda env_id: _Broken())
    yield
    common.clear_memo()


def test_internal_reward_is_the_floor() -> None:
    assert common.INTERNAL_REWARD == min(INVALID_REWARDS.values())
    assert common.InternalResult("x").reward == common.INTERNAL_REWARD


def test_verl_scores_an_internal_error_below_every_answer(broken, monkeypatch) -> None:
    import gymkit.adapters.verl as gverl

    monkeypatch.setattr(gverl, "get_env", lambda env_id: _Broken())
    out = gverl.compute_score("gymkit/us46-default", "<alpha>rank(-returns)</alpha>", None, {})
    assert out["internal_error"] == 1.0
    assert out["score"] == common.INTERNAL_REWARD


def test_gymnasium_scores_an_internal_error_at_the_floor(monkeypatch) -> None:
    gymnasium = pytest.importorskip("gymnasium")
    import gymkit.adapters.gymnasium_env as genv

    monkeypatch.setattr(genv, "score_group_safe",
                        lambda env, texts, brief: [common.InternalResult("boom")] * len(texts))
    env = gymnasium.make("gymkit.adapters.gymnasium_env:gymkit/us46-default-v0")
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("<alpha>rank(-returns)</alpha>")
    assert terminated and reward == common.INTERNAL_REWARD and info["error"] == "internal"
