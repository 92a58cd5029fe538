"""Diagnostic: how much of a stress world's ranking gate is its one bootstrap draw (issue 18).

A world is the frozen model's shifted latents decoded with **one** seeded 63-day block
bootstrap of shocks (world i of the table: seed + i).  The ranking gate's 95% interval is a
bootstrap over *formulas*; it does not see the draw.  This script regenerates every candidate
world (the four channels and the crash regime) on ``--draws`` K draws, draw k of world i
from bootstrap seed ``seed + i + 10·k`` (k = 0 is the manifest's own draw, checked to give
the manifest's gate figures to the bit), re-scores the manifest's labelled formulas in each,
and prints per world and draw the ranking gate, then per world:

* ``passes``: the draws on which the gate passes;
* ``on_mean_drop``: the gate on each formula's drop averaged over the K draws (what a
  world of K draws would be judged on);
* ``drop_rank_corr``: the mean Spearman correlation across formulas of the drops of two
  draws (1.0: R3's drop is the world's; 0: it is the draw's).

Runs in portable mode (re-executes itself), so the figures are the manifest's arithmetic.

    python benchmarks/world_draws.py [--market FILE] [--draws 6] [--worlds crash,volatility]
                                     [--first-seed 20251821]

``--market``: a panel file whose worlds were built by ``gymkit jepa worlds --market FILE``
(its user cache folder); default: the embedded market and the shipped worlds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def main(argv: list[str] | None = None) -> int:
    from gymkit.cli.options import add_market_args
    from gymkit.jepa.generate import ALL_WORLDS

    argv = sys.argv[1:] if argv is None else list(argv)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--market", default=None, help="panel file, read as `gymkit jepa worlds "
                   "--market` read it (same --lenient/--columns/--adjust/--split)")
    add_market_args(p, market=False)
    p.add_argument("--draws", type=int, default=6)
    p.add_argument("--worlds", default=None, help="comma-separated world names (default: all)")
    p.add_argument("--first-seed", type=int, default=None,
                   help="draw k of every world from bootstrap seed FIRST_SEED + k instead "
                        "(fresh draws shared by all worlds; no manifest check)")
    args = p.parse_args(argv)
    from gymkit.jepa.generate import MAX_DRAWS

    if not 1 <= args.draws <= MAX_DRAWS:
        p.error(f"--draws must be 1..{MAX_DRAWS}")
    names = [w.name for w in ALL_WORLDS]
    wanted = names if not args.worlds else args.worlds.split(",")
    if unknown := [w for w in wanted if w not in names]:
        p.error(f"unknown world(s) {unknown}; expected some of {names}")
    from gymkit.jepa import portable

    if os.environ.get(portable.FLAG) != "1":
        return portable.run_portable([__file__, *argv]).returncode
    portable.enter()
    warnings.simplefilter("ignore")
    from gymkit.jepa.generate import draw_seed
    from gymkit.jepa.recheck import ManifestModel
    from gymkit.jepa.worlds import SHIPPED_MANIFEST, world_panel
    from gymkit.stress_ranking import Labelled, RankingSet, gate_figures
    from gymkit.verifiers.costs import TrainCosts
    from gymkit.verifiers.cpcv import CPCV
    from gymkit.verifiers.windows import BURN_IN

    if args.market is None:
        from gymkit.data import DEFAULT_SPLIT, default_market

        train, split = DEFAULT_SPLIT.train(default_market()), DEFAULT_SPLIT
        path = SHIPPED_MANIFEST
    else:
        from gymkit.cli.options import parse_split, read_market
        from gymkit.jepa.train import _user_train
        from gymkit.worlds_cache import MANIFEST_NAME, worlds_dir

        train, split = _user_train(read_market(args), parse_split(args.split))
        path = worlds_dir(train, split) / MANIFEST_NAME
    model = ManifestModel.load(path, train)  # the manifest's directions, selective ones refitted
    man = model.man
    rs = RankingSet([Labelled(**x) for x in man["labelled"]], split, TrainCosts(), CPCV(), BURN_IN)
    entries = {w["name"]: w for w in man["worlds"]}
    seed = man["seed"]
    summary = {}
    for i, spec in enumerate(ALL_WORLDS):
        if spec.name not in entries or spec.name not in wanted:
            continue
        drops, passes = [], []
        for k in range(args.draws):
            t = time.perf_counter()
            draw = draw_seed(seed, i, k) if args.first_seed is None else args.first_seed + k
            wp = world_panel(model.world(spec, draw))
            d = rs.drops(wp)
            g = gate_figures(rs.labelled, [d.tolist()])[0][0]
            if k == 0 and args.first_seed is None and "ranking_gate" in entries[spec.name]:
                if g != entries[spec.name]["ranking_gate"]:
                    raise SystemExit(f"{spec.name}: draw 0 does not reproduce the manifest's gate")
            drops.append(d)
            passes.append(bool(g["ok"]))
            print(json.dumps({"world": spec.name, "draw": draw, "auc": g["auc"],
                              "auc_lo": g["auc_lo"], "static_to_robust": g["static_to_robust"],
                              "ok": g["ok"], "seconds": round(time.perf_counter() - t, 1)}),
                  flush=True)
        mean_gate = gate_figures(rs.labelled, [np.mean(drops, axis=0).tolist()])[0][0]
        pairs = [_spearman(drops[a], drops[b]) for a in range(len(drops))
                 for b in range(a + 1, len(drops))]
        summary[spec.name] = {"passes": f"{sum(passes)}/{len(passes)}",
                              "on_mean_drop": mean_gate,
                              "drop_rank_corr": float(np.mean(pairs)) if pairs else None}
    print(json.dumps({"summary": summary}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
