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

#: One line of semantics per operator (DESIGN §3); a test keeps it equal to the operator table.
OPERATOR_NOTES: dict[str, str] = {
    "or": "a || b: 1 if either is non-zero, else 0 (NaN propagates)",
    "and": "a && b: 1 if both are non-zero, else 0",
    "lt": "a < b: 1 or 0", "le": "a <= b: 1 or 0", "gt": "a > b: 1 or 0",
    "ge": "a >= b: 1 or 0", "eq": "a == b: 1 or 0", "ne": "a != b: 1 or 0",
    "add": "a + b", "sub": "a - b", "mul": "a * b", "div": "a / b (division by 0 is NaN)",
    "power": "a ^ b", "neg": "-a",
    "where": "c ? a : b: a where c is non-zero, else b",
    "abs": "abs(x)", "log": "log(x), NaN for x <= 0", "sign": "sign(x) in {-1, 0, 1}",
    "sqrt": "sqrt(x), NaN for x < 0", "signed_power": "signed_power(x, a) = sign(x)*|x|^a",
    "min": "min(x, y) element-wise", "max": "max(x, y) element-wise",
    "rank": "rank(x): cross-sectional rank in [0, 1] each day (ties averaged)",
    "scale": "scale(x) = x / sum(|x|) each day",
    "group_neutralize": "group_neutralize(x, level): x demeaned within sector/industry groups",
    "delay": "delay(x, d): x d sessions ago",
    "ts_delta": "ts_delta(x, d) = x - delay(x, d)",
    "ts_mean": "ts_mean(x, d): mean of the last d sessions",
    "ts_std": "ts_std(x, d): standard deviation (ddof=1) of the last d sessions",
    "ts_sum": "ts_sum(x, d): sum of the last d sessions",
    "ts_max": "ts_max(x, d): max of the last d sessions",
    "ts_min": "ts_min(x, d): min of the last d sessions",
    "ts_product": "ts_product(x, d): product of the last d sessions",
    "ts_decay_linear": "ts_decay_linear(x, d): linearly weighted mean, today heaviest",
    "ts_ema": "ts_ema(x, d): exponential mean, alpha = 2/(d+1)",
    "ts_skew": "ts_skew(x, d): skewness of the last d sessions",
    "ts_kurt": "ts_kurt(x, d): excess kurtosis of the last d sessions",
    "ts_slope": "ts_slope(x, d): OLS slope of x on 0..d-1",
    "ts_rank": "ts_rank(x, d): share of the other d-1 values below today's, in [0, 1]",
    "ts_argmax": "ts_argmax(x, d): sessions since the max of the last d (0 = today)",
    "ts_argmin": "ts_argmin(x, d): sessions since the min of the last d (0 = today)",
    "ts_corr": "ts_corr(x, y, d): rolling correlation over d sessions",
    "ts_cov": "ts_cov(x, y, d): rolling covariance over d sessions",
    "adv": "adv(d): mean daily dollar volume (close*volume) over d sessions",
}


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
