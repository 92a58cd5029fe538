"""Trainer compatibility: find the answer in what OpenRLHF, slime and NeMo-Gym send.

OpenRLHF posts the *chat-templated* text (prompt + response) as ``query``.  The answer is
taken from its end, by :func:`response_of_query`:

1. the text after the **last assistant-turn marker** of a known chat template, searched
   from the end: ChatML ``<|im_start|>assistant`` (Qwen, Yi, …), Llama 3
   ``<|start_header_id|>assistant<|end_header_id|>``, harmony ``<|start|>assistant``,
   DeepSeek ``<｜Assistant｜>``, Phi/Zephyr/GLM ``<|assistant|>``, Gemma
   ``<start_of_turn>model``, Mistral/Llama 2 ``[/INST]``;
2. else, when ``prompts[i]`` is a prefix of the query, the text after it;
3. else the text after the last plain ``Assistant:`` line;
4. else the last ``<alpha>…</alpha>`` together with the text since the previous tag (so an
   example tag in the prompt and the answer's reasoning block stay apart), searched only after
   gymkit's own prompt when the query holds it (its system text names ``<alpha>formula</alpha>``;
   the user turn after it is the no-brief request or ``Brief: `` and a generated brief, which
   ends with its risk sentence), so a response with no tag is a missing tag, not the prompt's
   example.  A prompt of your own with an example tag and no chat template is told apart from
   the response only by ``prompts`` (rule 2): send them.

That text is scored exactly like a completion passed to ``env.score`` (the tag contract is
unchanged: two tags in the response are still ``multiple_tags``; trailing end-of-turn
tokens after ``</alpha>`` are ignored by the extractor).  slime sends the bare response;
NeMo-Gym sends an OpenAI Responses object whose last assistant message's ``output_text``
parts are joined.

OpenRLHF trains on ``rewards`` (``card.reward``, passed through) and filters on ``scores``:
with ``--dynamic_filtering`` it drops a prompt whose mean score over its samples is outside the
open interval ``--dynamic_filtering_reward_range`` (default ``0 1``).  Our score is
:func:`openrlhf_filter_score`: 1.0 for a *solved* answer (valid and reward > 0, the rule of
``gymkit briefs --filter-answers``), else 0.0, so a group that is all solved or all unsolved is
filtered and a mixed group is kept.

NeMo-Gym resources-server contract (nemo_gym/base_resources_server.py,
``SimpleResourcesServer``): ``POST /seed_session`` (``BaseSeedSessionRequest`` → ``{}``; the
standard agent calls it before every rollout; scoring is stateless, so it only acknowledges),
``POST /verify`` (in app.py: ``BaseMultiRewardVerifyResponse`` — the request echoed with
``reward`` and ``reward_components``) and ``POST /aggregate_metrics``
(``AggregateMetricsRequest`` → ``AggregateMetrics``), routed by :data:`nemo_router`.  Its
statistics follow NeMo-Gym's RewardProfiler: per task (``_ng_task_index``) and over all
rollouts, ``mean/max/min/median/std`` (sample std, 0 for one rollout) of every top-level
numeric field (booleans as 0/1) and of each ``reward_components`` entry as a top-level name;
``key_metrics`` are the ``mean/*`` entries (so ``mean/reward`` and ``mean/valid``, the valid
share).
"""

from __future__ import annotations

import math
import statistics
import sys
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["ASSISTANT_MARKERS", "NemoAggregateMetrics", "NemoAggregateMetricsRequest",
           "aggregate_metrics", "nemo_response_text", "nemo_router", "openrlhf_filter_score",
           "response_of_query"]

#: NeMo-Gym's task / rollout index keys (nemo_gym/global_config.py).
TASK_INDEX_KEY = "_ng_task_index"
ROLLOUT_INDEX_KEY = "_ng_rollout_index"
_STATS = ("mean", "max", "min", "median", "std")
MAX_VERIFY_RESPONSES = 65536

