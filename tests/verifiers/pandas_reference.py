"""An independent, slow, obvious pandas implementation of the verifier core (DESIGN §4).

Written from the definitions, not from ``gymkit.verifiers``: DataFrame ranks, shifts,
rolling windows, Python sets for CPCV and ``numpy.linalg.lstsq`` for the factor
regression.  The parity tests compare the oracle against it (≤ 1e-9 relative) and the
benchmark measures the oracle's speed-up over it.  Imported by path (see conftest).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

SQRT_252 = np.sqrt(252.0)


def frame(panel, name: str) -> pd.DataFrame:
    """One panel field as a DataFrame indexed by date, columns = tickers."""
    return pd.DataFrame(np.array(panel.field(name)), index=pd.DatetimeIndex(panel.dates), columns=list(panel.tickers))


def weights(values: pd.DataFrame) -> pd.DataFrame:
    """Rank (average ties, NaN excluded) → demean → divide by Σ|w|; < 2 names or Σ|w| = 0 → 0."""
    v = values.where(np.isfinite(values))
    r = v.rank(axis=1, method="average")
    c = r.sub(r.mean(axis=1), axis=0)
    s = c.abs().sum(axis=1)
    w = c.div(s.where(s > 0), axis=0)
    w[v.count(axis=1) < 2] = 0.0
    return w.fillna(0.0)


def forward_returns(open_: pd.DataFrame) -> pd.DataFrame:
    """open(t+2)/open(t+1) − 1, NaN where a price is missing or non-positive."""
    a, b = open_.shift(-1), open_.shift(-2)
    out = b / a - 1.0
    return out.where((a > 0) & (b > 0))


def sharpe(r: pd.Series) -> float:
    """mean/std(ddof=1)·√252; fewer than 2 days or zero variance → 0."""
    if len(r) < 2:
        return 0.0
    sd = r.std(ddof=1)
    return 0.0 if not sd > 1e-12 * abs(r.mean()) else float(r.mean() / sd * SQRT_252)


def cpcv_sets(n_days: int, n_blocks: int = 6, n_test: int = 2, purge: int = 10, embargo: int = 5):
    """[(test positions, in-sample positions)] per split, with Python sets."""
    blocks = [list(b) for b in np.array_split(np.arange(n_days), n_blocks)]
    out = []
    for pair in itertools.combinations(range(n_blocks), n_test):
        test = set()
        drop = set()
        for b in pair:
            lo, hi = blocks[b][0], blocks[b][-1]
            test.update(blocks[b])
            drop.update(range(max(0, lo - purge), lo))
            drop.update(range(hi + 1, min(n_days, hi + 1 + embargo)))
        ins = set(range(n_days)) - test - drop
        out.append((sorted(test), sorted(ins)))
    return out


def cpcv(net: pd.Series, **kw) -> dict:
    """Test and in-sample Sharpes of each split, and mean − 0.5·pstd of the test Sharpes."""
    sets = cpcv_sets(len(net), **kw)
    test = np.array([sharpe(net.iloc[t]) for t, _ in sets])
    ins = np.array([sharpe(net.iloc[i]) for _, i in sets])
    return {"test": test, "is": ins, "score": float(np.mean(test) - 0.5 * np.std(test))}


def _row_median_fill(x: pd.DataFrame) -> pd.DataFrame:
    med = x.median(axis=1, skipna=True)
    return x.apply(lambda col: col.fillna(med))


def costs(w: pd.DataFrame, turnover: pd.Series, spec: dict, panel_close: pd.DataFrame,
          panel_volume: pd.DataFrame) -> pd.Series:
    """Daily costs of the cost-model spec (``to_dict()`` of TrainCosts / RealisticCosts)."""
    bps = spec["fee_bps"] + spec["slippage_bps"] + spec["half_spread_bps"] + spec["fixed_impact_bps"]
    out = bps * 1e-4 * turnover
    if spec["name"] == "train":
        return out
    rets = panel_close / panel_close.shift(1) - 1.0
    sigma = _row_median_fill(rets.rolling(spec["vol_window"]).std().loc[w.index]).fillna(0.0)
    adv = _row_median_fill((panel_close * panel_volume).rolling(spec["adv_window"]).mean().loc[w.index])
    trade = w.diff().abs()
    trade.iloc[0] = w.iloc[0].abs()
    book = spec["book_usd"]
    impact = (trade * spec["impact_k"] * sigma * np.sqrt(book * trade / adv)).where(trade > 0, 0.0).fillna(0.0)
    excess = (w.abs() * book - spec["capacity_adv_share"] * adv).clip(lower=0.0).fillna(0.0) / book
    short = (-w).clip(lower=0.0).sum(axis=1)
    return (out + impact.sum(axis=1) + spec["capacity_bps"] * 1e-4 * excess.sum(axis=1)
            + spec["borrow_bps_per_year"] * 1e-4 / 252 * short)


def factor_returns(panel, fwd: pd.DataFrame, judged: pd.DatetimeIndex) -> pd.DataFrame:
    """Market, size, 12-1 momentum, 5-day reversal, low-vol and price-level rank-book returns
    on the judged days."""
    close, volume = frame(panel, "close"), frame(panel, "volume")
    size = frame(panel, "cap") if panel.cap is not None else (close * volume).rolling(20).mean()
    rets = close / close.shift(1) - 1.0
    sig = {
        "size": -size,
        "momentum": close.shift(21) / close.shift(252) - 1.0,
        "reversal": -(close / close.shift(5) - 1.0),
        "low_vol": -rets.rolling(63).std(),
        "price_level": -np.log(close.where(close > 0)),
    }
    f0 = fwd.loc[judged].fillna(0.0)
    out = {"market": fwd.loc[judged].mean(axis=1, skipna=True).fillna(0.0)}
    for k, v in sig.items():
        out[k] = (weights(v.loc[judged]) * f0).sum(axis=1)
    return pd.DataFrame(out)


def regress(g: pd.Series, f: pd.DataFrame, cost: pd.Series | None = None) -> dict:
    """OLS with intercept by lstsq of the gross P&L g on the factors, then costs charged with
    the share R² to the factors: betas, alpha, r2, raw (net) Sharpe and its additive split
    into the factor and residual parts in the net P&L's own volatility."""
    c = pd.Series(np.zeros(len(g))) if cost is None else pd.Series(np.asarray(cost, dtype=float))
    y = pd.Series(np.asarray(g, dtype=float))
    x = np.column_stack([np.ones(len(f)), f.to_numpy()])
    coef, *_ = np.linalg.lstsq(x, y.to_numpy(), rcond=None)
    resid = y - f.to_numpy() @ coef[1:]
    sse = float(((resid - coef[0]) ** 2).sum())
    sst = float(((y - y.mean()) ** 2).sum())
    r2 = 1 - sse / sst if sst > 0 else 0.0
    net = y - c
    sd = float(net.std(ddof=1))
    scale = np.sqrt(252.0) / sd if sd > 0 else 0.0
    return {"betas": coef[1:], "alpha": float(coef[0]), "raw_sharpe": sharpe(net), "r2": r2,
            "residual_sharpe": float(resid.mean() - (1 - r2) * c.mean()) * scale,
            "factor_sharpe": float(y.mean() - resid.mean() - r2 * c.mean()) * scale}


