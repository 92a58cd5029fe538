"""Benchmark: research-gym policies on the same briefs (issue 25), and the data-mining check.

For each of ``--briefs`` train-split briefs (``generate_briefs()``, in order) a valid start
formula is drawn from :func:`gymkit.research.agent.random_template` with seed ``i`` (drawn
again until valid: an honest researcher writes a formula that passes the gate), then:

* **single-shot**: the start formula submitted with no call (= ``env.score(answer, brief)``);
* **hill climb**: mutate-and-keep-best from that start within the 8-call budget, submit best;
* **best-of-random**: 8 independent random formulas backtested, the best submitted.

Reported per policy: mean research reward (± standard error), the same reward with the
trials counted as uncorrelated (N̂ = M, the rule before the correlation-aware count), mean raw
card reward of the submitted formula (before deflation and tool cost), mean trials M and
effective trials N̂, mean deflation, valid share, and the wall time per episode.  Prints
markdown.

Run: ``.venv/bin/python benchmarks/bench_research.py [--briefs 40]``
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from gymkit.briefs import generate_briefs, split_briefs
from gymkit.research import make_research, research_reward
from gymkit.research.agent import best_of_random, hill_climb, valid_start


def _stats(rows: list[dict]) -> str:
    r = np.array([x["reward"] for x in rows])
    unc = np.array([x["reward_uncorrelated"] for x in rows])
    raw = np.array([x["card_reward"] if x["card_reward"] is not None else math.nan for x in rows])
    se = r.std(ddof=1) / math.sqrt(r.size)
    return (f"{r.mean():+.3f} ± {se:.3f} | {unc.mean():+.3f} | {np.nanmean(raw):+.3f} | "
            f"{np.mean([x['n_trials'] for x in rows]):.1f} | "
            f"{np.mean([x['n_effective'] for x in rows]):.2f} | "
            f"{np.mean([x['deflation'] for x in rows]):.3f} | "
            f"{np.mean([x['valid'] for x in rows]):.0%}")


def _uncorrelated(ep, card) -> float:
    """The episode's reward with its trials counted as uncorrelated (N̂ = M)."""
    env = ep.env
    return research_reward(card, [s for _, s, _ in ep.trials()], ep.calls, env.config.priorities,
                           env.setup.params.ic_cap_without_cpcv, ep.renv.tool_cost).reward


def main() -> None:
    """Run the benchmark and print the markdown table."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--briefs", type=int, default=40)
    args = ap.parse_args()
    t0 = time.perf_counter()
    renv = make_research("us46-research")
    build = time.perf_counter() - t0
    briefs = split_briefs(generate_briefs(), "train")[: args.briefs]
    out: dict[str, list[dict]] = {"single-shot": [], "hill climb": [], "best-of-random": []}
    wall = dict.fromkeys(out, 0.0)
    for i, b in enumerate(briefs):
        start = valid_start(np.random.default_rng(i), renv.env)
        for name in out:
            t = time.perf_counter()
            ep = renv.episode(b.text)
            if name == "single-shot":
                res = ep.submit(start.text())
            elif name == "hill climb":
                res = hill_climb(ep, np.random.default_rng(10_000 + i), start=start)
            else:
                res = best_of_random(ep, np.random.default_rng(20_000 + i))
            wall[name] += time.perf_counter() - t
            out[name].append({**res.info["outcome"],
                              "reward_uncorrelated": _uncorrelated(ep, res.info.get("card"))})
    print(f"us46-research, budget 8, tool cost 0.02, {len(briefs)} train briefs "
          f"(environment built in {build:.1f} s)\n")
    print("| policy | research reward (mean ± se) | same, trials uncorrelated (N̂ = M) | raw "
          "card reward | trials M | effective N̂ | deflation Δ (R1 units) | valid | ms / episode |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, rows in out.items():
        print(f"| {name} | {_stats(rows)} | {1000 * wall[name] / len(rows):.0f} |")


if __name__ == "__main__":
    main()