#: Assistant-turn markers of common chat templates (special-token markers only).
ASSISTANT_MARKERS: tuple[str, ...] = (
    "<|im_start|>assistant",
    "<|start_header_id|>assistant<|end_header_id|>",
    "<|start|>assistant",
    "<｜Assistant｜>",
    "<|assistant|>",
    "<start_of_turn>model",
    "[/INST]",
)
_PLAIN_MARKERS = ("\nAssistant:", "\nassistant:", "\nASSISTANT:")
_OPEN, _CLOSE = "<alpha>", "</alpha>"


def response_of_query(query: str, prompt: str | None = None) -> tuple[str, str]:
    """Return (answer text, how it was found) for one chat-templated query (module doc)."""
    best = -1
    for m in ASSISTANT_MARKERS:
        i = query.rfind(m)
        if i >= 0:
            best = max(best, i + len(m))
    if best >= 0:
        return query[best:], "marker"
    if prompt and query.startswith(prompt):
        return query[len(prompt):], "prompt_prefix"
    best = -1
    for m in _PLAIN_MARKERS:
        i = query.rfind(m)
        if i >= 0:
            best = max(best, i + len(m))
    if best >= 0:
        return query[best:], "plain_marker"
    skip = _after_gymkit_prompt(query)
    if skip:
        query = query[skip:]
    start = query.rfind(_OPEN)
    if start < 0:
        return query, "whole"
    prev = query.rfind(_CLOSE, 0, start)
    return query[prev + len(_CLOSE) if prev >= 0 else 0:], "last_tag"


def _after_gymkit_prompt(query: str) -> int:
    """Index just past gymkit's own prompt in ``query`` (system text, then the user turn), else 0."""
    from gymkit.briefs import RISK_SENTENCE, RISKS
    from gymkit.prompt import ANSWER_RULES_TAIL, BRIEF_PREFIX, NO_BRIEF

    end = query.rfind(ANSWER_RULES_TAIL)
    if end < 0:
        return 0
    end += len(ANSWER_RULES_TAIL)
    rest = query[end:]
    lead = len(rest) - len(rest.lstrip())
    if rest[lead:].startswith(NO_BRIEF):
        return end + lead + len(NO_BRIEF)
    if rest[lead:].startswith(BRIEF_PREFIX):  # a generated brief ends with its risk sentence
        ends = [(i, len(x)) for x in (RISK_SENTENCE.format(o.text) for o in RISKS)
                if (i := rest.find(x, lead)) >= 0]
        if ends:
            i, n = min(ends)
            return end + i + n
    return end


def nemo_response_text(output: list[dict[str, Any]]) -> str:
    """The text of the last assistant message of a Responses-API ``output`` list ('' if none)."""
    for item in reversed(output):
        if item.get("type", "message") != "message" or item.get("role", "assistant") != "assistant":
            continue
        content = item.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(str(p.get("text", "")) for p in content
                           if isinstance(p, dict) and p.get("type") in ("output_text", "text"))
    return ""


def openrlhf_filter_score(valid: bool, reward: float) -> float:
    """OpenRLHF's [0, 1] filtering score of one answer: 1.0 solved (valid, reward > 0), else 0.0."""
    return 1.0 if valid and reward > 0.0 else 0.0


class NemoSeedSessionRequest(BaseModel):
    """``BaseSeedSessionRequest``: no fields; whatever the agent sends is accepted and ignored."""

    model_config = ConfigDict(extra="allow")


class NemoSeedSessionResponse(BaseModel):
    """``BaseSeedSessionResponse``: empty (scoring keeps no per-rollout state)."""


