"""Trainer compatibility: find the answer in what OpenRLHF, slime and NeMo-Gym send.

OpenRLHF posts the *chat-templated* text (prompt + response) as ``query``.  The answer is
taken from its end, by :func:`response_of_query`:

1. the text after the **last assistant-turn marker** of a known chat template, searched
   from the end: ChatML ``<|im_start|>assistant`` (Qwen, Yi, …), Llama 3
   ``<|start_header_id|>assistant<|end_header_id|>``, harmony ``<|start|>assistant``,
   DeepSeek ``<｜Assistant｜>``, Phi/Zephyr/GLM ``<|assistant|>``, Gemma
   ``<start_of_turn>model``, Mistral/Llama 2 ``[/INST]``;
2. else, when ``prompts[i]`` is a prefix of the query, the text after it;
3. else the text after the last plain ``Assistant:`` line;
4. else the last ``<alpha>…</alpha>`` together with the text since the previous tag (so an
   example tag in the prompt and the answer's reasoning block stay apart).

That text is scored exactly like a completion passed to ``env.score`` (the tag contract is
unchanged: two tags in the response are still ``multiple_tags``; trailing end-of-turn
tokens after ``</alpha>`` are ignored by the extractor).  slime sends the bare response;
NeMo-Gym sends an OpenAI Responses object whose last assistant message's ``output_text``
parts are joined.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ASSISTANT_MARKERS", "nemo_response_text", "response_of_query"]

#: Assistant-turn markers of common chat templates (special-token markers only).
ASSISTANT_MARKERS: tuple[str, ...] = (
    "<|im_start|>assistant",
    "<|start_header_id|>assistant<|end_header_id|>",
    "<|start|>assistant",
    "<｜Assistant｜>",
    "<|assistant|>",
    "<start_of_turn>model",
    "[/INST]",
)
_PLAIN_MARKERS = ("\nAssistant:", "\nassistant:", "\nASSISTANT:")
_OPEN, _CLOSE = "<alpha>", "</alpha>"


def response_of_query(query: str, prompt: str | None = None) -> tuple[str, str]:
    """Return (answer text, how it was found) for one chat-templated query (module doc)."""
    best = -1
    for m in ASSISTANT_MARKERS:
        i = query.rfind(m)
        if i >= 0:
            best = max(best, i + len(m))
    if best >= 0:
        return query[best:], "marker"
    if prompt and query.startswith(prompt):
        return query[len(prompt):], "prompt_prefix"
    best = -1
    for m in _PLAIN_MARKERS:
        i = query.rfind(m)
        if i >= 0:
            best = max(best, i + len(m))
    if best >= 0:
        return query[best:], "plain_marker"
    start = query.rfind(_OPEN)
    if start < 0:
        return query, "whole"
    prev = query.rfind(_CLOSE, 0, start)
    return query[prev + len(_CLOSE) if prev >= 0 else 0:], "last_tag"


def nemo_response_text(output: list[dict[str, Any]]) -> str:
    """The text of the last assistant message of a Responses-API ``output`` list ('' if none)."""
    for item in reversed(output):
        if item.get("type", "message") != "message" or item.get("role", "assistant") != "assistant":
            continue
        content = item.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(str(p.get("text", "")) for p in content
                           if isinstance(p, dict) and p.get("type") in ("output_text", "text"))
    return ""
