"""Evaluator speed: warm evaluate() per formula vs the pandas reference, bandwidth, cold start.

Run:  .venv/bin/python benchmarks/bench_evaluate.py [--repeat 7] [--skip-real] [--skip-cold]
                                                    [--baseline-kernels OLD_KERNELS.py]
      .venv/bin/python benchmarks/bench_evaluate.py --cards-base OLD_TREE [--repeat 5]
Prints a Markdown report (paste into benchmarks/RESULTS.md, section "Evaluator (issue 4)").

``--baseline-kernels`` takes a copy of an earlier dsl/kernels.py (a standalone module: it
imports only numpy/numba) and adds a same-process before/after: each kernel case and each
formula is timed with the baseline's KERNELS and the current ones alternately (the
evaluator's KERNELS table is swapped in place), so load on the shared box hits both alike.

``--cards-base`` times whole score cards instead: ``env.score`` of the 101 alphas
(dsl/alpha101.tsv) on ``us46-default`` with R3 off, parse and eval caches cleared before
every answer, CPU time per card.  Worker processes alternate between ``OLD_TREE`` (an
unpacked ``git archive`` of an earlier commit, imported in place of this checkout) and this
tree, ``--repeat`` rounds each; the report is the sum over formulas of each formula's median,
the ratio new / old, and whether every card's JSON (timings excluded) is byte-identical.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import importlib
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "evaluator"))

from pandas_reference import reference_evaluate  # noqa: E402

from gymkit.dsl import node_count, parse  # noqa: E402
from gymkit.dsl.cache import EvalCache  # noqa: E402
from gymkit.dsl.errors import DSLError  # noqa: E402
from gymkit.dsl.evaluator import evaluate  # noqa: E402
from gymkit.dsl.kernels import KERNELS, mul, ts_mean  # noqa: E402

CURRENT = dict(KERNELS)

SEEDS = ["rank(ts_max(volume / vwap, 11) / ts_mean(close, 21))",
         "rank(ts_std(volume / (high - low), 34))"]


def _median_time(fn, repeat: int) -> float:
    fn()  # warm (JIT/cache files loaded, panel-derived fields built)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


@contextlib.contextmanager
def _kernels(table: dict):
    """Run the evaluator on ``table``'s kernels (KERNELS is swapped in place, then restored)."""
    KERNELS.update(table)
    try:
        yield
    finally:
        KERNELS.update(CURRENT)


def _ab_times(fn, baseline: dict, repeat: int) -> tuple[float, float]:
    """Median (before, after) of ``fn`` with the baseline and current kernels, alternated."""
    with _kernels(baseline):
        fn()
    fn()
    before, after = [], []
    for _ in range(repeat):
        with _kernels(baseline):
            t0 = time.perf_counter()
            fn()
            before.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        fn()
        after.append(time.perf_counter() - t0)
    return statistics.median(before), statistics.median(after)


def _formulas() -> list[tuple[str, str]]:
    rows = csv.DictReader(resources.files("gymkit.dsl").joinpath("alpha101.tsv").open(),
                          delimiter="\t")
    return [(f"#{r['id']}", r["formula"]) for r in rows] + [
        (f"seed{i + 1}", f) for i, f in enumerate(SEEDS)]


