"""The archive-free layers of many answers in worker processes, for loops that commit as they go.

:meth:`Environment.score_group` is two parts: the layers that depend only on the answer and
the environment (text gate, oracle, book gate, stress: :func:`gymkit.scoring.score_answers`)
and the ones that read the novelty archive (novelty, channels, reward).  A training loop
commits each group's valid answers before it scores the next group, so the second part must
run in order in the loop's process; the first part is most of the cost and can run anywhere.

:class:`AnswerStatePool` runs the first part for the answers of many groups at once in
``workers`` spawned processes, each holding its own environment built by the same factory
(the fingerprints are checked), one distinct completion text once; the caller then passes
each group's states to ``env.score_group(completions, brief=..., states=...)`` in order.  The
cards are those of the serial loop, byte for byte (tests/train/test_answer_pool.py), because
the states are deterministic functions of the text and the environment, and the group's
duplicate sharing is re-applied by :func:`gymkit.scoring.share_group_duplicates`.

With ``workers <= 1`` nothing is spawned: :meth:`AnswerStatePool.states` returns None and
``score_group`` computes the states itself, as it always did.  The workers import no torch.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from types import TracebackType
from typing import Any

from gymkit.scoring import AnswerState, score_answers, share_group_duplicates
from gymkit.worker_process import die_with_parent, stop_pool

__all__ = ["AnswerStatePool"]

_ENV: Any = None


def _init_worker(factory: Callable[[], Any], parent: int) -> None:
    """Build this worker's environment; leave Ctrl-C (sent to the whole process group) to the
    training command, which closes the pool, instead of printing each worker's traceback; end
    with the training process (a ``kill -9`` of it left the workers waiting for ever)."""
    global _ENV
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent)
    _ENV = factory()


def _fingerprint(_: int) -> str:
    return str(_ENV.fingerprint)


def _state_of(completion: str) -> AnswerState:
    return score_answers([completion], _ENV.setup)[0]


class AnswerStatePool:
    """``workers`` processes that compute answers' archive-free scoring states (module doc).

    ``factory``: a picklable zero-argument callable building the environment (e.g.
    ``functools.partial(gymkit.make, env_id, **overrides)``); ``expect_fingerprint``: the
    caller's environment fingerprint, which every worker's must equal.  Use as a context
    manager, or call :meth:`close`."""

    def __init__(self, factory: Callable[[], Any], workers: int, *,
                 expect_fingerprint: str | None = None) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, not {workers}")
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None
        if workers == 1:
            return
        self._pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_init_worker, initargs=(factory, os.getpid()))
        try:
            prints = set(self._pool.map(_fingerprint, range(workers)))
        except BaseException:  # Ctrl-C or a dead worker while they build their environments
            self.close(now=True)
            raise
        if expect_fingerprint is not None and prints != {expect_fingerprint}:
            self.close()
            raise ValueError(f"the scoring workers built other environments ({sorted(prints)} != "
                             f"{expect_fingerprint}): the factory must build the caller's")

    def states(self, groups: Sequence[Sequence[str]]) -> list[list[AnswerState]] | None:
        """Per group, the states ``score_answers(group, setup)`` would give (for
        ``score_group(..., states=)``); None with one worker (score_group computes them)."""
        if self._pool is None:
            return None
        texts = list(dict.fromkeys(c for g in groups for c in g))
        n = len(texts)
        chunk = max(1, n // (4 * self.workers))
        try:
            done = dict(zip(texts, self._pool.map(_state_of, texts, chunksize=chunk), strict=True))
        except BrokenProcessPool:  # as score-file: a stop from outside, not a bug (exit 1)
            from gymkit.cli.errors import RunStopped

            raise RunStopped("a scoring worker process was killed (from outside, often the "
                             "out-of-memory killer: try fewer --workers); the run stopped, its "
                             "logs and checkpoints so far kept") from None
        return [share_group_duplicates([done[c] for c in g]) for g in groups]

    def close(self, *, now: bool = False) -> None:
        """Stop the workers (idempotent): let them finish the answers they hold, or with
        ``now`` (an error or Ctrl-C) terminate them, a second Ctrl-C held off until they are
        joined (:func:`~gymkit.worker_process.stop_pool`)."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if now:
            stop_pool(pool)
        else:
            pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> AnswerStatePool:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close(now=exc_type is not None)
