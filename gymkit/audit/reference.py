"""A tiny, obvious pandas reference for the native-engine check: a few operators and the book.

Independent of the numba kernels: pandas ``rolling(d, min_periods=d)``, ``shift`` and
``rank(axis=1)``, straight from DESIGN §3–§4.  It covers only what
:data:`REFERENCE_FORMULAS` need — fields, arithmetic, ``neg``, ``rank``, ``delay``,
``ts_delta``, ``ts_sum``, ``ts_mean``, ``ts_std``, ``ts_max`` — not the whole DSL (the test
suite's ``tests/evaluator/pandas_reference.py`` covers every operator).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gymkit.dsl.ast import Call, Field, Node, Num, Window

__all__ = ["REFERENCE_FORMULAS", "reference_evaluate", "reference_gross"]

#: Formulas the native-engine check compares (all within the reference's operator subset).
REFERENCE_FORMULAS: tuple[str, ...] = (
    "rank(-ts_sum(returns, 5))",
    "rank(ts_std(volume, 20) / ts_mean(volume, 20))",
    "(close - open) / ((high - low) + .001)",
    "rank(-ts_delta(close, 3) / ts_std(returns, 21))",
    "rank(ts_max(volume / vwap, 11) / ts_mean(close, 21))",
    "-delay(rank(returns), 2) * 3",
)


def _clean(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.float64)
    a[~np.isfinite(a)] = np.nan
    return a


def _field(panel, name: str) -> np.ndarray:
    if name == "returns":
        c = pd.DataFrame(np.asarray(panel.close))
        return _clean((c / c.shift(1) - 1.0).to_numpy())
    if name == "vwap":
        return _clean((np.asarray(panel.high) + np.asarray(panel.low) + np.asarray(panel.close)) / 3)
    return _clean(getattr(panel, name))


def _rolling(x: np.ndarray, d: int, how: str) -> np.ndarray:
    r = pd.DataFrame(x).rolling(d, min_periods=d)
    return _clean(getattr(r, how)(**({"ddof": 1} if how == "std" else {})).to_numpy())


def reference_evaluate(node: Node, panel) -> np.ndarray | float:
    """Values of ``node`` on ``panel`` by the pandas reference (subset in the module doc)."""
    if isinstance(node, Num):
        return float(node.value)
    if isinstance(node, Field):
        return _field(panel, node.name)
    if not isinstance(node, Call):
        raise ValueError(f"reference cannot evaluate {node!r}")
    op, args = node.op, node.args
    if op in ("add", "sub", "mul", "div"):
        a, b = (reference_evaluate(x, panel) for x in args)
        with np.errstate(all="ignore"):
            out = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                   "div": np.divide}[op](a, b)
        return _clean(out)
    if op == "neg":
        return -reference_evaluate(args[0], panel)  # type: ignore[operator]
    x = reference_evaluate(args[0], panel)
    x = np.broadcast_to(x, (panel.T, panel.N)) if np.ndim(x) == 0 else x
    if op == "rank":
        frame = pd.DataFrame(x)
        r = frame.rank(axis=1, method="average")
        n = frame.notna().sum(axis=1).to_numpy()[:, None]
        with np.errstate(all="ignore"):
            out = np.where(n > 1, (r.to_numpy() - 1) / (n - 1), 0.5)
        return _clean(np.where(frame.notna().to_numpy(), out, np.nan))
    d = args[1].days if isinstance(args[1], Window) else None
    if op == "delay":
        return _clean(pd.DataFrame(x).shift(d).to_numpy())
    if op == "ts_delta":
        return _clean(x - pd.DataFrame(x).shift(d).to_numpy())
    how = {"ts_sum": "sum", "ts_mean": "mean", "ts_std": "std", "ts_max": "max"}.get(op)
    if how is None or d is None:
        raise ValueError(f"reference has no operator {op!r}")
    return _rolling(np.asarray(x, dtype=np.float64), d, how)


def reference_gross(values: np.ndarray, panel, rows: slice) -> np.ndarray:
    """Gross P&L of the DESIGN §4 book on signal rows ``rows``: rank, demean, divide by Σ|w|,
    fill at open(t+1), earn open(t+1) → open(t+2) (a missing forward return counts as 0)."""
    v = pd.DataFrame(values).iloc[rows]
    r = v.rank(axis=1, method="average")
    w = r.sub(r.mean(axis=1), axis=0)
    gross = w.abs().sum(axis=1)
    w = w.div(gross.where(gross > 0), axis=0).fillna(0.0)
    w.loc[(v.notna().sum(axis=1) < 2).to_numpy()] = 0.0
    o = pd.DataFrame(np.asarray(panel.open))
    fwd = (o.shift(-2) / o.shift(-1) - 1.0).iloc[rows]
    fwd = fwd.where(np.isfinite(fwd), 0.0).fillna(0.0)
    return (w.to_numpy() * fwd.to_numpy()).sum(axis=1)
