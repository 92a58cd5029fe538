"""EnvConfig: defaults, validation, TOML round trip, fingerprint, registry and overrides."""

from __future__ import annotations

import tomllib

import pytest

import gymkit
from gymkit.config import EnvConfig
from gymkit.data import DEFAULT_SPLIT
from gymkit.registry import ENVIRONMENTS, list_envs

DATA = "ab" * 32


def test_default_config_is_the_design_default() -> None:
    c = ENVIRONMENTS["us46-default"]
    assert c.market == "default" and c.burn_in == 252
    assert "jepa_stress" in c.channels and len(c.channels) == 12 and c.stress_worlds == "default"
    assert c.channels[0] == "cpcv"
    assert c.priorities["cpcv"] == 3.0 and c.priorities["motif_guard"] == 0.3
    assert c.split["train_end"] == DEFAULT_SPLIT.train_end
    assert c.train_costs["name"] == "train" and c.cpcv == {"n_blocks": 6, "n_test_blocks": 2,
                                                            "purge": 10, "embargo": 5}
    assert c.archive == {"capacity": 1024, "seed": "alpha101"} and c.advantage_floor is None
    assert c.channel_params.min_turnover_floor == 0.02


def test_toml_round_trip_is_exact_and_deterministic(tmp_path) -> None:
    c = EnvConfig().replace(priorities={"cpcv": 2.5}, thresholds={"min_turnover_floor": 0.03},
                            advantages={"floor": 0.0}, description='quotes " and \\ and ü')
    text = c.to_toml()
    tomllib.loads(text)  # valid TOML
    back = EnvConfig.from_toml(text)
    assert back == c and back.to_toml() == text
    c.save(tmp_path / "env.toml")
    assert EnvConfig.load(tmp_path / "env.toml") == c
    assert EnvConfig.from_toml("") == EnvConfig()  # every key optional


def test_fingerprint_covers_config_data_and_version(monkeypatch) -> None:
    c = EnvConfig()
    fp = c.fingerprint(DATA)
    assert fp == EnvConfig().fingerprint(DATA) and len(fp) == 64
    assert c.replace(priorities={"ic": 0.3}).fingerprint(DATA) != fp
    assert c.replace(thresholds={"near_duplicate_corr": 0.9}).fingerprint(DATA) != fp
    assert c.fingerprint("cd" * 32) != fp
    monkeypatch.setattr(gymkit, "__version__", "9.9.9")
    assert c.fingerprint(DATA) != fp


@pytest.mark.parametrize(("kw", "msg"), [
    (dict(channels=("cpcv", "jepa_stress"), stress_worlds=""), "needs stress worlds"),
    (dict(channels=("cpcv", "sharpe")), "unknown reward channel"),
    (dict(channels=("cpcv", "R1")), "twice"),
    (dict(priorities={"cpcv": float("nan")}), "finite"),
    (dict(thresholds={"nope": 1.0}), "unknown channel parameter"),
    (dict(split={"train_start": "2012-06-29", "train_end": "2030-01-01",
                 "holdout_start": "2025-08-21", "holdout_end": "2026-08-21"}), "ordered"),
    (dict(split={"train_end": "2030-02-30"}), "not a date"),
    (dict(split={"test_end": "2020-01-01"}), "unknown split key"),
    (dict(train_costs={"name": "free"}), "unknown cost model"),
    (dict(cpcv={"n_blocks": 1}), "n_blocks"),
    (dict(archive={"seed": "random"}), "archive seed"),
    (dict(archive={"capacity": 0}), "capacity"),
    (dict(advantages={"floor": "low"}), "floor"),
    (dict(burn_in=-1), "burn_in"),
])
def test_bad_configs_name_the_problem(kw: dict, msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        EnvConfig().replace(**kw)


def test_unknown_keys_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown environment config key"):
        EnvConfig.from_toml('colour = "red"\n')
    with pytest.raises(ValueError, match="unknown environment config key 'colour'"):
        EnvConfig().replace(colour="red")
    with pytest.raises(ValueError, match="not valid TOML"):
        EnvConfig.from_toml("env_id = ")


def test_ids_are_accepted_and_channels_kept_in_registry_order() -> None:
    c = EnvConfig(channels=("R7", "cpcv", "R5"))
    assert c.channels == ("cpcv", "turnover", "ic")
    assert c.active_priorities() == (3.0, 1.0, 0.2)


def test_registry_lists_and_makes(env, tmp_path) -> None:
    assert {"us46-default", "us46-research"} <= set(list_envs()) == set(ENVIRONMENTS)
    assert list_envs() == sorted(ENVIRONMENTS)
    with pytest.raises(ValueError, match="unknown environment 'nope'"):
        gymkit.make("nope")
    with pytest.raises(ValueError, match=r"^unknown environment 'us46-defualt'; did you mean "
                       r"'us46-default'\? registered: "):
        gymkit.make("us46-defualt")
    with pytest.raises(ValueError, match=r"^unknown environment 'gone\.toml' \(no such \.toml file\)"):
        gymkit.make("gone.toml")
    path = tmp_path / "mine.toml"
    env.config.replace(priorities={"format": 0.5}, archive={"seed": "none"}).save(path)
    mine = gymkit.make(str(path))
    assert mine.config.priorities["format"] == 0.5 and len(mine.archive) == 0
    assert mine.fingerprint != env.fingerprint and mine.data_fingerprint == env.data_fingerprint
