"""verifiers >= 0.3 (the verifiers.v1 Taskset/Task API of 0.4): our taskset under verifiers' own scoring.

Runs where verifiers 0.4 is installed (the ``test`` extra installs 0.2.x, so it skips there).
The rollout itself (verifiers' uv-managed chat program behind its interception proxy) is not run
here; the trace is built as verifiers' rollout builds it (``Trace(task=TraceTask(...),
agent=AgentInfo(...))`` plus the sampled assistant node the interception records) and scored by
the library's own ``Task.score``; every reward is compared with ``env.score``.
"""

from __future__ import annotations

import asyncio

import pytest

from gymkit.adapters.common import brief_text_of

from .conftest import GROUP, VALID, real_verifiers

real_verifiers()
from gymkit.adapters.verifiers_env import load_environment, verifiers_api  # noqa: E402

if verifiers_api() != "v1":
    pytest.skip("installed verifiers is 0.2.x (legacy API): see test_verifiers.py",
                allow_module_level=True)

import verifiers.v1 as vf  # noqa: E402
from verifiers.v1.graph import MessageNode  # noqa: E402
from verifiers.v1.trace import AgentInfo, Trace, TraceTask  # noqa: E402


def _trace(task, text):
    trace = Trace(task=TraceTask(type=type(task).__name__, data=task.data, key=task.key,
                                 hash=task.hash),
                  agent=AgentInfo(config=vf.AgentConfig()))
    trace.nodes.append(MessageNode(message=vf.AssistantMessage(content=text), sampled=True))
    return trace


def test_taskset_tasks_and_scores(env) -> None:
    ts = load_environment("us46-default", split="probe")
    assert isinstance(ts, vf.Taskset)
    tasks = list(ts)
    assert len(tasks) == 50 and len({t.key for t in tasks}) == 50
    task = tasks[0]
    assert task.data.system_prompt and task.data.prompt and task.data.id
    for text, ok in zip(GROUP, VALID, strict=True):
        trace = _trace(task, text)
        asyncio.run(task.score(trace))
        card = env.score_group([text], brief=brief_text_of(task.data.id))[0]
        assert trace.rewards["gymkit"].score == card.reward and trace.reward == card.reward
        assert trace.metrics["gymkit_valid"] == float(ok) == float(card.valid)
        assert [trace.metrics[f"gymkit_{c}"] for c in env.channels] == \
            [card.channels[c] for c in env.channels]
