"""The ``<alpha>…</alpha>`` answer contract.

An answer must contain exactly one ``<alpha>`` tag and one ``</alpha>`` tag (exact,
lower-case spelling), the close after the open, with a non-blank formula between them.
Distinct error codes: ``missing_tag`` (no ``<alpha>``), ``multiple_tags`` (two or more
opens or closes), ``unclosed_tag`` (no ``</alpha>`` after the open), ``empty_tag``.

Reasoning block (R12): the answer has a ``<think>…</think>`` or
``<reasoning>…</reasoning>`` block with non-blank content that closes before ``<alpha>``.
Free text before the tag alone does not count: the format reward asks for the block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import DSLError

OPEN, CLOSE = "<alpha>", "</alpha>"
_REASONING = re.compile(r"<(think|reasoning)>(.*?)</\1>", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Extracted:
    """The formula of an answer: text (stripped), reasoning flag, span in the answer."""

    formula: str
    has_reasoning: bool
    span: tuple[int, int]   # answer[span[0]:span[1]] == formula


def extract(answer: str) -> Extracted:
    """Find the single ``<alpha>`` formula of ``answer`` (see module doc); DSLError otherwise."""
    if not isinstance(answer, str):
        raise DSLError("missing_tag", 0, "answer must be text containing <alpha>formula</alpha>")
    start = answer.find(OPEN)
    if start < 0:
        where = answer.find(CLOSE)
        raise DSLError("missing_tag", max(where, 0),
                       "no <alpha> tag: write the formula as <alpha>formula</alpha>")
    second = answer.find(OPEN, start + len(OPEN))
    if second >= 0:
        raise DSLError("multiple_tags", second,
                       f"a second <alpha> tag at {second}: give exactly one formula")
    inner_start = start + len(OPEN)
    end = answer.find(CLOSE, inner_start)
    if end < 0:
        raise DSLError("unclosed_tag", start, f"<alpha> at {start} is never closed by </alpha>")
    extra = answer.find(CLOSE, end + len(CLOSE))
    stray = answer.find(CLOSE, 0, start)
    if extra >= 0 or stray >= 0:
        pos = stray if stray >= 0 else extra
        raise DSLError("multiple_tags", pos, f"a second </alpha> tag at {pos}: give exactly one formula")
    inner = answer[inner_start:end]
    stripped = inner.strip()
    if not stripped:
        raise DSLError("empty_tag", start, f"the <alpha> tag at {start} is empty")
    lead = len(inner) - len(inner.lstrip())
    span = (inner_start + lead, inner_start + lead + len(stripped))
    has_reasoning = any(m.group(2).strip() for m in _REASONING.finditer(answer, 0, start))
    return Extracted(stripped, has_reasoning, span)