def bench_panel(name: str, panel, repeat: int, ref_repeat: int,
                baseline: dict | None = None) -> list[str]:
    lines = [f"### {name}: T={panel.T}, N={panel.N}", "",
             "| formula | nodes | evaluate, no cache (ms) | cache hit (ms) | pandas ref (ms) | ratio |",
             "|---|---|---|---|---|---|"]
    rows = []
    befores: list[tuple[str, int, float, float]] = []
    skipped = []
    for label, text in _formulas():
        expr = parse(text)
        try:
            evaluate(expr, panel, cache=None)
        except DSLError:  # needs a field/group this panel lacks (cap on the real panel)
            skipped.append(label)
            continue
        ours = _median_time(lambda e=expr: evaluate(e, panel, cache=None), repeat)
        cache = EvalCache()
        hit = _median_time(lambda t=text, c=cache: evaluate(t, panel, cache=c), repeat)
        ref = _median_time(lambda e=expr: reference_evaluate(e, panel), ref_repeat)
        rows.append((label, node_count(expr), ours, hit, ref))
        if baseline is not None:
            befores.append((label, node_count(expr), *_ab_times(
                lambda e=expr: evaluate(e, panel, cache=None), baseline, repeat)))
    for label, n, ours, hit, ref in rows:
        if label.startswith("seed") or label in ("#1", "#2", "#3", "#12", "#41", "#101"):
            lines.append(f"| {label} | {n} | {ours * 1e3:.3f} | {hit * 1e3:.3f} | "
                         f"{ref * 1e3:.1f} | {ref / ours:.0f}x |")
    ours_all = [r[2] for r in rows]
    ratios = [r[4] / r[2] for r in rows]
    ten = [r[2] for r in rows if 8 <= r[1] <= 12]
    per_node = [r[2] / r[1] for r in rows]
    lines += ["", f"All {len(rows)} formulas: median evaluate {statistics.median(ours_all) * 1e3:.2f} ms "
              f"(max {max(ours_all) * 1e3:.2f} ms, total {sum(ours_all) * 1e3:.0f} ms); "
              f"median per node {statistics.median(per_node) * 1e6:.0f} µs; "
              f"8-12-node formulas ({len(ten)}): median {statistics.median(ten) * 1e3:.2f} ms; "
              f"ratio vs pandas reference: median {statistics.median(ratios):.0f}x, "
              f"min {min(ratios):.0f}x, max {max(ratios):.0f}x; "
              f"cache-hit median {statistics.median([r[3] for r in rows]) * 1e6:.0f} µs."
              + (f" Skipped (field/group missing): {', '.join(skipped)}." if skipped else ""), ""]
    if befores:
        ten_b = [(b, a) for _, n, b, a in befores if 8 <= n <= 12]
        lines += [f"Same-process before/after (baseline kernels vs current, alternated, median of "
                  f"{repeat}): all {len(befores)} formulas median "
                  f"{statistics.median([b for _, _, b, _ in befores]) * 1e3:.2f} -> "
                  f"{statistics.median([a for _, _, _, a in befores]) * 1e3:.2f} ms; "
                  f"8-12-node ({len(ten_b)}) median {statistics.median([b for b, _ in ten_b]) * 1e3:.2f}"
                  f" -> {statistics.median([a for _, a in ten_b]) * 1e3:.2f} ms; speed-up per "
                  f"formula median {statistics.median([b / a for _, _, b, a in befores]):.2f}x "
                  f"(min {min(b / a for _, _, b, a in befores):.2f}x, "
                  f"max {max(b / a for _, _, b, a in befores):.2f}x).", ""]
    return lines


