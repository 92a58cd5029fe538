"""verifiers >= 0.3 (the ``verifiers.v1`` Taskset/Task API of 0.4): gymkit's briefs as a taskset.

* :class:`GymkitTaskset` (config :class:`GymkitTasksetConfig`: ``env_id``, ``split``,
  ``n_briefs``, ``brief_seed``) yields one :class:`GymkitTask` per brief of the split: its
  ``TaskData`` carries ``id`` = ``brief_id``, ``name`` = the mechanism family and ``prompt`` =
  the chat messages of gymkit/prompt.py (system + brief) — no private data;
* :class:`GymkitTask` scores the trace's last assistant message as a group of one: reward
  ``gymkit`` (weight 1) = ``card.reward`` passed through, and metric ``gymkit_card`` (a mapping,
  flattened by verifiers) = ``gymkit_valid`` (1/0), ``gymkit_internal`` (1 when scoring raised;
  reward ``INTERNAL_REWARD``, the lowest) and ``gymkit_<channel>`` per active channel.  Message
  objects and dicts are read alike (never their repr).

verifiers 0.4's loader (``vf-eval``, prime-rl) resolves a taskset id to an installed
*top-level* module (``verifiers/v1/utils/loaders.py:_import_plugin``: ``owner/name@v`` →
``name``, dashes → underscores, then ``verifiers.v1.tasksets.<name>`` or ``<name>``; a dotted id
fails in ``importlib.util.find_spec``).  So this module is not the id: the environment package
``environments/gymkit_alpha`` (distribution ``gymkit-alpha``, module ``gymkit_alpha``) re-exports
:class:`GymkitTaskset` as the one ``Taskset`` subclass in its ``__all__``, and
``vf-eval gymkit-alpha`` loads it.  :data:`TASKSET_ID` is that id; :func:`load_v1_environment`
(what :func:`gymkit.adapters.verifiers_env.load_environment` returns on verifiers >= 0.3) builds
the taskset under it for Python use.  Tested through a real ``vf-eval`` rollout
(tests/adapters/test_verifiers_v04_rollout.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import verifiers.v1 as vf

from gymkit.adapters.common import (
    INTERNAL_REWARD,
    completion_text,
    get_env,
    score_group_safe,
)
from gymkit.adapters.datasets import brief_rows
from gymkit.briefs import DEFAULT_N, DEFAULT_SEED, generate_briefs, split_briefs

__all__ = ["GymkitTaskset"]

#: The taskset id verifiers 0.4 loads (``vf-eval gymkit-alpha``): the environment package's name.
TASKSET_ID = "gymkit-alpha"


class GymkitTasksetConfig(vf.TasksetConfig):
    """Which briefs load: the environment, the split and the brief generator."""

    env_id: str = "us46-default"
    split: Literal["train", "holdout", "probe"] = "train"
    n_briefs: int = DEFAULT_N
    brief_seed: int = DEFAULT_SEED


class GymkitTask(vf.Task):
    """One brief; scored by gymkit (module doc)."""

    def _result(self, trace: Any) -> Any:
        msgs = getattr(trace, "assistant_messages", None) or []
        text = completion_text(msgs[-1]) if msgs else str(getattr(trace, "last_reply", "") or "")
        env_id = getattr(self.config, "env_id", None) or self._env_id
        try:
            return score_group_safe(get_env(env_id), [text], self._brief)[0]
        except Exception:
            return None

    _env_id = "us46-default"
    _brief: str | None = None  # the brief's text (set by the taskset: any generator seed)

    @vf.reward(weight=1.0)
    async def gymkit(self, trace: Any) -> float:
        """``card.reward`` of the last answer (``INTERNAL_REWARD`` on an internal error)."""
        res = self._result(trace)
        if res is None or getattr(res, "internal", False):
            return INTERNAL_REWARD
        return float(res.reward)

    @vf.metric
    async def gymkit_card(self, trace: Any) -> dict[str, float]:
        """valid, internal and every active channel of the last answer's card."""
        res = self._result(trace)
        if res is None or getattr(res, "internal", False):
            return {"gymkit_valid": 0.0, "gymkit_internal": 1.0}
        return {"gymkit_valid": float(res.valid), "gymkit_internal": 0.0,
                **{f"gymkit_{k}": float(v) for k, v in res.channels.items()}}


class GymkitTaskset(vf.Taskset[GymkitTask, GymkitTasksetConfig]):
    """gymkit's briefs of one split, one task each (module doc)."""

    def load(self) -> Iterable[GymkitTask]:
        """One task per brief of ``config.split``."""
        cfg = self.config
        env = get_env(cfg.env_id)
        briefs = split_briefs(generate_briefs(cfg.n_briefs, cfg.brief_seed), cfg.split)
        for r in brief_rows(briefs, env):
            data = vf.TaskData(id=r["brief_id"], name=r["family"],
                               prompt=next(m["content"] for m in r["prompt"] if m["role"] == "user"),
                               system_prompt=r["prompt"][0]["content"])
            task = GymkitTask(data, cfg.task)
            task._env_id = cfg.env_id
            task._brief = r["brief"]
            yield task


def load_v1_environment(env_id: str = "us46-default", split: str = "train",
                        n_briefs: int = DEFAULT_N, brief_seed: int = DEFAULT_SEED,
                        **kwargs: Any) -> GymkitTaskset:
    """The :class:`GymkitTaskset` of ``env_id`` over the briefs of ``split``."""
    cfg = GymkitTasksetConfig(id=TASKSET_ID, env_id=env_id, split=split,
                              n_briefs=n_briefs, brief_seed=brief_seed, **kwargs)
    return GymkitTaskset(cfg)
