"""SkyRL adapter of the research gym: a multi-turn ``skyrl_gym`` text environment.

SkyRL's generator runs ``env = skyrl_gym.make(env_class, env_config=..., extras=row_extras)``;
``chat, _ = env.init(prompt)``; then generate → ``out = env.step(text)`` until ``out["done"]``;
``env.get_metrics()``; ``env.close()``.  Here:

* ``env_class`` is ``"gymkit-research"`` (:func:`register_research_skyrl_envs`);
  ``env_config`` may carry ``env_id`` (default ``us46-research``) and ``budget`` (default 8);
* ``extras`` carry the brief id as :func:`research_rows` writes them (``extra_info.brief_id``
  or ``reward_spec.ground_truth``); ``max_turns`` is budget + 1 (every call, then submit);
* ``init(prompt)`` returns the episode's chat: the system turn (task contract, research
  rules, the tool schemas as JSON) and the brief as the user turn;
* ``step(text)``: the text is one tool call (``<tool_call>{json}</tool_call>``) or an
  ``<alpha>`` answer (= submit), :mod:`gymkit.research.actions`.  Not done: ``observations``
  = ``[{"role": "user", "content": tool result}]``, reward 0.0.  Done (submit, or a call
  with the budget spent): ``observations=[]``, ``reward`` = the research reward, metadata
  with the outcome.  Never raises on a bad action (it is a counted call with an error).
* ``get_metrics()``: ``research_reward``, ``research_valid``, ``research_trials``,
  ``research_calls``, ``research_deflation`` (averaged by skyrl_gym's default aggregation).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from gymkit.adapters.common import get_env, resolve_brief
from gymkit.adapters.skyrl import skyrl_rows
from gymkit.briefs import Brief
from gymkit.research import DEFAULT_BUDGET, TOOL_SPECS, ResearchEnv

__all__ = ["ENV_CLASS", "ResearchTextEnv", "register_research_skyrl_envs", "research_rows"]

ENV_CLASS = "gymkit-research"


def _get(obj: Any, key: str, default: Any = None) -> Any:
    try:
        return obj.get(key, default)
    except AttributeError:
        return default


class ResearchTextEnv(BaseTextEnv):
    """One research episode per trajectory (module doc)."""

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None) -> None:
        super().__init__()
        extras = extras or {}
        env_id = str(_get(env_config, "env_id", None) or "us46-research")
        budget = int(_get(env_config, "budget", None) or DEFAULT_BUDGET)
        brief_id = _get(_get(extras, "extra_info", {}), "brief_id") or \
            _get(_get(extras, "reward_spec", {}), "ground_truth")
        if not isinstance(brief_id, str) or not brief_id:
            raise ValueError("skyrl extras: no brief id (expected extra_info.brief_id or "
                             "reward_spec.ground_truth, as research_rows writes them)")
        brief = resolve_brief(brief_id, _get(_get(extras, "extra_info", {}), "brief"),
                              "skyrl extras: ")
        self.episode = ResearchEnv(get_env(env_id), budget=budget).episode(brief)
        self.max_turns = budget + 1
        self._metrics: dict[str, float] = {}

    def init(self, prompt: Any) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """The episode's chat (system: contract, rules, tools; user: the brief)."""
        return self.episode.messages(tools=True), {"tools": list(TOOL_SPECS)}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """One tool call or the submission (module doc)."""
        self.turns += 1
        res = self.episode.step(action)
        if not res.done:
            return BaseTextEnvStepOutput(observations=[{"role": "user", "content": res.observation}],
                                         reward=0.0, done=False, metadata={})
        out = res.info["outcome"]
        self._metrics = {"research_reward": float(out["reward"]),
                         "research_valid": float(out["valid"]),
                         "research_trials": float(out["n_trials"]),
                         "research_calls": float(out["n_calls"]),
                         "research_deflation": float(out["deflation"])}
        return BaseTextEnvStepOutput(observations=[], reward=float(out["reward"]), done=True,
                                     metadata={"outcome": out, "truncated": res.truncated})

    def get_metrics(self) -> dict[str, Any]:
        """The episode's outcome as numbers (empty before it ends)."""
        return dict(self._metrics)


def register_research_skyrl_envs(env_class: str = ENV_CLASS) -> None:
    """Register :class:`ResearchTextEnv` with skyrl_gym as ``env_class`` (idempotent)."""
    import skyrl_gym

    if env_class not in skyrl_gym.registry:
        skyrl_gym.register(id=env_class, entry_point=f"{__name__}:ResearchTextEnv")


def research_rows(briefs: Sequence[Brief], env: Any | None = None) -> list[dict[str, Any]]:
    """SkyRL dataset rows for research episodes (as :func:`gymkit.adapters.skyrl.skyrl_rows`,
    ``env_class`` ``gymkit-research``)."""
    return skyrl_rows(briefs, env, env_class=ENV_CLASS)
