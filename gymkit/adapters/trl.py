"""TRL adapter: GRPO reward functions (gymkit's GDPO advantage, or one per channel) and GRPOConfig kwargs.

TRL (``GRPOTrainer``, checked against trl 1.16) calls every reward function as
``f(prompts=..., completions=..., completion_ids=..., **dataset_columns, trainer_state=...,
log_extra=..., log_metric=...)`` and expects one ``float`` or ``None`` per completion; ``None``
becomes NaN.  With ``multi_objective_aggregation="normalize_then_sum"`` (TRL's built-in GDPO)
each reward function is standardised within the group with NaN-aware mean/std, multiplied by
its ``reward_weights`` entry and summed with ``nansum``; rows where every function returned
``None`` are unscorable and get advantage 0.

Recommended: ``mode="advantage"`` (the default) — one callable returning gymkit's exact GDPO
advantage (validity projection, optional floor) per answer, with the kwargs of
``grpo_config_kwargs(env_id, mode="advantage")`` (one function, weight 1,
``scale_rewards="none"``, so TRL's group centring leaves the already zero-sum advantages
unchanged).  It needs whole groups in each call (``num_generations`` rows per group key: one
process, or a setup where each process generates whole groups); otherwise it raises.

Logged metrics (both modes, through TRL's ``log_metric``): ``gymkit/reward`` (mean
``card.reward`` of the batch, invalid answers included, passed through), ``gymkit/valid_share``
and ``gymkit/reward_valid`` (mean reward of the valid answers).  TRL's own ``reward`` curve is
the sum of the functions' outputs: in advantage mode that is an advantage (≈ 0 by
construction), in channel mode raw channel values with invalid rows absent — watch
``gymkit/reward`` and ``gymkit/valid_share`` instead.

Mapping (``mode="channels"``, TRL's built-in GDPO, for groups split across processes):

* one callable per active channel (name ``gymkit_<channel>``) returning the card's raw channel
  value for a valid answer and ``None`` for an invalid one, plus ``gymkit_brief_compliance``
  (R13; ``None`` on rows without a brief, so the advantage mode and channel mode count the same
  channels);
* one ``gymkit_valid`` callable: 1.0 valid, 0.0 invalid, with the dominating weight of
  :func:`valid_weight` (a gate channel);
* an internal scoring error returns ``None`` from every callable, ``valid`` included (no
  signal; the answer is not blamed);
* :func:`grpo_config_kwargs` gives ``reward_weights`` = the priorities of those channels (+
  :func:`valid_weight` for ``valid``) and ``multi_objective_aggregation="normalize_then_sum"``.

Why invalid answers stay below every valid one, ≤ 0, and each group zero-sum under TRL's
aggregation: a channel that is NaN on invalid rows is standardised over the valid rows only, so
its z-scores sum to 0 over the group and are absent (nansum) on invalid rows; the ``valid``
column is standardised over all rows, sums to 0, and is negative on every invalid row while at
least one answer is valid (0 when none or all are).  So an invalid row's total is
``VW · z_valid ≤ 0``, the group's totals sum to 0, TRL's final batch centring subtracts a mean
of 0, and the dominating weight (:func:`valid_weight`) keeps every valid row above every
invalid row of its group, whatever its channels.  (The test
runs TRL's own aggregation code.)  TRL uses sample std + 1e-4, gymkit population std, so the
values are a rescaled cousin of gymkit's GDPO, not identical.

All callables are picklable (they hold only names) and share the process's score memo, so a
batch is scored once however many channels read it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .common import UnknownBrief, get_env, score_rows

__all__ = ["MAX_GENERATIONS", "AdvantageReward", "ChannelReward", "grpo_config_kwargs", "log_metrics",
           "reward_funcs", "valid_weight"]

#: Largest group size that :func:`valid_weight`'s default guarantees order for.
MAX_GENERATIONS = 64


def valid_weight(priorities: Sequence[float], num_generations: int = MAX_GENERATIONS) -> float:
    """``reward_weights`` entry of the ``valid`` callable in channel mode: ``max(Σ|w|, 1) · √G``.

    Under TRL's ``normalize_then_sum`` a valid row's total exceeds an invalid row's by
    ``VW / (s + 1e-4)`` from the ``valid`` column (``s`` its sample std, ``<= 0.5·√(G/(G−1))
    <= 0.71``), and the channels move a valid row by at most ``Σ|w| · (n−1)/√n < Σ|w| · √G``
    (``|z| <= (n−1)/√n`` for n values with the sample std).  So ``VW = Σ|w|·√G`` puts every
    invalid answer strictly below every valid one in every group of at most G answers (at least
    weight √G, so validity counts even when every priority is 0).
    """
    total = float(np.sum(np.abs(np.asarray(priorities, dtype=np.float64))))
    return max(total, 1.0) * float(np.sqrt(num_generations))


def log_metrics(results: Sequence[Any], log_metric: Any) -> None:
    """Report gymkit/reward, gymkit/valid_share, gymkit/reward_valid through TRL's ``log_metric``."""
    if not callable(log_metric):
        return
    cards = [r for r in results if not getattr(r, "internal", False)]
    if not cards:
        return
    log_metric("gymkit/reward", float(np.mean([c.reward for c in cards])))
    log_metric("gymkit/valid_share", float(np.mean([1.0 if c.valid else 0.0 for c in cards])))
    valid = [c.reward for c in cards if c.valid]
    if valid:
        log_metric("gymkit/reward_valid", float(np.mean(valid)))
    log_metric("gymkit/internal_share", 1.0 - len(cards) / len(results))


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
            results = score_rows(env, prompts, completions, kwargs.get("brief_id"),
                                 kwargs.get("brief"))
        except UnknownBrief:  # a dataset that names an unknown brief: a configuration error
            raise
        except Exception:  # never raise from a reward function: no signal for this batch
            return [None] * len(completions)
        if self.channel == "valid":
            log_metrics(results, kwargs.get("log_metric"))
        out: list[float | None] = []
        for r in results:
            if getattr(r, "internal", False):
                out.append(None)
            elif self.channel == "valid":
                out.append(1.0 if r.valid else 0.0)
            elif not r.valid or self.channel not in r.channels:  # R13 only on briefed rows
                out.append(None)
            else:
                out.append(float(r.channels[self.channel]))
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
        results = score_rows(env, prompts, completions, ids, kwargs.get("brief"))
        log_metrics(results, kwargs.get("log_metric"))
        out: list[float | None] = [None] * len(completions)
        for idx in rows.values():
            ok = [i for i in idx if not getattr(results[i], "internal", False)]
            if not ok:
                continue
            adv, _ = env.group_advantages([results[i] for i in ok])
            for i, a in zip(ok, adv, strict=True):
                out[i] = float(a)
        return out


