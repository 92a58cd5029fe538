"""Determinism (DESIGN §9): byte-identical card JSON across rescoring, cache on/off, processes
and worker counts.

The probe answers (and the first sample group, when answers were given) are scored

1. twice in this process (the sub-expression cache warm the second time);
2. by a second environment built with the evaluator cache OFF (``cache=None``);
3. in a process pool of :data:`WORKERS` freshly *spawned* interpreters (different hash
   seeds, nothing inherited), each rebuilding the environment from its TOML configuration
   and the market from source (:class:`gymkit.audit.target.MarketSpec`): the whole group
   twice, and the group split across the workers (each sub-group compared with the same
   sub-group scored here).

Cards are compared as ``to_json()`` (timings excluded, the only varying part), byte for byte.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from gymkit.config import EnvConfig

from .formulas import probe_answers
from .result import CheckResult
from .target import AuditTarget, MarketSpec, load_market

__all__ = ["WORKERS", "check_determinism", "score_in_worker"]

#: Worker processes of the pool (> 1: the worker-count leg of DESIGN §9).
WORKERS = 2

_WORKER_ENV: Any = None


def _init_worker(config_toml: str, spec: MarketSpec, ready: Any,
                 split_note: str | None = None) -> None:
    global _WORKER_ENV
    import warnings

    from gymkit.data.loaders import DataWarning
    from gymkit.env import Environment

    warnings.simplefilter("ignore", DataWarning)  # the parent reported the file's data notes once
    _WORKER_ENV = Environment(EnvConfig.from_toml(config_toml), load_market(spec),
                              split_note=split_note)
    ready.wait(timeout=600)  # every worker is built before any takes a task: all of them work


def score_in_worker(answers: list[str]) -> tuple[int, list[str]]:
    """Pool task: ``(pid, card JSON of answers scored as one group)`` in this worker."""
    return os.getpid(), [c.to_json() for c in _WORKER_ENV.score_group(answers)]


def first_difference(a: list[str], b: list[str]) -> str:
    """Where two lists of card JSON first differ: ``card i: path a-value != b-value``."""
    if len(a) != len(b):
        return f"{len(a)} cards vs {len(b)}"
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x == y:
            continue
        path, u, v = "", json.loads(x), json.loads(y)
        while isinstance(u, dict) and isinstance(v, dict):
            key = next((k for k in sorted(set(u) | set(v)) if u.get(k) != v.get(k)), None)
            if key is None:
                break
            path, u, v = f"{path}.{key}", u.get(key), v.get(key)
        return f"card {i}: {path or '(card)'} {str(u)[:60]} != {str(v)[:60]}"
    return "no difference"


def _answers(target: AuditTarget) -> list[str]:
    out = probe_answers(target.env)
    if target.answers:
        out += target.answers[0]
    return out


def check_determinism(target: AuditTarget, workers: int = WORKERS) -> CheckResult:
    """Byte-identical cards: rescoring, cache off, spawned worker processes (module doc).

    ``workers=0`` skips the process pool (a quick in-process variant for tests).
    """
    from gymkit.env import Environment

    env = target.env
    answers = _answers(target)
    here = [c.to_json() for c in env.score_group(answers)]
    failures: list[str] = []
    again = [c.to_json() for c in env.score_group(answers)]
    if again != here:
        failures.append("rescoring in the same process changed a card; "
                        + first_difference(here, again))
    uncached = Environment(target.config, target.market, cache=None, split_note=env.split_note)
    off = [c.to_json() for c in uncached.score_group(answers)]
    if off != here:
        failures.append("the evaluator cache changes a card (cache off != cache on); "
                        + first_difference(here, off))
    pids: set[int] = set()
    if workers > 0:
        pids = _pool_compare(target, answers, here, workers, failures)
    n = len(answers)
    legs = "rescored, cache off" + (f", {len(pids)} spawned worker processes of a pool of "
                                    f"{workers}" if workers else " (no process pool)")
    return CheckResult(
        "determinism", not failures,
        f"{n} cards byte-identical: {legs}" if not failures else
        f"{len(failures)} of {2 + 2 * workers} comparisons differ",
        (f"worker pids {sorted(pids)}; parent pid {os.getpid()}", *failures))


def _pool_compare(target: AuditTarget, answers: list[str], here: list[str], workers: int,
                  failures: list[str]) -> set[int]:
    env = target.env
    parts = [answers[k::workers] for k in range(workers)]
    expected = {k: [c.to_json() for c in env.score_group(p)] for k, p in enumerate(parts)}
    ctx = multiprocessing.get_context("spawn")
    pids: set[int] = set()
    ready = ctx.Barrier(workers)
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker,
                             initargs=(target.config_toml, target.spec, ready,
                                       env.split_note)) as pool:
        whole = [pool.submit(score_in_worker, answers) for _ in range(workers)]
        split = [pool.submit(score_in_worker, p) for p in parts]
        for f in whole:
            pid, cards = f.result()
            pids.add(pid)
            if cards != here:
                failures.append(f"worker {pid}: the group's cards differ from this process's; "
                                + first_difference(here, cards))
        for k, f in enumerate(split):
            pid, cards = f.result()
            pids.add(pid)
            if cards != expected[k]:
                failures.append(f"worker {pid}: sub-group {k} differs from this process's; "
                                + first_difference(expected[k], cards))
    if len(pids) < min(workers, 2):
        failures.append(f"only {len(pids)} worker process(es) took tasks")
    return pids
