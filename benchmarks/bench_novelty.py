"""Novelty look-ups: one float32 pass for a group vs a float64 pass per answer, on the cards users score.

    python benchmarks/bench_novelty.py [--reps 9]

``us46-default`` (R3 on, the shipped worlds), its archive filled to its 1,024 entries with
seeded P&L rows (a training run fills it with committed answers).  Two variants alternate in
one process, the evaluation cache and R3's memo cleared before every call:

* plain — the definition, one float64 pass over the archive per answer (what
  ``NoveltyArchive.nearest`` computed before: the argmax of |correlations()|);
* fast  — ``nearest_many``: one float32 pass for all the group's answers, float64 only for
  the entries within the bound.

Reported: median CPU ms of one card (``env.score``) for three formulas, and of a group of 12
(``env.score_group``, 12 paper alphas); the cards' JSON of the two variants must be equal.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

FORMULAS = {"reversal": "rank(-ts_sum(returns, 5))",
            "corr_of_ranks": "-ts_corr(rank(open), rank(volume), 10)",
            "vol_ratio": "rank(ts_std(volume, 20) / ts_std(returns, 20))"}


def _plain_many(self, pnls):
    from gymkit.verifiers.archive import Neighbour

    out = []
    for pnl in pnls:
        if not self._forms:
            out.append(None)
            continue
        corr = self.correlations(pnl)
        i = int(np.argmax(np.abs(corr)))
        out.append(Neighbour(i, self._forms[i], float(corr[i])))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=9)
    args = ap.parse_args()
    import gymkit
    from gymkit.dsl.cache import DEFAULT_CACHE
    from gymkit.seed_archive import alpha101_formulas
    from gymkit.verifiers.archive import NoveltyArchive

    fast = NoveltyArchive.nearest_many
    env = gymkit.make("us46-default")
    rng = np.random.default_rng(0)
    while len(env.archive) < env.archive.capacity:
        env.archive.add(f"entry{len(env.archive)}", rng.normal(0.0, 0.01, env.n_days))
    s = env.setup
    print(f"archive {len(env.archive)} entries x {env.n_days} days; R3 worlds {len(s.worlds)}")
    cases = {name: [f"<alpha>{t}</alpha>"] for name, t in FORMULAS.items()}
    cases["group of 12 alphas"] = [f"<alpha>{t}</alpha>" for _, t in alpha101_formulas()[:12]]
    for name, answers in cases.items():
        times: dict[str, list[float]] = {"plain": [], "fast": []}
        cards: dict[str, list[str]] = {}
        env.score_group(answers)  # load every kernel once
        for _ in range(args.reps):
            for variant, fn in (("plain", _plain_many), ("fast", fast)):
                NoveltyArchive.nearest_many = fn
                DEFAULT_CACHE.clear()
                s.stress_memo._entries.clear()
                t0 = time.process_time()
                got = env.score_group(answers)
                times[variant].append(time.process_time() - t0)
                cards[variant] = [c.to_json() for c in got]
        NoveltyArchive.nearest_many = fast
        med = {k: 1e3 * statistics.median(v) for k, v in times.items()}
        print(f"{name}: plain {med['plain']:.2f} ms, fast {med['fast']:.2f} ms, ratio {med['fast'] / med['plain']:.3f}; "
              f"cards equal: {cards['plain'] == cards['fast']}", flush=True)


if __name__ == "__main__":
    main()
