"""Benchmark: evaluate + rank-book cost per cell as the universe grows (issue 22).

For N in {46, 500, 3000} stocks (seeded synthetic OHLCV panels, T = 3,556 sessions) and a
few formulas, times in ONE process, interleaved, CPU time, median of ``--reps``:

* gymkit: ``evaluate(formula, panel, cache=None)`` and ``book_pnl`` (rank → demean →
  gross 1 → gross P&L, turnover, legs, IC) over the judged rows, with the stock-major
  forward returns built once per window as the oracle does (before 2026-12-02 the book
  timing rebuilt them on every call: 2 transposed (T, N) copies, about half the book's
  time at N = 3,000);
* pandas: the same formula with vectorised DataFrame operations on the wide (T, N) frame,
  then ``rank(axis=1)`` → demean → gross 1 → P&L and turnover;
* polars: the same on the long (date, stock) frame with ``over`` windows.

Reports ns per cell (time / (T·N)) and the growth exponent in N (least-squares slope of
log time against log N over the three sizes; 1.0 is linear).  ``--memory`` instead reports
the peak RSS of one evaluate + book, then of one whole card (``env.score``, R3 off), at
N = 3,000, T = 10,000 (in a separate process).

``--card`` instead times the whole score card per phase (CPU time, cold evaluation cache per
answer, median of ``--reps``): ``env.score`` on a ``us46-default`` environment built on the
synthetic panel (R3 off, novelty against a full 1,024-entry archive), its phases re-timed
one by one through the same library calls (parse, evaluate, book + costs, metrics, CPCV,
factor regression, novelty), and the stress phase (R3) with two synthetic stress worlds
(seeded panels on the same dates and tickers) on the CPCV-only path
(``gymkit.scoring.run_stress``, memo cleared) next to the full backtest per world
(``gymkit.stress_ranking.rescore``: metrics and factor regression too, the worlds' factor
models built once beforehand); each phase's system CPU time (the kernel's page faults
on fresh arrays) is also reported, and the stress phase's user time against the card's;
pandas and polars run the same formulas' evaluate + rank-book in the same loop.

Run: ``.venv/bin/python benchmarks/bench_scale.py [--reps 5] [--sizes 46,500,3000] [--card]``
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
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
from gymkit.verifiers.book import ForwardByStock, split_forward_returns

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
    # the stock-major forward returns are built once per window, as the oracle's context does
    # (and as pandas/polars get their frames built once)
    by_stock = ForwardByStock(split_forward_returns(fwd), rows)
    frames = {k: pd.DataFrame(np.asarray(getattr(panel, k))) for k in ("open", "close", "volume")}
    fwd_pd = pd.DataFrame(fwd)
    df = polars_frame(panel)
    out: dict[str, dict[str, float]] = {}
    for text, name in FORMULAS.items():
        values = evaluate(text, panel, cache=None)  # warm the kernels
        book_pnl(values, fwd, rows, fwd_by_stock=by_stock)
        cases = {
            "evaluate": lambda text=text: evaluate(text, panel, cache=None),
            "book": lambda values=values: book_pnl(values, fwd, rows, fwd_by_stock=by_stock),
            "pandas": lambda name=name: pandas_book(pandas_values(name, frames), fwd_pd),
            "polars": lambda name=name: polars_run(name, df),
        }
        times: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(reps):
            for k, fn in cases.items():
                times[k].append(_cpu(fn))
        out[name] = {k: statistics.median(v) for k, v in times.items()}
    return out


CARD_PHASES = ("parse", "evaluate", "book", "metrics", "cpcv", "factors", "novelty")


def measure_card(n: int, reps: int) -> dict[str, dict[str, float]]:
    """Median CPU seconds per formula: the whole card, each phase, stress new/old, pandas, polars."""
    import dataclasses

    import gymkit
    import gymkit.scoring as sc
    from gymkit.dsl.cache import DEFAULT_CACHE
    from gymkit.jepa.worlds import StressWorld
    from gymkit.stress_ranking import rescore as world_score
    from gymkit.verifiers import compute_metrics
    from gymkit.verifiers.context import window_context

    panel = synthetic_panel(seed=n, t=T, n=n)
    full = gymkit.make("us46-default")
    channels = tuple(c for c in full.config.channels if c != "jepa_stress")
    env = gymkit.make("us46-default", market=panel, channels=channels,
                      archive={"seed": "none", "capacity": 1024})
    rng = np.random.default_rng(n)
    while len(env.archive) < env.archive.capacity:  # novelty against a full archive
        env.archive.add(f"entry{len(env.archive)}", rng.normal(0.0, 0.01, env.n_days))
    s = env.setup
    worlds = []
    for k in (1, 2):  # synthetic stress worlds: other seeded prices on the same dates and tickers
        worlds.append(StressWorld(f"world{k}", "synthetic", 0.0, _world_like(s.train, 10_000 * k + n)))
    stressed = dataclasses.replace(s, worlds=tuple(worlds))
    ctx = window_context(s.train, s.split, "train", s.burn_in)
    _ = ctx.factors  # the factor model is built once per window, not per answer
    frames = {k: pd.DataFrame(np.asarray(getattr(panel, k))) for k in ("open", "close", "volume")}
    fwd_pd = pd.DataFrame(forward_open_returns(panel.open))
    df = polars_frame(panel)
    out: dict[str, dict[str, float]] = {}
    for text, name in FORMULAS.items():
        answer = f"<alpha>{text}</alpha>"
        env.score(answer)  # load every kernel once
        for w in worlds:
            world_score(sc.book_input(parse_expr(text)), w.panel, s.split, s.costs, s.cpcv, s.burn_in, None)

        def phases(answer: str = answer, name: str = name) -> dict[str, float]:
            DEFAULT_CACHE.clear()
            t: dict[str, float] = {}
            st = _timed(t, "parse", lambda: sc.gate_text(answer, s))
            values = _timed(t, "evaluate", lambda: sc.evaluate(sc.book_input(st.expr), s.train, cache=s.cache))
            wv = values[int(np.searchsorted(s.train.dates, ctx.panel.dates[0])):][: ctx.panel.T]
            book = _timed(t, "book", lambda: book_pnl(wv, ctx.fwd, ctx.judged.rows, fwd_by_stock=ctx.fwd_by_stock))
            cost = _timed(t, "book", lambda: s.costs.daily(book.weights, book.turnover, None), add=True)
            net = book.gross - cost
            m = _timed(t, "metrics", lambda: compute_metrics(net, book.gross, book.turnover, book.ic,
                                                             book.long, book.short, ctx.market))
            _timed(t, "cpcv", lambda: s.cpcv.evaluate(net, full_sharpe=m.sharpe))
            _timed(t, "factors", lambda: ctx.factors.regress(book.gross, cost))
            run = sc.gate_text(answer, s)
            sc.run_oracle(run, s)
            sc.gate_book(run, s)
            _timed(t, "novelty", lambda: sc.novelty_of(run, env.archive, 0))
            DEFAULT_CACHE.clear()
            _timed(t, "card", lambda: env.score(answer))
            DEFAULT_CACHE.clear()
            stressed.stress_memo._entries.clear()
            _timed(t, "stress", lambda: sc.run_stress(run, stressed))
            DEFAULT_CACHE.clear()
            _timed(t, "stress_full_path", lambda: [world_score(sc.book_input(run.expr), w.panel, s.split,
                                                               s.costs, s.cpcv, s.burn_in, s.cache)
                                                   for w in worlds])
            _timed(t, "stress_rescored", lambda: sc.run_stress(run, stressed))
            _timed(t, "pandas", lambda: pandas_book(pandas_values(name, frames), fwd_pd))
            _timed(t, "polars", lambda: polars_run(name, df))
            return t

        runs = [phases() for _ in range(reps)]
        out[name] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    DEFAULT_CACHE.clear()
    return out


def _world_like(train, seed: int):
    """A synthetic stress world of ``train``: seeded prices and volumes on its dates and tickers."""
    other = synthetic_panel(seed=seed, t=train.T, n=train.N)
    return train.replace(**{k: np.asarray(getattr(other, k)) for k in ("open", "high", "low", "close", "volume")},
                         cap=np.asarray(other.close) * 1e6)


def parse_expr(text: str):
    """The parsed formula (all fields and levels allowed)."""
    from gymkit.dsl import parse

    return parse(text)


def _timed(t: dict[str, float], key: str, fn, add: bool = False):
    """Run ``fn``; record its CPU seconds (user + system) under ``key`` and the system part
    (the kernel's page faults on fresh arrays) under ``key + ":sys"``."""
    s0, t0 = resource.getrusage(resource.RUSAGE_SELF).ru_stime, time.process_time()
    r = fn()
    dt = time.process_time() - t0
    ds = resource.getrusage(resource.RUSAGE_SELF).ru_stime - s0
    t[key] = t.get(key, 0.0) + dt if add else dt
    t[key + ":sys"] = t.get(key + ":sys", 0.0) + ds if add else ds
    return r


def print_card(sizes: list[int], reps: int) -> None:
    """Markdown tables of :func:`measure_card` over ``sizes``."""
    res = {n: measure_card(n, reps) for n in sizes}
    print("\n| formula | N | card ms | " + " | ".join(CARD_PHASES) + " | card ns/cell | book ns/cell "
          "| stress ms (CPCV-only) | stress ms (full backtest) | stress re-scored ms | stress / card "
          "| card sys ms | stress sys ms | stress user / card user "
          "| pandas ms | polars ms | pandas / (eval+book) | polars / (eval+book) |")
    print("|---|---|---|" + "---|" * len(CARD_PHASES) + "---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in FORMULAS.values():
        for n in sizes:
            r = res[n][name]
            eb = max(r["evaluate"] + r["book"], 1e-9)
            print(f"| {name} | {n} | {1e3 * r['card']:.1f} | "
                  + " | ".join(f"{1e3 * r[k]:.2f}" for k in CARD_PHASES)
                  + f" | {1e9 * r['card'] / (T * n):.1f} | {1e9 * r['book'] / (T * n):.1f} "
                  f"| {1e3 * r['stress']:.1f} | {1e3 * r['stress_full_path']:.1f} | {1e3 * r['stress_rescored']:.2f} "
                  f"| {r['stress'] / r['card']:.2f} | {1e3 * r['card:sys']:.1f} | {1e3 * r['stress:sys']:.1f} "
                  f"| {(r['stress'] - r['stress:sys']) / max(r['card'] - r['card:sys'], 1e-9):.2f} "
                  f"| {1e3 * r['pandas']:.1f} | {1e3 * r['polars']:.1f} "
                  f"| {r['pandas'] / eb:.1f}x | {r['polars'] / eb:.1f}x |")
    if len(sizes) > 1:
        print("\n| formula | growth exponent in N: card | book | stress |")
        print("|---|---|---|---|")
        for name in FORMULAS.values():
            e = [exponent(sizes, [res[n][name][k] for n in sizes]) for k in ("card", "book", "stress")]
            print(f"| {name} | {e[0]:.2f} | {e[1]:.2f} | {e[2]:.2f} |")


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
    # the whole card (R3 off, no archive): env.score with a cold evaluation cache; its window
    # context (forward returns, factor model) is built by the first answer and kept
    import gymkit
    from gymkit.dsl.cache import DEFAULT_CACHE

    channels = tuple(c for c in gymkit.make("us46-default").config.channels if c != "jepa_stress")
    warm = gymkit.make("us46-default", market=synthetic_panel(seed=1, t=800, n=70), channels=channels,
                       archive={"seed": "none"})
    for text in FORMULAS:  # compile the card's kernels at a small size
        warm.score(f"<alpha>{text}</alpha>")
    env = gymkit.make("us46-default", market=panel, channels=channels, archive={"seed": "none"})
    for i, text in enumerate(FORMULAS):
        DEFAULT_CACHE.clear()
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        base = _status_gib("VmRSS")
        env.score(f"<alpha>{text}</alpha>")
        peak = _status_gib("VmHWM")
        first = " (first answer: builds the window context)" if i == 0 else ""
        print(f"N={n}, T={t}, whole card {text}: peak {peak:.2f} GiB, {peak - base:.2f} GiB above "
              f"the process before it{first}")


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
    ap.add_argument("--card", action="store_true", help="the whole card per phase, stress included")
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
    if args.card:
        print_card(sizes, args.reps)
        print(f"\n(load avg at end {os.getloadavg()[0]:.2f}; one process, CPU time, median of {args.reps})")
        return
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
