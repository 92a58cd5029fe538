"""Benchmark: full score cards (all active channels, R3 off) on the default market.

Measures ``env.score(answer)`` for one answer and ``env.score_group(12 answers)`` plus
``env.group_advantages`` for a group, on ``us46-default`` (train panel 3,304 × 46, 3,050
judged days, 98 seeded archive entries), with the environment built once (the warm case a
trainer sees).  Two evaluator-cache regimes, both reported:

* **cold eval cache** — ``DEFAULT_CACHE.clear()`` before every single answer / every group:
  a new formula pays every kernel (sub-trees shared only inside the group);
* **warm eval cache** — the same answers re-scored: evaluation is a cache hit, so the
  number is the verifier's own cost (gate, book, CPCV, factors, novelty, channels).

Per-phase split: the mean of each card's ``timings`` (seconds → ms).  Prints markdown.

Run: ``.venv/bin/python benchmarks/bench_score.py [--reps 30]``
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()

    t0 = time.perf_counter()
    env = gymkit.make("us46-default")
    t_make = time.perf_counter() - t0
    t0 = time.perf_counter()
    gymkit.make("us46-default")
    t_make2 = time.perf_counter() - t0
    for f in SINGLE + GROUP:  # JIT-load every kernel once
        env.score(_tag(f))

    rows = []
    # ------------------------------------------------------------ one answer
    for regime in ("cold", "warm"):
        wall, cards = [], []
        for _ in range(args.reps):
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
        for _ in range(args.reps):
            if regime == "cold":
                DEFAULT_CACHE.clear()
            t = time.perf_counter()
            cs = env.score_group(answers)
            env.group_advantages(cs)
            wall.append(time.perf_counter() - t)
            cards.extend(cs)
        rows.append((f"group of 12 + GDPO, {regime} eval cache", wall, cards))

    print(f"machine: {platform.machine()} {platform.processor() or ''} {os.cpu_count()} cores, "
          f"python {platform.python_version()}, numpy {np.__version__}, "
          f"load avg {os.getloadavg()[0]:.2f}")
    print(f"make('us46-default'): first {t_make:.2f} s (archive seeding), again {1000 * t_make2:.1f} ms "
          f"(seed cached)\n")
    print("| case | median ms | p90 ms | " + " | ".join(TIMING_PHASES) + " |")
    print("|---|---|---|" + "---|" * len(TIMING_PHASES))
    for name, wall, cards in rows:
        ph = _phase_means(cards)
        med, p90 = 1000 * statistics.median(wall), 1000 * float(np.percentile(wall, 90))
        print(f"| {name} | {med:.2f} | {p90:.2f} | " + " | ".join(f"{ph[k]:.2f}" for k in TIMING_PHASES) + " |")
    print("\n(phases: mean per answer, ms; group rows: per answer inside the group)")


if __name__ == "__main__":
    main()
