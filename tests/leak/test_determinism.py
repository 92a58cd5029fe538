"""Determinism (DESIGN §9): byte-identical card JSON on rescoring, with the evaluator cache on
and off, and in a pool of two freshly spawned worker processes (different hash seeds, the
environment rebuilt from its TOML and the market from source).  Broken variants: a reward
with a random jitter, and a cache that returns wrong (row-shifted) arrays."""

from __future__ import annotations

import numpy as np

from gymkit.audit.determinism import check_determinism
from gymkit.dsl.cache import DEFAULT_CACHE


def test_cards_are_byte_identical_across_cache_processes_and_workers(audit) -> None:
    res = audit["determinism"]
    assert res.passed, res.detail
    assert "2 spawned worker processes of a pool of 2" in res.figure


def test_a_jittered_reward_is_caught(monkeypatch, cheap_target) -> None:
    import gymkit.env as env_module

    real = env_module.scalar_reward
    rng = np.random.default_rng()

    def jitter(*args):
        r, capped = real(*args)
        return r + float(rng.normal(0, 1e-12)), capped

    monkeypatch.setattr(env_module, "scalar_reward", jitter)
    res = check_determinism(cheap_target, workers=0)
    assert not res.passed
    assert any(d.startswith("rescoring in the same process changed a card; card 0: .reward")
               for d in res.detail), res.detail


def test_a_cache_that_changes_results_is_caught(monkeypatch, cheap_target) -> None:
    real_put = DEFAULT_CACHE.put

    def drifting_put(key, value):  # a cache that stores yesterday's row under today's key
        return real_put(key, np.roll(value, 1, axis=0))

    DEFAULT_CACHE.clear()
    monkeypatch.setattr(DEFAULT_CACHE, "put", drifting_put)
    try:
        res = check_determinism(cheap_target, workers=0)
    finally:
        monkeypatch.undo()
        DEFAULT_CACHE.clear()
    assert not res.passed
    assert any(d.startswith("the evaluator cache changes a card (cache off != cache on)")
               for d in res.detail), res.detail
