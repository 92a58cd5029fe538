"""The research tools: their OpenAI tool-call schemas and the train-window payloads they return.

Every payload is built from score cards of the environment's train panel (a panel with no
holdout rows) and from nothing else: no fingerprint, timing, path or holdout figure enters a
tool result, so a result depends only on the formula, the environment version and the archive
version.  Floats are rounded to :data:`DIGITS` decimals (a model reads them; rounding is
deterministic).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from gymkit.card import ScoreCard, json_safe
from gymkit.dsl.limits import MAX_CHARS, MAX_DEPTH, MAX_LOOKBACK, MAX_TOKENS, MAX_WINDOW
from gymkit.dsl.operators import OPERATORS

__all__ = ["DIGITS", "OPERATOR_NOTES", "TOOL_NAMES", "TOOL_SPECS", "backtest_payload",
           "compare_payload", "describe_payload", "pnl_corr"]

DIGITS = 4


def _fn(name: str, description: str, props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": props, "required": sorted(props),
                       "additionalProperties": False}}}


_FORMULA = {"type": "string", "description": "one formula in the gymkit DSL, without tags"}

#: The four tools in the OpenAI tool-call (function) format.
TOOL_SPECS: tuple[dict[str, Any], ...] = (
    _fn("backtest", "Backtest a formula on the TRAIN window: validity or the error, CPCV score "
        "and its 15 slice Sharpes, turnover, IC, factor exposure, max |P&L corr| with the "
        "archive and with this episode's earlier attempts, train reward. Costs one call.",
        {"formula": _FORMULA}),
    _fn("compare", "Backtest two formulas on the TRAIN window: their daily P&L correlation and "
        "which is better per reward channel. Costs one call.",
        {"formula_a": _FORMULA, "formula_b": _FORMULA}),
    _fn("describe", "The universe, the fields, the operators with one-line semantics and the "
        "limits. Costs one call.", {}),
    _fn("submit", "Submit your one final formula; ends the episode. Its reward is net of how "
        "many distinct formulas you backtested and of the calls you made.",
        {"formula": _FORMULA}),
)
TOOL_NAMES = tuple(t["function"]["name"] for t in TOOL_SPECS)

_EXPR_NAMES = {"where": ("c", "a", "b"), "signed_power": ("x", "a")}


def _signature(spec: Any) -> str:
    """``name(x, d)`` (or the infix form) of one operator-table row."""
    names = iter(_EXPR_NAMES.get(spec.name, ("x", "y", "z")))
    args = [next(names) if k == "expr" else "d" if k == "window" else k for k in spec.args]
    if spec.name == "where":
        return "c ? a : b"
    if spec.infix and len(args) == 2:
        return f"{args[0]} {spec.infix} {args[1]}"
    if spec.infix and len(args) == 1:
        return f"{spec.infix}{args[0]}"
    return f"{spec.name}({', '.join(args)})"


#: One line of semantics per operator: its signature and the operator table's own ``doc``
#: (gymkit.dsl.operators, the single source), so describe() covers every operator there is.
OPERATOR_NOTES: dict[str, str] = {k: f"{_signature(v)}: {v.doc}" for k, v in OPERATORS.items()}


def _r(x: float | None) -> float | None:
    if x is None:
        return None
    v = float(x)
    return round(v, DIGITS) + 0.0 if math.isfinite(v) else None


def describe_payload(setup: Any, env_id: str) -> dict[str, Any]:
    """What ``describe()`` returns: universe (train window only), fields, operators, limits."""
    train = setup.train
    return json_safe({
        "environment": env_id,
        "universe": {"stocks": int(train.N), "train_sessions": int(train.T),
                     "train_first": str(train.dates[0]), "train_last": str(train.dates[-1]),
                     "book": "daily rank -> demean -> gross 1, filled at the next open"},
        "fields": list(setup.fields), "group_levels": list(setup.levels),
        "operators": {k: OPERATOR_NOTES[k] for k in OPERATORS},
        "limits": {"max_window": MAX_WINDOW, "max_lookback": MAX_LOOKBACK,
                   "max_tokens": MAX_TOKENS, "max_depth": MAX_DEPTH, "max_chars": MAX_CHARS},
    })


def pnl_corr(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation of two daily P&L series (0 when either is flat)."""
    x = a - a.mean()
    y = b - b.mean()
    den = math.sqrt(float(x @ x) * float(y @ y))
    return float(x @ y) / den if den > 0 else 0.0


def backtest_payload(card: ScoreCard, earlier: Sequence[tuple[str, np.ndarray]]) -> dict[str, Any]:
    """The train-window card summary ``backtest`` returns; ``earlier`` = (formula, P&L) of
    this episode's earlier valid attempts (other canonical forms)."""
    if not card.valid:
        err = card.error
        return {"formula": card.formula, "valid": False,
                "error": None if err is None else {"code": err.code, "message": err.message,
                                                   "position": err.position}}
    m = card.metrics
    cp, fa, nov = m["cpcv"], m["factors"], m["novelty"]
    best, best_f = 0.0, None
    for f, pnl in earlier:
        c = abs(pnl_corr(card.pnl, pnl)) if card.pnl is not None else 0.0
        if c > best:
            best, best_f = c, f
    return json_safe({
        "formula": card.formula, "valid": True, "train_reward": _r(card.reward),
        "cpcv": _r(cp["score"]), "cpcv_slice_sharpes": [_r(v) for v in cp["test_sharpes"]],
        "sharpe": _r(m["sharpe"]), "turnover": _r(m["turnover"]), "ic": _r(m["ic"]),
        "factor_exposure": {"factor_sharpe": _r(fa["factor_sharpe"]),
                            "raw_sharpe": _r(fa["raw_sharpe"]), "r2": _r(fa["r2"])},
        "max_abs_corr_archive": _r(nov["max_abs_corr"]),
        "max_abs_corr_earlier": _r(best), "most_correlated_earlier": best_f,
        "channels": {k: _r(v) for k, v in card.channels.items()},
    })


def compare_payload(a: ScoreCard, b: ScoreCard) -> dict[str, Any]:
    """What ``compare`` returns: P&L correlation and the better formula per channel."""
    out: dict[str, Any] = {"formula_a": a.formula, "formula_b": b.formula,
                           "valid_a": a.valid, "valid_b": b.valid}
    if not (a.valid and b.valid):
        for side, c in (("a", a), ("b", b)):
            if c.error is not None:
                out[f"error_{side}"] = {"code": c.error.code, "message": c.error.message}
        return out
    corr = pnl_corr(a.pnl, b.pnl) if a.pnl is not None and b.pnl is not None else 0.0
    better = {}
    for k in a.channels:
        va, vb = _r(a.channels[k]), _r(b.channels.get(k, math.nan))
        better[k] = "tie" if va == vb else "a" if (va or 0.0) > (vb or 0.0) else "b"
    out.update(pnl_corr=_r(corr), train_reward_a=_r(a.reward), train_reward_b=_r(b.reward),
               cpcv_a=_r(a.channels.get("cpcv")), cpcv_b=_r(b.channels.get("cpcv")),
               better=better)
    return json_safe(out)