@dataclass
class RefResult:
    dates: pd.DatetimeIndex
    weights: pd.DataFrame
    gross: pd.Series
    net: pd.Series
    cost: pd.Series
    turnover: pd.Series
    market: pd.Series
    ic: pd.Series
    summary: dict
    cpcv: dict
    factors: dict


def judged_dates(panel, split, mode: str, burn_in: int = 252) -> tuple[pd.DatetimeIndex, pd.DatetimeIndex]:
    """(sessions the mode may see, judged signal dates)."""
    idx = pd.DatetimeIndex(panel.dates)
    if mode == "train":
        seen = idx[(idx >= pd.Timestamp(split.train_start)) & (idx <= pd.Timestamp(split.train_end))]
        judged = seen[burn_in : len(seen) - 2]
    else:
        seen = idx[idx <= pd.Timestamp(split.holdout_end)]
        cand = seen[burn_in : len(seen) - 2]
        judged = cand[cand >= pd.Timestamp(split.holdout_start)]
    return seen, judged


def backtest(values: np.ndarray, panel, split, mode: str, cost_spec: dict, burn_in: int = 252,
             with_factors: bool = True) -> RefResult:
    """The whole oracle, the slow obvious way."""
    seen, judged = judged_dates(panel, split, mode, burn_in)
    vals = pd.DataFrame(np.array(values, dtype=float), index=pd.DatetimeIndex(panel.dates),
                        columns=list(panel.tickers)).loc[seen]
    open_ = frame(panel, "open").loc[seen]
    close, volume = frame(panel, "close").loc[seen], frame(panel, "volume").loc[seen]
    fwd = forward_returns(open_)
    w = weights(vals.loc[judged])
    f = fwd.loc[judged]
    gross = (w * f.fillna(0.0)).sum(axis=1)
    long_ = (w.clip(lower=0) * f.fillna(0.0)).sum(axis=1)
    turnover = w.diff().abs().sum(axis=1)
    turnover.iloc[0] = w.iloc[0].abs().sum()
    cost = costs(w, turnover, cost_spec, close, volume)
    net = gross - cost
    market = f.mean(axis=1, skipna=True).fillna(0.0)
    in_book = vals.loc[judged].notna() & np.isfinite(vals.loc[judged])
    wm = w.where(in_book & f.notna())
    fm = f.where(in_book & f.notna())
    ic = wm.corrwith(fm, axis=1)
    ic[wm.count(axis=1) < 5] = np.nan
    eq = (1 + net).cumprod()
    dd = float((eq / eq.cummax().clip(lower=1.0) - 1).min())
    vm = float(((market - market.mean()) ** 2).sum())
    cov = float(((net - net.mean()) * (market - market.mean())).sum())
    summary = {
        "sharpe": sharpe(net), "gross_sharpe": sharpe(gross), "turnover": float(turnover.mean()),
        "ic": float(ic.mean()) if ic.notna().any() else 0.0, "ic_days": int(ic.notna().sum()),
        "max_drawdown": min(dd, 0.0), "beta": cov / vm if vm > 0 else 0.0,
        "corr": float(net.corr(market)) if net.std() > 0 and market.std() > 0 else 0.0,
        "hit_rate": float((net > 0).mean()), "long_contribution": float(long_.mean()),
        "short_contribution": float((gross - long_).mean()), "mean_return": float(net.mean()),
    }
    cv = cpcv(net)
    fac = (regress(gross, factor_returns(panel_window(panel, seen), fwd, judged), cost)
           if with_factors else {})
    return RefResult(judged, w, gross, net, cost, turnover, market, ic, summary, cv, fac)


class _Window:
    """The rows ``seen`` of a panel, duck-typing what :func:`factor_returns` reads."""

    def __init__(self, panel, seen: pd.DatetimeIndex) -> None:
        mask = pd.DatetimeIndex(panel.dates).isin(seen)
        self.dates = panel.dates[mask]
        self.tickers = panel.tickers
        self._panel, self._mask = panel, mask
        self.cap = None if panel.cap is None else panel.cap[mask]

    def field(self, name: str) -> np.ndarray:
        return self._panel.field(name)[self._mask]


def panel_window(panel, seen: pd.DatetimeIndex) -> _Window:
    """The panel restricted to the sessions the mode may see."""
    return _Window(panel, seen)
