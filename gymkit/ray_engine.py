"""``gymkit score-file --engine ray``: score the batches on a Ray cluster, results in input order.

Each Ray worker is one actor that builds the environment once (``env_factory``, pickled by
Ray) and scores chunks of batches with the very function of the serial run
(:func:`gymkit.scorefile._score_batch`), so every row's bytes equal ``--workers 1``.  Chunks
are handed to idle actors by :class:`ray.util.ActorPool`, whose ``map`` yields results in
submission order; the driver (:func:`gymkit.scorefile.score_file`) writes and flushes each
row as it arrives, so output, resume and error rows behave as with the process pool.

Cluster: ``address`` is passed to ``ray.init`` (``"auto"``, ``"ray://host:10001"``, ...);
without it a local Ray is started for the run (``workers`` CPUs) and stopped afterwards.  A
Ray already initialised in this process is used as it is and left running.  The workers must
import the same gymkit (the same version and data) as the driver: an actor whose environment
fingerprint differs from the first actor's stops the run.  Ray is an optional extra
(``pip install 'gymkit[ray]'``).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = ["RAY_HINT", "ray_scorer"]

RAY_HINT = "pip install 'gymkit[ray]'"


def _import_ray() -> Any:
    try:
        import ray
        from ray.util import ActorPool  # noqa: F401  (the part we use)
    except ImportError:
        raise ValueError(f"--engine ray needs Ray, which is not installed: {RAY_HINT}") from None
    return ray


class _Scorer:
    """The actor body: one environment, built once; scores chunks of batches."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        from .scorefile import _init_worker

        _init_worker(factory)

    def info(self) -> tuple[str, list[str]]:
        """(environment fingerprint, channel names) of this actor's environment."""
        from . import scorefile

        env = scorefile._WORKER_ENV
        return env.fingerprint, list(env.channels)

    def score(self, chunk: list[list[Any]], timings: bool) -> list[tuple[str, int]]:
        """The output text and valid count of every batch of ``chunk`` (serial code path)."""
        from .scorefile import _worker_batch

        return [_worker_batch(b, timings) for b in chunk]


def _reachable(address: str, timeout: float = 5.0) -> None:
    """ValueError in one line when nothing accepts a TCP connection at ``address``'s host:port
    within ``timeout`` s (``ray.init`` would retry for minutes, printing only its own logs);
    ``auto`` and addresses without a port are left to Ray."""
    import socket

    hostport = address.split("://", 1)[-1]
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ValueError(f"--ray-address {address}: nothing answers at {host}:{port} "
                         f"({exc.strerror or type(exc).__name__}); is the cluster's head "
                         "running there (`ray start --head`)?") from None


@contextlib.contextmanager
def ray_scorer(batches: Sequence[list[Any]], timings: bool, factory: Callable[[], Any], *,
               address: str | None = None, workers: int | None = None,
               expect_fingerprint: str | None = None
               ) -> Iterator[tuple[Iterator[tuple[str, int]], list[str]]]:
    """Yield (iterator of ``(text, n_valid)`` per batch in input order, channel names) scored
    by Ray actors (module doc).  ``workers``: actors (default: the cluster's CPUs).
    ``expect_fingerprint``: the driver's environment fingerprint, when it built one."""
    ray = _import_ray()
    from ray.util import ActorPool

    started = False
    if not ray.is_initialized():
        kw: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False,
                              "include_dashboard": False}
        if address:
            _reachable(address)
            try:
                ray.init(address=address, **kw)
            except ConnectionError as exc:  # e.g. "auto" with no cluster running
                raise ValueError(f"--ray-address {address}: no running Ray cluster found there "
                                 f"({str(exc).splitlines()[0][:160]}); `ray start --head` starts "
                                 "one, and without --ray-address the run starts its own") from None
        else:
            ray.init(num_cpus=workers or os.cpu_count() or 1, **kw)
        started = True
    try:
        n = int(workers or max(1, int(ray.cluster_resources().get("CPU", 1))))
        n = max(1, min(n, len(batches)))
        remote = ray.remote(num_cpus=1)(_Scorer)
        actors = [remote.remote(factory) for _ in range(n)]
        infos = ray.get([a.info.remote() for a in actors])
        fingerprints = {fp for fp, _ in infos} | ({expect_fingerprint} if expect_fingerprint else set())
        if len(fingerprints) != 1:
            raise ValueError("Ray workers built different environments (fingerprints "
                             f"{sorted(fp[:12] for fp in fingerprints)}): install the same gymkit "
                             "and data on every node")
        size = max(1, min(16, len(batches) // (8 * n)))
        chunks = [list(batches[i:i + size]) for i in range(0, len(batches), size)]
        pool = ActorPool(actors)
        results = pool.map(lambda a, c: a.score.remote(c, timings), chunks)

        def rows() -> Iterator[tuple[str, int]]:
            for out in results:
                yield from out

        yield rows(), infos[0][1]
    finally:
        if started:
            ray.shutdown()
