"""Shared fixtures of the gym tests: one default environment per session (seeding is cached)."""

from __future__ import annotations

import pytest

import gymkit


@pytest.fixture(scope="session")
def env() -> gymkit.Environment:
    """The ``us46-default`` environment, built once per test session."""
    return gymkit.make("us46-default")


@pytest.fixture
def scratch_env(env: gymkit.Environment):
    """The session environment, with its archive restored after the test (commits are undone)."""
    blob = env.archive_snapshot()
    yield env
    env.archive_restore(blob)


def tag(formula: str) -> str:
    """Wrap a formula in the answer tag."""
    return f"<alpha>{formula}</alpha>"
