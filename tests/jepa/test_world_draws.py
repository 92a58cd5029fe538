"""What the ranking gate certifies when a shipped world is drawn again (jepa/README.md "One
draw per world"; the measurement is ``benchmarks/world_draws.py``).

Each kept world of the shipped manifest is regenerated on 6 bootstrap draws: draw k of world i
is seed + i + 10·k, so k = 0 is the manifest's own.  Its labelled formulas are re-scored in each.

* Holds: a formula's drop ranks alike across draws (R3 penalises the world's fragility, not
  the draw's noise).
* Left open (strict xfail): the gate judged on each formula's drop averaged over the draws.
  The kept worlds meet its static/robust ≥ 2× half on their own draw only (1.47× and 1.41× on
  the mean).  Making it pass is a DESIGN §7 decision (several draws per world, at K × the
  stress cost), not a threshold to move.

Figures are far from their thresholds (Spearman 0.94 / 0.78 against 0.7; ratios 1.47 / 1.41
against 2), so they do not depend on the CPU's last bits (the script's portable-mode run
gives the manifest's draw-0 gate to the bit).
"""

from __future__ import annotations

import numpy as np
import pytest

DRAWS = 6


@pytest.fixture(scope="module")
def kept_world_drops(shipped, data, pool, latents, manifest):
    """{kept world: (draws, formulas) drops}, the labelled set, for the shipped worlds."""
    from gymkit.data import DEFAULT_SPLIT
    from gymkit.jepa.decoder import bootstrap_days
    from gymkit.jepa.generate import ALL_WORLDS, make_world, regime_shifts
    from gymkit.jepa.worlds import world_panel
    from gymkit.stress_ranking import Labelled, RankingSet
    from gymkit.verifiers.costs import TrainCosts
    from gymkit.verifiers.cpcv import CPCV
    from gymkit.verifiers.windows import BURN_IN

    rs = RankingSet([Labelled(**x) for x in manifest["labelled"]], DEFAULT_SPLIT, TrainCosts(),
                    CPCV(), BURN_IN)
    dirs = regime_shifts(shipped.model, data, shipped.shifts)
    kept = {w["name"] for w in manifest["worlds"] if w["kept"]}
    out = {}
    for i, spec in enumerate(ALL_WORLDS):
        if spec.name not in kept:
            continue
        rows = []
        for k in range(DRAWS):
            src = bootstrap_days(pool.n_days, np.random.default_rng(manifest["seed"] + i + 10 * k))
            arrays = make_world(shipped.model, shipped.decoder, dirs, data, pool, latents,
                                spec.channel, spec.alpha, src)
            rows.append(rs.drops(world_panel(arrays)))
        out[spec.name] = np.array(rows)
    assert out, "the shipped manifest keeps no world"
    return out, rs.labelled


def test_a_formula_s_drop_ranks_alike_across_draws(kept_world_drops) -> None:
    from scipy.stats import spearmanr

    drops, _ = kept_world_drops
    for name, d in drops.items():
        rho = [spearmanr(d[a], d[b]).statistic for a in range(DRAWS) for b in range(a + 1, DRAWS)]
        assert np.mean(rho) >= 0.7, (name, np.mean(rho))


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="left open (jepa/README.md 'One draw per world'): the kept "
                   "worlds punish static books 2x harder than honest ones on their own draw only")
def test_kept_worlds_pass_their_gate_on_the_mean_of_six_draws(kept_world_drops) -> None:
    from gymkit.stress_ranking import gate_figures

    drops, labelled = kept_world_drops
    for name, d in drops.items():
        gate = gate_figures(labelled, [d.mean(axis=0).tolist()])[0][0]
        assert gate["ok"], (name, gate["auc_lo"], gate["static_to_robust"])
