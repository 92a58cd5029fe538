"""One research episode: a brief, a tool budget, tool calls on the train window, one submit.

:class:`ResearchEnv` wraps a scoring :class:`~gymkit.env.Environment` (its train panel is
the laboratory: a panel with no holdout rows) and starts :class:`ResearchEpisode` objects.
Every interface (Gymnasium, the server's ``/v1/episodes`` routes, the trainer adapters)
drives this one state machine:

``open`` --tool call (budget left)--> ``open`` --submit--> ``submitted`` (reward, full card)
``open`` --non-submit call with the budget spent--> ``truncated`` (no submit: invalid)
``open`` --end / finish without one ``<alpha>`` answer--> ``truncated`` (the rollout stopped)

* Budget: ``budget`` (default 8) non-submit calls; malformed actions count as calls.  Submit
  is always allowed while the episode is open.
* Reward: :func:`gymkit.research.reward.research_reward` (net of the distinct formulas
  backtested and of the calls).
* Determinism: a tool result depends only on the formula, the environment version and the
  archive version; the transcript (:meth:`ResearchEpisode.transcript_json`) is canonical
  JSON (sorted keys, no timings): the same actions give the same bytes in every process.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from gymkit.card import ScoreCard, json_safe
from gymkit.dsl import canonical_key, parse

from .actions import ActionError, ToolCall, parse_action
from .reward import TOOL_COST, ResearchReward, effective_trials, research_reward
from .tools import TOOL_SPECS, backtest_payload, compare_payload, describe_payload

__all__ = ["DEFAULT_BUDGET", "RESEARCH_VERSION", "ResearchEnv", "ResearchEpisode", "StepResult",
           "canonical_json"]

DEFAULT_BUDGET = 8
#: Version of the tools, payloads and reward rules (part of every transcript header).
RESEARCH_VERSION = "research-v2"

_RULES = ("This is a research episode. Call tools to test formulas on the TRAIN window, then "
          "submit exactly one formula. You have {budget} tool calls besides submit; a call "
          "after they are spent ends the episode without a submission (the worst reward). "
          "Each call costs {cost:g} reward; the submitted formula's CPCV score is deflated for "
          "the effective number of independent formulas you backtested (the deflated Sharpe "
          "ratio; near-copies of one formula count about once), so mining many formulas does "
          "not pay. Call a tool with <tool_call>{{\"name\": ..., "
          "\"arguments\": {{...}}}}</tool_call>; submit with the submit tool or "
          "<alpha>formula</alpha>.")


_ALPHA = re.compile(r"<alpha>(.*?)</alpha>", re.DOTALL)


def _untag(formula: str) -> str:
    """A tool's formula argument without one enclosing ``<alpha>``/``</alpha>`` (policies write
    them; the tool wraps the formula itself, and a second tag read as ``multiple_tags`` at a
    position past the end of what was sent).  Anything else is left for the gate."""
    text = formula.strip()
    head, tail = text.startswith("<alpha>"), text.endswith("</alpha>")
    inner = text[7 if head else 0:len(text) - 8 if tail else len(text)]
    if (head or tail) and "<alpha>" not in inner and "</alpha>" not in inner:
        return inner.strip()
    return formula


def canonical_json(obj: Any) -> str:
    """Canonical JSON text (sorted keys, compact, no NaN): the transcript's byte form."""
    return json.dumps(json_safe(obj), sort_keys=True, separators=(",", ":"), allow_nan=False,
                      ensure_ascii=False)


@dataclass(frozen=True)
class StepResult:
    """What one call returns: the observation text (the tool message), whether the episode
    ended, its reward when it did (else None), and ``info`` (the payload; the card on submit)."""

    observation: str
    done: bool
    truncated: bool
    reward: float | None
    info: dict[str, Any]


def _tools_text() -> str:
    return "\nTools: " + json.dumps(list(TOOL_SPECS), sort_keys=True)


class ResearchEnv:
    """Starts research episodes over one scoring environment (module doc)."""

    def __init__(self, env: Any, budget: int = DEFAULT_BUDGET, tool_cost: float = TOOL_COST) -> None:
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
            raise ValueError(f"budget must be a non-negative int, got {budget!r}")
        if not tool_cost >= 0.0:
            raise ValueError(f"tool_cost must be >= 0, got {tool_cost!r}")
        self.env = env
        self.budget = budget
        self.tool_cost = float(tool_cost)
        self.tools = TOOL_SPECS
        self.description = describe_payload(env.setup, env.config.env_id)

    @property
    def train_panel(self) -> Any:
        """The only panel any tool computes on (the split's train window)."""
        return self.env.setup.train

    def rules(self, budget: int | None = None) -> str:
        """The research rules sentence of the prompt."""
        return _RULES.format(budget=self.budget if budget is None else budget, cost=self.tool_cost)

    def episode(self, brief: str | None = None, budget: int | None = None) -> ResearchEpisode:
        """A new episode for ``brief`` (a generated brief's text, or None)."""
        return ResearchEpisode(self, brief, self.budget if budget is None else budget)