def _channel_names(env_id: str) -> tuple[str, ...]:
    """The channel functions of channel mode: the active channels and R13 (brief compliance:
    ``None`` on a row without a brief, so it adds nothing there)."""
    return get_env(env_id).briefed_channels


def reward_funcs(env_id: str = "us46-default", mode: str = "advantage",
                 num_generations: int | None = None) -> list[Any]:
    """TRL reward functions for ``env_id``: one GDPO advantage (default) or per-channel + ``valid``."""
    if mode == "advantage":
        if num_generations is None:
            raise ValueError("mode='advantage' needs num_generations (the GRPO group size, "
                             "GRPOConfig.num_generations)")
        return [AdvantageReward(env_id, num_generations)]
    if mode == "channels":
        return [*(ChannelReward(env_id, c) for c in _channel_names(env_id)),
                ChannelReward(env_id, "valid")]
    raise ValueError(f"mode must be 'advantage' or 'channels', got {mode!r}")


def grpo_config_kwargs(env_id: str = "us46-default", mode: str = "advantage",
                       num_generations: int | None = None) -> dict[str, Any]:
    """Keyword arguments for ``trl.GRPOConfig`` matching :func:`reward_funcs` of the same mode
    (channel mode: ``num_generations``, default :data:`MAX_GENERATIONS`, sizes the valid weight)."""
    if mode == "advantage":
        return {"reward_weights": [1.0], "multi_objective_aggregation": "sum_then_normalize",
                "scale_rewards": "none"}
    if mode == "channels":
        env = get_env(env_id)
        pri = [float(env.config.priorities[c]) for c in _channel_names(env_id)]
        weights = [*pri, valid_weight(pri, num_generations or MAX_GENERATIONS)]
        return {"reward_weights": weights, "multi_objective_aggregation": "normalize_then_sum"}
    raise ValueError(f"mode must be 'advantage' or 'channels', got {mode!r}")
