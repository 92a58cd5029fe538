"""The shipped manifest's ranking set regenerates bit for bit through gymkit.stress_ranking.

``gymkit jepa check`` recomputes the decode and shift figures; this test recomputes the rest of
what ``gymkit jepa worlds`` wrote for the ranking gate: every labelled formula (family, label,
base CPCV, early and validation Sharpe, turnover: exact floats) on the default train panel,
and each kept world's ranking-gate figures from its drops re-scored in the shipped world.
"""

from __future__ import annotations

import numpy as np
import pytest

from gymkit.data import DEFAULT_SPLIT, default_market
from gymkit.jepa.worlds import load_stress_worlds, read_manifest
from gymkit.stress_ranking import RankingSet, auc_with_bootstrap, ranking_gate


@pytest.mark.slow
def test_labelled_set_and_kept_worlds_ranking_gates_regenerate_exactly() -> None:
    man = read_manifest("default")[0]
    train = DEFAULT_SPLIT.train(default_market())
    rs = RankingSet.label(train, DEFAULT_SPLIT)
    assert [x.__dict__ for x in rs.labelled] == man["labelled"]  # exact floats, same order
    fr = np.array([x.label == "fragile" for x in rs.labelled])
    static = np.array([x.family in ("static", "slow") for x in rs.labelled])
    entries = {w["name"]: w for w in man["worlds"]}
    worlds = load_stress_worlds("default", train)
    assert worlds
    for w in worlds:
        d = np.array(rs.drops(w.panel).tolist())
        auc, lo, hi = auc_with_bootstrap(d[fr], d[~fr])
        assert ranking_gate(auc, lo, hi, d, fr, static) == entries[w.name]["ranking_gate"], w.name
