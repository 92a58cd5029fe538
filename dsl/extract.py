"""The ``<alpha>…</alpha>`` answer contract.

Size: an answer (reasoning included) holds at most :data:`MAX_ANSWER_CHARS` characters;
a longer one is rejected first with ``answer_too_long`` (a limit error), before any scan.
``env.score``, ``score-file``, the trainer adapters and the server all reach this check.

Reasoning blocks: a ``<think>`` (or ``<reasoning>``) open and the first ``</think>``
(``</reasoning>``) after it form one block; scanning resumes after the close, so blocks do
not nest and an open that is never closed is plain text.  **Reasoning is not the answer:**
``<alpha>`` / ``</alpha>`` tags inside a block are drafts and are ignored.

The answer: outside the reasoning blocks there must be exactly one ``<alpha>`` tag and one
``</alpha>`` tag (exact, lower-case spelling), the close after the open, with a non-blank
formula between them.  Distinct error codes: ``missing_tag`` (no ``<alpha>`` outside
reasoning; also when the only one is a draft inside a block), ``multiple_tags`` (two or
more opens or closes), ``unclosed_tag`` (no ``</alpha>`` after the open), ``empty_tag``.

Reasoning flag (R12): a block with non-blank content closes before the answer's ``<alpha>``.
Free text before the tag alone does not count: the format reward asks for the block.

Every scan is linear in the answer's length: each ``str.find`` of one pattern starts past
that pattern's previous hit, so no character is searched twice for the same pattern.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import DSLError

__all__ = ["CLOSE", "MAX_ANSWER_CHARS", "OPEN", "REASONING_TAGS", "Extracted", "extract",
           "reasoning_blocks"]

OPEN, CLOSE = "<alpha>", "</alpha>"
#: The most characters one answer may hold (reasoning included): the one limit shared by
#: ``env.score``, ``score-file``, the adapters and the server (its default ``max_answer_chars``).
MAX_ANSWER_CHARS = 128 << 10
#: Reasoning-block tag names (``<think>…</think>``, ``<reasoning>…</reasoning>``).
REASONING_TAGS = ("think", "reasoning")


@dataclass(frozen=True, slots=True)
class Extracted:
    """The formula of an answer: text (stripped), reasoning flag, span in the answer."""

    formula: str
    has_reasoning: bool
    span: tuple[int, int]   # answer[span[0]:span[1]] == formula


#: Reasoning blocks as four parallel lists: start, content start, content end, end (lists
#: of ints: thousands of tiny blocks allocate no objects the garbage collector tracks).
_Blocks = tuple[list[int], list[int], list[int], list[int]]


def _blocks(answer: str) -> _Blocks:
    (ta, tb) = REASONING_TAGS
    open_a, open_b, close_a, close_b = f"<{ta}>", f"<{tb}>", f"</{ta}>", f"</{tb}>"
    na, nb = answer.find(open_a), answer.find(open_b)   # next open of each name (-1: none)
    starts: list[int] = []
    inners: list[int] = []
    closes: list[int] = []
    ends: list[int] = []
    while na >= 0 or nb >= 0:
        if nb < 0 or 0 <= na < nb:
            o, inner = na, na + len(open_a)
            c = answer.find(close_a, inner)
            if c < 0:
                na = -1       # no close of this name after here: its opens are all text
                continue
            end = c + len(close_a)
        else:
            o, inner = nb, nb + len(open_b)
            c = answer.find(close_b, inner)
            if c < 0:
                nb = -1
                continue
            end = c + len(close_b)
        starts.append(o)
        inners.append(inner)
        closes.append(c)
        ends.append(end)
        if 0 <= na < end:
            na = answer.find(open_a, end)
        if 0 <= nb < end:
            nb = answer.find(open_b, end)
    return starts, inners, closes, ends


def reasoning_blocks(answer: str) -> list[tuple[int, int, int, int]]:
    """Return the reasoning blocks of ``answer`` as (start, content start, content end, end).

    Left to right (module doc): an open and the first matching close after it; unclosed
    opens are text.  Linear in ``len(answer)``: each pattern's next hit is searched for
    only once the scan has passed its previous one, and once a tag name has no close left
    its remaining opens are text and are not visited one by one.
    """
    return list(zip(*_blocks(answer), strict=True))


def _outside(answer: str, pat: str, blocks: _Blocks, at_most: int = 2,
             start: int = 0) -> list[int]:
    """The first ``at_most`` start positions >= ``start`` of ``pat`` outside every block.

    A hit inside a block resumes the search at the block's end, so each block costs one
    search however many tags it holds.
    """
    starts, _, _, ends = blocks
    out: list[int] = []
    b = 0
    n = len(starts)
    i = answer.find(pat, start)
    while i >= 0 and len(out) < at_most:
        while b < n and ends[b] <= i:
            b += 1
        if b < n and starts[b] <= i:
            i = answer.find(pat, ends[b])
            continue
        out.append(i)
        i = answer.find(pat, i + len(pat))
    return out


def extract(answer: str) -> Extracted:
    """Find the single ``<alpha>`` formula of ``answer`` (see module doc); DSLError otherwise."""
    if not isinstance(answer, str):
        raise DSLError("missing_tag", 0, "answer must be text containing <alpha>formula</alpha>")
    if len(answer) > MAX_ANSWER_CHARS:
        raise DSLError("answer_too_long", MAX_ANSWER_CHARS,
                       f"the answer has {len(answer)} characters, the limit is {MAX_ANSWER_CHARS} "
                       "(reasoning included)")
    blocks = _blocks(answer)
    starts, inners, closes_in, ends = blocks
    opens = _outside(answer, OPEN, blocks)
    closes = _outside(answer, CLOSE, blocks)
    if not opens:
        if any(answer.find(OPEN, i, c) >= 0 for i, c in zip(inners, closes_in, strict=True)):
            raise DSLError("missing_tag", starts[0],
                           "the only <alpha> tag is inside the reasoning block, a draft: give "
                           "the answer as <alpha>formula</alpha> after the block closes")
        where = closes[0] if closes else 0
        raise DSLError("missing_tag", where,
                       "no <alpha> tag: write the formula as <alpha>formula</alpha>")
    start = opens[0]
    if len(opens) > 1:
        raise DSLError("multiple_tags", opens[1],
                       f"a second <alpha> tag at {opens[1]}: give exactly one formula")
    inner_start = start + len(OPEN)
    after = _outside(answer, CLOSE, blocks, 2, inner_start)
    if not after:
        raise DSLError("unclosed_tag", start, f"<alpha> at {start} is never closed by </alpha>")
    if closes[0] < start or len(after) > 1:
        pos = closes[0] if closes[0] < start else after[1]
        raise DSLError("multiple_tags", pos, f"a second </alpha> tag at {pos}: give exactly one formula")
    end = after[0]
    inner = answer[inner_start:end]
    stripped = inner.strip()
    if not stripped:
        raise DSLError("empty_tag", start, f"the <alpha> tag at {start} is empty")
    lead = len(inner) - len(inner.lstrip())
    span = (inner_start + lead, inner_start + lead + len(stripped))
    has_reasoning = False
    for i, c, e in zip(inners, closes_in, ends, strict=True):
        if e > start:
            break
        if c > i and not answer[i:c].isspace():
            has_reasoning = True
            break
    return Extracted(stripped, has_reasoning, span)
