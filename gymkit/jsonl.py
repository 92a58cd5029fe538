"""Reading JSONL files of answers: one object per line, errors naming the file and line."""

from __future__ import annotations

import json
from pathlib import Path


def read_jsonl(path: str | Path, required: tuple[str, ...], need: str) -> list[dict]:
    """Return the JSON objects of ``path`` (blank lines skipped); each must carry the string
    fields ``required``.  ``ValueError`` names ``path:line`` and what is wrong (``need`` says
    which fields a row lacks, in the caller's words)."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not JSON ({exc.msg})") from None
            if not isinstance(row, dict) or not all(isinstance(row.get(k), str) for k in required):
                raise ValueError(f"{path}:{lineno}: {need}")
            rows.append(row)
    return rows
