"""Benchmark: evaluate + rank-book cost per cell as the universe grows (issue 22).

For N in {46, 500, 3000} stocks (seeded synthetic OHLCV panels, T = 3,556 sessions) and a
few formulas, times in ONE process, interleaved, CPU time, median of ``--reps``:

* gymkit: ``evaluate(formula, panel, cache=None)`` and ``book_pnl`` (rank → demean →
  gross 1 → gross P&L, turnover, legs, IC) over the judged rows;
* pandas: the same formula with vectorised DataFrame operations on the wide (T, N) frame,
  then ``rank(axis=1)`` → demean → gross 1 → P&L and turnover;
* polars: the same on the long (date, stock) frame with ``over`` windows.

Reports ns per cell (time / (T·N)) and the growth exponent in N (least-squares slope of
log time against log N over the three sizes; 1.0 is linear).  ``--memory`` instead reports
the peak RSS of one evaluate + book at N = 3,000, T = 10,000 (a separate process each).

Run: ``.venv/bin/python benchmarks/bench_scale.py [--reps 5] [--sizes 46,500,3000]``
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import polars as pl

from gymkit.audit.lookahead import synthetic_panel
from gymkit.dsl import evaluate
from gymkit.verifiers import book_pnl, forward_open_returns

T = 3556
BURN_IN = 260
FORMULAS = {
    "rank(-ts_sum(returns, 5))": "reversal",
    "-ts_corr(rank(open), rank(volume), 10)": "corr_of_ranks",
    "rank(ts_std(returns, 20) / ts_mean(volume, 20))": "vol_ratio",
}


# ------------------------------------------------------------------ pandas reference
def pandas_values(name: str, f: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The formula ``name`` with vectorised pandas on wide frames (same semantics up to rounding)."""
    ret = f["close"] / f["close"].shift(1) - 1.0
    if name == "reversal":
        return _pd_rank(-ret.rolling(5).sum())
    if name == "corr_of_ranks":
        return -_pd_rank(f["open"]).rolling(10).corr(_pd_rank(f["volume"]))
    return _pd_rank(ret.rolling(20).std() / f["volume"].rolling(20).mean())


def _pd_rank(x: pd.DataFrame) -> pd.DataFrame:
    r = x.rank(axis=1)
    return (r - 1.0).div(x.notna().sum(axis=1) - 1.0, axis=0)


