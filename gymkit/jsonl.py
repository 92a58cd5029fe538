"""Reading JSONL files of answers: one object per line, errors naming the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path


def parse_json_line(line: str, where: str) -> object:
    """``json.loads(line)``; a ``ValueError`` "WHERE: not valid JSON (why)" if it is not."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not valid JSON ({exc.msg})") from None


def iter_json_lines(path: str | Path) -> Iterator[tuple[int, object]]:
    """Yield (line number, object) for every non-blank line of ``path``, streaming; a bad line
    raises the ``ValueError`` of :func:`parse_json_line` naming ``path:line``."""
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.strip():
                yield lineno, parse_json_line(line, f"{path}:{lineno}")


def read_jsonl(path: str | Path, required: tuple[str, ...], need: str) -> list[dict]:
    """Return the JSON objects of ``path`` (blank lines skipped); each must carry the string
    fields ``required``.  ``ValueError`` names ``path:line`` and what is wrong (``need`` says
    which fields a row lacks, in the caller's words)."""
    rows = []
    for lineno, row in iter_json_lines(path):
        if not isinstance(row, dict) or not all(isinstance(row.get(k), str) for k in required):
            raise ValueError(f"{path}:{lineno}: {need}")
        rows.append(row)
    return rows
