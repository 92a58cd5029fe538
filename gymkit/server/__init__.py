"""The verifier server (``gymkit serve``): HTTP/JSON scoring with cards identical to the Python API.

Needs the ``server`` extra (fastapi, uvicorn).  Modules: :mod:`.settings` (limits),
:mod:`.models` (request/response schemas), :mod:`.jobs` (what a worker runs), :mod:`.pool`
(supervised worker processes), :mod:`.app` (routes), :mod:`.compat` (OpenRLHF/slime/NeMo-Gym
answer extraction), :mod:`.metrics` (Prometheus text), :mod:`.protocol` (slow-loris guard),
:mod:`.serve` (CLI entry).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# public name -> module that defines it, imported on first use (``gymkit serve --help`` and
# the settings stay light: no FastAPI, no kernels)
_EXPORTS = {"PoolError": ".pool", "WorkerPool": ".pool", "build_server": ".serve",
            "serve": ".serve", "ServerSettings": ".settings", "create_app": ".app"}

__all__ = ["PoolError", "ServerSettings", "WorkerPool", "build_server", "create_app", "serve"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gymkit.server' has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value
