"""The research reward: the submitted formula's reward net of the episode's own data-mining.

An episode may backtest many formulas on the train window before it submits one.  Picking
the best of N tries inflates its Sharpe by the expected maximum of N draws, so the reward
deflates the Sharpe-based channel by exactly that amount and charges a small cost per call:

* **Trials.** N = the number of distinct exact canonical forms (``canonical_key``: windows
  not bucketed) with a valid backtest in the
  episode (``backtest`` and both sides of ``compare``), plus the submitted formula when it
  was never backtested.  Re-testing a form is a call (it costs) but not a new trial; an
  invalid formula yields no Sharpe, so it is no trial.
* **Deflation** (Bailey & López de Prado 2014, the SR0 of the deflated Sharpe ratio,
  :func:`gymkit.verifiers.pbo.expected_max_sharpe`): Δ = SR0(N, σ) with σ the standard
  deviation (ddof=1) of the N trials' R1 CPCV scores (annualised Sharpe units, like R1).
  R1' = R1 − Δ; Δ = 0 for N = 1.  R7 (IC) is again capped at ``ic_cap_without_cpcv``
  when R1' ≤ 0 (the channel table's own rule, read on the deflated score).  The other
  Sharpe-based channels are differences of two Sharpes of the same book (R3 stress drop,
  R4 factor part), where the common deflation cancels, so they stay as scored.
* **Tool cost**: ``tool_cost`` (default :data:`TOOL_COST` = 0.02) per non-submit call.
* **Scalar**: s = Σ priority·channel' (the card's channels, R1/R7 replaced), capped at 0
  when the card's motif guard fired, minus the tool cost, then the card's soft floor
  (identity above 0, 2·s/(2 − s) below) — a valid episode lands in [−2, ∞).  An invalid
  submission gets its card's fixed invalid reward (≤ −2.5); an episode that never submits
  gets :data:`NO_SUBMIT_REWARD` = −4.0, below everything.  So every invalid episode is
  strictly below every valid one, as for single answers.

The reported research channels are ``deflation`` = −priority(R1)·Δ (plus any R7 change)
and ``tool_cost`` = −cost·calls; with N = 1 and no calls the reward equals ``card.reward``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from gymkit.card import ScoreCard
from gymkit.verifiers.pbo import expected_max_sharpe

__all__ = ["NO_SUBMIT_REWARD", "TOOL_COST", "VALID_FLOOR", "ResearchReward", "deflation",
           "research_reward", "soft_floor"]

#: Cost of one non-submit tool call, in reward units.
TOOL_COST = 0.02
#: Reward of an episode that ends without a submission (below every card's invalid band).
NO_SUBMIT_REWARD = -4.0
#: Width of the valid band below 0 (the card's soft floor: valid rewards are >= -VALID_FLOOR).
VALID_FLOOR = 2.0


def soft_floor(s: float) -> float:
    """Identity for s >= 0, ``2·s/(2 − s)`` below (strictly increasing, into (−2, 0))."""
    if s >= 0.0:
        return s + 0.0
    if not s > -math.inf:
        return -VALID_FLOOR
    return max(-VALID_FLOOR, VALID_FLOOR * s / (VALID_FLOOR - s))


def deflation(trial_scores: Sequence[float]) -> float:
    """Δ = expected max of N trials' R1 scores under the null (module doc); 0 for N <= 1."""
    x = np.asarray([v for v in trial_scores if math.isfinite(v)], dtype=np.float64)
    if x.size < 2:
        return 0.0
    return max(0.0, expected_max_sharpe(int(x.size), float(x.std(ddof=1))))


@dataclass(frozen=True)
class ResearchReward:
    """One episode's reward and how it was reached (JSON-ready via :meth:`to_dict`)."""

    reward: float
    valid: bool
    submitted: bool
    card_reward: float | None
    n_trials: int
    n_calls: int
    deflation: float                      # Δ, in R1 units
    channels: dict[str, float] = field(default_factory=dict)  # card channels after deflation
    research_channels: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict."""
        return {"reward": self.reward, "valid": self.valid, "submitted": self.submitted,
                "card_reward": self.card_reward, "n_trials": self.n_trials,
                "n_calls": self.n_calls, "deflation": self.deflation,
                "channels": dict(self.channels), "research_channels": dict(self.research_channels)}


def research_reward(card: ScoreCard | None, trial_scores: Sequence[float], n_calls: int,
                    priorities: Mapping[str, float], ic_cap_without_cpcv: float,
                    tool_cost: float = TOOL_COST) -> ResearchReward:
    """The episode reward of the submitted ``card`` (None: no submit) given the R1 scores of
    every trial (the submitted one included) and the number of non-submit calls."""
    cost = -tool_cost * n_calls + 0.0
    if card is None:
        return ResearchReward(NO_SUBMIT_REWARD, False, False, None, len(trial_scores), n_calls,
                              0.0, {}, {"deflation": 0.0, "tool_cost": cost})
    if not card.valid:
        return ResearchReward(float(card.reward), False, True, float(card.reward),
                              len(trial_scores), n_calls, 0.0, dict(card.channels),
                              {"deflation": 0.0, "tool_cost": cost})
    delta = deflation(trial_scores)
    ch = dict(card.channels)
    if "cpcv" in ch:
        ch["cpcv"] = ch["cpcv"] - delta
        if "ic" in ch and ch["cpcv"] <= 0.0:
            ch["ic"] = min(ch["ic"], ic_cap_without_cpcv)
    before = sum(priorities[k] * v for k, v in card.channels.items())
    s = sum(priorities[k] * v for k, v in ch.items())
    defl = s - before + 0.0
    if card.motif_capped:
        s = min(s, 0.0)
    reward = soft_floor(s + cost)
    return ResearchReward(reward, True, True, float(card.reward), len(trial_scores), n_calls,
                          delta, ch, {"deflation": defl, "tool_cost": cost})
