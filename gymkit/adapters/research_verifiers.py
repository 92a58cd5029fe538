"""``verifiers`` (0.2.x) adapter of the research gym: a ``verifiers.MultiTurnEnv``.

:func:`load_environment` is the module's entry point (``vf.load_environment(
"gymkit.adapters.research_verifiers", split=..., budget=...)``).  The dataset is the split's
briefs: ``prompt`` = the research episode's chat (system: task contract, research rules and
the tool schemas as JSON; user: the brief), ``answer`` empty, ``info = {"brief_id", "brief"}``.

Per rollout, ``setup_state`` opens one :class:`~gymkit.research.ResearchEpisode` for the
row's brief; each model turn is one action (``<tool_call>{json}</tool_call>`` text or an
``<alpha>`` answer = submit) and ``env_response`` answers with the tool result as a user turn.
When the episode ends (submit, or a call with the budget spent) the result is the
``final_env_response`` and the rollout stops; ``max_turns`` = budget + 1.  The rubric's
``research_reward`` (weight 1) is the episode's reward — ``NO_SUBMIT_REWARD`` when the rollout
ended without a submission — with weight-0 monitors ``research_valid``, ``research_trials``,
``research_calls``, ``research_deflation`` and ``research_model_error``.  A rollout's episode is
dropped when the rollout ends, however it stopped (a verifiers cleanup handler).

A failed model call (verifiers records it in ``state["error"]`` and stops the rollout) ends the
episode without a submission: the reward stays ``NO_SUBMIT_REWARD`` (a failure never outranks an
answer, so nothing can raise a reward by making the call fail, e.g. by growing the context past
the server's limit), and ``research_model_error`` = 1 tells it from a policy that never
submitted; drop such rollouts before averaging or training.
"""

from __future__ import annotations

from typing import Any

from datasets import Dataset

import verifiers as vf
from gymkit.adapters.common import completion_text, get_env, model_call_failed, resolve_brief
from gymkit.briefs import DEFAULT_N, DEFAULT_SEED, generate_briefs, split_briefs
from gymkit.research import DEFAULT_BUDGET, NO_SUBMIT_REWARD, ResearchEnv

__all__ = ["ResearchMultiTurnEnv", "load_environment"]

_KEY = "gymkit_research"


def _outcome(state: Any) -> dict[str, Any]:
    got = state.get(_KEY) if state is not None else None
    return got if isinstance(got, dict) else {}


def research_reward(state: Any = None, **kwargs: Any) -> float:
    """The episode's research reward (NO_SUBMIT_REWARD when it never submitted)."""
    return float(_outcome(state).get("reward", NO_SUBMIT_REWARD))


def research_model_error(state: Any = None, **kwargs: Any) -> float:
    """1.0 when verifiers recorded a failed model call for this rollout (module doc), else 0."""
    return 1.0 if model_call_failed(state) else 0.0


def _monitor(key: str) -> Any:
    def f(state: Any = None, **kwargs: Any) -> float:
        return float(_outcome(state).get(key, 0.0))

    f.__name__ = f"research_{key.removeprefix('n_')}"
    return f


class ResearchMultiTurnEnv(vf.MultiTurnEnv):
    """One research episode per rollout (module doc)."""

    def __init__(self, renv: ResearchEnv, **kwargs: Any) -> None:
        super().__init__(max_turns=renv.budget + 1, **kwargs)
        self.renv = renv
        self._episodes: dict[str, Any] = {}

    async def setup_state(self, state: Any) -> Any:
        """Open the row's episode (kept by trajectory id; the state holds only numbers)."""
        info = state.get("info") or {}
        info = info if isinstance(info, dict) else {}
        brief = resolve_brief(info.get("brief_id"), info.get("brief"), "verifiers info: ")
        self._episodes[state["trajectory_id"]] = self.renv.episode(brief)
        return state

    async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
        """Apply the model's last turn as one action; answer with the tool result."""
        ep = self._episodes[state["trajectory_id"]]
        res = ep.step(completion_text(messages))
        reply = [{"role": "user", "content": res.observation}]
        if res.done:
            out = res.info["outcome"]
            state[_KEY] = {k: out[k] for k in ("reward", "valid", "n_trials", "n_calls",
                                                "deflation")}
            state["final_env_response"] = reply
            self._episodes.pop(state["trajectory_id"], None)
        return reply

    @(vf.cleanup if hasattr(vf, "cleanup") else (lambda f: f))
    async def drop_episode(self, state: Any) -> None:
        """Forget the rollout's episode however the rollout stopped (verifiers runs this after
        every rollout): one the harness stopped before it ended (an error, the prompt or token
        limit) would otherwise be held for the life of the environment."""
        self._episodes.pop(state.get("trajectory_id"), None)


def load_environment(env_id: str = "us46-research", split: str = "train",
                     budget: int = DEFAULT_BUDGET, n_briefs: int = DEFAULT_N,
                     brief_seed: int = DEFAULT_SEED, **kwargs: Any) -> ResearchMultiTurnEnv:
    """The research environment over the briefs of ``split`` (module doc)."""
    if split not in ("train", "holdout", "probe"):
        raise ValueError(f"split must be 'train', 'holdout' or 'probe', got {split!r}")
    renv = ResearchEnv(get_env(env_id), budget=budget)
    rows = []
    for b in split_briefs(generate_briefs(n_briefs, brief_seed), split):
        msgs = renv.episode(b.text).messages(tools=True)
        rows.append({"prompt": msgs, "answer": "", "info": {"brief_id": b.brief_id, "brief": b.text}})
    funcs = [research_reward, _monitor("valid"), _monitor("n_trials"), _monitor("n_calls"),
             _monitor("deflation"), research_model_error]
    rubric = vf.Rubric(funcs=funcs, weights=[1.0] + [0.0] * (len(funcs) - 1))
    return ResearchMultiTurnEnv(renv, dataset=Dataset.from_list(rows), rubric=rubric, **kwargs)
