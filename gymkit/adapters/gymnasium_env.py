"""Gymnasium adapter: a single-turn ``gymnasium.Env`` over a gymkit environment.

``reset(seed=None, options=None) -> (observation, info)``: the observation is the task prompt
(gymkit/prompt.py) for one brief.  ``options``: ``{"brief": text}``, ``{"brief_id": id}`` or
``{"split": "train" | "holdout" | "probe"}`` (default: the env's ``split`` argument, "train");
without an explicit brief one is drawn from the split with the seeded ``self.np_random``.
``step(action) -> (observation, reward, terminated=True, truncated=False, info)``:
``reward = card.reward``; ``info = {"card": ScoreCard, "valid", "channels", "error",
"brief_id"}``.  An exception while scoring gives reward ``INTERNAL_REWARD`` (the lowest of the table) and ``info["error"] = "internal"``
(distinct from an invalid answer's gate code); it never raises.

Spaces: ``gymnasium.spaces.Text`` for both; the charset holds every character of the prompts
and briefs (ASCII printable plus the few non-ASCII characters the briefs use).

Registered as ``gymkit/us46-default-v0`` (:mod:`gymkit.adapters.gym_registration`): through the
``gymnasium.envs`` entry point on gymnasium 0.26-0.29 (``gymnasium.make("gymkit/us46-default-v0")``
with no import), and on import of this module, so on gymnasium >= 1.0 (no plugin loader)
``gymnasium.make("gymkit.adapters.gymnasium_env:gymkit/us46-default-v0")`` works.
"""

from __future__ import annotations

import string
from typing import Any, ClassVar

import gymnasium
from gymnasium import spaces

from gymkit.adapters.common import INTERNAL_REWARD, get_env, score_group_safe
from gymkit.adapters.gym_registration import ENV_IDS, register_envs
from gymkit.briefs import DEFAULT_N, DEFAULT_SEED, MECHANISMS, generate_briefs, split_briefs

__all__ = ["ENV_IDS", "GymkitEnv", "register_envs"]

MAX_PROMPT = 8192
MAX_ANSWER = 8192


def _charset(texts: list[str]) -> str:
    chars = set(string.printable)
    for t in texts:
        chars.update(t)
    return "".join(sorted(chars))


class GymkitEnv(gymnasium.Env):
    """One brief per episode, one answer per episode (module doc)."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, env_id: str = "us46-default", split: str = "train",
                 n_briefs: int = DEFAULT_N, brief_seed: int = DEFAULT_SEED) -> None:
        self.env = get_env(env_id)
        self.split = split
        self.briefs = generate_briefs(n_briefs, brief_seed)
        self._by_id = {b.brief_id: b for b in self.briefs}
        self._pool = split_briefs(self.briefs, split)
        texts = [b.text for b in self.briefs] + [self.env.observation(None)] + \
            [m.text for m in MECHANISMS]
        charset = _charset(texts)
        self.observation_space = spaces.Text(MAX_PROMPT, min_length=1, charset=charset)
        self.action_space = spaces.Text(MAX_ANSWER, min_length=0, charset=charset)
        self._brief: str | None = None
        self._brief_id: str | None = None
        self._obs: str | None = None
        self._done = True

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode (module doc)."""
        super().reset(seed=seed)
        opts = dict(options or {})
        if "brief" in opts:
            self._brief, self._brief_id = opts["brief"], None
        elif "brief_id" in opts:
            b = self._by_id.get(opts["brief_id"])
            if b is None:
                raise ValueError(f"unknown brief_id {opts['brief_id']!r}")
            self._brief, self._brief_id = b.text, b.brief_id
        else:
            pool = split_briefs(self.briefs, opts["split"]) if "split" in opts else self._pool
            b = pool[int(self.np_random.integers(len(pool)))]
            self._brief, self._brief_id = b.text, b.brief_id
        self._obs = self.env.observation(self._brief)
        self._done = False
        info = {"brief_id": self._brief_id, "brief": self._brief, "env_id": self.env.config.env_id,
                "env_fingerprint": self.env.fingerprint, "channels": list(self.env.channels)}
        return self._obs, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Score the answer; the episode ends (module doc)."""
        if self._obs is None or self._done:
            raise RuntimeError("call reset() before step() (single-turn episodes)")
        self._done = True
        res = score_group_safe(self.env, [action if isinstance(action, str) else str(action)],
                               self._brief)[0]
        if getattr(res, "internal", False):
            info = {"card": res, "valid": False, "channels": {}, "error": "internal",
                    "brief_id": self._brief_id}
            return self._obs, INTERNAL_REWARD, True, False, info
        info = {"card": res, "valid": res.valid, "channels": dict(res.channels),
                "error": None if res.error is None else res.error.code, "brief_id": self._brief_id}
        return self._obs, float(res.reward), True, False, info


register_envs()
