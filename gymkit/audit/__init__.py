"""gymkit.audit: the leak/canary checks and the pre-run checklist (``gymkit audit``).

One function per check (``AuditTarget -> CheckResult``) in themed modules — look-ahead
(:mod:`.lookahead`), holdout (:mod:`.holdout`), canaries and error hygiene (:mod:`.canary`),
determinism (:mod:`.determinism`), the checklist items (:mod:`.checklist`) — registered in
one table, :data:`gymkit.audit.checks.CHECKS`.  The CI suite ``tests/leak/`` and the command
``gymkit audit`` both run these functions.  Names are resolved lazily (the checks import the
numba engine; ``gymkit --help`` should not pay for it).
"""

from importlib import import_module

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "CHECKS": "gymkit.audit.checks",
    "CHECK_NAMES": "gymkit.audit.checks",
    "Check": "gymkit.audit.checks",
    "run_checks": "gymkit.audit.checks",
    "CheckResult": "gymkit.audit.result",
    "AuditTarget": "gymkit.audit.target",
    "MarketSpec": "gymkit.audit.target",
    "build_target": "gymkit.audit.target",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gymkit.audit' has no attribute {name!r}")
    return getattr(import_module(module), name)
