"""SkyRL adapter: a ``skyrl_gym`` text environment (the ``BaseTextEnv`` contract), one answer per episode.

SkyRL's generator runs, per trajectory: ``env = skyrl_gym.make(env_class, env_config=...,
extras=row_extras)``; ``chat, _ = env.init(prompt)``; then generate → ``out = env.step(text)``
until ``out["done"]``; ``env.get_metrics()``; ``env.close()``.  Here:

* ``env_class`` is ``"gymkit"`` (registered by :func:`register_skyrl_envs`; call it where the
  trainer's entry point registers custom environments) — ``env_config`` may carry ``env_id``
  (any reference :func:`gymkit.adapters.common.parse_env_ref` reads: an id, a ``.toml``, either
  ``@MARKET_FILE``); without it the row's ``data_source`` names the environment (default
  ``us46-default``);
* ``extras`` is the dataset row minus ``prompt`` / ``env_class`` (:func:`skyrl_rows`):
  ``reward_spec = {"method": "rule", "ground_truth": brief_id}`` and ``extra_info`` with the
  ``brief_id``; the brief id recovers the brief text (scoring context), nothing private;
* ``init(prompt)`` returns the prompt unchanged (the brief's chat messages);
* ``step(action)`` scores the text as a group of one: ``reward`` = ``card.reward`` (passed
  through), ``done=True``, ``observations=[]`` (single turn), ``metadata`` = ``{"valid",
  "error", "channels", "internal"}``; an exception while scoring gives reward ``INTERNAL_REWARD`` (the lowest) with
  ``internal=True`` and ``error="internal"`` (distinct from an invalid answer); never raises;
* ``get_metrics()`` = ``{"gymkit_reward", "gymkit_valid", "gymkit_internal", "gymkit_<channel>"...}``
  (numbers, averaged over episodes by SkyRL's default ``aggregate_metrics``).

An unknown environment, a row written for another environment than ``env_config.env_id``, or
a row without a brief id is a one-line ``ValueError`` at ``make`` time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from gymkit.adapters.common import INTERNAL_REWARD, get_env, resolve_brief, score_group_safe
from gymkit.adapters.datasets import brief_rows
from gymkit.briefs import Brief

__all__ = ["ENV_CLASS", "GymkitTextEnv", "register_skyrl_envs", "skyrl_rows"]

#: SkyRL ``env_class`` of gymkit's rows.
ENV_CLASS = "gymkit"


def _get(obj: Any, key: str, default: Any = None) -> Any:
    try:
        return obj.get(key, default)  # dict and OmegaConf DictConfig alike
    except AttributeError:
        return default


def _environment_of(env_config: Any, extras: Any) -> str:
    """The environment reference an episode scores on: ``env_config.env_id`` if set, else the
    row's ``data_source`` after ``gymkit/`` (what :func:`skyrl_rows` writes, a user market's
    file included), else ``us46-default``; a row written for another environment than
    ``env_config`` names is a one-line ``ValueError``, as is a reference naming none."""
    from gymkit.adapters.common import UnknownEnvironment, parse_env_ref

    configured = _get(env_config, "env_id", None)
    source = _get(extras, "data_source", None)
    row_ref = source[len("gymkit/"):] if isinstance(source, str) and source.startswith("gymkit/") else None
    ref = str(configured or row_ref or "us46-default")
    try:
        parse_env_ref(ref)
    except UnknownEnvironment as exc:
        raise ValueError(f"skyrl env_config.env_id / data_source: {exc}") from None
    if configured and row_ref and ref != row_ref:
        raise ValueError(f"skyrl: the row was written for environment {row_ref!r} (its "
                         f"data_source) but env_config.env_id is {ref!r}: its prompt names that "
                         "environment's market; drop env_id or rebuild the rows")
    return ref


class GymkitTextEnv(BaseTextEnv):
    """One brief per episode, one answer per episode (module doc)."""

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None) -> None:
        super().__init__()
        extras = extras or {}
        self.env_id = _environment_of(env_config, extras)
        brief_id = _get(_get(extras, "extra_info", {}), "brief_id") or \
            _get(_get(extras, "reward_spec", {}), "ground_truth")
        if not isinstance(brief_id, str) or not brief_id:
            raise ValueError("skyrl extras: no brief id (expected extra_info.brief_id or "
                             "reward_spec.ground_truth, as skyrl_rows writes them)")
        self.brief_id = brief_id
        self.brief = resolve_brief(brief_id, _get(_get(extras, "extra_info", {}), "brief"),
                                   "skyrl extras: ")
        self.max_turns = 1
        self._metrics: dict[str, float] = {}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Score the answer; the episode ends (module doc)."""
        self.turns += 1
        text = action if isinstance(action, str) else str(action)
        try:
            res = score_group_safe(get_env(self.env_id), [text], self.brief)[0]
        except Exception:
            res = None
        if res is None or getattr(res, "internal", False):
            self._metrics = {"gymkit_reward": INTERNAL_REWARD, "gymkit_valid": 0.0,
                             "gymkit_internal": 1.0}
            meta = {"valid": False, "error": "internal", "channels": {}, "internal": True}
            return BaseTextEnvStepOutput(observations=[], reward=INTERNAL_REWARD, done=True,
                                         metadata=meta)
        channels = {k: float(v) for k, v in res.channels.items()}
        self._metrics = {"gymkit_reward": float(res.reward), "gymkit_valid": float(res.valid),
                         "gymkit_internal": 0.0, **{f"gymkit_{k}": v for k, v in channels.items()}}
        meta = {"valid": bool(res.valid), "error": None if res.error is None else res.error.code,
                "channels": channels, "internal": False}
        return BaseTextEnvStepOutput(observations=[], reward=float(res.reward), done=True,
                                     metadata=meta)

    def get_metrics(self) -> dict[str, Any]:
        """The last step's reward, validity and channels (empty before a step)."""
        return dict(self._metrics)


