"""The research reward: the submitted formula's reward net of the episode's own data-mining.

An episode may backtest many formulas on the train window before it submits one.  Picking
the best of N tries inflates its Sharpe by the expected maximum of N draws, so the reward
deflates the Sharpe-based channel by exactly that amount and charges a small cost per call:

* **Trials.** M = the number of distinct exact canonical forms (``canonical_key``: windows
  not bucketed) with a valid backtest in the episode (``backtest`` and both sides of
  ``compare``), plus the submitted formula when it was never backtested.  Re-testing a form
  is a call (it costs) but not a new trial; an invalid formula yields no Sharpe, so it is no
  trial.
* **Effective trials** (correlation-aware, :func:`effective_trials`): N̂ = ρ̄ + (1 − ρ̄)·M
  = M − (M − 1)·ρ̄, with ρ̄ the mean pairwise Pearson correlation of the M trials' daily
  train-window net P&L — the average-correlation estimate of the number of independent
  trials of Bailey & López de Prado (2014), *The Deflated Sharpe Ratio*, J. Portfolio Mgmt
  40(5).  Eight near-identical tries (ρ̄ → 1) count ≈ 1, eight unrelated ones (ρ̄ ≈ 0) ≈ 8.
  N̂ lies in [1, M + 1]: it exceeds M only for anti-correlated trials (a sign flip of an
  earlier try: picking the better sign after seeing both is worth more than two
  independent draws).  A flat P&L has correlation 0 with every other trial.  Computed with
  exactly rounded sums (``math.fsum``), so N̂ is bit-identical in every process and does not
  depend on the order of the trials.
* **Deflation** (the SR0 of the deflated Sharpe ratio, :func:`gymkit.verifiers.pbo.
  expected_max_sharpe`'s formula at a real N): Δ = SR0(N̂, σ̂) with
  σ̂² = Σ(s − s̄)² / (N̂ − 1) over the trials' R1 CPCV scores s (annualised Sharpe units,
  like R1).  That σ̂² is the unbiased null variance of one trial when the trials are
  correlated (E Σ(s − s̄)² = σ²·(M − 1)(1 − ρ̄) = σ²·(N̂ − 1)); with ρ̄ = 0 it is the
  ordinary ddof=1 variance and Δ is the uncorrelated count's (N̂ = M).  Padding a search
  with copies of its tries does not shrink σ̂ (for copies of two tries σ̂² = d²/2 whatever
  the number of copies, d their score gap) and only raises N̂.  SR0's asymptotic formula falls below
  0 under N ≈ 1.5, so between one and two effective trials Δ = (N̂ − 1)·SR0(2, σ̂) (linear
  from 0 at N̂ = 1); Δ = 0 for M ≤ 1.  R1' = R1 − Δ.  R7 (IC) is again capped at
  ``ic_cap_without_cpcv`` when R1' ≤ 0 (the channel table's own rule, read on the deflated
  score).  The other Sharpe-based channels are differences of two Sharpes of the same book
  (R3 stress drop, R4 factor part), where the common deflation cancels, so they stay as
  scored.
* **Tool cost**: ``tool_cost`` (default :data:`TOOL_COST` = 0.02) per non-submit call.
* **Scalar**: s = Σ priority·channel' (the card's channels, R1/R7 replaced), capped at 0
  when the card's motif guard fired, minus the tool cost, then the card's soft floor
  (identity above 0, 2·s/(2 − s) below) — a valid episode lands in [−2, ∞).  An invalid
  submission gets its card's fixed invalid reward (≤ −2.5); an episode that never submits
  gets :data:`NO_SUBMIT_REWARD` = −4.0, below everything.  So every invalid episode is
  strictly below every valid one, as for single answers.

The reported research channels are ``deflation`` = −priority(R1)·Δ (plus any R7 change)
and ``tool_cost`` = −cost·calls; with M = 1 and no calls the reward equals ``card.reward``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import norm

from gymkit.card import ScoreCard
from gymkit.verifiers.channels import VALID_FLOOR_WIDTH, soft_floor
from gymkit.verifiers.pbo import expected_max_sharpe

__all__ = ["NO_SUBMIT_REWARD", "TOOL_COST", "VALID_FLOOR", "ResearchReward", "deflation",
           "effective_trials", "mean_pnl_corr", "research_reward", "soft_floor", "sr0"]

#: Cost of one non-submit tool call, in reward units.
TOOL_COST = 0.02
#: Reward of an episode that ends without a submission (below every card's invalid band).
NO_SUBMIT_REWARD = -4.0
#: Width of the valid band below 0 (the card's soft floor: valid rewards are >= -VALID_FLOOR).
VALID_FLOOR = VALID_FLOOR_WIDTH




def _unit(pnl: np.ndarray) -> np.ndarray | None:
    """``pnl`` centred and scaled to unit norm with exactly rounded sums; None when flat."""
    x = np.asarray(pnl, dtype=np.float64).ravel()
    if x.size < 2 or not np.all(np.isfinite(x)):
        return None
    x = x - math.fsum(x) / x.size
    ss = math.fsum(x * x)
    return x / math.sqrt(ss) if ss > 0.0 else None


def mean_pnl_corr(pnls: Sequence[np.ndarray]) -> float:
    """ρ̄: the mean pairwise Pearson correlation of the daily P&L series ``pnls`` (a flat or
    non-finite series, or two of different lengths, count as correlation 0); 0.0 for fewer
    than two series.  Exactly rounded sums: bit-identical in any process and any order."""
    units = [_unit(p) for p in pnls]
    m = len(units)
    if m < 2:
        return 0.0
    corrs = []
    for i in range(m):
        for j in range(i + 1, m):
            a, b = units[i], units[j]
            if a is not None and b is not None and a.size == b.size:
                corrs.append(min(1.0, max(-1.0, math.fsum(a * b))))
    return math.fsum(corrs) / (m * (m - 1) // 2)


def effective_trials(pnls: Sequence[np.ndarray]) -> float:
    """N̂ = ρ̄ + (1 − ρ̄)·M for the M trials' P&L series (module doc; Bailey & López de
    Prado 2014), at least 1; M for M <= 1."""
    m = len(pnls)
    if m <= 1:
        return float(m)
    return max(1.0, m - (m - 1) * mean_pnl_corr(pnls))


def sr0(n: float, sigma: float) -> float:
    """The DSR's expected maximum of ``n`` (real, >= 2) independent trials of std ``sigma``:
    σ·((1 − γ)Φ⁻¹(1 − 1/n) + γΦ⁻¹(1 − 1/(n·e))), :func:`expected_max_sharpe` at a real n."""
    if not n >= 2.0:
        raise ValueError(f"sr0 needs n >= 2, got {n!r}")
    if isinstance(n, int) or float(n).is_integer():
        return expected_max_sharpe(int(n), sigma)
    g = float(np.euler_gamma)
    return float(sigma * ((1 - g) * norm.ppf(1 - 1 / n) + g * norm.ppf(1 - 1 / (n * math.e))))


def deflation(trial_scores: Sequence[float], pnls: Sequence[np.ndarray] | None = None) -> float:
    """Δ for the trials' R1 scores and (optional) their daily P&L series (module doc): SR0 at
    N̂ with σ̂² = Σ(s − s̄)²/(N̂ − 1); without ``pnls`` the trials count as uncorrelated
    (N̂ = M).  A trial whose score is not finite is no trial.  0 for M <= 1."""
    keep = [i for i, v in enumerate(trial_scores) if math.isfinite(v)]
    if pnls is not None and len(pnls) != len(trial_scores):
        raise ValueError(f"deflation: {len(trial_scores)} scores but {len(pnls)} P&L series")
    if len(keep) < 2:
        return 0.0
    x = np.asarray([trial_scores[i] for i in keep], dtype=np.float64)
    n_eff = float(x.size) if pnls is None else effective_trials([pnls[i] for i in keep])
    ss = math.fsum((x - math.fsum(x) / x.size) ** 2)
    if not n_eff > 1.0 or ss == 0.0:
        return 0.0
    sigma = math.sqrt(ss / (n_eff - 1.0))
    delta = sr0(n_eff, sigma) if n_eff >= 2.0 else (n_eff - 1.0) * sr0(2, sigma)
    return max(0.0, delta)


@dataclass(frozen=True)
class ResearchReward:
    """One episode's reward and how it was reached (JSON-ready via :meth:`to_dict`)."""

    reward: float
    valid: bool
    submitted: bool
    card_reward: float | None
    n_trials: int                         # M, distinct valid forms
    n_calls: int
    deflation: float                      # Δ, in R1 units
    channels: dict[str, float] = field(default_factory=dict)  # card channels after deflation
    research_channels: dict[str, float] = field(default_factory=dict)
    n_effective: float = 0.0              # N̂, the effective number of independent trials

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict."""
        return {"reward": self.reward, "valid": self.valid, "submitted": self.submitted,
                "card_reward": self.card_reward, "n_trials": self.n_trials,
                "n_calls": self.n_calls, "deflation": self.deflation,
                "n_effective": self.n_effective, "channels": dict(self.channels), "research_channels": dict(self.research_channels)}


def research_reward(card: ScoreCard | None, trial_scores: Sequence[float], n_calls: int,
                    priorities: Mapping[str, float], ic_cap_without_cpcv: float,
                    tool_cost: float = TOOL_COST,
                    trial_pnls: Sequence[np.ndarray] | None = None) -> ResearchReward:
    """The episode reward of the submitted ``card`` (None: no submit) given the R1 scores of
    every trial (the submitted one included), their daily train P&L series in the same order
    (None: count them as uncorrelated) and the number of non-submit calls."""
    cost = -tool_cost * n_calls + 0.0
    if trial_pnls is not None and len(trial_pnls) != len(trial_scores):
        raise ValueError(f"research_reward: {len(trial_scores)} trial scores but "
                         f"{len(trial_pnls)} P&L series")
    keep = [i for i, v in enumerate(trial_scores) if math.isfinite(v)]
    n_eff = (float(len(keep)) if trial_pnls is None
             else effective_trials([trial_pnls[i] for i in keep]))
    if card is None:
        return ResearchReward(NO_SUBMIT_REWARD, False, False, None, len(trial_scores), n_calls,
                              0.0, {}, {"deflation": 0.0, "tool_cost": cost}, n_eff)
    if not card.valid:
        return ResearchReward(float(card.reward), False, True, float(card.reward),
                              len(trial_scores), n_calls, 0.0, dict(card.channels),
                              {"deflation": 0.0, "tool_cost": cost}, n_eff)
    delta = deflation(trial_scores, trial_pnls)
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
                          delta, ch, {"deflation": defl, "tool_cost": cost}, n_eff)
