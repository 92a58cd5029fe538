"""Benchmark: the verifier core for one formula given its values, vs the pandas reference.

Measures ``gymkit.verifiers.backtest`` (book + costs + metrics + CPCV + factor
regression; the per-window context — forward returns, factor model — is built once
per dataset and cached, as in scoring) on the default market (46 × 3,556), train mode
(TrainCosts) and holdout mode (RealisticCosts), against the independent pandas
implementation in tests/verifiers/pandas_reference.py doing the same per-formula work
(its factor returns also precomputed once).  Prints a table; record it in
benchmarks/RESULTS.md.

Run: ``.venv/bin/python benchmarks/bench_verify.py [--reps 300] [--ref-reps 5] [--corpus-reps 30]``

``--corpus-reps N`` (default 30; 0 skips it) also times a train backtest of each of the
101 paper alphas (their values on the default market): the distribution of the
per-formula medians says how typical the four formulas above are.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from gymkit.data import DEFAULT_SPLIT, default_market
from gymkit.dsl.evaluator import evaluate
from gymkit.verifiers import RealisticCosts, TrainCosts, backtest, window_context

FORMULAS = [
    "rank(-ts_sum(returns, 5))",
    "ts_std(volume, 20) / ts_mean(volume, 20)",
    "(close - open) / ((high - low) + 0.001)",
    "sign(ts_delta(close, 1))",
]


def _load_reference():
    path = Path(__file__).resolve().parents[1] / "tests" / "verifiers" / "pandas_reference.py"
    spec = importlib.util.spec_from_file_location("bench_pandas_reference", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _median_ms(fn, reps: int) -> tuple[float, float, float]:
    """(median, p10, min) wall ms of ``reps`` calls (min/p10: the least disturbed calls on a shared box)."""
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return statistics.median(ts) * 1e3, ts[len(ts) // 10] * 1e3, ts[0] * 1e3


def _corpus(panel, reps: int) -> None:
    """Train backtest medians over the 101 paper alphas (values computed once each)."""
    import csv
    from importlib import resources

    rows = csv.DictReader(resources.files("gymkit.dsl").joinpath("alpha101.tsv").open(), delimiter="\t")
    meds = []
    for r in rows:
        try:
            v = np.array(evaluate(r["formula"], panel))
        except Exception:  # a field this panel lacks
            continue
        backtest(v, panel)
        meds.append(_median_ms(lambda v=v: backtest(v, panel), reps)[0])
    meds.sort()
    share = sum(m <= 1.0 for m in meds) / len(meds)
    print(f"101 alphas, train backtest given the values ({len(meds)} formulas, {reps} calls each): "
          f"median of medians {statistics.median(meds):.3f} ms, p90 {meds[int(0.9 * len(meds))]:.3f} ms, "
          f"max {meds[-1]:.3f} ms; {share:.0%} of the formulas at <= 1 ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--ref-reps", type=int, default=5)
    ap.add_argument("--corpus-reps", type=int, default=30)
    args = ap.parse_args()
    ref = _load_reference()
    panel = default_market()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, "
          f"load {os.getloadavg()[0]:.2f}; python {platform.python_version()}; panel {panel}")
    print(f"{'formula':45s} {'mode':8s} {'ours med ms':>11s} {'ours p10':>9s} {'ours min':>9s} {'pandas ms':>10s} {'ratio':>7s}")
    ratios, ours_all = [], []
    for mode, costs in (("train", TrainCosts()), ("holdout", RealisticCosts())):
        ctx = window_context(panel, DEFAULT_SPLIT, mode)
        _ = ctx.factors
        seen, judged = ref.judged_dates(panel, DEFAULT_SPLIT, mode)
        fwd = ref.forward_returns(ref.frame(panel, "open").loc[seen])
        f_ret = ref.factor_returns(ref.panel_window(panel, seen), fwd, judged)
        for formula in FORMULAS if mode == "train" else FORMULAS[:2]:
            v = np.array(evaluate(formula, panel))
            backtest(v, panel, DEFAULT_SPLIT, mode, costs)  # warm (JIT, context)
            ours, p10, best = _median_ms(
                lambda v=v, mode=mode, costs=costs: backtest(v, panel, DEFAULT_SPLIT, mode, costs), args.reps
            )

            def pandas_once(v=v, mode=mode, costs=costs, f_ret=f_ret):
                r = ref.backtest(v, panel, DEFAULT_SPLIT, mode, costs.to_dict(), with_factors=False)
                ref.regress(r.net, f_ret)

            pd_ms, _, _ = _median_ms(pandas_once, args.ref_reps)
            ratios.append(pd_ms / ours)
            ours_all.append(ours)
            print(f"{formula:45s} {mode:8s} {ours:11.3f} {p10:9.3f} {best:9.3f} {pd_ms:10.1f} {pd_ms / ours:7.0f}x")
    v0 = np.array(evaluate(FORMULAS[0], panel))
    phases: dict[str, list[float]] = {}
    for _ in range(args.reps):
        for k, t in backtest(v0, panel).timings.items():
            phases.setdefault(k, []).append(t)
    print(f"phase timings of a train call, median of {args.reps} (ms):",
          {k: round(statistics.median(t) * 1e3, 3) for k, t in phases.items()})
    print(f"phase timings of a train call, min of {args.reps} (ms):",
          {k: round(min(t) * 1e3, 3) for k, t in phases.items()})
    if args.corpus_reps > 0:
        _corpus(panel, args.corpus_reps)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    print(f"overall: median of medians {statistics.median(ours_all):.3f} ms, "
          f"ratio vs pandas median {statistics.median(ratios):.0f}x (min {min(ratios):.0f}x)")


if __name__ == "__main__":
    main()
