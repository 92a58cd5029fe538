"""The research gym under verifiers >= 0.3 (the verifiers.v1 API of 0.4), through verifiers'
own NeMo-Gym bridge, against gymkit's resources server over real HTTP on 127.0.0.1.

verifiers 0.4 needs ``openai<3`` and the ``test`` extra pins the 0.2 line, so the verifiers side
runs in the throwaway venv tests/adapters' 0.4 test builds (``$GYMKIT_TEST_VENVS``, default
``~/.cache/gymkit/test-venvs``; the same path and lock, built once, then reused): verifiers
0.4.0 from the package index, gymkit editable from this checkout, plus the environment package
``environments/gymkit_research``.  There ``verifiers_v1_driver.py`` resolves ``gymkit-research``
through verifiers' plugin loader and plays scripted rollouts through ``NeMoGymTask.setup``,
``NeMoGymToolset.call_tool`` and ``Task.score``; here every tool text, reward and metric is
compared with the Python episode of the same actions.  Skipped, saying why, only when verifiers
0.4.0 cannot be installed (no package index reachable and nothing cached)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from gymkit.adapters.common import brief_text_of
from gymkit.adapters.research_nemo_gym import END_REASON

from .conftest import HONEST
from .test_nemo_gym import nemo_server

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("verifiers_v1_driver.py")
OTHER = "rank(ts_delta(close, 5))"
PLANS = [
    ([("backtest", {"formula": OTHER}), ("backtest", {"formula": HONEST}),
      ("submit", {"formula": HONEST})], "submitted above"),
    ([("describe", {})], f"<think>ok</think><alpha>{HONEST}</alpha>"),
    ([("backtest", {"formula": HONEST})], "no answer"),
]


def _run(cmd: list[str], timeout: int = 1200, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def _tail(p: subprocess.CompletedProcess, n: int = 3) -> str:
    lines = [ln for ln in (p.stdout + p.stderr).splitlines()
             if ln.strip() and "is ignored: it is neither" not in ln]
    return " | ".join(lines[-n:])


@pytest.fixture(scope="module")
def venv(verifiers04_venv, imports_from) -> Path:
    """The shared verifiers-0.4.0 venv (tests/conftest.py) with gymkit-research installed."""
    path = verifiers04_venv
    py = path / "bin" / "python"
    pkg = REPO / "environments" / "gymkit_research"
    with open(path.parent / f"{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = hashlib.sha256(str(pkg).encode() + (pkg / "pyproject.toml").read_bytes())
        mark = path / f".gymkit-research-{stamp.hexdigest()[:16]}"
        if not mark.exists() or not imports_from(py, "gymkit_research", pkg):
            p = _run([str(py), "-m", "pip", "install", "-q", "--no-deps", "-e", str(pkg)])
            assert p.returncode == 0, f"pip install -e {pkg} into {path}: {_tail(p, 8)}"
            mark.touch()
    return path


def _driver(venv: Path, tmp_path: Path, url: str | None, plans) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    req = json.dumps({"url": url, "split": "probe", "budget": 4, "plans": plans})
    p = _run([str(venv / "bin" / "python"), str(DRIVER)], input=req, cwd=tmp_path, env=env,
             timeout=600)
    assert p.returncode == 0, _tail(p, 12)
    return json.loads(p.stdout.strip().splitlines()[-1])


def _check(renv, got: dict, plans) -> None:
    """Each rollout's tool texts, reward and metrics equal the Python episode's."""
    assert (got["taskset"], got["env"]) == ("GymkitResearchTaskset", "GymkitResearchEnv")
    assert got["n_tasks"] == got["n_keys"] == 50
    brief = brief_text_of(got["brief_id"])
    for (calls, final), out in zip(plans, got["rollouts"], strict=True):
        assert out["listed"] == ["backtest", "compare", "describe", "submit"]
        ep = renv.episode(brief, budget=4)
        want = [ep.step({"name": n, "arguments": a}).observation for n, a in calls]
        if not ep.done:
            if "<alpha>" in final:
                ep.submit(HONEST)
            else:
                ep.end(END_REASON)
        assert out["texts"] == want                          # the tool messages, byte for byte
        assert out["rewards"]["nemo_gym"] == out["reward"] == ep.result.reward
        assert out["metrics"]["n_calls"] == float(ep.calls)
        assert out["metrics"]["n_effective"] == ep.result.n_effective
        assert out["metrics"]["valid"] == float(ep.result.valid)
        assert out["info"]["transcript_sha256"] == hashlib.sha256(
            ep.transcript_json().encode()).hexdigest()


def test_rollouts_through_verifiers_nemo_gym_bridge(venv, renv, tmp_path) -> None:
    """Against the server on 127.0.0.1 (module doc)."""
    with nemo_server(renv.env) as url:
        got = _driver(venv, tmp_path, url, PLANS)
    _check(renv, got, PLANS)
    assert [o["metrics"]["submitted"] for o in got["rollouts"]] == [1.0, 1.0, 0.0]


def test_the_env_serves_the_resources_server_itself(venv, renv, tmp_path) -> None:
    """No resources_url: GymkitResearchEnv.start() serves it on 127.0.0.1, stop() ends it."""
    got = _driver(venv, tmp_path, None, PLANS[1:2])
    _check(renv, got, PLANS[1:2])
    assert got["served_at"].startswith("http://127.0.0.1:") and got["after_stop"] is None
