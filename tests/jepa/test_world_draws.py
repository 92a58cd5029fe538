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

The worlds are decoded and re-scored in a portable-mode subprocess (:mod:`gymkit.jepa.portable`),
so every figure is the manifest's arithmetic on any x86-64-v3 CPU and draw 0's gate equals the
manifest's to the bit.  (Outside portable mode draw 0's static/robust ratio reads 2.0455 instead
of 2.0463 on this box: the decode's last bits follow the CPU's kernels.)
"""

from __future__ import annotations

import numpy as np
import pytest

DRAWS = 6


def _kept() -> list[str]:
    from gymkit.jepa.worlds import read_manifest

    return [w["name"] for w in read_manifest("default")[0]["worlds"] if w["kept"]]


KEPT = _kept()


_RUN = """
import json, sys, warnings
import numpy as np
from gymkit.jepa import portable
portable.enter()
warnings.simplefilter("ignore")
from gymkit.data import DEFAULT_SPLIT, default_market
from gymkit.jepa.generate import ALL_WORLDS, draw_seed
from gymkit.jepa.recheck import ManifestModel
from gymkit.jepa.worlds import SHIPPED_MANIFEST, world_panel
from gymkit.stress_ranking import Labelled, RankingSet
from gymkit.verifiers.costs import TrainCosts
from gymkit.verifiers.cpcv import CPCV
from gymkit.verifiers.windows import BURN_IN
m = ManifestModel.load(SHIPPED_MANIFEST, DEFAULT_SPLIT.train(default_market()))
rs = RankingSet([Labelled(**x) for x in m.man["labelled"]], DEFAULT_SPLIT, TrainCosts(), CPCV(),
                BURN_IN)
kept, draws = set(sys.argv[1].split(",")), int(sys.argv[2])
print(json.dumps({spec.name: [rs.drops(world_panel(m.world(spec, draw_seed(m.man["seed"], i, k)))).tolist()
                              for k in range(draws)]
                  for i, spec in enumerate(ALL_WORLDS) if spec.name in kept}))
"""


@pytest.fixture(scope="module")
def kept_world_drops(manifest):
    """({kept world: (draws, formulas) drops}, the labelled set, {kept world: draw 0's gate}),
    computed in a portable-mode subprocess (the manifest's arithmetic on any x86-64-v3 CPU)."""
    import json

    from gymkit.jepa import portable
    from gymkit.stress_ranking import Labelled, gate_figures

    r = portable.run_portable(["-c", _RUN, ",".join(KEPT), str(DRAWS)], capture_output=True,
                              text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    out = {k: np.array(v) for k, v in json.loads(r.stdout.strip().splitlines()[-1]).items()}
    labelled = [Labelled(**x) for x in manifest["labelled"]]
    first = {k: gate_figures(labelled, [v[0].tolist()])[0][0] for k, v in out.items()}
    return out, labelled, first


def test_there_are_kept_worlds_and_draw_0_is_the_manifest_s(kept_world_drops, manifest) -> None:
    """Draw 0 regenerates the shipped world: its gate is the manifest's to the bit."""
    _, _, first = kept_world_drops
    assert KEPT and set(first) == set(KEPT)
    for name, gate in first.items():
        assert gate == next(w for w in manifest["worlds"] if w["name"] == name)["ranking_gate"]


@pytest.mark.parametrize("name", KEPT)
def test_a_formula_s_drop_ranks_alike_across_draws(kept_world_drops, name) -> None:
    from scipy.stats import spearmanr

    d = kept_world_drops[0][name]
    rho = [spearmanr(d[a], d[b]).statistic for a in range(DRAWS) for b in range(a + 1, DRAWS)]
    assert np.mean(rho) >= 0.7, np.mean(rho)


@pytest.mark.parametrize("name", KEPT)
@pytest.mark.xfail(strict=True, raises=AssertionError, reason="left open (jepa/README.md 'One "
                   "draw per world'): the kept worlds punish static books 2x harder than honest "
                   "ones on their own draw only")
def test_kept_world_passes_its_gate_on_the_mean_of_six_draws(kept_world_drops, name) -> None:
    from gymkit.stress_ranking import gate_figures

    drops, labelled, _ = kept_world_drops
    gate = gate_figures(labelled, [drops[name].mean(axis=0).tolist()])[0][0]
    assert gate["ok"], (gate["auc_lo"], gate["static_to_robust"])
