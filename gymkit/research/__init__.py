"""The multi-turn research gym (issue 25): backtest on the train window with tools, submit one
formula, be rewarded net of the episode's own data-mining.

``make_research("us46-research")`` builds the scoring environment and a :class:`ResearchEnv`;
``renv.episode(brief)`` starts a :class:`ResearchEpisode` whose ``step(action)`` takes one tool
call.  Modules: :mod:`.tools` (schemas and payloads), :mod:`.actions` (reading a tool call),
:mod:`.reward` (deflation and tool cost), :mod:`.episode` (the state machine: every interface's
one owner of an episode's budget, trials, transcript and outcome), :mod:`.sessions` (live
episodes by id, their limits and expiry, for the HTTP interfaces), :mod:`.agent` (the scripted
hill-climbing baseline).  See docs/research.md.
"""

from __future__ import annotations

from typing import Any

from .actions import ActionError, ToolCall, parse_action
from .episode import (
    DEFAULT_BUDGET,
    RESEARCH_VERSION,
    ResearchEnv,
    ResearchEpisode,
    StepResult,
    canonical_json,
)
from .reward import (
    NO_SUBMIT_REWARD,
    TOOL_COST,
    ResearchReward,
    deflation,
    effective_trials,
    research_reward,
)
from .tools import TOOL_NAMES, TOOL_SPECS

__all__ = ["DEFAULT_BUDGET", "NO_SUBMIT_REWARD", "RESEARCH_ENV_ID", "RESEARCH_VERSION",
           "TOOL_COST", "TOOL_NAMES", "TOOL_SPECS", "ActionError", "ResearchEnv",
           "ResearchEpisode", "ResearchReward", "StepResult", "ToolCall", "canonical_json",
           "deflation", "effective_trials", "make_research", "parse_action", "research_reward"]

RESEARCH_ENV_ID = "us46-research"


def make_research(env_id: Any = RESEARCH_ENV_ID, *, market: Any = None,
                  budget: int = DEFAULT_BUDGET, tool_cost: float = TOOL_COST,
                  **overrides: Any) -> ResearchEnv:
    """A :class:`ResearchEnv` over ``gymkit.make(env_id, market=market, **overrides)``
    (the same over any market)."""
    from gymkit.registry import make

    return ResearchEnv(make(env_id, market=market, **overrides), budget=budget, tool_cost=tool_cost)
