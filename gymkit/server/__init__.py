"""The verifier server (``gymkit serve``): HTTP/JSON scoring with cards identical to the Python API.

Needs the ``server`` extra (fastapi, uvicorn).  Modules: :mod:`.settings` (limits),
:mod:`.models` (request/response schemas), :mod:`.jobs` (what a worker runs), :mod:`.pool`
(supervised worker processes), :mod:`.app` (routes), :mod:`.compat` (OpenRLHF/slime/NeMo-Gym
answer extraction), :mod:`.metrics` (Prometheus text), :mod:`.protocol` (slow-loris guard),
:mod:`.serve` (CLI entry).
"""

from __future__ import annotations

from .app import create_app
from .pool import PoolError, WorkerPool
from .serve import build_server, serve
from .settings import ServerSettings

__all__ = ["PoolError", "ServerSettings", "WorkerPool", "build_server", "create_app", "serve"]
