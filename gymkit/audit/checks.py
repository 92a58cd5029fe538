"""THE table of audit checks, and the runner.

Each row of :data:`CHECKS` is one item of the pre-run checklist (playbook §7) or one leak rule
of DESIGN §9: a name, the question it answers, where the rule comes from, and a function
``AuditTarget -> CheckResult``.  ``gymkit audit`` runs the rows in order; the tests in
``tests/leak/`` call the same functions.  A check that raises is a FAIL naming the exception
(fail closed: a check that could not run did not pass).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .canary import check_canaries, check_error_hygiene
from .checklist import check_hand_play, check_native_engine, check_non_triviality, check_variance
from .determinism import check_determinism
from .holdout import check_frozen_holdout, check_holdout_isolation
from .lookahead import check_fill_timing, check_future_perturbation, check_static_lookback
from .result import CheckResult
from .target import AuditTarget

__all__ = ["CHECKS", "CHECK_NAMES", "Check", "run_checks"]


@dataclass(frozen=True)
class Check:
    """One audit check: ``name``, the ``question`` it answers, its ``source`` and ``run``."""

    name: str
    question: str
    source: str
    run: Callable[[AuditTarget], CheckResult]


CHECKS: tuple[Check, ...] = (
    Check("static_lookback", "does every operator declare a lookback it keeps?",
          "DESIGN §3, §9", check_static_lookback),
    Check("future_perturbation", "does scrambling the future change any past value, weight "
          "or P&L?", "DESIGN §9; playbook §5.7", check_future_perturbation),
    Check("fill_timing", "does the book fill at the next open (Aug 9 hack closed)?",
          "DESIGN §4; seed hack log", check_fill_timing),
    Check("holdout_isolation", "are train cards blind to holdout rows?",
          "DESIGN §2, §9", check_holdout_isolation),
    Check("frozen_holdout", "is the holdout hashed, unchanged and never handed to a train "
          "path?", "playbook §7.8", check_frozen_holdout),
    Check("canaries", "does any private canary reach an observation?",
          "playbook §5.7, §7.6", check_canaries),
    Check("error_hygiene", "do error messages carry only the answer and public vocabulary?",
          "DESIGN §3; playbook §5.7", check_error_hygiene),
    Check("determinism", "are cards byte-identical across rescoring, cache, processes, "
          "workers?", "DESIGN §9", check_determinism),
    Check("hand_play", "can a known-good formula from the prompt alone score > 0 (on a market "
          "without planted effects: above every naive baseline)?",
          "playbook §7.1", check_hand_play),
    Check("non_triviality", "do naive baselines score <= 0?", "playbook §7.2",
          check_non_triviality),
    Check("variance", "do groups have reward variance and non-zero GDPO advantages?",
          "playbook §7.3; DESIGN §6", check_variance),
    Check("native_engine", "is scoring bound to our engine, equal to a reference?",
          "playbook §4, §7.4", check_native_engine),
)

CHECK_NAMES: tuple[str, ...] = tuple(c.name for c in CHECKS)


def run_checks(target: AuditTarget, names: Sequence[str] | None = None,
               progress: Callable[[CheckResult], None] | None = None) -> list[CheckResult]:
    """Run the checks ``names`` (default: all, in table order) on ``target``.

    Unknown names raise ``ValueError`` listing the known ones.  ``progress`` is called with
    each result as it completes.
    """
    wanted = list(CHECK_NAMES) if names is None else list(names)
    unknown = [n for n in wanted if n not in CHECK_NAMES]
    if unknown:
        raise ValueError(f"unknown audit check(s) {unknown}; known: {list(CHECK_NAMES)}")
    results = []
    for check in CHECKS:
        if check.name not in wanted:
            continue
        t0 = time.perf_counter()
        try:
            res = check.run(target)
        except Exception as exc:  # fail closed
            res = CheckResult(check.name, False, f"check crashed: {type(exc).__name__}: {exc}")
        res = CheckResult(res.name, res.passed, res.figure, res.detail, time.perf_counter() - t0)
        results.append(res)
        if progress is not None:
            progress(res)
    return results
