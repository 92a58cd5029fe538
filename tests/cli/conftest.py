"""CLI tests run ``gymkit.cli.main`` in-process with one cached environment per id (building one
costs seconds; the commands never change an environment's state, so sharing it is safe)."""

from __future__ import annotations

import pytest

import gymkit

_ENVS: dict[str, object] = {}


@pytest.fixture(autouse=True)
def shared_env(monkeypatch):
    """Make ``gymkit.make(id)`` (no overrides) return one environment per id for the session."""
    from gymkit.registry import make as real

    def cached(env_id="us46-default", **kw):
        if kw or not isinstance(env_id, str):
            return real(env_id, **kw)
        if env_id not in _ENVS:
            _ENVS[env_id] = real(env_id)
        return _ENVS[env_id]

    monkeypatch.setattr(gymkit, "make", cached)
    return cached
