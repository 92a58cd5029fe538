"""Gymnasium adapter, driven through the real gymnasium (a light optional extra)."""

from __future__ import annotations

import pytest

gymnasium = pytest.importorskip("gymnasium", reason="gymnasium is an optional extra")

from gymkit.adapters import gymnasium_env  # noqa: E402  (registers gymkit/us46-default-v0)

from .conftest import GROUP  # noqa: E402


@pytest.fixture(scope="module")
def genv(env):
    e = gymnasium.make("gymkit/us46-default-v0")
    yield e
    e.close()


def test_registered_and_single_turn(genv, env) -> None:
    obs, info = genv.reset(seed=3)
    assert genv.observation_space.contains(obs) and info["brief"] in obs
    _, info2 = genv.reset(seed=3)
    assert info2["brief_id"] == info["brief_id"]  # seeded draw
    _, reward, terminated, truncated, step_info = genv.step(GROUP[0])
    assert terminated and not truncated
    assert reward == env.score_group([GROUP[0]], brief=info["brief"])[0].reward
    assert step_info["valid"] and step_info["card"].env_fingerprint == env.fingerprint
    with pytest.raises(RuntimeError, match="reset"):
        genv.step(GROUP[0])


def test_invalid_and_internal_are_distinct(genv, env, monkeypatch) -> None:
    genv.reset(seed=0, options={"split": "probe"})
    _, r, *_, info = genv.step("no tag")
    assert info["error"] == "missing_tag" and not info["valid"] and r < 0
    monkeypatch.setattr(env, "score_group", lambda c, brief=None: 1 / 0)
    genv.reset(seed=0)
    _, r, *_, info = genv.step(GROUP[0])
    assert info["error"] == "internal" and r == 0.0


def test_env_checker_passes(env) -> None:
    from gymnasium.utils.env_checker import check_env

    check_env(gymnasium_env.GymkitEnv("us46-default"), skip_render_check=True)
