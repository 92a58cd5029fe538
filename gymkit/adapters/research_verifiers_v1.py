"""verifiers >= 0.3 (the ``verifiers.v1`` API of 0.4) form of the research gym: a multi-turn tool
taskset on verifiers' own NeMo-Gym bridge.

verifiers 0.4 drives NeMo-Gym resources servers with ``verifiers.v1.tasksets.nemo_gym``: its
``NeMoGymTask.setup`` posts the row to ``/seed_session`` and keeps the cookie, its
``NeMoGymToolset`` (an MCP toolset, so any v1 harness sees the tools) forwards each tool call to
``POST /{name}`` with the rollout's cookie, and its ``nemo_gym`` reward posts ``/verify`` with
the trace turned into a Responses object (``trace_to_nemo_response``) and records every numeric
field of the answer as a metric.  gymkit's resources server
(:mod:`gymkit.adapters.research_nemo_gym`) speaks that contract, so this module only supplies
the tasks and the server:

* :class:`GymkitResearchTaskset` (config :class:`GymkitResearchConfig`: ``env_id``, ``split``,
  ``budget``, ``n_briefs``, ``brief_seed``, and ``task.resources_url``) yields one
  ``NeMoGymTask`` per brief of the split; its row is
  :func:`~gymkit.adapters.research_nemo_gym.dataset_rows`' (the episode's system + user
  messages, the four tools in the Responses function shape, ``brief_id``, ``budget``).  Reward
  ``nemo_gym`` (weight 1) = the episode's research reward; metrics ``valid``, ``submitted``,
  ``n_trials``, ``n_effective``, ``n_calls``, ``delta``.
* :class:`GymkitResearchEnv` (the ``SingleAgentEnv`` this taskset runs in) starts gymkit's
  resources server in-process on 127.0.0.1 when ``task.resources_url`` is unset (after scoring
  one formula, so the first rollout's requests do not wait on the JIT compile), and stops it
  with the environment (verifiers' own managed start needs the ``nemo-gym`` package under uv).

The model submits with the ``submit`` tool or ends with ``<alpha>formula</alpha>`` in its last
message (read at ``/verify``); anything else is an episode without a submission.  This module
exports exactly one Taskset and one Env subclass in ``__all__``, as verifiers' plugin loader
requires; that loader cannot import a dotted id, so the environment package
``environments/gymkit_research`` (module ``gymkit_research``) re-exports them under the id
:data:`TASKSET_ID` (``--env.taskset.id gymkit-research``).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterable
from typing import Any

from verifiers.v1.taskset import Taskset
from verifiers.v1.tasksets.nemo_gym import (
    NeMoGymConfig,
    NeMoGymData,
    NeMoGymEnv,
    NeMoGymTask,
    NeMoGymTaskConfig,
    NeMoGymTaskset,
)

from gymkit.adapters.research_nemo_gym import dataset_rows
from gymkit.briefs import DEFAULT_N, DEFAULT_SEED, generate_briefs, split_briefs
from gymkit.research import DEFAULT_BUDGET

__all__ = ["GymkitResearchEnv", "GymkitResearchTaskset"]

#: The taskset id verifiers 0.4 loads: the environment package's name (module doc).
TASKSET_ID = "gymkit-research"


class GymkitResearchConfig(NeMoGymConfig):
    """Which briefs load and where the resources server is (``task.resources_url``)."""

    dataset: Any = None  # rows are built from the briefs, not read from a file
    env_id: str = "us46-research"
    split: str = "train"
    budget: int = DEFAULT_BUDGET
    n_briefs: int = DEFAULT_N
    brief_seed: int = DEFAULT_SEED
    task: NeMoGymTaskConfig = NeMoGymTaskConfig()


class GymkitResearchTaskset(NeMoGymTaskset, Taskset[NeMoGymTask, GymkitResearchConfig]):
    """One research episode per brief of ``config.split`` (module doc)."""

    def load(self) -> Iterable[NeMoGymTask]:
        """One ``NeMoGymTask`` per brief: ``id`` = brief_id, ``name`` = its family."""
        cfg = self.config
        families = {b.brief_id: b.family for b in
                    split_briefs(generate_briefs(cfg.n_briefs, cfg.brief_seed), cfg.split)}
        for row in dataset_rows(cfg.env_id, cfg.split, cfg.budget, cfg.n_briefs, cfg.brief_seed):
            msgs = row["responses_create_params"]["input"]
            yield NeMoGymTask(NeMoGymData(id=row["brief_id"], name=families[row["brief_id"]],
                                          system_prompt=msgs[0]["content"],
                                          prompt=msgs[1]["content"], row=row), cfg.task)


class GymkitResearchEnv(NeMoGymEnv):
    """``NeMoGymEnv`` whose managed server is gymkit's, run in this process (module doc)."""

    _gymkit_server: Any = None
    _gymkit_thread: threading.Thread | None = None

    async def start(self) -> None:
        """Serve gymkit's resources server on 127.0.0.1 unless ``resources_url`` is set."""
        import uvicorn

        from gymkit.adapters.common import get_env
        from gymkit.adapters.research_nemo_gym import create_app, warm_up

        config = self.taskset.config.task
        if config.resources_url is not None:
            return
        env = get_env(self.taskset.config.env_id)
        warm_up(env)  # compile the scorer before the first rollout's requests time out
        app = create_app(env)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 60
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("gymkit's research resources server did not start")
            time.sleep(0.02)
        self._gymkit_server, self._gymkit_thread = server, thread
        config.resources_url = f"http://127.0.0.1:{sock.getsockname()[1]}"

    async def stop(self) -> None:
        """Stop the in-process server (if this environment started it)."""
        server, self._gymkit_server = self._gymkit_server, None
        if server is None:
            return
        server.should_exit = True
        if self._gymkit_thread is not None:
            self._gymkit_thread.join(timeout=30)
        self.taskset.config.task.resources_url = None


def load_research_taskset(env_id: str = "us46-research", split: str = "train",
                          budget: int = DEFAULT_BUDGET, n_briefs: int = DEFAULT_N,
                          brief_seed: int = DEFAULT_SEED, resources_url: str | None = None,
                          **kwargs: Any) -> GymkitResearchTaskset:
    """The :class:`GymkitResearchTaskset` of ``env_id`` over the briefs of ``split``, its tasks
    talking to the resources server at ``resources_url`` (None: the environment starts one)."""
    if split not in ("train", "holdout", "probe"):
        raise ValueError(f"split must be 'train', 'holdout' or 'probe', got {split!r}")
    cfg = GymkitResearchConfig(id=TASKSET_ID, env_id=env_id,
                               split=split, budget=budget, n_briefs=n_briefs,
                               brief_seed=brief_seed,
                               task=NeMoGymTaskConfig(resources_url=resources_url), **kwargs)
    return GymkitResearchTaskset(cfg)
