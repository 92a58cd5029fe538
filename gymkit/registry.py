"""The environment registry: one table of named configurations, ``make`` and ``list_envs``.

``us46-default`` is the embedded default market (46 synthetic US stocks, DESIGN §2 split)
with the seed's best reward configuration (DESIGN §5), R3 included: its JEPA stress worlds
ship with the package (``gymkit.jepa``, loaded with numpy only); R3 is inactive, with a note
on every card, where they do not load or were generated for another market or split.
``make(env_id, market=panel)`` runs the same configuration on a user's panel (the config's
``market`` becomes ``"user"`` and the data fingerprint changes the environment fingerprint);
keyword overrides change any config field, dict fields merged key by key, e.g.
``make("us46-default", priorities={"cpcv": 2.0}, thresholds={"min_turnover_floor": 0.03})``.
``make`` also accepts an :class:`EnvConfig` or the path of a TOML file written by
:meth:`EnvConfig.save`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .config import EnvConfig, split_for_market
from .env import Environment, resolve_market

__all__ = ["ENVIRONMENTS", "env_config", "list_envs", "make"]

#: Named environment configurations.
ENVIRONMENTS: dict[str, EnvConfig] = {
    "us46-default": EnvConfig(),
    # Environment B of the seed (Part 3): per-action train costs 19x higher, R3 off.
    "us46-harsh": EnvConfig(
        env_id="us46-harsh",
        description="us46-default with 19x per-action train costs (76 bps per unit turnover), R3 off",
        channels=tuple(c for c in EnvConfig().channels if c != "jepa_stress"),
        train_costs={"name": "train", "fee_bps": 38.0, "slippage_bps": 19.0,
                     "half_spread_bps": 9.5, "fixed_impact_bps": 9.5}),
    # The multi-turn research gym's scoring (gymkit.research: tools on the train window).
    "us46-research": EnvConfig(env_id="us46-research", description=(
        "us46-default scored through research episodes: tools backtest on the train window, "
        "one submit, reward net of the formulas tried (gymkit.research)")),
}


def list_envs() -> list[str]:
    """Names of the registered environments, sorted."""
    return sorted(ENVIRONMENTS)


def env_config(env_id: str | EnvConfig | Path) -> EnvConfig:
    """The configuration ``make(env_id)`` builds from: a registered id, a ``.toml`` file or an
    EnvConfig; an unknown id is a ValueError naming it (and the nearest registered one)."""
    if isinstance(env_id, EnvConfig):
        return env_id
    key = str(env_id)
    if key in ENVIRONMENTS:
        return ENVIRONMENTS[key]
    if key.endswith(".toml") and Path(key).is_file():
        return EnvConfig.load(key)
    import difflib

    near = difflib.get_close_matches(key, list_envs(), n=1)
    hint = f"did you mean {near[0]!r}? " if near else ""
    missing = " (no such .toml file)" if key.endswith(".toml") else ""
    raise ValueError(f"unknown environment {key!r}{missing}; {hint}registered: {list_envs()} "
                     "(or a .toml file, as `gymkit env show ID --toml` writes one)")


def make(env_id: str | EnvConfig | Path = "us46-default", *, market: Any = None,
         **overrides: Any) -> Environment:
    """Build the environment ``env_id`` (a registry name, an EnvConfig or a .toml path).

    ``market``: run on this panel instead of the configured market (a :class:`Panel`, or a
    pandas/polars frame, long or wide, read by :func:`gymkit.data.load_panel`).
    ``overrides``: config fields to change (unknown names raise ``ValueError``); a
    ``split`` override may be partial and is completed on the market by the one split rule
    (:func:`gymkit.config.split_for_market`): with no split, a user market holds out its
    last 252 sessions and the environment's notes say so.
    """
    config = env_config(env_id)
    split = overrides.pop("split", None)
    if market is not None and "market" not in overrides:
        overrides["market"] = "user"
    if overrides:
        config = config.replace(**overrides)
    panel = resolve_market(config, market)
    config, note = split_for_market(config, panel.dates, split,
                                    user_market=config.market != "default")
    return Environment(config, panel, split_note=note)