class ResearchEpisode:
    """One episode's state machine (module doc).  Not thread-safe: one caller at a time."""

    def __init__(self, renv: ResearchEnv, brief: str | None, budget: int) -> None:
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
            raise ValueError(f"budget must be a non-negative int, got {budget!r}")
        self.renv, self.env, self.brief, self.budget = renv, renv.env, brief, budget
        self.calls = 0
        self.done = False
        self.truncated = False
        self.result: ResearchReward | None = None
        self.final_card: ScoreCard | None = None
        self._cards: dict[str, ScoreCard] = {}
        self._trials: dict[str, tuple[str, float, np.ndarray]] = {}  # key -> (formula, R1, pnl)
        self._turns: list[dict[str, Any]] = []
        env = self.env
        self.header = {"research_version": RESEARCH_VERSION, "env_id": env.config.env_id,
                       "env_fingerprint": env.fingerprint, "archive_version": env.archive.version,
                       "archive_digest": env.archive.digest, "gymkit_version": env.gymkit_version,
                       "budget": budget, "tool_cost": renv.tool_cost, "brief": brief}

    # ------------------------------------------------------------------ views
    @property
    def calls_left(self) -> int:
        """Non-submit calls still allowed."""
        return max(0, self.budget - self.calls)

    @property
    def n_trials(self) -> int:
        """Distinct canonical forms with a valid backtest so far (M)."""
        return len(self._trials)

    def trials(self) -> list[tuple[str, float, np.ndarray]]:
        """The trials so far, in order of first backtest: (formula, R1 score, daily train
        net P&L) — what the deflation reads."""
        return list(self._trials.values())

    @property
    def n_effective(self) -> float:
        """The effective number of independent trials so far (N̂, from their P&L correlations;
        :func:`gymkit.research.reward.effective_trials`)."""
        return effective_trials([p for _, _, p in self._trials.values()])

    def prompt(self, tools: bool = False) -> str:
        """The first observation: the task prompt, the research rules, the brief; with
        ``tools``, then the tool schemas as JSON (for interfaces without a tools field)."""
        base = self.env.observation(None)
        text = base + "\n" + self.renv.rules(self.budget)
        text = text + "\nBrief: " + self.brief if self.brief else text
        return text + _tools_text() if tools else text

    def messages(self, tools: bool = False) -> list[dict[str, str]]:
        """The prompt as chat messages (system: contract and rules, with ``tools`` the tool
        schemas as JSON; user: the brief)."""
        system = self.env.observation(None) + "\n" + self.renv.rules(self.budget)
        if tools:
            system += _tools_text()
        user = ("Brief: " + self.brief) if self.brief else "Design one alpha of your choice."
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def transcript(self) -> dict[str, Any]:
        """Header, every turn (action and result), and the outcome when the episode ended."""
        out: dict[str, Any] = {"header": dict(self.header), "turns": list(self._turns)}
        if self.done:
            out["outcome"] = None if self.result is None else self.result.to_dict()
        return json_safe(out)

    def transcript_json(self) -> str:
        """:meth:`transcript` as canonical JSON (byte-identical for the same episode)."""
        return canonical_json(self.transcript())

    # ------------------------------------------------------------------ scoring
    def _card(self, formula: str) -> ScoreCard:
        formula = _untag(formula)
        card = self._cards.get(formula)
        if card is None:
            card = self.env.score(f"<alpha>{formula}</alpha>", brief=self.brief)
            self._cards[formula] = card
        return card

    @staticmethod
    def trial_key(card: ScoreCard) -> str | None:
        """The form a trial is counted by: the exact canonical key (windows NOT bucketed, so a
        window sweep is as many trials as windows); None for an invalid card."""
        if not card.valid or card.formula is None:
            return None
        return canonical_key(parse(card.formula))

    def _trial(self, card: ScoreCard) -> None:
        key = self.trial_key(card)
        if key is not None and key not in self._trials:
            self._trials[key] = (card.formula or "", float(card.channels["cpcv"]),
                                 card.pnl if card.pnl is not None else np.zeros(1))

    def _earlier(self, card: ScoreCard) -> list[tuple[str, np.ndarray]]:
        key = self.trial_key(card)
        return [(f, p) for c, (f, _, p) in self._trials.items() if c != key]

    # ------------------------------------------------------------------ stepping
    def step(self, action: object) -> StepResult:
        """Apply one action (a tool call, see :mod:`gymkit.research.actions`)."""
        if self.done:
            raise RuntimeError("the episode is over: start a new one")
        try:
            call = parse_action(action)
        except ActionError as exc:
            return self._non_submit({"action_error": str(exc)},
                                    {"raw": action if isinstance(action, str) else repr(action)},
                                    {"error": str(exc)})
        if call.name == "submit":
            return self.submit(call.arguments["formula"])
        return self._non_submit(None, call.to_dict(), None, call)

    def call(self, name: str, **arguments: str) -> StepResult:
        """Call tool ``name`` with keyword arguments (a convenience over :meth:`step`)."""
        return self.step({"name": name, "arguments": arguments})

    def _non_submit(self, payload: dict[str, Any] | None, action: dict[str, Any],
                    error: dict[str, Any] | None, call: ToolCall | None = None) -> StepResult:
        if self.calls >= self.budget:
            self.done, self.truncated = True, True
            self.result = self._no_submit()
            result = {"error": "the tool budget is spent and this was not a submit: the "
                      "episode ends without a submission"}
            self._turns.append({"action": action, "result": result})
            return StepResult(canonical_json(result), True, True, self.result.reward,
                              {"result": result, "outcome": self.result.to_dict()})
        self.calls += 1
        if call is not None:
            payload = self._run(call)
        result = {"tool": None if call is None else call.name,
                  "result": payload if error is None else error, "calls_left": self.calls_left}
        self._turns.append({"action": action, "result": result})
        return StepResult(canonical_json(result), False, False, None, {"result": result})

    def _run(self, call: ToolCall) -> dict[str, Any]:
        a = call.arguments
        if call.name == "describe":
            return self.renv.description
        if call.name == "backtest":
            card = self._card(a["formula"])
            payload = backtest_payload(card, self._earlier(card))
            self._trial(card)
            return payload
        ca, cb = self._card(a["formula_a"]), self._card(a["formula_b"])
        self._trial(ca)
        self._trial(cb)
        return compare_payload(ca, cb)

    def _no_submit(self) -> ResearchReward:
        scores = [r1 for _, r1, _ in self._trials.values()]
        pnls = [p for _, _, p in self._trials.values()]
        return research_reward(None, scores, self.calls, {}, 0.0, self.renv.tool_cost, pnls)

    def end(self, reason: str) -> StepResult:
        """End the open episode without a submission (the rollout stopped: ``reason`` says
        how); the reward is :data:`~gymkit.research.reward.NO_SUBMIT_REWARD`."""
        if self.done:
            raise RuntimeError("the episode is over: start a new one")
        self.result = self._no_submit()
        self.done, self.truncated = True, True
        result = {"error": f"the episode ended without a submission: {reason}"}
        self._turns.append({"action": {"name": "end", "arguments": {}}, "result": result})
        return StepResult(canonical_json(result), True, True, self.result.reward,
                          {"result": result, "outcome": self.result.to_dict()})

    def finish(self, final_text: str, reason: str) -> StepResult:
        """End the open episode from a rollout's last message: exactly one
        ``<alpha>formula</alpha>`` in ``final_text`` submits that formula (stripped); anything
        else ends it without a submission (:meth:`end` with ``reason``)."""
        found = _ALPHA.findall(final_text)
        if len(found) == 1:
            return self.submit(found[0].strip())
        return self.end(reason)

    def submit(self, formula: str) -> StepResult:
        """End the episode with ``formula``: its full card and the research reward."""
        if self.done:
            raise RuntimeError("the episode is over: start a new one")
        if not isinstance(formula, str):
            raise TypeError(f"formula must be a str, got {type(formula).__name__}")
        card = self._card(formula)
        summary = backtest_payload(card, self._earlier(card))
        self._trial(card)
        scores = [r1 for _, r1, _ in self._trials.values()]
        pnls = [p for _, _, p in self._trials.values()]
        prio = self.env.config.priorities
        self.result = research_reward(card, scores, self.calls, prio,
                                      self.env.setup.params.ic_cap_without_cpcv,
                                      self.renv.tool_cost, pnls)
        self.final_card, self.done = card, True
        result = {"tool": "submit", "result": summary, "outcome": self.result.to_dict()}
        self._turns.append({"action": {"name": "submit", "arguments": {"formula": formula}},
                            "result": result})
        return StepResult(canonical_json(result), True, False, self.result.reward,
                          {"result": result, "card": card, "outcome": self.result.to_dict()})
