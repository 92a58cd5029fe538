"""Gymnasium adapter, driven through the real gymnasium (a light optional extra)."""

from __future__ import annotations

import json
import textwrap

import pytest

gymnasium = pytest.importorskip("gymnasium", reason="gymnasium is an optional extra")

from gymkit.adapters import common, gymnasium_env  # noqa: E402  (registers gymkit/us46-default-v0)

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
    assert info["error"] == "internal" and r == common.INTERNAL_REWARD


_FRESH = textwrap.dedent("""
    import json, sys
    from importlib.metadata import entry_points
    import gymnasium
    eps = [e.value for e in entry_points(group="gymnasium.envs") if e.name == "gymkit"]
    major = int(gymnasium.__version__.split(".")[0])
    gym_id = "gymkit/us46-default-v0"
    plain_before = gym_id in gymnasium.registry
    env = gymnasium.make(gym_id if major < 1 else "gymkit.adapters.gymnasium_env:" + gym_id)
    obs, info = env.reset(seed=0)
    _, reward, terminated, _, step = env.step("<alpha>rank(ts_std(volume, 8))</alpha>")
    plain_after = type(gymnasium.make(gym_id).unwrapped).__name__  # registered now
    print(json.dumps({"version": gymnasium.__version__, "file": gymnasium.__file__, "eps": eps,
                      "major": major, "plain_before": plain_before, "plain_after": plain_after,
                      "brief": info["brief"], "reward": reward, "valid": step["valid"]}))
""")


def _fresh_make(python: str) -> dict:
    """Run :data:`_FRESH` in a bare interpreter (no gymkit import) and check it against env.score."""
    import subprocess

    out = subprocess.run([python, "-c", _FRESH], capture_output=True, text=True, timeout=600,
                         cwd="/")
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["eps"] == ["gymkit.adapters.gym_registration:register_envs"]
    assert got["plain_before"] == (got["major"] < 1)  # registered by the plugin loader on 0.x
    assert got["plain_after"] == "GymkitEnv"
    from gymkit.adapters.common import get_env

    card = get_env("us46-default").score_group(["<alpha>rank(ts_std(volume, 8))</alpha>"],
                                               brief=got["brief"])[0]
    assert got["valid"] and got["reward"] == card.reward
    return got


def test_make_in_a_fresh_process_without_importing_gymkit() -> None:
    """The entry point is installed; gymnasium.make finds the env from a bare interpreter.

    gymnasium 0.26-0.29 load ``gymnasium.envs`` entry points on import, so the plain id works;
    gymnasium >= 1.0 dropped that loader, so there the module-qualified id is the way (the plain
    id is NamespaceNotFound until gymkit.adapters.gymnasium_env is imported).
    """
    import sys

    _fresh_make(sys.executable)


@pytest.mark.slow
def test_plain_id_with_no_import_on_gymnasium_029() -> None:
    """gymnasium 0.29 (in an overlay venv over this one): its plugin loader registers the plain id."""
    from .overlay import overlay_venv

    py = overlay_venv("gymnasium-0.29", [["pip", "install", "--no-deps", "--ignore-installed",
                                          "gymnasium==0.29.1"]]) / "bin" / "python"
    got = _fresh_make(str(py))
    assert got["version"] == "0.29.1" and got["file"].startswith(str(py.parent.parent))
    assert got["major"] == 0 and got["plain_before"]


def test_env_checker_passes(env) -> None:
    from gymnasium.utils.env_checker import check_env

    check_env(gymnasium_env.GymkitEnv("us46-default"), skip_render_check=True)
