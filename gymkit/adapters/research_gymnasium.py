"""Gymnasium adapter of the research gym: a multi-step ``gymnasium.Env`` (text in, text out).

``reset(seed=None, options=None) -> (observation, info)``: the observation is the research
prompt (task contract, research rules, the brief) followed by the tool schemas as JSON;
``info`` has ``tools`` (OpenAI format), ``brief``, ``budget``.  Options: ``{"brief": text}``
or ``{"brief_id": id}``; otherwise a train-split brief drawn with the seeded ``np_random``.

``step(action) -> (observation, reward, terminated, truncated, info)``: ``action`` is one tool
call — an OpenAI tool-call dict, ``<tool_call>{json}</tool_call>`` text, or an ``<alpha>``
answer (= submit); see :mod:`gymkit.research.actions`.  The observation is the tool result
(canonical JSON).  ``reward`` is 0.0 until the episode ends, then the research reward;
``terminated`` on submit, ``truncated`` when a non-submit call comes with the budget spent
(no submission: the invalid ``NO_SUBMIT_REWARD``).  ``info["card"]`` is the submitted card.

Registered on import as ``gymkit/us46-research-v0``:
``gymnasium.make("gymkit.adapters.research_gymnasium:gymkit/us46-research-v0")``.
"""

from __future__ import annotations

import string
from typing import Any, ClassVar

import gymnasium
from gymnasium import spaces

from gymkit.adapters.common import get_env
from gymkit.briefs import DEFAULT_N, DEFAULT_SEED, generate_briefs, split_briefs
from gymkit.research import (
    DEFAULT_BUDGET,
    TOOL_COST,
    TOOL_SPECS,
    ResearchEnv,
    ResearchEpisode,
    canonical_json,
)

__all__ = ["GYM_ID", "ResearchGymEnv"]

GYM_ID = "gymkit/us46-research-v0"
MAX_TEXT = 65536


class ResearchGymEnv(gymnasium.Env):
    """One research episode per reset (module doc)."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, env_id: str = "us46-research", budget: int = DEFAULT_BUDGET,
                 tool_cost: float = TOOL_COST, n_briefs: int = DEFAULT_N,
                 brief_seed: int = DEFAULT_SEED) -> None:
        self.renv = ResearchEnv(get_env(env_id), budget=budget, tool_cost=tool_cost)
        self.briefs = generate_briefs(n_briefs, brief_seed)
        self._by_id = {b.brief_id: b for b in self.briefs}
        self._pool = split_briefs(self.briefs, "train")
        chars = set(string.printable)
        for b in self.briefs:
            chars.update(b.text)
        chars.update(self.renv.env.observation(None))
        chars.update(canonical_json(self.renv.description))  # describe()'s answer
        charset = "".join(sorted(chars))
        self.observation_space = spaces.Text(MAX_TEXT, min_length=1, charset=charset)
        self.action_space = spaces.Text(MAX_TEXT, min_length=0, charset=charset)
        self.episode: ResearchEpisode | None = None

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode (module doc)."""
        super().reset(seed=seed)
        opts = dict(options or {})
        if "brief" in opts:
            brief = opts["brief"]
        elif "brief_id" in opts:
            if opts["brief_id"] not in self._by_id:
                raise ValueError(f"unknown brief_id {opts['brief_id']!r}")
            brief = self._by_id[opts["brief_id"]].text
        else:
            brief = self._pool[int(self.np_random.integers(len(self._pool)))].text
        self.episode = self.renv.episode(brief)
        obs = self.episode.prompt(tools=True)
        return obs, {"tools": list(TOOL_SPECS), "brief": brief, "budget": self.episode.budget}

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """One tool call (module doc)."""
        if self.episode is None or self.episode.done:
            raise RuntimeError("call reset() first: no episode is open")
        res = self.episode.step(action)
        info = dict(res.info, calls_left=self.episode.calls_left)
        reward = 0.0 if res.reward is None else float(res.reward)
        return res.observation, reward, res.done and not res.truncated, res.truncated, info


def _register() -> None:
    from gymnasium.envs import registration

    if GYM_ID not in registration.registry:
        registration.register(id=GYM_ID, entry_point=f"{__name__}:ResearchGymEnv")


_register()
