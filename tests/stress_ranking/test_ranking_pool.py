"""The ranking gate's candidate pool fills both classes on a real market (issue 18).

The honest family encodes the default market's planted effects; on the real S&P 500 file it
labelled 5 robust / 56 fragile formulas, so the ranking gate (``MIN_PER_CLASS`` = 100 each)
dropped every world.  The market-agnostic pool (price and volume only, no group level) is
added when the first families fall short, labelled by the same late-train rules.
"""

from __future__ import annotations

import collections
import time

import numpy as np
import pytest

from gymkit.dsl import parse
from gymkit.jepa.gates import MIN_PER_CLASS
from gymkit.stress_ranking import (
    FAST_WINDOWS,
    SLOW_WINDOWS,
    agnostic_candidates,
    candidates,
    label_formulas,
)

#: Every fourth of the real file's tickers with a complete history (115 names).
TICKER_STEP = 4


def test_the_agnostic_pool_is_fixed_parseable_price_volume_only_and_role_disjoint() -> None:
    base = {f for v in candidates().values() for f in v}
    pool = agnostic_candidates(base)
    assert pool == agnostic_candidates(base)  # deterministic, no seed
    grid, slow = pool["grid"], pool["slow"]
    assert not set(grid) & set(slow)
    assert len(grid) == len(set(grid)) and len(slow) == len(set(slow))
    assert len(slow) + 10 == 20 * len(SLOW_WINDOWS) and len(grid) <= 20 * len(FAST_WINDOWS) * 8
    for f in grid + slow:
        parse(f)  # within the lookback limit
        assert "group_neutralize" not in f and "sector" not in f and "industry" not in f
    assert not (set(grid) | set(slow)) & base
    assert set(agnostic_candidates()["slow"]) - set(slow) <= base  # only the first families' own left out


def test_the_pool_is_added_only_when_a_class_falls_short(monkeypatch) -> None:
    """Staging rule of ``label_formulas`` (agnostic=None): scored only when the first families
    label fewer than MIN_PER_CLASS in either class; the default market's shipped labelled set
    has both classes full and no agnostic family."""
    from gymkit import stress_ranking as ranking
    from gymkit.jepa.worlds import read_manifest

    man = read_manifest("default")[0]
    assert {x["family"] for x in man["labelled"]} == {"honest", "static"}
    assert min(collections.Counter(x["label"] for x in man["labelled"]).values()) >= MIN_PER_CLASS

    def fake(n_robust: int, n_fragile: int):
        def label(families, *args):
            if "grid" in families:
                return [ranking.Labelled("g", "grid", "robust", 1.0, 1.0, 1.0, 0.1)]
            return ([ranking.Labelled(f"h{i}", "honest", "robust", 1.0, 1.0, 1.0, 0.1) for i in range(n_robust)]
                    + [ranking.Labelled(f"s{i}", "static", "fragile", 0.0, 1.0, 0.0, 0.1)
                       for i in range(n_fragile)])
        return label

    args = (None, None, None, None, 0)
    for n_r, n_f, added in ((100, 100, False), (99, 300, True), (300, 99, True), (5, 56, True)):
        monkeypatch.setattr(ranking, "_label", fake(n_r, n_f))
        got = ranking.label_formulas(*args)
        assert any(x.family == "grid" for x in got) is added, (n_r, n_f)
    monkeypatch.setattr(ranking, "_label", fake(5, 5))
    assert not any(x.family == "grid" for x in ranking.label_formulas(*args, agnostic=False))


@pytest.fixture(scope="module")
def real_subset(tmp_path_factory):
    """A vendor-style CSV of every fourth complete-history ticker of the real file, loaded
    through the user's loader (raw prices, ``adjust``) and cut by the derived split."""
    import polars as pl

    from gymkit.data.loaders import load_panel
    from gymkit.data.real import read_real_frame, real_data_path
    from gymkit.jepa.train import _user_train

    if not real_data_path().is_file():
        pytest.skip("real data not found (../shared is not part of a fresh clone)")
    frame = read_real_frame()
    counts = frame.group_by("ticker").len()
    full = counts.filter(pl.col("len") == counts.get_column("len").max()).get_column("ticker")
    tickers = full.sort().to_list()[::TICKER_STEP]
    path = tmp_path_factory.mktemp("real") / "subset.csv"
    frame.filter(pl.col("ticker").is_in(tickers)).write_csv(path)
    return _user_train(load_panel(path, adjust=True))


@pytest.mark.real
def test_a_real_market_fills_both_classes(real_subset) -> None:
    from gymkit.verifiers.costs import TrainCosts
    from gymkit.verifiers.cpcv import CPCV
    from gymkit.verifiers.windows import BURN_IN

    panel, split = real_subset
    assert panel.sector is None and panel.N > 100
    t0 = time.process_time()
    lab = label_formulas(panel, split, TrainCosts(), CPCV(), BURN_IN)
    seconds = time.process_time() - t0
    c = collections.Counter(x.label for x in lab)
    fam = collections.Counter((x.family, x.label) for x in lab)
    assert c["robust"] >= MIN_PER_CLASS and c["fragile"] >= MIN_PER_CLASS, (fam, seconds)
    assert {x.family for x in lab if x.label == "robust"} <= {"honest", "grid"}
    assert {x.family for x in lab if x.label == "fragile"} <= {"static", "slow"}
    for x in lab:  # the same late-train rules as the first families
        if x.label == "robust":
            assert x.cpcv > 0 and x.early_sharpe > 0 and x.val_sharpe > 0
        else:
            assert x.early_sharpe > x.val_sharpe
        assert np.isfinite(x.cpcv) and x.turnover >= 0.02
    assert len({x.formula for x in lab}) == len(lab)
