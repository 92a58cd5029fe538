"""Adapter for the ``verifiers`` RL-environments library (an optional extra; not gymkit.verifiers).

:func:`load_environment` returns ``verifiers.SingleTurnEnv`` (checked against verifiers 0.2.x,
the last line with the ``SingleTurnEnv``/``XMLParser``/``Rubric`` API; 0.3 moved it under
``verifiers.legacy`` and 0.4 replaced it) with

* a dataset of the split's briefs: ``prompt`` (chat messages from gymkit/prompt.py), ``answer``
  (empty: there is no reference answer), ``info`` = ``{"brief_id": ...}`` — no private data;
* ``parser = XMLParser(["alpha"])`` (the answer contract's tag);
* ``rubric = Rubric(funcs=[one per active channel], weights=[its priority])`` plus two
  monitoring functions of weight 0: ``gymkit_valid`` (1/0) and ``gymkit_internal`` (1 when
  scoring raised).  The rubric's weighted sum is the card's scalar reward before the R10 cap.

Each rollout is scored as a group of one through the shared memo (the K functions of one
rollout score it once); R2 (group PBO) is therefore 0 here.  verifiers needs a float from
every function: an invalid answer gives its card's values (gate penalties on R1/R6, 0
elsewhere), an internal error 0.0 on every channel with ``gymkit_internal = 1``.
"""

from __future__ import annotations

from typing import Any

from gymkit.briefs import DEFAULT_N, DEFAULT_SEED, generate_briefs, split_briefs

from .common import completion_text, get_env, score_group_safe
from .datasets import brief_rows

__all__ = ["VerifiersChannel", "load_environment"]


class VerifiersChannel:
    """A verifiers reward function ``f(completion, info, **kwargs) -> float`` for one channel."""

    def __init__(self, env_id: str, channel: str) -> None:
        self.env_id = env_id
        self.channel = channel
        self.__name__ = f"gymkit_{channel}"

    def __call__(self, completion: Any, info: Any = None, **kwargs: Any) -> float:
        """The channel value of this rollout's answer (module doc); never raises."""
        from .common import brief_text_of

        brief_id = info.get("brief_id") if isinstance(info, dict) else None
        try:
            env = get_env(self.env_id)
            res = score_group_safe(env, [completion_text(completion)], brief_text_of(brief_id))[0]
        except Exception:
            return 1.0 if self.channel == "internal" else 0.0
        internal = bool(getattr(res, "internal", False))
        if self.channel == "internal":
            return 1.0 if internal else 0.0
        if internal:
            return 0.0
        if self.channel == "valid":
            return 1.0 if res.valid else 0.0
        return float(res.channels[self.channel])


def load_environment(env_id: str = "us46-default", split: str = "train",
                     n_briefs: int = DEFAULT_N, brief_seed: int = DEFAULT_SEED,
                     **kwargs: Any) -> Any:
    """Build the ``verifiers.SingleTurnEnv`` of ``env_id`` over the briefs of ``split``."""
    from datasets import Dataset

    import verifiers as vf

    env = get_env(env_id)
    briefs = split_briefs(generate_briefs(n_briefs, brief_seed), split)
    rows = [{"prompt": r["prompt"], "answer": "", "info": {"brief_id": r["brief_id"]},
             "task": "gymkit"} for r in brief_rows(briefs, env)]
    funcs = [VerifiersChannel(env_id, c) for c in env.channels]
    weights = [float(env.config.priorities[c]) for c in env.channels]
    funcs += [VerifiersChannel(env_id, "valid"), VerifiersChannel(env_id, "internal")]
    weights += [0.0, 0.0]
    parser = vf.XMLParser(["alpha"])
    rubric = vf.Rubric(funcs=funcs, weights=weights, parser=parser)
    return vf.SingleTurnEnv(dataset=Dataset.from_list(rows), parser=parser, rubric=rubric,
                            **kwargs)
