"""The task prompt template, in one place: system text, brief, answer format, reasoning block.

:data:`PROMPT_VERSION` names this template; it is part of every environment fingerprint
(:meth:`gymkit.config.EnvConfig.fingerprint`), so a change to any text below must bump it.

Two renderings of the same content:

* :func:`render_prompt` — one string (the Gymnasium observation, ``Environment.reset``):
  system text, then ``"Brief: " + brief`` on its own line when a brief is given.
* :func:`chat_messages` — ``[{"role": "system", ...}, {"role": "user", ...}]`` for chat
  trainers (TRL, verl, verifiers): the same system text; the user turn is the brief (or a
  plain request when there is none).

Every rendering states how the answer is read (dsl/extract.py): the single ``<alpha>`` tag
outside any reasoning block counts, tagged drafts inside ``<think>`` are ignored, and an
answer holds at most ``MAX_ANSWER_CHARS`` characters.

``reasoning``: None (default) allows an optional ``<think>`` block (R12 pays +0.05 for it);
True asks for one; False asks for the tag alone (the seed's run answered without reasoning).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["ANSWER_FORMATS", "PROMPT_VERSION", "chat_messages", "render_prompt", "system_text"]

#: Version of this template (bump on any text change; part of the environment fingerprint).
PROMPT_VERSION = "prompt-v3"  # v3: ts_median in the vocabulary; v2: the answer rules (drafts in reasoning, the size limit)

_TASK = ("Write one trading formula (an alpha) in the gymkit DSL. It is ranked across stocks each "
         "day into a dollar-neutral long-short book, filled at the next open.")
_VOCAB = ("Fields: {fields}. Group levels: {levels}. Operators: {ops}. Windows are integer "
          "literals 1..252; total lookback <= 252 sessions.")
#: Answer-format sentence per reasoning mode.
ANSWER_FORMATS: dict[bool | None, str] = {
    None: "Answer with exactly one <alpha>formula</alpha>; an optional <think>...</think> block "
          "may precede it.",
    True: "First reason inside <think>...</think>, then answer with exactly one "
          "<alpha>formula</alpha>.",
    False: "Answer with exactly one <alpha>formula</alpha> and nothing else.",
}
#: How the answer is read (dsl/extract.py), said in every prompt.
#: The last words of every system text: gymkit.server.compat reads a response after them.
ANSWER_RULES_TAIL = " characters in all."
_ANSWER_RULES = ("The answer is the one <alpha> tag outside any <think>...</think> block: tags "
                 "inside it are drafts and are ignored. At most {limit}" + ANSWER_RULES_TAIL)
#: The user turn without a brief, and what precedes a brief's text.
NO_BRIEF = "Design one alpha of your choice."
BRIEF_PREFIX = "Brief: "


def system_text(fields: Iterable[str], levels: Iterable[str], operators: Iterable[str],
                reasoning: bool | None = None) -> str:
    """The system part: task contract, vocabulary of the environment's panel, answer format."""
    if reasoning not in ANSWER_FORMATS:
        raise ValueError(f"reasoning must be None, True or False, got {reasoning!r}")
    vocab = _VOCAB.format(fields=" ".join(fields), levels=" ".join(levels) or "none",
                          ops=" ".join(sorted(operators)))
    from gymkit.dsl.extract import MAX_ANSWER_CHARS

    rules = _ANSWER_RULES.format(limit=MAX_ANSWER_CHARS)
    return f"{_TASK}\n{vocab}\n{ANSWER_FORMATS[reasoning]} {rules}"


def render_prompt(brief: str | None, fields: Iterable[str], levels: Iterable[str],
                  operators: Iterable[str], reasoning: bool | None = None) -> str:
    """The whole prompt as one string (the Gymnasium observation)."""
    text = system_text(fields, levels, operators, reasoning)
    return text + "\n" + BRIEF_PREFIX + brief if brief else text


def chat_messages(brief: str | None, fields: Iterable[str], levels: Iterable[str],
                  operators: Iterable[str], reasoning: bool | None = None) -> list[dict[str, str]]:
    """The prompt as chat messages: system text, then the brief as the user turn."""
    return [{"role": "system", "content": system_text(fields, levels, operators, reasoning)},
            {"role": "user", "content": (BRIEF_PREFIX + brief) if brief else NO_BRIEF}]