class NemoAggregateMetricsRequest(BaseModel):
    """``AggregateMetricsRequest``: the stripped verify responses of a run."""

    verify_responses: list[dict[str, Any]] = Field(max_length=MAX_VERIFY_RESPONSES)

    @field_validator("verify_responses")
    @classmethod
    def _task_indices(cls, v: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for i, vr in enumerate(v):
            idx = vr.get(TASK_INDEX_KEY, 0)
            if isinstance(idx, bool) or not isinstance(idx, int):
                raise ValueError(f"[{i}].{TASK_INDEX_KEY} must be an integer, got {idx!r}")
        return v


class NemoAggregateMetrics(BaseModel):
    """``AggregateMetrics``: per-task, overall and headline metrics (module doc)."""

    group_level_metrics: list[dict[str, Any]] = Field(default_factory=list)
    agent_metrics: dict[str, Any] = Field(default_factory=dict)
    key_metrics: dict[str, Any] = Field(default_factory=dict)


def _numeric_fields(vr: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    items = list(vr.items())
    comps = vr.get("reward_components")
    if isinstance(comps, dict):
        items += [(k, v) for k, v in comps.items() if k not in vr]
    for k, v in items:
        if k in (TASK_INDEX_KEY, ROLLOUT_INDEX_KEY) or not isinstance(k, str):
            continue
        if isinstance(v, bool):
            out[k] = float(v)
        elif isinstance(v, (int, float)):
            try:
                f = float(v)
            except OverflowError:  # an integer beyond float range: not a metric
                continue
            if math.isfinite(f):
                out[k] = f
    return out


def _scaled(stat: str, vals: list[float]) -> float:
    """``stat`` of finite ``vals``, on the power-of-two scale GDPO uses for extreme values
    (:func:`gymkit.advantages.scale_exponents`: exact, and the values as given otherwise), so a
    client's reward of 1e308 gets figures, not an overflow; beyond float range: ±float max."""
    import numpy as np

    from gymkit.advantages import scale_exponents

    k = scale_exponents(np.asarray(vals, dtype=np.float64), axis=None)
    k = 0 if k is None else int(k)
    x = [math.ldexp(v, -k) for v in vals] if k else vals
    if stat == "mean":
        r = math.fsum(x) / len(x)
    elif stat == "median":
        r = float(statistics.median(x))
    else:
        r = float(statistics.stdev(x)) if len(x) > 1 else 0.0
    try:
        r = math.ldexp(r, k)
    except OverflowError:
        r = math.inf
    return max(-sys.float_info.max, min(sys.float_info.max, r))


def _describe(rows: list[dict[str, float]]) -> dict[str, float]:
    keys = sorted({k for r in rows for k in r})
    out: dict[str, float] = {}
    for stat in _STATS:
        for k in keys:
            vals = [r[k] for r in rows if k in r]
            if stat == "max":
                out[f"max/{k}"] = max(vals)
            elif stat == "min":
                out[f"min/{k}"] = min(vals)
            else:
                out[f"{stat}/{k}"] = _scaled(stat, vals)
    return out


def aggregate_metrics(verify_responses: list[dict[str, Any]]) -> dict[str, Any]:
    """NeMo-Gym ``/aggregate_metrics`` body for these verify responses (module doc); deterministic."""
    if not verify_responses:
        return {"group_level_metrics": [], "agent_metrics": {}, "key_metrics": {}}
    tasks: dict[int, list[dict[str, float]]] = {}
    for vr in verify_responses:
        tasks.setdefault(int(vr.get(TASK_INDEX_KEY, 0)), []).append(_numeric_fields(vr))
    groups = [{**_describe(rows), TASK_INDEX_KEY: idx, "num_rollouts": len(rows)}
              for idx, rows in sorted(tasks.items())]
    agent = _describe([r for rows in tasks.values() for r in rows])
    return {"group_level_metrics": groups, "agent_metrics": agent,
            "key_metrics": {k: v for k, v in agent.items() if k.startswith("mean/")}}


#: The NeMo-Gym routes that need no scoring job (``/verify`` is in app.py, next to the pool).
nemo_router = APIRouter(tags=["compatibility"])


@nemo_router.post("/seed_session", response_model=NemoSeedSessionResponse)
async def nemo_seed_session(req: NemoSeedSessionRequest) -> dict[str, Any]:
    """NeMo-Gym resources-server seed_session: acknowledged (stateless scoring)."""
    return {}


@nemo_router.post("/aggregate_metrics", response_model=NemoAggregateMetrics)
async def nemo_aggregate_metrics(req: NemoAggregateMetricsRequest) -> dict[str, Any]:
    """NeMo-Gym aggregate_metrics: reward, valid share and every channel, per task and overall."""
    return aggregate_metrics(req.verify_responses)
