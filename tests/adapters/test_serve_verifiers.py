"""A trained gymkit policy through verifiers 0.4's own harness: ``gymkit train serve`` + ``vf-eval``.

A tiny research policy is trained here (a seeded single-turn warm start, then ``gymkit train
research``'s CI configuration), served by :class:`gymkit.train.serve.PolicyServer` on
127.0.0.1, and ``vf-eval gymkit-research`` runs against it in the throwaway verifiers-0.4 venv
(tests/conftest.py ``verifiers04_venv``): verifiers' plugin loader resolves the environment
package, its chat program (the ``null`` harness, a ``uv`` script in the ``subprocess``
runtime) sends the policy's OpenAI ``tool_calls`` to the research tools over MCP, and the
task's ``nemo_gym`` reward comes from ``/verify``.  Each trace is then replayed in a Python
episode: the same tool calls give the same tool messages byte for byte, and the trace's reward
and metrics are the Python episode's.  The server's own contract (OpenAI shapes through the
``openai`` client, plain and streamed; the same request, the same answer) is checked without
the venv.  Skipped, saying why, only when verifiers 0.4.0 cannot be installed.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUDGET = 2


def _train_helpers():
    spec = importlib.util.spec_from_file_location(
        "_research_rl_test_helpers", REPO / "tests" / "train" / "test_research_rl.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def policy_run(tmp_path_factory, tiny_warm_start) -> Path:
    """A tiny trained research policy: RUN/research/policy."""
    from gymkit.train.research_rl import ci_config, run_research

    base = tmp_path_factory.mktemp("serve-policy")
    tiny_warm_start(base / "warm", _train_helpers().FORMULAS, 32, 100)  # test_research_rl's warm start
    run_research(ci_config(0), base / "run", base / "warm", log=lambda line: None)
    return base / "run"


@pytest.fixture(scope="module")
def renv():
    from gymkit.research import make_research

    return make_research("us46-research")


@pytest.fixture
def server(policy_run):
    from gymkit.train.serve import PolicyServer, start_server

    policy = PolicyServer(policy_run, temperature=1.0, seed=0)
    srv, url = start_server(policy)
    yield policy, url
    srv.shutdown()
    srv.server_close()


def test_server_speaks_openai_chat(server, renv) -> None:
    """Through the ``openai`` client: a tool call or a text turn per request, plain and streamed
    alike; the same request gets the same answer; a bad request is a one-line 400."""
    import openai

    _, url = server
    client = openai.OpenAI(base_url=url, api_key="not-a-key")
    from gymkit.briefs import generate_briefs, probe_briefs

    seen_tool = False
    for b in probe_briefs(generate_briefs())[:6]:
        ep = renv.episode(b.text, budget=BUDGET)
        msgs = ep.messages()
        while True:
            plain = client.chat.completions.create(model="m", messages=msgs)
            again = client.chat.completions.create(model="m", messages=msgs)
            assert plain.choices[0].message == again.choices[0].message
            with client.chat.completions.stream(model="m", messages=msgs) as s:
                streamed = s.get_final_completion()
            m, sm = plain.choices[0].message, streamed.choices[0].message
            assert (m.content or "") == (sm.content or "")
            assert [(c.id, c.function.name, c.function.arguments) for c in m.tool_calls or []] == \
                [(c.id, c.function.name, c.function.arguments) for c in sm.tool_calls or []]
            if not m.tool_calls:
                assert plain.choices[0].finish_reason == "stop"
                if not ep.done:
                    ep.finish(m.content or "", "stop")
                break
            seen_tool = True
            assert plain.choices[0].finish_reason == "tool_calls" and len(m.tool_calls) == 1
            call = m.tool_calls[0]
            res = ep.step({"name": call.function.name,
                           "arguments": json.loads(call.function.arguments)})
            msgs += [m.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": call.id, "content": res.observation}]
        assert ep.done
    assert seen_tool
    with pytest.raises(openai.BadRequestError, match="no user message"):
        client.chat.completions.create(model="m", messages=[{"role": "system", "content": "x"}])


@pytest.fixture(scope="module")
def venv(verifiers04_venv) -> Path:
    """The verifiers-0.4 venv with gymkit and gymkit-research importable from THIS checkout
    (re-pointed when another checkout's editable install replaced them)."""
    path = verifiers04_venv
    py = path / "bin" / "python"
    code = "import gymkit, gymkit_research; print(gymkit.__file__); print(gymkit_research.__file__)"
    with open(path.parent / f"{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        p = subprocess.run([str(py), "-c", code], capture_output=True, text=True, cwd=path,
                           env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        if p.returncode or not all(ln.startswith(str(REPO)) for ln in p.stdout.split()):
            q = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "-e", str(REPO),
                                "-e", str(REPO / "environments" / "gymkit_research")],
                               capture_output=True, text=True, timeout=900)
            assert q.returncode == 0, q.stderr[-2000:]
    return path


@pytest.mark.slow
def test_vf_eval_runs_the_trained_policy(venv, server, renv, tmp_path) -> None:
    """vf-eval gymkit-research against the served policy: rewards equal the Python episode's."""
    from gymkit.adapters.common import brief_text_of
    from gymkit.adapters.research_nemo_gym import END_REASON

    policy, url = server
    envvars = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}",
               "VIRTUAL_ENV": str(venv), "OPENAI_API_KEY": "not-a-key"}
    envvars.pop("PYTHONPATH", None)
    cmd = ["vf-eval", "gymkit-research", "--env.taskset.split", "probe", "--env.taskset.budget",
           str(BUDGET), "-n", "4", "-r", "1", "-m", "gymkit-research", "--client.base-url", url,
           "--client.api-key-var", "OPENAI_API_KEY", "--env.agent.harness.id", "null",
           "--env.agent.runtime.type", "subprocess", "--no-push", "--no-rich", "-o", "vf-out"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, cwd=tmp_path,
                       env=envvars)
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    runs = list((tmp_path / "vf-out").glob("*/traces.jsonl"))
    assert len(runs) == 1, runs
    episodes = [json.loads(line) for line in runs[0].read_text().splitlines()]
    assert all(e["ok"] and not e["errors"] for e in episodes)
    traces = [t for e in episodes for t in e["traces"]]
    assert len(traces) == 4 and policy.served >= 4
    n_tool_calls = 0
    for t in traces:
        ep = renv.episode(brief_text_of(t["task"]["data"]["id"]), budget=BUDGET)
        nodes = [n["message"] for n in t["nodes"]]
        last_text = ""
        for i, (n, m) in enumerate(zip(t["nodes"], nodes, strict=True)):
            if not (n.get("sampled") and m["role"] == "assistant"):
                continue
            calls = m.get("tool_calls") or []
            last_text = m.get("content") or ""
            for j, c in enumerate(calls):
                n_tool_calls += 1
                args = c["arguments"] if "arguments" in c else c["function"]["arguments"]
                name = c["name"] if "name" in c else c["function"]["name"]
                res = ep.step({"name": name, "arguments": json.loads(args)})
                tool = nodes[i + 1 + j]
                assert tool["role"] == "tool" and tool["content"] == res.observation
        if not ep.done:
            ep.finish(last_text, END_REASON)
        assert t["rewards"]["nemo_gym"]["score"] == ep.result.reward
        assert t["metrics"]["n_calls"] == float(ep.calls)
        assert t["metrics"]["submitted"] == float(ep.result.submitted)
        assert t["metrics"]["valid"] == float(ep.result.valid)
    assert n_tool_calls > 0  # the policy used the tools through verifiers' harness
