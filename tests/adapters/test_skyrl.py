"""SkyRL adapter, through skyrl_gym's own registry, make and metric aggregation.

skyrl-gym installs here (light); SkyRL's trainer (skyrl-train, GPU stack) does not, so its
generator's per-trajectory sequence is followed as read from its source
(``SkyRLGymGenerator.agent_loop``): ``skyrl_gym.make(env_class, env_config=DictConfig,
extras=row minus prompt/env_class + max_turns)`` → ``init(prompt)`` → ``step(text)`` until
``done`` → ``get_metrics()`` → ``close()``; metrics aggregated per env class by skyrl_gym's own
``aggregate_for_environment``.  Every reward is compared with ``env.score``.
"""

from __future__ import annotations

import copy

import pytest

from gymkit.briefs import generate_briefs, probe_briefs, split_briefs

from .conftest import GROUP, VALID

skyrl_gym = pytest.importorskip("skyrl_gym", reason="skyrl-gym is an optional extra")
from omegaconf import DictConfig  # noqa: E402  (a skyrl-gym dependency)

from gymkit.adapters import common  # noqa: E402
from gymkit.adapters.skyrl import ENV_CLASS, register_skyrl_envs, skyrl_rows  # noqa: E402


@pytest.fixture(scope="module")
def rows(env):
    register_skyrl_envs()
    register_skyrl_envs()  # idempotent
    return skyrl_rows(probe_briefs(generate_briefs())[:2], env)


def _trajectory(row, answer, env_config=None):
    """One SkyRL trajectory, in the generator's order of calls."""
    extras = {k: v for k, v in copy.deepcopy(row).items() if k not in ("prompt", "env_class")}
    extras["max_turns"] = 1
    env = skyrl_gym.make(row["env_class"], env_config=env_config or DictConfig({}), extras=extras)
    chat, _ = env.init(copy.deepcopy(row["prompt"]))
    assert chat == row["prompt"]
    out, turns = None, 0
    while out is None or not out["done"]:
        out = env.step(answer)
        turns += 1
    metrics = env.get_metrics()
    env.close()
    return out, turns, metrics


def test_rewards_are_env_score(rows, env) -> None:
    from gymkit.adapters.common import brief_text_of

    per_episode = []
    for row in rows:
        assert row["env_class"] == ENV_CLASS and set(row) == {
            "data_source", "prompt", "env_class", "reward_spec", "extra_info"}
        for answer, ok in zip(GROUP, VALID, strict=True):
            out, turns, metrics = _trajectory(row, answer)
            card = env.score_group([answer], brief=brief_text_of(row["extra_info"]["brief_id"]))[0]
            assert turns == 1 and out["observations"] == []
            assert out["reward"] == card.reward and out["metadata"]["valid"] == ok == card.valid
            assert out["metadata"]["channels"] == dict(card.channels)
            assert metrics["gymkit_reward"] == card.reward
            per_episode.append(metrics)
    from skyrl_gym.metrics import aggregate_for_environment

    agg = aggregate_for_environment(ENV_CLASS, per_episode)
    assert agg["gymkit_valid"] == pytest.approx(sum(VALID) / len(VALID))
    assert agg["gymkit_reward"] == pytest.approx(sum(m["gymkit_reward"] for m in per_episode)
                                                 / len(per_episode))


def test_a_brief_of_another_seed_counts_and_an_unknown_one_is_refused(env) -> None:
    """Rows of seed-1 briefs carry the brief's text: the episode scores with it (R13 counts);
    an id found nowhere is a one-line error at the episode's start, not a brief-less score."""
    from gymkit.adapters.common import brief_text_of

    row = skyrl_rows(split_briefs(generate_briefs(40, 1), "train")[:1], env)[0]
    assert brief_text_of(row["extra_info"]["brief_id"]) is None
    answer = "<alpha>rank(ts_std(volume, 8))</alpha>"
    out, _, _ = _trajectory(row, answer)
    card = env.score_group([answer], brief=row["extra_info"]["brief"])[0]
    assert out["reward"] == card.reward and card.channels["brief_compliance"] < 0
    bad = copy.deepcopy(row)
    bad["extra_info"] = {"brief_id": "deadbeefdeadbeef"}
    bad["reward_spec"]["ground_truth"] = "deadbeefdeadbeef"
    with pytest.raises(ValueError, match=r"^skyrl extras: unknown brief_id 'deadbeefdeadbeef'"):
        _trajectory(bad, answer)


def test_internal_error_is_flagged(rows, env, monkeypatch) -> None:
    monkeypatch.setattr(env, "score_group", lambda c, brief=None: 1 / 0)
    out, _, metrics = _trajectory(rows[0], GROUP[0])
    assert out["reward"] == common.INTERNAL_REWARD and out["metadata"]["error"] == "internal"
    assert metrics["gymkit_internal"] == 1.0


def test_bad_config_is_a_one_line_error(rows) -> None:
    with pytest.raises(ValueError, match="unknown environment 'nope'"):
        _trajectory(rows[0], GROUP[0], DictConfig({"env_id": "nope"}))
    with pytest.raises(ValueError, match="no brief id"):
        skyrl_gym.make(ENV_CLASS, env_config=DictConfig({}), extras={"max_turns": 1})


def test_rows_of_a_user_market_score_on_that_market(eight_stock_csv, env, tmp_path, monkeypatch) -> None:
    """A user's market: the rows name its file, and SkyRL's episode scores there, with no
    env_config at all (the row's data_source says where), as env.score on that market does.
    Rows that would name the default market are refused, and so is an env_config that
    contradicts the row."""
    import gymkit
    from gymkit.adapters.common import brief_text_of
    from gymkit.adapters.datasets import env_ref
    from gymkit.data import load_panel

    monkeypatch.setenv("GYMKIT_CACHE_DIR", str(tmp_path / "cache"))
    register_skyrl_envs()
    path = eight_stock_csv()
    mine = gymkit.make("us46-default", market=load_panel(path))
    briefs = probe_briefs(generate_briefs())[:1]
    with pytest.raises(ValueError, match=r"user market.*env_id=env_ref\('us46-default', MARKET_FILE\)"):
        skyrl_rows(briefs, mine)
    ref = env_ref("us46-default", str(path))
    (row,) = skyrl_rows(briefs, mine, env_id=ref)
    assert row["data_source"] == f"gymkit/{ref}" and "Group levels: none" in str(row["prompt"])
    answer = "<alpha>rank(ts_std(volume, 8) / ts_std(close, 8))</alpha>"
    brief = brief_text_of(row["extra_info"]["brief_id"])
    want = mine.score_group([answer], brief=brief)[0]
    assert want.reward != env.score_group([answer], brief=brief)[0].reward  # another market
    for config in (DictConfig({}), DictConfig({"env_id": ref})):
        out, _, metrics = _trajectory(row, answer, config)
        assert out["reward"] == want.reward and metrics["gymkit_reward"] == want.reward
    with pytest.raises(ValueError, match="written for environment"):
        _trajectory(row, answer, DictConfig({"env_id": "us46-default"}))
