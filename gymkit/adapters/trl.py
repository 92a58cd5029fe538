"""TRL adapter: GRPO reward functions, one per channel, and the matching ``GRPOConfig`` kwargs.

TRL (``GRPOTrainer``, checked against trl 1.16) calls every reward function as
``f(prompts=..., completions=..., completion_ids=..., **dataset_columns, trainer_state=...,
log_extra=..., log_metric=...)`` and expects one ``float`` or ``None`` per completion; ``None``
becomes NaN.  With ``multi_objective_aggregation="normalize_then_sum"`` (TRL's built-in GDPO)
each reward function is standardised within the group with NaN-aware mean/std, multiplied by
its ``reward_weights`` entry and summed with ``nansum``; rows where every function returned
``None`` are unscorable and get advantage 0.

Mapping (``mode="channels"``, the default):

* one callable per active channel (name ``gymkit_<channel>``) returning the card's raw channel
  value for a valid answer and ``None`` for an invalid one;
* one ``gymkit_valid`` callable: 1.0 valid, 0.0 invalid;
* an internal scoring error returns ``None`` from every callable, ``valid`` included (no
  signal; the answer is not blamed);
* :func:`grpo_config_kwargs` gives ``reward_weights`` = the environment's priorities (+
  :data:`VALID_WEIGHT` for ``valid``) and ``multi_objective_aggregation="normalize_then_sum"``.

Why invalid answers stay ≤ 0 and each group zero-sum under TRL's aggregation: a channel that is
NaN on invalid rows is standardised over the valid rows only, so its z-scores sum to 0 over
the group and are absent (nansum) on invalid rows; the ``valid`` column is standardised over
all rows, sums to 0, and is negative on every invalid row while at least one answer is valid
(0 when none or all are).  So an invalid row's total is ``VALID_WEIGHT · z_valid ≤ 0`` and the
group's totals sum to 0; TRL's final batch centring then subtracts a mean of 0.  (The test
runs TRL's own aggregation code.)  TRL uses sample std + 1e-4, gymkit population std, so the
values are a rescaled cousin of gymkit's GDPO, not identical.

``mode="advantage"``: one callable returning gymkit's exact GDPO advantage (validity
projection, optional floor) per answer.  It needs whole groups in each call (``num_generations``
rows per group key); otherwise it raises.  Use with the kwargs of
``grpo_config_kwargs(env_id, mode="advantage")`` (one function, weight 1, ``scale_rewards="none"``
so TRL's group centring leaves the already zero-sum advantages unchanged).

All callables are picklable (they hold only names) and share the process's score memo, so a
batch is scored once however many channels read it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .common import get_env, score_rows

__all__ = ["VALID_WEIGHT", "AdvantageReward", "ChannelReward", "grpo_config_kwargs", "reward_funcs"]

#: ``reward_weights`` entry of the ``valid`` callable.
VALID_WEIGHT = 1.0


class ChannelReward:
    """A TRL reward function for one channel (or ``'valid'``) of one environment (module doc)."""

    def __init__(self, env_id: str, channel: str) -> None:
        self.env_id = env_id
        self.channel = channel
        self.__name__ = f"gymkit_{channel}"

    def __repr__(self) -> str:
        return f"ChannelReward({self.env_id!r}, {self.channel!r})"

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any],
                 **kwargs: Any) -> list[float | None]:
        """One value per completion: the channel value, None for invalid / internal rows."""
        try:
            env = get_env(self.env_id)
            results = score_rows(env, prompts, completions, kwargs.get("brief_id"))
        except Exception:  # never raise from a reward function: no signal for this batch
            return [None] * len(completions)
        out: list[float | None] = []
        for r in results:
            if getattr(r, "internal", False):
                out.append(None)
            elif self.channel == "valid":
                out.append(1.0 if r.valid else 0.0)
            else:
                out.append(float(r.channels[self.channel]) if r.valid else None)
        return out


class AdvantageReward:
    """gymkit's exact GDPO advantages as one TRL reward function (whole groups only)."""

    def __init__(self, env_id: str, num_generations: int) -> None:
        if isinstance(num_generations, bool) or not isinstance(num_generations, int) \
                or num_generations < 1:
            raise ValueError(f"num_generations must be a positive int, got {num_generations!r}")
        self.env_id = env_id
        self.num_generations = num_generations
        self.__name__ = "gymkit_gdpo_advantage"

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any],
                 **kwargs: Any) -> list[float | None]:
        """Per completion: its GDPO advantage within its group; raises on partial groups."""
        from .common import group_keys

        ids = kwargs.get("brief_id")
        keys = group_keys(prompts, ids)
        rows: dict[str, list[int]] = {}
        for i, k in enumerate(keys):
            rows.setdefault(k, []).append(i)
        bad = {k: len(v) for k, v in rows.items() if len(v) != self.num_generations}
        if bad:
            raise ValueError(
                f"advantage mode needs whole groups of {self.num_generations} answers per prompt in "
                f"each call; got group sizes {sorted(bad.values())}: use mode='channels' when "
                "groups are split across processes")
        env = get_env(self.env_id)
        results = score_rows(env, prompts, completions, ids)
        out: list[float | None] = [None] * len(completions)
        for idx in rows.values():
            ok = [i for i in idx if not getattr(results[i], "internal", False)]
            if not ok:
                continue
            adv, _ = env.group_advantages([results[i] for i in ok])
            for i, a in zip(ok, adv, strict=True):
                out[i] = float(a)
        return out


def reward_funcs(env_id: str = "us46-default", mode: str = "channels",
                 num_generations: int | None = None) -> list[Any]:
    """TRL reward functions for ``env_id``: per-channel + ``valid`` (default) or one GDPO advantage."""
    if mode == "channels":
        env = get_env(env_id)
        return [*(ChannelReward(env_id, c) for c in env.channels), ChannelReward(env_id, "valid")]
    if mode == "advantage":
        if num_generations is None:
            raise ValueError("mode='advantage' needs num_generations (the GRPO group size)")
        return [AdvantageReward(env_id, num_generations)]
    raise ValueError(f"mode must be 'channels' or 'advantage', got {mode!r}")


def grpo_config_kwargs(env_id: str = "us46-default", mode: str = "channels") -> dict[str, Any]:
    """Keyword arguments for ``trl.GRPOConfig`` matching :func:`reward_funcs` of the same mode."""
    if mode == "channels":
        env = get_env(env_id)
        weights = [float(x) for x in np.asarray(env.priorities)] + [VALID_WEIGHT]
        return {"reward_weights": weights, "multi_objective_aggregation": "normalize_then_sum"}
    if mode == "advantage":
        return {"reward_weights": [1.0], "multi_objective_aggregation": "sum_then_normalize",
                "scale_rewards": "none"}
    raise ValueError(f"mode must be 'channels' or 'advantage', got {mode!r}")
