"""The outcome of one audit check: a name, PASS/FAIL, the figure that decided it and details."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["CheckResult"]


@dataclass(frozen=True)
class CheckResult:
    """One check's verdict.

    ``name``: the check's row name in :data:`gymkit.audit.checks.CHECKS`; ``passed``: the
    verdict; ``figure``: one line with the number(s) the verdict rests on (printed in the
    checklist); ``detail``: further lines (what was measured, what failed and where);
    ``seconds``: wall time of the check (filled in by the runner).
    """

    name: str
    passed: bool
    figure: str
    detail: tuple[str, ...] = field(default_factory=tuple)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict."""
        return {"name": self.name, "passed": self.passed, "figure": self.figure,
                "detail": list(self.detail), "seconds": round(self.seconds, 3)}
