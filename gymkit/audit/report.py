"""The audit report: the PASS/FAIL checklist text and the machine-readable JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .result import CheckResult
from .target import AuditTarget

__all__ = ["REPORT_FORMAT", "checklist_line", "report_dict", "report_text"]

#: Version of the JSON report's schema.
REPORT_FORMAT = "gymkit-audit-v1"


def header_lines(target: AuditTarget) -> list[str]:
    """The header: what was audited (environment, market, fingerprints, notes)."""
    env = target.env
    lines = [f"gymkit audit: {target.describe()}",
             f"  env {env.fingerprint[:16]}  data {env.data_fingerprint[:16]}"]
    return lines + [f"  note: {n}" for n in target.notes]


def checklist_line(res: CheckResult, verbose: bool = False) -> str:
    """One checklist line (plus indented details when ``verbose`` or failed)."""
    line = f"  {'PASS' if res.passed else 'FAIL'}  {res.name:<20} {res.figure}  [{res.seconds:.1f} s]"
    if verbose or not res.passed:
        line += "".join(f"\n          {d}" for d in res.detail)
    return line


def report_text(target: AuditTarget, results: Sequence[CheckResult], seconds: float,
                verbose: bool = False) -> str:
    """The whole printable report: header, one line per check, the verdict."""
    n_fail = sum(not r.passed for r in results)
    lines = header_lines(target) + [""] + [checklist_line(r, verbose) for r in results]
    verdict = "PASS" if n_fail == 0 else f"FAIL ({', '.join(r.name for r in results if not r.passed)})"
    lines += ["", f"{len(results)} checks: {len(results) - n_fail} PASS, {n_fail} FAIL in "
                  f"{seconds:.1f} s -> {verdict}"]
    return "\n".join(lines)


def report_dict(target: AuditTarget, results: Sequence[CheckResult], seconds: float) -> dict[str, Any]:
    """JSON-ready report: target, fingerprints, notes, every check, the verdict."""
    env = target.env
    return {
        "format": REPORT_FORMAT,
        "env_id": target.config.env_id,
        "market": target.spec.describe(),
        "env_fingerprint": env.fingerprint,
        "data_fingerprint": env.data_fingerprint,
        "holdout_sha256": target.holdout_digest,
        "notes": list(target.notes),
        "checks": [r.to_dict() for r in results],
        "passed": all(r.passed for r in results),
        "failed": [r.name for r in results if not r.passed],
        "seconds": round(seconds, 3),
    }


def write_json(path: str, report: dict[str, Any]) -> None:
    """Write ``report`` as indented JSON to ``path``."""
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=2, allow_nan=False)
        fh.write("\n")
