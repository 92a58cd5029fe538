"""verl adapter: ``compute_score`` for verl's custom reward function and its batch variant.

verl's reward managers call a custom reward function (``custom_reward_function.path`` /
``.name`` in the trainer config) as ``compute_score(data_source, solution_str, ground_truth,
extra_info)`` (naive manager) or, with ``reward_manager=batch``, as ``compute_score(
data_sources=..., solution_strs=..., ground_truths=..., extra_infos=...)``.  A dict result must
hold ``'score'``; its other keys are collected per sample into ``reward_extra_info`` and must be
the same for every sample.

Our keys (every sample, all floats): ``score`` (the card's scalar reward), ``valid`` (1/0),
``internal_error`` (1 when scoring raised, score 0), and one per active channel (the raw value;
invalid answers carry the card's penalties/zeros).  ``ground_truth`` is the ``brief_id`` (the
dataset of ``gymkit briefs --format verl-parquet`` puts it there and in ``extra_info``); it is
used only to recover the brief text.  The single-sample form scores a group of one (R2 = 0);
the batch form scores each brief's answers as one group.

``data_source`` names the environment: ``"gymkit/<env_id>"`` (``"gymkit"`` alone = us46-default).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .common import get_env, score_rows

__all__ = ["DATA_SOURCE", "compute_score", "compute_score_batch", "env_id_of"]

#: ``data_source`` of rows for the default environment.
DATA_SOURCE = "gymkit/us46-default"


def env_id_of(data_source: str | None) -> str:
    """Environment id named by a ``data_source`` ("gymkit/<env_id>"; anything else: default)."""
    if isinstance(data_source, str) and data_source.startswith("gymkit/") and len(data_source) > 7:
        return data_source[7:]
    return "us46-default"


def _brief_id(ground_truth: Any, extra_info: Any) -> str | None:
    if isinstance(extra_info, dict) and isinstance(extra_info.get("brief_id"), str):
        return extra_info["brief_id"]
    return ground_truth if isinstance(ground_truth, str) and ground_truth else None


def _result_dict(res: Any, channels: Sequence[str]) -> dict[str, float]:
    if getattr(res, "internal", False):
        return {"score": 0.0, "valid": 0.0, "internal_error": 1.0, **{c: 0.0 for c in channels}}
    return {"score": float(res.reward), "valid": float(res.valid), "internal_error": 0.0,
            **{c: float(res.channels[c]) for c in channels}}


def compute_score_batch(data_sources: Sequence[str], solution_strs: Sequence[str],
                        ground_truths: Sequence[Any], extra_infos: Sequence[Any] | None = None,
                        **kwargs: Any) -> list[dict[str, float]]:
    """Batch form (verl ``reward_manager=batch``): one dict per sample, groups by brief."""
    n = len(solution_strs)
    infos = list(extra_infos) if extra_infos is not None else [None] * n
    ids = [_brief_id(g, e) for g, e in zip(ground_truths, infos, strict=True)]
    out: list[dict[str, float] | None] = [None] * n
    by_env: dict[str, list[int]] = {}
    for i, ds in enumerate(data_sources):
        by_env.setdefault(env_id_of(ds), []).append(i)
    for env_id, idx in by_env.items():
        try:
            env = get_env(env_id)
            channels = env.channels
            res = score_rows(env, [ids[i] or "" for i in idx], [solution_strs[i] for i in idx],
                             [ids[i] or "" for i in idx])
        except Exception:  # never raise: the environment itself failed to build
            from gymkit.verifiers.channels import CHANNEL_NAMES

            channels = tuple(c for c in CHANNEL_NAMES if c != "jepa_stress")
            res = [_internal() for _ in idx]
        for i, r in zip(idx, res, strict=True):
            out[i] = _result_dict(r, channels)
    return [o for o in out if o is not None]


def _internal() -> Any:
    from .common import InternalResult

    return InternalResult("environment could not be built")


def compute_score(data_source: str, solution_str: str, ground_truth: Any = None,
                  extra_info: Any = None, **kwargs: Any) -> dict[str, float]:
    """Single-sample form (verl naive manager): the dict of one answer scored as a group of one."""
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info])[0]
