"""Scripted research policies (no model): the references an RL policy must beat.

* :func:`random_formula` — a seeded draw from a small template grammar (fields, time-series
  operators, windows, signs, products and correlations): the "formula a policy might try".
* :func:`mutate` — one local edit of a template formula (window, field, operator, sign).
* :func:`hill_climb` — mutate-and-keep-best within the budget: backtest a start formula,
  then one mutation of the best so far per call left (best = train reward of the backtest),
  then submit the best.
* :func:`best_of_random` — the data-miner: backtest ``budget`` independent random formulas,
  submit the best.  :func:`single_shot` — submit one formula without any call.

Every policy is a pure function of its ``rng`` and the episode: same seed → same transcript.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from .episode import ResearchEpisode, StepResult

__all__ = [
    "Template",
    "best_of_random",
    "hill_climb",
    "mutate",
    "random_formula",
    "random_template",
    "single_shot",
    "valid_start",
]

FIELDS = ("open", "high", "low", "close", "volume", "returns", "vwap")
UNARY = ("ts_delta", "ts_mean", "ts_std", "ts_sum", "ts_rank", "ts_max", "ts_min",
         "ts_decay_linear", "ts_argmax", "ts_argmin", "ts_slope")
WINDOWS = (2, 3, 5, 8, 10, 15, 20, 30, 40, 60)


@dataclass(frozen=True)
class Template:
    """``sign · rank(op1(f1, w1))`` or ``sign · rank(op1(f1, w1)) * rank(op2(f2, w2))`` or
    ``sign · rank(ts_corr(f1, f2, w1))`` (``kind`` 'one', 'product', 'corr')."""

    kind: str
    sign: int
    op1: str
    f1: str
    w1: int
    op2: str = "ts_mean"
    f2: str = "volume"
    w2: int = 5

    def text(self) -> str:
        """The formula text."""
        s = "-" if self.sign < 0 else ""
        if self.kind == "corr":
            return f"{s}rank(ts_corr({self.f1}, {self.f2}, {self.w1}))"
        a = f"rank({self.op1}({self.f1}, {self.w1}))"
        if self.kind == "one":
            return s + a
        return f"{s}{a} * rank({self.op2}({self.f2}, {self.w2}))"


def _pick(rng: np.random.Generator, seq: tuple) -> object:
    return seq[int(rng.integers(len(seq)))]


def random_template(rng: np.random.Generator) -> Template:
    """A seeded random :class:`Template`."""
    kind = str(_pick(rng, ("one", "one", "product", "corr")))
    f1, f2 = (str(x) for x in rng.choice(FIELDS, size=2, replace=False))
    return Template(kind, 1 if rng.random() < 0.5 else -1, str(_pick(rng, UNARY)), f1,
                    int(_pick(rng, WINDOWS)), str(_pick(rng, UNARY)), f2, int(_pick(rng, WINDOWS)))


def valid_start(rng: np.random.Generator, env: Any) -> Template:
    """The first :func:`random_template` draw from ``rng`` that ``env`` scores valid: the start
    formula of the scripted baselines (the benchmark's and ``gymkit train research``'s)."""
    while True:
        start = random_template(rng)
        if env.score(f"<alpha>{start.text()}</alpha>").valid:
            return start


def random_formula(rng: np.random.Generator) -> str:
    """The text of :func:`random_template`."""
    return random_template(rng).text()


def mutate(t: Template, rng: np.random.Generator) -> Template:
    """One local edit of ``t``: a window, a field, an operator or the sign."""
    what = int(rng.integers(5))
    if what == 0:
        return Template(t.kind, t.sign, t.op1, t.f1, int(_pick(rng, WINDOWS)), t.op2, t.f2, t.w2)
    if what == 1:
        f = str(_pick(rng, tuple(x for x in FIELDS if x not in (t.f1, t.f2))))
        return Template(t.kind, t.sign, t.op1, f, t.w1, t.op2, t.f2, t.w2)
    if what == 2 and t.kind != "corr":
        return Template(t.kind, t.sign, str(_pick(rng, UNARY)), t.f1, t.w1, t.op2, t.f2, t.w2)
    if what == 3 and t.kind == "product":
        return Template(t.kind, t.sign, t.op1, t.f1, t.w1, t.op2, t.f2, int(_pick(rng, WINDOWS)))
    return Template(t.kind, -t.sign, t.op1, t.f1, t.w1, t.op2, t.f2, t.w2)


def _train_reward(res: StepResult) -> float:
    """The train reward a backtest reported (−inf for an invalid formula)."""
    r = json.loads(res.observation)["result"]
    return float(r["train_reward"]) if r.get("valid") else -np.inf


def hill_climb(ep: ResearchEpisode, rng: np.random.Generator,
               start: Template | None = None) -> StepResult:
    """Mutate-and-keep-best within the episode's budget, then submit the best (module doc)."""
    best = start if start is not None else random_template(rng)
    if ep.calls_left == 0:
        return ep.submit(best.text())
    best_r = _train_reward(ep.call("backtest", formula=best.text()))
    for _ in range(ep.calls_left):
        cand = mutate(best, rng)
        r = _train_reward(ep.call("backtest", formula=cand.text()))
        if r > best_r:
            best, best_r = cand, r
    return ep.submit(best.text())


def best_of_random(ep: ResearchEpisode, rng: np.random.Generator, n: int | None = None) -> StepResult:
    """Backtest ``n`` (default and at most: the calls left) random formulas, submit the best by train reward."""
    k = ep.calls_left if n is None else min(n, ep.calls_left)
    tries = [random_formula(rng) for _ in range(k)]
    scores = [_train_reward(ep.call("backtest", formula=f)) for f in tries]
    return ep.submit(tries[int(np.argmax(scores))] if tries else random_formula(rng))


def single_shot(ep: ResearchEpisode, formula: str) -> StepResult:
    """Submit ``formula`` without any tool call."""
    return ep.submit(formula)
