"""The one error type of the DSL front end.

Every rejection of a formula — by the lexer, parser, limits, availability check or the
``<alpha>`` tag contract — is a :class:`DSLError` with a stable machine-readable ``code``,
the 0-based character ``position`` in the text it was given, and a one-line ``message``
that only quotes short excerpts of that text and the DSL's public vocabulary.
"""

from __future__ import annotations

# Stable codes, grouped by the stage that raises them.
SYNTAX_CODES = frozenset({"syntax", "bad_char"})
PRE_PARSE_CODES = frozenset({"too_long", "tokens", "nesting"})
NAME_CODES = frozenset({"unknown_operator", "unknown_field", "unknown_level", "arity",
                        "window_type", "window_range", "level_type", "number"})
LIMIT_CODES = frozenset({"lookback", "depth"})
AVAILABILITY_CODES = frozenset({"group_unavailable", "field_unavailable"})
TAG_CODES = frozenset({"missing_tag", "empty_tag", "multiple_tags", "unclosed_tag"})
ANSWER_CODES = frozenset({"answer_too_long"})  # dsl.extract.MAX_ANSWER_CHARS
ERROR_CODES = (SYNTAX_CODES | PRE_PARSE_CODES | NAME_CODES | LIMIT_CODES
               | AVAILABILITY_CODES | TAG_CODES | ANSWER_CODES)

_EXCERPT = 24


def excerpt(text: str) -> str:
    """Short printable excerpt of the answer's own text for an error message."""
    text = "".join(ch if " " <= ch <= "~" else "?" for ch in text[:_EXCERPT])
    return text + ("…" if len(text) >= _EXCERPT else "")


class DSLError(ValueError):
    """A formula (or answer) the DSL rejects.

    ``code`` is one of :data:`ERROR_CODES`; ``position`` the 0-based character offset
    in the text (-1 when the check ran on an AST without text); ``message`` one line.
    ``str(err)`` is the message.
    """

    __slots__ = ("code", "message", "position")

    def __init__(self, code: str, position: int, message: str) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unregistered DSLError code {code!r}")
        self.code = code
        self.position = position
        self.message = message.replace("\n", " ")
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"DSLError({self.code!r}, {self.position}, {self.message!r})"

    def __reduce__(self):
        return (DSLError, (self.code, self.position, self.message))
