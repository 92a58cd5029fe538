"""Benchmark: full score cards on the default market, with R3 off (issue 6's scope) and on.

Measures ``env.score(answer)`` for one answer and ``env.score_group(12 answers)`` plus
``env.group_advantages`` for a group, on ``us46-default`` (train panel 3,304 × 46, 3,050
judged days, 98 seeded archive entries), with the environment built once (the warm case a
trainer sees).  Two evaluator-cache regimes, both reported:

* **cold eval cache** — ``DEFAULT_CACHE.clear()`` before every single answer / every group:
  a new formula pays every kernel (sub-trees shared only inside the group);
* **warm eval cache** — the same answers re-scored: evaluation is a cache hit, so the
  number is the verifier's own cost (gate, book, CPCV, factors, novelty, channels).

Two environments: ``us46-default`` without ``jepa_stress`` (every channel but R3: the scope
of issue 6's targets) and ``us46-default`` as shipped (R3 re-scores each valid answer in the
kept stress world: one more evaluation + backtest, phase ``stress``).

Per-phase split: the mean of each card's ``timings`` (seconds → ms).  Prints markdown.

Run: ``.venv/bin/python benchmarks/bench_score.py [--reps 30] [--scope no-r3|full|both]``
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np

import gymkit
from gymkit.card import TIMING_PHASES
from gymkit.dsl.cache import DEFAULT_CACHE

SINGLE = [
    "rank(-ts_sum(returns, 5))",
    "rank(group_neutralize(-ts_sum(returns, 5), sector))",
    "rank(ts_std(volume, 20) / ts_mean(volume, 20) * ts_std(returns, 250) / ts_std(returns, 20))",
    "rank(ts_corr(close, volume, 10))",
    "(close - open) / ((high - low) + 0.001)",
    "rank(ts_delta(close, 63))",
    "-ts_corr(rank(open), rank(volume), 10)",
    "rank(ts_std(returns, 63))",
]

# A plausible GRPO group: one brief, 12 samples, variations on a few templates (so they share
# sub-trees), one repeat, one invalid answer.
GROUP = [
    "rank(ts_std(volume, 20) / ts_mean(volume, 20) / ts_std(returns, 20))",
    "rank(ts_std(volume, 20) / ts_mean(volume, 20) * ts_std(returns, 250) / ts_std(returns, 20))",
    "rank(ts_std(volume, 10) / ts_mean(volume, 10))",
    "rank(ts_max(volume / vwap, 11) / ts_mean(close, 21))",
    "rank(ts_std(volume, 20) / ts_std(close, 20))",
    "rank(-ts_sum(returns, 5))",
    "rank(group_neutralize(-ts_sum(returns, 5), sector))",
    "rank(ts_corr(close, volume, 10))",
    "rank(volume / adv(20))",
    "rank(ts_std(volume, 20) / ts_mean(volume, 20) / ts_std(returns, 20))",
    "rank(ts_mean(close, 250))",
    "rank(ts_std(returns, 20)",
]


def _tag(f: str) -> str:
    return f"<alpha>{f}</alpha>"


def _phase_means(cards) -> dict[str, float]:
    return {k: 1000 * float(np.mean([c.timings[k] for c in cards])) for k in TIMING_PHASES}


def _measure(env, reps: int) -> list[tuple[str, list[float], list]]:
    for f in SINGLE + GROUP:  # JIT-load every kernel once
        env.score(_tag(f))
    rows = []
    # ------------------------------------------------------------ one answer
    for regime in ("cold", "warm"):
        wall, cards = [], []
        for _ in range(reps):
            for f in SINGLE:
                if regime == "cold":
                    DEFAULT_CACHE.clear()
                t = time.perf_counter()
                cards.append(env.score(_tag(f)))
                wall.append(time.perf_counter() - t)
        rows.append((f"one answer, {regime} eval cache", wall, cards))
    # ------------------------------------------------------------ a group of 12
    for regime in ("cold", "warm"):
        wall, cards = [], []
        answers = [_tag(f) for f in GROUP]
        for _ in range(reps):
            if regime == "cold":
                DEFAULT_CACHE.clear()
            t = time.perf_counter()
            cs = env.score_group(answers)
            env.group_advantages(cs)
            wall.append(time.perf_counter() - t)
            cards.extend(cs)
        rows.append((f"group of 12 + GDPO, {regime} eval cache", wall, cards))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--scope", choices=("no-r3", "full", "both"), default="both")
    args = ap.parse_args()

    t0 = time.perf_counter()
    full = gymkit.make("us46-default")
    t_make = time.perf_counter() - t0
    t0 = time.perf_counter()
    gymkit.make("us46-default")
    t_make2 = time.perf_counter() - t0
    envs = []
    if args.scope in ("no-r3", "both"):
        channels = tuple(c for c in full.config.channels if c != "jepa_stress")
        envs.append(("R3 off (issue 6 scope)", gymkit.make("us46-default", channels=channels)))
    if args.scope in ("full", "both"):
        names = ", ".join(w.name for w in full.setup.worlds)
        envs.append((f"us46-default as shipped (R3 on, stress worlds: {names})", full))

    print(f"machine: {platform.machine()} {platform.processor() or ''} {os.cpu_count()} cores, "
          f"python {platform.python_version()}, numpy {np.__version__}, "
          f"load avg {os.getloadavg()[0]:.2f}")
    print(f"make('us46-default'): first {t_make:.2f} s (archive seeding), again {1000 * t_make2:.1f} ms "
          f"(seed cached)")
    for title, env in envs:
        rows = _measure(env, args.reps)
        print(f"\n#### {title}\n")
        print("| case | median ms | p90 ms | " + " | ".join(TIMING_PHASES) + " |")
        print("|---|---|---|" + "---|" * len(TIMING_PHASES))
        for name, wall, cards in rows:
            ph = _phase_means(cards)
            med, p90 = 1000 * statistics.median(wall), 1000 * float(np.percentile(wall, 90))
            print(f"| {name} | {med:.2f} | {p90:.2f} | "
                  + " | ".join(f"{ph[k]:.2f}" for k in TIMING_PHASES) + " |")
    print(f"\n(phases: mean per answer, ms; group rows: per answer inside the group; "
          f"load avg at end {os.getloadavg()[0]:.2f})")

if __name__ == "__main__":
    main()
