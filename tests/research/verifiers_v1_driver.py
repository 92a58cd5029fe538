"""Run scripted research rollouts through verifiers 0.4's own code (not a test module: it runs
in the throwaway verifiers-0.4 venv, started by test_verifiers_v1.py).

stdin: ``{"url", "split", "budget", "plans": [[[tool, args], ...], final_text or null], ...]}``;
``"url": null`` runs the managed form instead: the loaded Env (``GymkitResearchEnv``) is built
from a ``SingleAgentEnvConfig`` and started, so it serves gymkit's resources server itself, and
stopped after the rollouts.  The taskset and Env classes come from verifiers' plugin loader
(``gymkit-research``); per plan,
``NeMoGymTask.setup`` seeds the session on the server at ``url``, verifiers'
``NeMoGymToolset.list_tools`` / ``call_tool`` run the tools, the trace holds the scripted
assistant turns and the tool messages, and ``Task.score`` posts /verify through
``trace_to_nemo_response``.  stdout (last line): JSON with each rollout's tool texts, listed tools,
rewards, metrics and info, and the loaded classes' names.
"""

from __future__ import annotations

import asyncio
import json
import sys

import verifiers.v1 as vf
from verifiers.v1.mcp import SharedToolsetConfig
from verifiers.v1.mcp.server import _call_state
from verifiers.v1.tasksets.nemo_gym import NeMoGymTaskConfig
from verifiers.v1.tasksets.nemo_gym.toolset import NeMoGymState, NeMoGymToolset
from verifiers.v1.trace import AgentInfo, Trace, TraceTask
from verifiers.v1.utils.loaders import environment_class, taskset_class, taskset_config_type

TASKSET_ID = "gymkit-research"


def _node(parent, message, sampled):
    return vf.MessageNode(parent=parent, message=message, sampled=sampled)


async def rollout(task, calls, final_text):
    trace = Trace(task=TraceTask(type=type(task).__name__, data=task.data, key=task.key,
                                 hash=task.hash),
                  agent=AgentInfo(config=vf.AgentConfig()), state=NeMoGymState())
    await task.setup(trace, None)
    toolset = NeMoGymToolset(SharedToolsetConfig())
    token = _call_state.set(trace.state)
    try:
        listed = [t.name for t in await toolset.list_tools()]
        nodes = [_node(None, vf.SystemMessage(content=task.data.system_prompt), False),
                 _node(0, vf.UserMessage(content=task.data.prompt), False)]
        texts = []
        for i, (name, args) in enumerate(calls):
            call = vf.ToolCall(id=f"call_{i}", name=name, arguments=json.dumps(args))
            nodes.append(_node(len(nodes) - 1, vf.AssistantMessage(tool_calls=[call]), True))
            res = await toolset.call_tool(name, args)
            texts.append(res.content[0].text)
            nodes.append(_node(len(nodes) - 1,
                               vf.ToolMessage(tool_call_id=call.id, content=texts[-1]), False))
        if final_text is not None:
            nodes.append(_node(len(nodes) - 1, vf.AssistantMessage(content=final_text), True))
    finally:
        _call_state.reset(token)
    trace.nodes.extend(nodes)
    await task.score(trace)
    return {"texts": texts, "listed": listed, "reward": trace.reward,
            "rewards": {k: (None if v is None else v.score) for k, v in trace.rewards.items()},
            "metrics": dict(trace.metrics), "info": trace.info.get("nemo_gym", {})}


async def managed(cfg, env_cls, plans):
    """The Env serves the resources server itself between start() and stop()."""
    env = env_cls(vf.SingleAgentEnvConfig(taskset=cfg))
    await env.start()
    try:
        url = env.taskset.config.task.resources_url
        tasks = list(env.taskset)
        outs = [await rollout(tasks[0], calls, final) for calls, final in plans]
    finally:
        await env.stop()
    return tasks, outs, {"served_at": url, "after_stop": env.taskset.config.task.resources_url}


def main() -> None:
    req = json.load(sys.stdin)
    cls, env_cls = taskset_class(TASKSET_ID), environment_class(TASKSET_ID)
    cfg = taskset_config_type(TASKSET_ID)(id=TASKSET_ID, split=req["split"], budget=req["budget"],
                                          task=NeMoGymTaskConfig(resources_url=req["url"]))
    extra = {}
    if req["url"] is None:
        tasks, outs, extra = asyncio.run(managed(cfg, env_cls, req["plans"]))
    else:
        tasks = list(cls(cfg))
        outs = [asyncio.run(rollout(tasks[0], calls, final)) for calls, final in req["plans"]]
    print(json.dumps({"taskset": cls.__name__, "env": env_cls.__name__, "n_tasks": len(tasks),
                      "n_keys": len({t.key for t in tasks}), "brief_id": tasks[0].data.id,
                      "rollouts": outs, **extra}))


if __name__ == "__main__":
    main()
