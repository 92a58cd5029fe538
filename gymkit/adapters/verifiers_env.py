"""Adapter for the ``verifiers`` RL-environments library (an optional extra; not gymkit.verifiers).

:func:`load_environment` is the environment module's entry point under verifiers 0.2's loading
convention: ``vf-eval gymkit.adapters.verifiers_env`` and prime-rl's
``verifiers.load_environment("gymkit.adapters.verifiers_env", **env_args)`` import this module
and call it.  verifiers 0.4 loads only installed top-level modules: its id is ``gymkit-alpha``
(the package ``environments/gymkit_alpha``; :mod:`gymkit.adapters.verifiers_v1`).  The installed
verifiers release chooses the API:

* **verifiers 0.2.x** (legacy): a ``verifiers.SingleTurnEnv`` over a dataset of the split's
  briefs — ``prompt`` (chat messages from gymkit/prompt.py), ``answer`` (empty: there is no
  reference answer), ``info = {"brief_id": ..., "brief": <its text>}`` and no ``task`` column (0.2 routes by
  ``info['env_id']`` and rejects plain-string task routes) — with ``XMLParser(["alpha"])`` and a
  ``Rubric`` of ``gymkit_reward`` (weight 1: the card's scalar reward, passed through) plus
  weight-0 monitors, one per active channel (raw value), ``gymkit_valid`` (1/0),
  ``gymkit_internal`` (1 when scoring raised) and ``gymkit_model_error`` (1 when the model call
  failed).  A rollout's ``reward`` is therefore exactly ``card.reward``.
* **verifiers >= 0.3** (the ``verifiers.v1`` Taskset/Task API of 0.4): see
  :mod:`gymkit.adapters.verifiers_v1` (``GymkitTaskset`` yielding one ``GymkitTask`` per brief,
  reward ``gymkit`` = ``card.reward``, metrics per channel).

Each rollout is scored as a group of one through the shared memo (the K functions of one rollout
score it once); R2 (group PBO) is therefore 0 here.  Completions are read from message dicts
and message objects alike (:func:`gymkit.adapters.common.completion_text`), never their repr.
An internal error gives ``INTERNAL_REWARD`` (the lowest reward) on ``gymkit_reward``, 0.0 on the
other functions, and ``gymkit_internal = 1``.

A failed model call (verifiers 0.2 records it in ``state["error"]`` and stops the rollout with
``stop_condition == "has_error"``: a provider error, a timeout, a malformed response) is not an
answer, so gymkit does not score it: no card, ``gymkit_model_error = 1``, ``gymkit_valid = 0``,
and ``INTERNAL_REWARD`` on ``gymkit_reward`` by the same rule as an internal error (a failure
never outranks an answer, so nothing can raise a reward by making the call fail).  Filter such
rollouts on ``error`` (or the monitor) before averaging or training.  verifiers 0.4 does not call
the task's rewards on a failed rollout at all (``Rollout.close``), so the v1 path needs no rule.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

from gymkit.adapters.common import (
    INTERNAL_REWARD,
    InternalResult,
    completion_text,
    get_env,
    model_call_failed,
    resolve_brief,
    score_group_safe,
)
from gymkit.adapters.datasets import brief_rows
from gymkit.briefs import DEFAULT_N, DEFAULT_SEED, generate_briefs, split_briefs

__all__ = ["VerifiersChannel", "load_environment", "verifiers_api"]


def verifiers_api() -> str:
    """``'legacy'`` for an installed verifiers 0.2.x, ``'v1'`` for >= 0.3 (ImportError if absent)."""
    parts = version("verifiers").split(".")
    major, minor = int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)
    return "legacy" if (major, minor) < (0, 3) else "v1"


class VerifiersChannel:
    """A verifiers 0.2 reward function ``f(completion, info, **kwargs) -> float`` (module doc).

    ``channel``: ``'reward'`` (the card's scalar), an active channel name, ``'valid'``,
    ``'internal'`` or ``'model_error'``.
    """

    def __init__(self, env_id: str, channel: str) -> None:
        self.env_id = env_id
        self.channel = channel
        self.__name__ = f"gymkit_{channel}"

    def __call__(self, completion: Any = None, info: Any = None, **kwargs: Any) -> float:
        """The value of this rollout's answer (module doc); never raises on an answer (a row
        naming a brief that cannot be found raises :class:`~gymkit.adapters.common.UnknownBrief`)."""
        info = info if isinstance(info, dict) else {}
        brief = resolve_brief(info.get("brief_id"), info.get("brief"), "verifiers info: ")
        state = kwargs.get("state")
        if model_call_failed(state):
            if self.channel == "model_error":
                return 1.0
            return INTERNAL_REWARD if self.channel == "reward" else 0.0
        if self.channel == "model_error":
            return 0.0
        try:
            env = get_env(self.env_id)
            res = score_group_safe(env, [completion_text(completion)], brief)[0]
        except Exception:
            res = InternalResult("scoring raised")
        internal = bool(getattr(res, "internal", False))
        if self.channel == "internal":
            return 1.0 if internal else 0.0
        if internal:
            return INTERNAL_REWARD if self.channel == "reward" else 0.0
        if self.channel == "valid":
            return 1.0 if res.valid else 0.0
        if self.channel == "reward":
            return float(res.reward)
        return float(res.channels[self.channel])


def _legacy(env_id: str, split: str, n_briefs: int, brief_seed: int, **kwargs: Any) -> Any:
    from datasets import Dataset

    import verifiers as vf

    env = get_env(env_id)
    briefs = split_briefs(generate_briefs(n_briefs, brief_seed), split)
    rows = [{"prompt": r["prompt"], "answer": "", "info": {"brief_id": r["brief_id"],
                                                           "brief": r["brief"]}}
            for r in brief_rows(briefs, env)]
    names = ["reward", *env.channels, "valid", "internal", "model_error"]
    funcs = [VerifiersChannel(env_id, c) for c in names]
    weights = [1.0] + [0.0] * (len(names) - 1)
    parser = vf.XMLParser(["alpha"])
    rubric = vf.Rubric(funcs=funcs, weights=weights, parser=parser)
    return vf.SingleTurnEnv(dataset=Dataset.from_list(rows), parser=parser, rubric=rubric,
                            **kwargs)


def load_environment(env_id: str = "us46-default", split: str = "train",
                     n_briefs: int = DEFAULT_N, brief_seed: int = DEFAULT_SEED,
                     **kwargs: Any) -> Any:
    """The verifiers environment of ``env_id`` over the briefs of ``split`` (module doc)."""
    if split not in ("train", "holdout", "probe"):
        raise ValueError(f"split must be 'train', 'holdout' or 'probe', got {split!r}")
    if verifiers_api() == "legacy":
        return _legacy(env_id, split, n_briefs, brief_seed, **kwargs)
    from gymkit.adapters.verifiers_v1 import load_v1_environment

    return load_v1_environment(env_id, split, n_briefs, brief_seed, **kwargs)