def bench_bandwidth(panel, repeat: int) -> list[str]:
    big = np.ones(64 * 2**20 // 8)
    dst = np.empty_like(big)
    copy = _median_time(lambda: np.copyto(dst, big), repeat)
    bw = 2 * big.nbytes / copy  # read + write
    close, volume = panel.field("close"), panel.field("volume")
    nbytes = close.nbytes
    t_mul = _median_time(lambda: mul(close, volume), repeat * 3)
    t_mean = _median_time(lambda: ts_mean(close, 10), repeat * 3)
    t_eval = _median_time(lambda: evaluate("close * volume", panel, cache=None), repeat * 3)
    return [
        "### Bytes moved vs memory bandwidth", "",
        f"numpy copy of 64 MiB: {bw / 1e9:.1f} GB/s (read+write), the bound used below.",
        f"- kernel mul(close, volume): 3 × {nbytes / 2**20:.2f} MiB in {t_mul * 1e6:.0f} µs = "
        f"{3 * nbytes / t_mul / 1e9:.1f} GB/s ({3 * nbytes / t_mul / bw:.0%} of bound; "
        f"the arrays fit in cache, so the bound is DRAM, not the cache level they live in)",
        f"- evaluate('close * volume') incl. parse/checks: {t_eval * 1e6:.0f} µs",
        f"- kernel ts_mean(close, 10): 2 × {nbytes / 2**20:.2f} MiB in {t_mean * 1e6:.0f} µs = "
        f"{2 * nbytes / t_mean / 1e9:.1f} GB/s ({2 * nbytes / t_mean / bw:.0%}; block "
        f"suffix + prefix sums, row-major: one fused pass per row plus the block suffix sweep)", ""]


KERNEL_CASES = [
    ("ts_sum(close, 10)", "ts_sum", ("close", 10)), ("ts_mean(close, 21)", "ts_mean", ("close", 21)),
    ("ts_std(volume, 34)", "ts_std", ("volume", 34)), ("ts_skew(close, 20)", "ts_skew", ("close", 20)),
    ("ts_corr(close, volume, 10)", "ts_corr", ("close", "volume", 10)),
    ("ts_cov(close, volume, 10)", "ts_cov", ("close", "volume", 10)),
    ("ts_slope(close, 10)", "ts_slope", ("close", 10)),
    ("ts_max(volume, 3)", "ts_max", ("volume", 3)), ("ts_max(volume, 11)", "ts_max", ("volume", 11)),
    ("ts_argmax(close, 10)", "ts_argmax", ("close", 10)), ("ts_max(close, 60)", "ts_max", ("close", 60)),
    ("ts_rank(close, 10)", "ts_rank", ("close", 10)), ("ts_rank(close, 60)", "ts_rank", ("close", 60)),
    ("rank(close)", "rank", ("close",)), ("ts_decay_linear(close, 10)", "ts_decay_linear", ("close", 10)),
    ("ts_product(close, 10)", "ts_product", ("close", 10)), ("ts_ema(close, 10)", "ts_ema", ("close", 10)),
    ("ts_delta(close, 1)", "ts_delta", ("close", 1)), ("mul(close, volume)", "mul", ("close", "volume")),
    ("ts_kurt(close, 20)", "ts_kurt", ("close", 20)), ("ts_std(close, 5)", "ts_std", ("close", 5)),
    ("ts_corr(close, volume, 60)", "ts_corr", ("close", "volume", 60)),
    ("ts_rank(close, 5)", "ts_rank", ("close", 5)), ("ts_min(close, 11)", "ts_min", ("close", 11)),
    ("lt(close, open)", "lt", ("close", "open")), ("power(close, 0.5)", "power", ("close", 0.5)),
    ("power(close, 2)", "power", ("close", 2.0)),
]


def bench_kernels(panel, repeat: int, baseline: dict | None = None) -> list[str]:
    """Warm median of single kernels on the panel's fields (and the baseline's, alternated)."""
    if baseline is None:
        lines = ["### Single kernels (warm median)", "", "| kernel | ms |", "|---|---|"]
    else:
        lines = ["### Single kernels (warm median; baseline vs current alternated, same process)",
                 "", "| kernel | before ms | after ms | x |", "|---|---|---|---|"]
    for label, op, args in KERNEL_CASES:
        real = [panel.field(a) if isinstance(a, str) else a for a in args]
        if baseline is None:
            t = _median_time(lambda op=op, real=real: KERNELS[op](*real), repeat * 7)
            lines.append(f"| {label} | {t * 1e3:.3f} |")
            continue
        b, a = _ab_times(lambda op=op, real=real: KERNELS[op](*real), baseline, repeat * 7)
        lines.append(f"| {label} | {b * 1e3:.3f} | {a * 1e3:.3f} | {b / a:.1f} |")
    return [*lines, ""]


_COLD = ("import time; t=time.perf_counter(); from gymkit.dsl.evaluator import evaluate; "
         "from gymkit.data.default import default_market; p=default_market(); "
         "t1=time.perf_counter(); evaluate('rank(ts_corr(close, volume, 10)) + ts_rank(vwap, 5)',"
         " p); t2=time.perf_counter(); print(f'{t1-t:.2f} {t2-t1:.2f}')")


def bench_cold() -> list[str]:
    lines = ["### Cold start (fresh process: import + default market + first evaluate)", ""]
    with tempfile.TemporaryDirectory() as empty:
        for label, env in (("numba cache cold (empty NUMBA_CACHE_DIR)",
                            {**os.environ, "NUMBA_CACHE_DIR": empty}),
                           ("numba cache warm", dict(os.environ))):
            out = subprocess.run([sys.executable, "-c", _COLD], env=env, capture_output=True,
                                 text=True, check=True).stdout.split()
            lines.append(f"- {label}: import+load {out[0]} s, first evaluate {out[1]} s")
    return [*lines, ""]


# One worker: argv = [tree or "", rounds]; prints {"times": {id: [s...]}, "cards": {id: sha256}}.
_CARD_WORKER = r"""
import hashlib, json, sys, time
tree, rounds = sys.argv[1], int(sys.argv[2])
sys.path = [p for p in sys.path if p not in ("", ".")]  # not the checkout via the cwd
if tree:  # import gymkit from ``tree`` instead of this checkout (editable-install finder)
    import __editable___gymkit_0_2_1_finder as finder
    for pkg in list(finder.MAPPING):
        sub = {"gymkit": "gymkit", "gymkit.dsl": "dsl", "gymkit.verifiers": "verifiers",
               "gymkit.jepa": "jepa", "gymkit.data": "data"}[pkg]
        finder.MAPPING[pkg] = f"{tree}/{sub}"
import gymkit
from gymkit.dsl.cache import DEFAULT_CACHE
from gymkit.dsl.parser import _parse_cached
assert gymkit.__file__.startswith(tree or gymkit.__file__), gymkit.__file__
full = gymkit.make("us46-default")
env = gymkit.make("us46-default", channels=tuple(c for c in full.config.channels
                                                 if c != "jepa_stress"))
rows = [line.split("\t")[:2] for line in open(sys.argv[3]).read().splitlines()[1:] if line]
times = {i: [] for i, _ in rows}
cards = {}
for i, f in rows:  # warm-up: JIT-load every kernel once
    env.score(f"<alpha>{f}</alpha>")
for _ in range(rounds):
    for i, f in rows:
        DEFAULT_CACHE.clear()
        _parse_cached.cache_clear()
        t = time.process_time()
        card = env.score(f"<alpha>{f}</alpha>")
        times[i].append(time.process_time() - t)
        cards[i] = hashlib.sha256(card.to_json().encode()).hexdigest()
print(json.dumps({"times": times, "cards": cards}))
"""


def bench_cards(base: Path, repeat: int, new_tree: Path | None = None) -> list[str]:
    """Whole cards of the 101 alphas, ``base`` tree vs ``new_tree`` (default: this checkout),
    alternating worker processes."""
    import json

    tsv = ROOT / "dsl" / "alpha101.tsv"
    runs: dict[str, list[dict]] = {"old": [], "new": []}
    for _ in range(repeat):
        for label, tree in (("old", str(base.resolve())),
                            ("new", str(new_tree.resolve()) if new_tree else "")):
            out = subprocess.run([sys.executable, "-c", _CARD_WORKER, tree, "1", str(tsv)],
                                 capture_output=True, text=True, check=True, cwd="/").stdout
            runs[label].append(json.loads(out.strip().splitlines()[-1]))
    med = {label: {i: statistics.median(r["times"][i][0] for r in rs) for i in rs[0]["times"]}
           for label, rs in runs.items()}
    old, new = (1000 * sum(med[k].values()) for k in ("old", "new"))
    ratios = sorted(med["new"][i] / med["old"][i] for i in med["old"])
    same = all(r["cards"] == runs["old"][0]["cards"] for rs in runs.values() for r in rs)
    return ["### Whole card, 101 alphas, us46-default with R3 off (CPU ms, sum of medians)", "",
            f"- old ({base}): {old:.1f} ms; new ({new_tree or 'this checkout'}): {new:.1f} ms; ratio new/old {new / old:.3f} "
            f"(per-formula median {statistics.median(ratios):.3f}, range "
            f"{ratios[0]:.2f}–{ratios[-1]:.2f}); {repeat} alternating rounds",
            f"- cards byte-identical (JSON without timings, all rounds, both trees): {same}", ""]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--ref-repeat", type=int, default=1)
    ap.add_argument("--skip-real", action="store_true")
    ap.add_argument("--skip-cold", action="store_true")
    ap.add_argument("--baseline-kernels", type=Path, default=None,
                    help="a copy of an earlier dsl/kernels.py to A/B against, same process")
    ap.add_argument("--cards-base", type=Path, default=None,
                    help="an earlier tree (git archive) to A/B whole cards against, then exit")
    ap.add_argument("--cards-new", type=Path, default=None,
                    help="with --cards-base: the tree to compare (default: this checkout)")
    args = ap.parse_args()
    if args.cards_base is not None:
        print("\n".join([f"load average at start: {os.getloadavg()[0]:.2f}",
                         *bench_cards(args.cards_base, args.repeat, args.cards_new),
                         f"load average at end: {os.getloadavg()[0]:.2f}"]))
        return
    baseline = None
    if args.baseline_kernels is not None:
        sys.path.insert(0, str(args.baseline_kernels.resolve().parent))
        baseline = dict(importlib.import_module(args.baseline_kernels.stem).KERNELS)
    from gymkit.data.default import default_market
    market = default_market()
    out = [f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
           f"Python {platform.python_version()}, numpy {np.__version__}; "
           f"command: `{' '.join(['.venv/bin/python', *sys.argv])}`", ""]
    out.append(f"load average at start: {os.getloadavg()[0]:.2f}")
    out += bench_kernels(market, args.repeat, baseline)
    out += bench_panel("default market", market, args.repeat, args.ref_repeat, baseline)
    if not args.skip_real:
        from gymkit.data import real_panel
        try:
            out += bench_panel("real 46-stock panel", real_panel(), args.repeat, args.ref_repeat,
                               baseline)
        except (FileNotFoundError, OSError) as err:
            out += [f"real panel skipped: {err}", ""]
    out += bench_bandwidth(market, args.repeat)
    if not args.skip_cold:
        out += bench_cold()
    out.append(f"load average at end: {os.getloadavg()[0]:.2f}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
