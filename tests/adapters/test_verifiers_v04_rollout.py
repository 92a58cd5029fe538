"""verifiers 0.4 through its own CLI: ``vf-eval gymkit-alpha`` as docs/trainers.md types it.

verifiers 0.4 needs ``openai<3`` and the ``test`` extra pins the 0.2 line, so it runs in a
throwaway venv (``$GYMKIT_TEST_VENVS``, default ``~/.cache/gymkit/test-venvs``; built once, then
reused): ``verifiers==0.4.0``, ``uv`` and ``pytest`` from the package index, gymkit editable
from this checkout; test_verifiers_v1.py (``Task.score`` per answer) runs there too.  The doc's example block then runs verbatim in bash (its ``# knob`` lines point it at a
fake OpenAI-compatible server on 127.0.0.1): its ``pip install`` installs the environment
package ``environments/gymkit_alpha``, and ``vf-eval`` resolves the id through verifiers' own
plugin loader, runs each rollout through its interception server and its chat program (a
``uv``-managed script in the ``subprocess`` runtime), and scores with gymkit's task.  Every
trace's reward and metrics are compared with ``env.score``; the requests the model server got
carry gymkit's prompt.  Skipped, saying why, only when verifiers 0.4.0 cannot be installed
(no package index reachable and nothing cached); once it installs, any failure is ours.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from gymkit.adapters.common import brief_text_of
from gymkit.adapters.datasets import brief_rows
from gymkit.briefs import generate_briefs, split_briefs

from .conftest import GROUP
from .fake_openai import FakeOpenAI

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "trainers.md"


def _run(cmd: list[str], timeout: int = 1200, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def _tail(p: subprocess.CompletedProcess, n: int = 3) -> str:
    lines = [ln for ln in (p.stdout + p.stderr).splitlines()
             if ln.strip() and "is ignored: it is neither" not in ln]
    return " | ".join(lines[-n:])


@pytest.fixture(scope="module")
def venv(verifiers04_venv) -> Path:
    """A venv with verifiers 0.4.0, uv and gymkit (editable, this checkout): tests/conftest.py."""
    return verifiers04_venv


def _vf_python(venv: Path, code: str) -> subprocess.CompletedProcess:
    # not from the checkout: its source folder ``verifiers/`` (gymkit.verifiers) would shadow
    # the verifiers library on a ``-c`` interpreter's path
    return _run([str(venv / "bin" / "python"), "-c", code], timeout=300, cwd=venv)


def test_dotted_module_is_not_a_taskset_id(venv) -> None:
    """Why the environment package exists: verifiers 0.4's loader cannot import a dotted id."""
    p = _vf_python(venv, "from verifiers.v1.utils.loaders import taskset_class\n"
                         "taskset_class('gymkit.adapters.verifiers_v1')")
    assert p.returncode != 0
    assert "ModuleNotFoundError: No module named 'verifiers.v1.tasksets.gymkit'" in p.stderr


def test_taskset_under_verifiers_own_task_score(venv, serial_pytest_opts) -> None:
    """test_verifiers_v1.py (verifiers' ``Task.score`` on each answer) inside the 0.4 venv."""
    p = _run([str(venv / "bin" / "pytest"), "-q", "-p", "no:cacheprovider", *serial_pytest_opts,
              "tests/adapters/test_verifiers_v1.py"], cwd=REPO, timeout=900,
             env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert p.returncode == 0 and " passed" in p.stdout and "skipped" not in p.stdout, \
        p.stdout[-3000:] + p.stderr[-1000:]


def _example() -> str:
    m = re.search(r"<!-- example: vf-eval -->\n```bash\n(.*?)```", DOC.read_text(), re.S)
    assert m, "docs/trainers.md has no vf-eval example"
    return m.group(1)


def _with_knobs(block: str, **knobs: str) -> str:
    lines = block.splitlines()
    seen = set()
    for i, line in enumerate(lines):
        key = line.split("=", 1)[0].strip()
        if "# knob" in line and key in knobs:
            lines[i] = f"{key}={knobs[key]}"
            seen.add(key)
    assert seen == set(knobs), f"knobs not in the example: {set(knobs) - seen}"
    return "\n".join(lines)


def test_vf_eval_rollouts_score_as_env_score(venv, env, tmp_path) -> None:
    """docs/trainers.md's vf-eval block, run as written: 2 probe briefs × 3 rollouts."""
    (tmp_path / "environments").symlink_to(REPO / "environments")  # the doc runs at a checkout
    fake = FakeOpenAI(GROUP)
    script = _with_knobs(_example(), BASE_URL=fake.url, MODEL="fake")
    envvars = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}",
               "VIRTUAL_ENV": str(venv), "OPENAI_API_KEY": "not-a-key"}
    envvars.pop("PYTHONPATH", None)
    try:
        p = _run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=envvars)
    finally:
        fake.close()
    assert p.returncode == 0, f"the vf-eval example failed: {_tail(p, 30)}"
    runs = list((tmp_path / "vf-out").glob("*/traces.jsonl"))
    assert len(runs) == 1, f"one run directory under vf-out, got {runs}"
    episodes = [json.loads(line) for line in runs[0].read_text().splitlines()]
    traces = [t for e in episodes for t in e["traces"]]
    assert len(traces) == 6 and all(e["ok"] and not e["errors"] for e in episodes)

    probe = {r["brief_id"]: r for r in brief_rows(split_briefs(generate_briefs(), "probe"))}
    texts = []
    for t in traces:
        brief_id = t["task"]["data"]["id"]
        sampled = [n["message"]["content"] for n in t["nodes"] if n.get("sampled")]
        assert len(sampled) == 1, "one model turn per rollout"
        text = sampled[0]
        texts.append(text)
        card = env.score_group([text], brief=brief_text_of(brief_id))[0]
        assert t["rewards"] == {"gymkit": {"score": card.reward, "weight": 1.0}}
        assert t["metrics"]["gymkit_valid"] == float(card.valid)
        assert t["metrics"]["gymkit_internal"] == 0.0
        assert {c: t["metrics"][f"gymkit_{c}"] for c in env.channels} == \
            {c: card.channels[c] for c in env.channels}
        # the model saw gymkit's prompt for this brief: system text, then the brief
        shown = [n["message"] for n in t["nodes"] if not n.get("sampled")]
        assert [(m["role"], m["content"]) for m in shown] == \
            [(m["role"], m["content"]) for m in probe[brief_id]["prompt"]]
    assert sorted(texts) == sorted(GROUP)  # six requests, each canned answer once
    assert len({t["task"]["data"]["id"] for t in traces}) == 2
    assert len(fake.requests) == 6
    for path, body in fake.requests:
        assert path == "/v1/chat/completions" and body["model"] == "fake"
        assert body["messages"][0]["content"] == probe[traces[0]["task"]["data"]["id"]][
            "prompt"][0]["content"]