def register_skyrl_envs(env_class: str = ENV_CLASS) -> None:
    """Register :class:`GymkitTextEnv` with skyrl_gym as ``env_class`` (idempotent)."""
    import skyrl_gym

    if env_class not in skyrl_gym.registry:
        skyrl_gym.register(id=env_class, entry_point="gymkit.adapters.skyrl:GymkitTextEnv")


def skyrl_rows(briefs: Sequence[Brief], env: Any | None = None,
               env_class: str = ENV_CLASS, env_id: str | None = None) -> list[dict[str, Any]]:
    """SkyRL dataset rows: ``prompt``, ``env_class``, ``reward_spec``, ``extra_info``, ``data_source``.

    ``env``: the environment whose market the prompts name (default ``us46-default``);
    ``env_id``: how the episodes find it again, ``data_source = "gymkit/<env_id>"`` (default the
    environment's id).  An environment on a user market needs ``env_id`` naming the market file
    (``gymkit.adapters.datasets.env_ref(id, FILE)``: ``id@/abs/FILE``, loaded strictly, so it
    must be that market), else the episodes would score on another market than the prompts
    name: a one-line ``ValueError``."""
    if env_id is None:
        if env is not None and env.config.market == "user":
            raise ValueError("skyrl_rows: env runs on a user market, which a SkyRL episode cannot "
                             "find from the environment id alone: pass env_id=env_ref("
                             f"{env.config.env_id!r}, MARKET_FILE) (gymkit.adapters.datasets)")
        env_id = "us46-default" if env is None else env.config.env_id
    elif env is not None:
        from gymkit.adapters.common import parse_env_ref
        from gymkit.adapters.datasets import check_strict_market

        _, market = parse_env_ref(env_id)
        if market is not None:
            check_strict_market(market, env.market.fingerprint, "a SkyRL episode")
    return [{"data_source": f"gymkit/{env_id}",
             "prompt": r["prompt"], "env_class": env_class,
             "reward_spec": {"method": "rule", "ground_truth": r["brief_id"]},
             "extra_info": {"brief_id": r["brief_id"], "split": r["split"], "brief": r["brief"]}}
            for r in brief_rows(briefs, env)]
