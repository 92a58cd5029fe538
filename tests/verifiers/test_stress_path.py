"""The stress worlds' CPCV-only path gives the full backtest's bits, and re-scoring is free.

R3 re-scores every valid answer in each stress world.  That path (``gymkit.scoring.world_score``
→ ``backtest_cpcv``) skips the metrics and the factor regression; these tests
compare it with the full path it replaced (``gymkit.jepa.worlds.world_score`` →
``backtest(...).cpcv``) bit for bit, on the shipped worlds, the 101 alphas and random panels,
and check that the memo makes a re-scored group do no stress work at all.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gymkit
import gymkit.scoring as scoring
from gymkit.dsl import DSLError, parse
from gymkit.dsl.evaluator import evaluate
from gymkit.jepa.worlds import world_score as full_world_score
from gymkit.seed_archive import alpha101_formulas
from gymkit.verifiers import CPCV, RealisticCosts, TrainCosts, backtest, backtest_cpcv, book_pnl

from .conftest import SMALL_SPLIT, random_panel, values_for


@pytest.fixture(scope="module")
def env():
    """us46-default as shipped (R3 on: two stress worlds)."""
    e = gymkit.make("us46-default")
    assert len(e.setup.worlds) >= 1 and "jepa_stress" in e.channels
    return e


def _same_cpcv(a, b) -> None:
    assert a.score == b.score or (np.isnan(a.score) and np.isnan(b.score))
    for k in ("test_sharpes", "is_sharpes", "path_sharpes"):
        assert getattr(a, k).tobytes() == getattr(b, k).tobytes(), k


def test_world_scores_equal_the_full_backtest_on_every_alpha(env) -> None:
    """Every paper alpha in every shipped world: the CPCV-only path's result is the full one's."""
    s = env.setup
    checked = 0
    for _, formula in alpha101_formulas():
        try:
            expr = scoring.book_input(parse(formula, fields=s.fields, levels=s.levels))
        except DSLError:
            continue
        for w in s.worlds:
            values = evaluate(expr, w.panel, cache=None)
            full = backtest(values, w.panel, s.split, "train", s.costs, cpcv=s.cpcv, burn_in=s.burn_in)
            lite = backtest_cpcv(values, w.panel, s.split, "train", s.costs, cpcv=s.cpcv, burn_in=s.burn_in)
            _same_cpcv(lite, full.cpcv)
            new = scoring.world_score(expr, w.panel, s.split, s.costs, s.cpcv, s.burn_in, None)
            old = full_world_score(expr, w.panel, s.split, s.costs, s.cpcv, s.burn_in, None)
            assert new == old or (np.isnan(new) and np.isnan(old)), (formula, w.name)
            checked += 1
    assert checked >= 2 * 95


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), n=st.sampled_from([7, 46, 65, 130]),
       kind=st.sampled_from(["noise", "persistent", "ties", "momentum"]),
       nan_frac=st.sampled_from([0.0, 0.05]), realistic=st.booleans())
def test_cpcv_only_path_equals_backtest_on_random_panels(seed, n, kind, nan_frac, realistic) -> None:
    """Both rank paths (<= 64 and > 64 names), ties, holes, both cost models, train and holdout."""
    panel = random_panel(seed % 1000, n=n, nan_frac=nan_frac)
    values = values_for(panel, seed, kind)
    costs = RealisticCosts() if realistic else TrainCosts()
    cv = CPCV(4, 2, 5, 2)
    for mode in ("train", "holdout"):
        full = backtest(values, panel, SMALL_SPLIT, mode, costs, cpcv=cv, burn_in=60)
        lite = backtest_cpcv(values, panel, SMALL_SPLIT, mode, costs, cpcv=cv, burn_in=60)
        _same_cpcv(lite, full.cpcv)


def test_rescored_group_does_no_stress_work_and_keeps_its_bytes(env, monkeypatch) -> None:
    """Through env.score_group: the second scoring of a group calls no world re-score, and
    its cards equal the first's (stress scores, R3, reward)."""
    group = [f"<alpha>{f}</alpha>" for f in (
        "rank(-ts_sum(returns, 5))", "rank(ts_corr(close, volume, 10))",
        "-ts_corr(rank(open), rank(volume), 10)", "rank(ts_std(returns, 20) / ts_mean(volume, 20))",
        "rank(-ts_sum(returns, 5))", "rank(close")]
    env.setup.stress_memo._entries.clear()
    calls: list[str] = []
    real = scoring.world_score

    def counted(expr, world, *args):
        calls.append(world.fingerprint)
        return real(expr, world, *args)

    monkeypatch.setattr(scoring, "world_score", counted)
    first = env.score_group(group)
    n_worlds = len(env.setup.worlds)
    assert len(calls) == 4 * n_worlds  # 4 distinct valid formulas (one repeat, one invalid)
    second = env.score_group(group)
    assert len(calls) == 4 * n_worlds
    for a, b in zip(first, second, strict=True):
        assert a.metrics.get("stress") == b.metrics.get("stress")
        assert a.channels == b.channels and a.reward == b.reward
    assert all(c.metrics["stress"]["world_cpcv"] for c in first if c.valid)