def pandas_book(values: pd.DataFrame, fwd: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Centred average ranks over Σ|·|, then gross P&L and turnover per judged day."""
    v = values.iloc[BURN_IN:]
    c = v.rank(axis=1).sub(v.notna().sum(axis=1).add(1.0).mul(0.5), axis=0)
    w = c.div(c.abs().sum(axis=1), axis=0).fillna(0.0)
    gross = (w * fwd.iloc[BURN_IN:].fillna(0.0)).sum(axis=1)
    turnover = w.diff().abs().sum(axis=1)
    return gross, turnover


# ------------------------------------------------------------------ polars reference
def polars_frame(panel) -> pl.DataFrame:
    """The panel as a long (date, stock) frame sorted by stock then date."""
    t, n = panel.T, panel.N
    return pl.DataFrame({
        "date": np.tile(np.arange(t), n), "stock": np.repeat(np.arange(n), t),
        **{k: np.asarray(getattr(panel, k)).T.reshape(-1) for k in ("open", "close", "volume")},
        "fwd": forward_open_returns(panel.open).T.reshape(-1),
    })


def _pl_rank(e: pl.Expr) -> pl.Expr:
    r = e.rank("average").over("date")
    return (r - 1.0) / (e.is_not_null().sum().over("date") - 1.0)


def polars_run(name: str, df: pl.DataFrame) -> pl.DataFrame:
    """The formula and its book: gross P&L and turnover per judged day."""
    df = df.with_columns(ret=pl.col("close") / pl.col("close").shift(1).over("stock") - 1.0)
    if name == "reversal":
        df = df.with_columns(s=-pl.col("ret").rolling_sum(5).over("stock"))
    elif name == "corr_of_ranks":
        df = df.with_columns(ro=_pl_rank(pl.col("open")), rv=_pl_rank(pl.col("volume")))
        df = df.with_columns(v=-pl.rolling_corr(pl.col("ro"), pl.col("rv"), window_size=10).over("stock"))
    else:
        df = df.with_columns(a=pl.col("ret").rolling_std(20).over("stock"),
                             b=pl.col("volume").rolling_mean(20).over("stock"))
        df = df.with_columns(s=pl.col("a") / pl.col("b"))
    if name != "corr_of_ranks":
        df = df.with_columns(v=_pl_rank(pl.col("s")))
    v = df.with_columns(v=pl.col("v").fill_nan(None)).filter(pl.col("date") >= BURN_IN)
    c = pl.col("v").rank("average").over("date") - 0.5 * (pl.col("v").is_not_null().sum().over("date") + 1.0)
    v = v.with_columns(c=c).with_columns(w=(pl.col("c") / pl.col("c").abs().sum().over("date")).fill_null(0.0))
    v = v.with_columns(dw=(pl.col("w") - pl.col("w").shift(1).over("stock")).abs())
    return v.group_by("date").agg((pl.col("w") * pl.col("fwd").fill_nan(0.0).fill_null(0.0)).sum().alias("gross"),
                                  pl.col("dw").sum().alias("turnover"))


# ------------------------------------------------------------------ timing
def _cpu(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def measure(n: int, reps: int) -> dict[str, dict[str, float]]:
    """Median CPU seconds per formula for gymkit evaluate / book and the two references."""
    panel = synthetic_panel(seed=n, t=T, n=n)
    fwd = forward_open_returns(panel.open)
    rows = slice(BURN_IN, T)
    frames = {k: pd.DataFrame(np.asarray(getattr(panel, k))) for k in ("open", "close", "volume")}
    fwd_pd = pd.DataFrame(fwd)
    df = polars_frame(panel)
    out: dict[str, dict[str, float]] = {}
    for text, name in FORMULAS.items():
        values = evaluate(text, panel, cache=None)  # warm the kernels
        book_pnl(values, fwd, rows)
        cases = {
            "evaluate": lambda text=text: evaluate(text, panel, cache=None),
            "book": lambda values=values: book_pnl(values, fwd, rows),
            "pandas": lambda name=name: pandas_book(pandas_values(name, frames), fwd_pd),
            "polars": lambda name=name: polars_run(name, df),
        }
        times: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(reps):
            for k, fn in cases.items():
                times[k].append(_cpu(fn))
        out[name] = {k: statistics.median(v) for k, v in times.items()}
    return out


def exponent(sizes: list[int], secs: list[float]) -> float:
    """Least-squares slope of log(seconds) on log(N)."""
    x = np.log(np.asarray(sizes, float))
    y = np.log(np.asarray(secs, float))
    return float(np.polyfit(x, y, 1)[0])


def peak_memory(n: int, t: int) -> None:
    """Print the peak RSS of one evaluate + book above the built panel (Linux: the peak is
    reset through /proc/self/clear_refs once the panel and forward returns exist)."""
    panel = synthetic_panel(seed=1, t=t, n=n)
    fwd = forward_open_returns(panel.open)
    for text in FORMULAS:  # compile at a small size first: the peak is the data's
        small = synthetic_panel(seed=1, t=300, n=70)
        book_pnl(evaluate(text, small, cache=None), forward_open_returns(small.open), slice(BURN_IN, 300))
    cell = t * n * 8 / 2**30
    for text in FORMULAS:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        base = _status_gib("VmRSS")
        values = evaluate(text, panel, cache=None)
        book_pnl(values, fwd, slice(BURN_IN, t))
        peak = _status_gib("VmHWM")
        del values
        print(f"N={n}, T={t}, {text}: peak {peak:.2f} GiB, {peak - base:.2f} GiB above the panel "
              f"({(peak - base) / cell:.1f} (T, N) float64 arrays of {cell:.2f} GiB)")


def _status_gib(key: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 2**20
    raise KeyError(key)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--sizes", default="46,500,3000")
    ap.add_argument("--memory", action="store_true", help="peak RSS at N = 3,000, T = 10,000")
    ap.add_argument("--memory-child", nargs=2, type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.memory_child:
        peak_memory(*args.memory_child)
        return
    if args.memory:
        subprocess.run([sys.executable, __file__, "--memory-child", "3000", "10000"], check=True)
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"machine: {platform.machine()} {platform.processor() or ''} {os.cpu_count()} cores, "
          f"python {platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}, "
          f"polars {pl.__version__}, load avg {os.getloadavg()[0]:.2f}")
    results = {n: measure(n, args.reps) for n in sizes}
    print("\n| formula | N | gymkit evaluate ns/cell | gymkit book ns/cell | gymkit total ms "
          "| pandas ms | polars ms | pandas / gymkit | polars / gymkit |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in FORMULAS.values():
        for n in sizes:
            r = results[n][name]
            g = r["evaluate"] + r["book"]
            cells = T * n
            print(f"| {name} | {n} | {1e9 * r['evaluate'] / cells:.1f} | {1e9 * r['book'] / cells:.1f} | "
                  f"{1e3 * g:.1f} | {1e3 * r['pandas']:.1f} | {1e3 * r['polars']:.1f} | "
                  f"{r['pandas'] / g:.1f}x | {r['polars'] / g:.1f}x |")
    if len(sizes) > 1:
        print("\n| formula | growth exponent in N: evaluate | book | pandas | polars |")
        print("|---|---|---|---|---|")
        for name in FORMULAS.values():
            e = {k: exponent(sizes, [results[n][name][k] for n in sizes])
                 for k in ("evaluate", "book", "pandas", "polars")}
            print(f"| {name} | {e['evaluate']:.2f} | {e['book']:.2f} | {e['pandas']:.2f} | {e['polars']:.2f} |")
    print(f"\n(load avg at end {os.getloadavg()[0]:.2f}; one process, CPU time, median of {args.reps})")


if __name__ == "__main__":
    main()
