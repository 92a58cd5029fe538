"""One formula backtested on one window: formula text or AST + panel + window -> backtest.

:func:`backtest_formula` is the one path from a formula to its backtest: parse (text only),
evaluate on ``panel``, then :func:`gymkit.verifiers.oracle.backtest` in ``window`` mode
('train': the train slice of ``split`` only; 'holdout': the holdout sessions with earlier
sessions as history).  It returns the values too, since reports and audits read them.
:func:`env_backtest` is the same on an environment's own windows: 'train' is the train panel
with the training costs (what scoring sees), 'holdout' the whole market with the holdout
cost model (``holdout_costs``: report/probe only, never scoring).  The holdout protocol
(ledger, holdout score) is :mod:`gymkit.holdout`.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np

from gymkit.data.panel import Panel
from gymkit.data.splits import DEFAULT_SPLIT, Split
from gymkit.dsl.ast import Node
from gymkit.dsl.cache import EvalCache
from gymkit.dsl.evaluator import evaluate
from gymkit.dsl.parser import parse
from gymkit.verifiers.costs import CostModel, cost_model_from_dict
from gymkit.verifiers.cpcv import CPCV
from gymkit.verifiers.oracle import BacktestResult, backtest
from gymkit.verifiers.windows import BURN_IN, MODES

__all__ = ["FormulaBacktest", "backtest_formula", "env_backtest"]


@dataclass(frozen=True)
class FormulaBacktest:
    """A formula's AST, its (T, N) read-only values on the panel, and the window's backtest."""

    expr: Node
    values: np.ndarray
    result: BacktestResult


def backtest_formula(formula: str | Node, panel: Panel, window: str = "train", *,
                     split: Split = DEFAULT_SPLIT, costs: CostModel | None = None,
                     cpcv: CPCV | None = None, burn_in: int = BURN_IN,
                     fields: Collection[str] | None = None,
                     levels: Collection[str] | None = None,
                     cache: EvalCache | None = None) -> FormulaBacktest:
    """Backtest ``formula`` on ``panel`` in ``window`` mode (module doc).

    Text is parsed with ``fields``/``levels`` checked (``None``: not checked); an AST is used
    as given.  ``costs``/``cpcv`` default as in :func:`gymkit.verifiers.oracle.backtest`;
    ``cache`` is the evaluator's sub-expression cache (bits are the same with or without).
    Raises ``DSLError`` for a bad formula, ``ValueError`` naming the problem otherwise.
    """
    if window not in MODES:
        raise ValueError(f"window must be one of {MODES}, got {window!r}")
    expr = parse(formula, fields=fields, levels=levels) if isinstance(formula, str) else formula
    values = evaluate(expr, panel, cache=cache)
    result = backtest(values, panel, split, window, costs, cpcv=cpcv, burn_in=burn_in)
    return FormulaBacktest(expr, values, result)


def env_backtest(env: Any, formula: str | Node, window: str = "train", *,
                 cached: bool = True) -> FormulaBacktest:
    """:func:`backtest_formula` on ``env``'s own window (module doc), with its split, CPCV,
    burn-in, fields and levels; ``cached=False`` evaluates without the environment's cache."""
    s = env.setup
    if window == "train":
        panel, costs = s.train, s.costs
    elif window == "holdout":
        panel, costs = env.market, cost_model_from_dict(env.config.holdout_costs)
    else:
        raise ValueError(f"window must be one of {MODES}, got {window!r}")
    return backtest_formula(formula, panel, window, split=s.split, costs=costs, cpcv=s.cpcv,
                            burn_in=s.burn_in, fields=s.fields, levels=s.levels,
                            cache=s.cache if cached else None)