def test_stress_memo_bounds() -> None:
    """LRU of at most max_entries; 0 stores nothing; a bad bound is a one-line error."""
    m = scoring.StressMemo(2)
    m.put(("a", "w"), 1.0)
    m.put(("b", "w"), 2.0)
    assert m.get(("a", "w")) == 1.0  # a is now the most recent
    m.put(("c", "w"), 3.0)
    assert m.get(("b", "w")) is None and m.get(("a", "w")) == 1.0 and len(m) == 2
    z = scoring.StressMemo(0)
    z.put(("a", "w"), 1.0)
    assert z.get(("a", "w")) is None
    with pytest.raises(ValueError, match="max_entries"):
        scoring.StressMemo(-1)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.sampled_from([1, 2, 3, 46, 70]),
       live=st.sampled_from([0.0, 0.01, 0.3, 1.0]))
def test_book_gate_reads_turnover_for_weights(seed, n, live) -> None:
    """The degenerate-book gate checks ``turnover.any()``: it equals ``weights.any()`` (the
    book starts from zero, so a held position is traded on some day), on books that are
    empty, constant, nearly empty or full."""
    rng = np.random.default_rng(seed)
    t = 40
    values = np.full((t, n), 2.5)  # constant rows hold nothing
    on = rng.random(t) < live
    values[on] = rng.normal(size=(int(on.sum()), n))
    values[rng.random((t, n)) < 0.2] = np.nan
    fwd = rng.normal(0.0, 0.01, (t, n))
    b = book_pnl(values, fwd, slice(3, t))
    assert bool(b.turnover.any()) == bool(b.weights.any())


def test_setup_sizes_the_cache_so_a_rescored_group_hits_it(env) -> None:
    """A cache smaller than one group's evaluations is grown when the environment is built;
    the group scored again then misses nothing and gives the same cards."""
    from gymkit.dsl.cache import EvalCache
    from gymkit.env import Environment

    panel = random_panel(3, n=40)
    base = gymkit.make("us46-default", market=panel, archive={"seed": "none", "capacity": 16},
                       channels=tuple(c for c in env.channels if c != "jepa_stress"))
    cache = EvalCache(2**20)
    user = Environment(base.config, panel, cache=cache)
    assert cache.max_bytes == scoring.group_cache_bytes(user.setup.train, 0) > 2**20
    group = [f"<alpha>{f}</alpha>" for f in (
        "rank(-ts_sum(returns, 5))", "rank(ts_std(volume, 20) / ts_mean(volume, 20))",
        "rank(ts_corr(close, volume, 10))", "-ts_corr(rank(open), rank(volume), 10)",
        "rank(ts_delta(close, 63))", "rank(ts_std(returns, 63))", "rank(volume / adv(20))",
        "rank(ts_mean(close, 250))", "rank(ts_max(volume / vwap, 11) / ts_mean(close, 21))",
        "rank(ts_std(volume, 10) / ts_mean(volume, 10))", "rank(ts_min(low, 30))",
        "rank(ts_rank(close, 20))")]
    first = user.score_group(group)
    misses = cache.misses
    second = user.score_group(group)
    assert cache.misses == misses and cache.hits > 0
    assert [c.reward for c in first] == [c.reward for c in second]


def test_memo_keys_on_the_scoring_parameters(env) -> None:
    """Setups sharing one memo but not their costs or CPCV get their own world scores."""
    import dataclasses

    from gymkit.scoring import AnswerState, gate_text, run_oracle, run_stress

    base = env.setup
    memo = scoring.StressMemo()
    variants = [dataclasses.replace(base, stress_memo=memo),
                dataclasses.replace(base, stress_memo=memo, costs=TrainCosts().scaled(19)),
                dataclasses.replace(base, stress_memo=memo, cpcv=CPCV(5, 2, 10, 5))]
    seen = []
    for setup in variants:
        st: AnswerState = gate_text("<alpha>rank(-ts_sum(returns, 5))</alpha>", setup)
        run_oracle(st, setup)
        run_stress(st, setup)
        expr = scoring.book_input(st.expr)
        want = {w.name: full_world_score(expr, w.panel, setup.split, setup.costs, setup.cpcv,
                                         setup.burn_in, None) for w in setup.worlds}
        assert st.stress == want
        seen.append(st.stress)
    assert seen[0] != seen[1] and seen[0] != seen[2]
    assert len(memo) == 3 * len(base.worlds)
