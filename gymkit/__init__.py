"""gymkit: a deterministic verifier and RL gym for formulaic-alpha research tasks.

``import gymkit`` is light: the environment stack (numba kernels, the verifier) is imported
on first use of :func:`make`, :class:`Environment` and friends, so ``import gymkit.dsl`` for
parsing alone does not pay for compiling kernels.
"""

from importlib import import_module

__version__ = "0.2.1"

# Numba caches gymkit's kernels in a folder keyed by their sources (gymkit/numba_cache.py),
# chosen here, before any kernel module is imported.
import_module("gymkit.numba_cache").configure()

# public name -> module that defines it (one table, resolved lazily by __getattr__)
_EXPORTS: dict[str, str] = {
    "EnvConfig": "gymkit.config",
    "Environment": "gymkit.env",
    "ScoreCard": "gymkit.card",
    "gdpo_advantages": "gymkit.advantages",
    "grpo_advantages": "gymkit.advantages",
    "list_envs": "gymkit.registry",
    "make": "gymkit.registry",
    "ServerSettings": "gymkit.server.settings",
    "create_app": "gymkit.server.app",
    "serve": "gymkit.server.serve",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gymkit' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
