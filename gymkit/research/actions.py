"""Reading a policy's action as one tool call.

Accepted forms (the first that applies):

* a mapping in the OpenAI tool-call format ``{"type": "function", "function": {"name": ...,
  "arguments": "<json text>" or {...}}}``, or plain ``{"name": ..., "arguments": ...}``;
* text holding ``<tool_call>{json}</tool_call>`` (the Hermes/Qwen chat format) or that is
  itself such a JSON object;
* text holding an ``<alpha>`` tag: a ``submit`` of that formula (the single-turn answer form).

Anything else is a :class:`ActionError` with a one-line message (the episode reports it to
the policy and counts the call).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .tools import TOOL_SPECS

__all__ = ["MAX_ACTION_CHARS", "ActionError", "ToolCall", "parse_action"]

MAX_ACTION_CHARS = 16384
_TOOL_TAG = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_ALPHA = re.compile(r"<alpha>(.*?)</alpha>", re.DOTALL)
_PARAMS = {t["function"]["name"]: tuple(t["function"]["parameters"]["properties"])
           for t in TOOL_SPECS}


class ActionError(ValueError):
    """The action is not one well-formed call of a known tool."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call: the tool's ``name`` and its string ``arguments``."""

    name: str
    arguments: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"name": self.name, "arguments": dict(self.arguments)}


def _from_mapping(d: Mapping[str, Any]) -> ToolCall:
    fn = d.get("function") if isinstance(d.get("function"), Mapping) else d
    name = fn.get("name")
    args = fn.get("arguments", {})
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as exc:
            raise ActionError(f"the arguments of {name!r} are not JSON: {exc.msg} at "
                              f"{exc.pos}") from None
    if not isinstance(name, str) or name not in _PARAMS:
        raise ActionError(f"unknown tool {name!r}; the tools are {', '.join(_PARAMS)}")
    if not isinstance(args, Mapping):
        raise ActionError(f"the arguments of {name!r} must be a JSON object")
    want = _PARAMS[name]
    extra = sorted(set(args) - set(want))
    missing = [k for k in want if k not in args]
    if extra or missing:
        raise ActionError(f"{name} takes ({', '.join(want)}); missing {missing}, unexpected {extra}")
    bad = [k for k in want if not isinstance(args[k], str)]
    if bad:
        raise ActionError(f"{name}: {', '.join(bad)} must be a string")
    return ToolCall(name, {k: args[k] for k in want})


def parse_action(action: object) -> ToolCall:
    """The tool call ``action`` names (module doc); :class:`ActionError` otherwise."""
    if isinstance(action, Mapping):
        return _from_mapping(action)
    if not isinstance(action, str):
        raise ActionError(f"an action is a tool call (a JSON object) or text, not "
                          f"{type(action).__name__}")
    if len(action) > MAX_ACTION_CHARS:
        raise ActionError(f"the action has {len(action)} characters, the limit is "
                          f"{MAX_ACTION_CHARS}")
    m = _TOOL_TAG.search(action)
    text = m.group(1).strip() if m else action.strip()
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ActionError(f"the tool call is not JSON: {exc.msg} at {exc.pos}") from None
        if not isinstance(obj, Mapping):
            raise ActionError("the tool call must be a JSON object")
        return _from_mapping(obj)
    a = _ALPHA.search(action)
    if a and not m:
        return ToolCall("submit", {"formula": a.group(1).strip()})
    raise ActionError("no tool call found: answer with a tool call such as "
                      '<tool_call>{"name": "backtest", "arguments": {"formula": "..."}}'
                      "</tool_call>, or submit with <alpha>formula</alpha>")
