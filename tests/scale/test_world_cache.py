"""R3's world re-scores keep the shared evaluator cache only where one group's evaluations
fit in it (issue 22): on wide markets each world evaluates into its own short-lived cache,
so the world arrays do not evict the train panel's entries or stay in memory, and every
stress score is the same bits as with the shared cache or none."""

from __future__ import annotations

import dataclasses

import numpy as np

import gymkit
import gymkit.scoring as sc
from gymkit.audit.lookahead import synthetic_panel
from gymkit.dsl.cache import EvalCache
from gymkit.jepa.worlds import StressWorld

FORMULAS = ("rank(-ts_sum(returns, 5))", "-ts_corr(rank(open), rank(volume), 10)",
            "rank(ts_std(returns, 20) / ts_mean(volume, 20)) + rank(ts_std(returns, 20))")


def _stressed(t: int, n: int):
    panel = synthetic_panel(seed=n, t=t, n=n)
    channels = tuple(c for c in gymkit.make("us46-default").config.channels if c != "jepa_stress")
    env = gymkit.make("us46-default", market=panel, channels=channels, archive={"seed": "none"})
    train = env.setup.train
    worlds = []
    for k in (1, 2):
        other = synthetic_panel(seed=100 * k + n, t=train.T, n=train.N)
        w = train.replace(**{f: np.asarray(getattr(other, f)) for f in ("open", "high", "low", "close", "volume")},
                          cap=np.asarray(other.close) * 1e6)
        worlds.append(StressWorld(f"world{k}", "synthetic", 0.0, w))
    return env, dataclasses.replace(env.setup, worlds=tuple(worlds))


def _stress(env, setup) -> list[dict[str, float]]:
    out = []
    for f in FORMULAS:
        st = sc.gate_text(f"<alpha>{f}</alpha>", setup)
        sc.run_oracle(st, setup)
        sc.gate_book(st, setup)
        assert st.valid, st.error
        sc.run_stress(st, setup)
        out.append(st.stress)
    return out


def test_the_default_market_keeps_the_shared_cache() -> None:
    setup = gymkit.make("us46-default").setup
    assert setup.worlds and setup.cache is not None
    assert sc.world_cache(setup) is setup.cache


def test_wide_market_worlds_use_their_own_cache_with_the_same_scores() -> None:
    env, setup = _stressed(900, 1000)  # one group on 648 train sessions: 1.04 GiB > the cap
    cache = setup.cache
    assert cache is not None
    cache.clear()
    own = sc.world_cache(setup)
    assert own is not cache and isinstance(own, EvalCache) and len(own._entries) == 0
    got = _stress(env, setup)
    world_prints = {w.panel.fingerprint for w in setup.worlds}
    assert not any(key[1] in world_prints for key in cache._entries), "world arrays in the shared cache"
    assert any(key[1] == setup.train.fingerprint for key in cache._entries)
    shared = dataclasses.replace(setup, stress_memo=sc.StressMemo())
    sc.world_cache, policy = (lambda s: s.cache), sc.world_cache
    try:
        want = _stress(env, shared)
    finally:
        sc.world_cache = policy
    none = dataclasses.replace(setup, cache=None, stress_memo=sc.StressMemo())
    assert got == want == _stress(env, none)
    assert all(np.isfinite(v) for d in got for v in d.values())
