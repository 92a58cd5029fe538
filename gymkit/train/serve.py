"""``gymkit train serve RUN``: an OpenAI-compatible chat server around a trained research policy.

``POST /v1/chat/completions`` (plain or ``"stream": true`` server-sent events) and
``GET /v1/models``, on 127.0.0.1 by default, so any harness that speaks OpenAI's chat API
(verifiers' ``vf-eval``, NeMo-Gym's agents, ...) can run the policy of ``gymkit train research``
in the research gym.  Each request is answered from its messages alone (no server state):

* the policy's context is rebuilt from the conversation: the brief from the user message
  (``Brief: ...``), the budget from the system prompt's research rules (else ``--budget``),
  each assistant turn as the policy writes it (:func:`~gymkit.train.research_rl.action_ids`;
  the exact ids of a turn this server wrote are remembered), each tool message as the
  bucketed observation the policy reads (:func:`~gymkit.train.research_rl.observation_pieces`);
* the policy writes one action: ``<backtest> f`` or ``<describe>`` comes back as one OpenAI
  ``tool_calls`` entry (``finish_reason: "tool_calls"``, arguments JSON text); a submit
  (``<submit> i``, the formula of its i-th backtest, or ``<alpha>f</alpha>``) as the text
  ``<alpha>f</alpha>``, the research gym's submit form; anything else as its text
  (``finish_reason: "stop"`` for both);
* once a tool message says the episode is over (no ``calls_left``), or after budget + 1 turns,
  the answer is an empty text turn: the policy stops talking when its episode has ended.

Decoding: greedy at ``temperature`` 0 (default), else multinomial with a generator seeded by
(``seed``, the request's messages): the same request gets the same answer in any order.
Bad input is a 400 with a one-line ``error.message`` naming what is wrong.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["PolicyServer", "RequestError", "load_research_policy", "serve", "start_server"]

_BUDGET_RE = re.compile(r"You have (\d+) tool calls besides submit")
_BRIEF_PREFIX = "Brief: "


class RequestError(ValueError):
    """A request this server cannot answer (a 400, one line)."""


def load_research_policy(path: str | Path) -> tuple[Any, Any, Path]:
    """(model, tokenizer, folder) of a research policy: ``path`` itself when it holds
    ``tokenizer.json``, else ``path/research/policy`` (a ``gymkit train research`` run)."""
    from .policy import load_policy

    path = Path(path)
    folder = path if (path / "tokenizer.json").is_file() else path / "research" / "policy"
    if not (folder / "tokenizer.json").is_file():
        raise ValueError(f"{path}: no research policy (neither {path}/tokenizer.json nor "
                         f"{folder}/tokenizer.json; run `gymkit train research` first)")
    model, tok = load_policy(folder)
    if "<backtest>" not in tok.ids:
        raise ValueError(f"{folder}: a single-turn policy (its vocabulary has no research "
                         f"tokens); serve a `gymkit train research` run")
    model.config.max_position_embeddings = max(model.config.max_position_embeddings, 1024)
    return model, tok, folder


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    raise RequestError(f"message content must be text or content parts, not {type(content).__name__}")


class PolicyServer:
    """Answers chat requests with a research policy (module doc); thread-safe."""

    def __init__(self, path: str | Path, *, temperature: float = 0.0, seed: int = 0,
                 budget: int = 8, max_action: int = 40, model_name: str = "gymkit-research",
                 threads: int = 1) -> None:
        from .policy import deterministic

        if not temperature >= 0.0:
            raise ValueError(f"temperature must be >= 0, got {temperature!r}")
        deterministic(threads)
        self.model, self.tok, self.folder = load_research_policy(path)
        self.temperature, self.seed, self.budget = float(temperature), int(seed), int(budget)
        self.max_action, self.model_name = int(max_action), model_name
        self._lock = threading.Lock()
        self._written: dict[str, list[int]] = {}
        self.served = 0  # completions answered

    # ------------------------------------------------------------------ context
    def context(self, messages: Sequence[Any]) -> tuple[list[int], list[str], bool]:
        """(policy ids, the formulas backtested so far, episode over) of a conversation."""
        from .research_rl import action_ids, observation_pieces, policy_context

        if not isinstance(messages, list) or not messages:
            raise RequestError("messages must be a non-empty list")
        system = " ".join(_text(m.get("content")) for m in messages
                          if isinstance(m, dict) and m.get("role") in ("system", "developer"))
        found = _BUDGET_RE.search(system)
        budget = int(found.group(1)) if found else self.budget
        users = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"]
        if not users:
            raise RequestError("messages hold no user message (the brief)")
        first = _text(messages[users[0]].get("content")).strip()
        brief = first[len(_BRIEF_PREFIX):] if first.startswith(_BRIEF_PREFIX) else None
        ids = policy_context(self.tok, brief, budget)
        turns, over, tested = 0, False, []
        for i, m in enumerate(messages[users[0] + 1:], start=users[0] + 1):
            if not isinstance(m, dict):
                raise RequestError(f"messages[{i}] is not an object")
            role = m.get("role")
            if role == "assistant":
                calls = m.get("tool_calls") or []
                if not calls:
                    turns += 1
                    ids += self._ids_of(_text(m.get("content")))
                for c in calls:
                    turns += 1
                    fn = (c.get("function") or {}) if isinstance(c, dict) else {}
                    args = fn.get("arguments") or "{}"
                    try:
                        parsed = json.loads(args) if isinstance(args, str) else args
                    except ValueError:
                        parsed = None
                    if not isinstance(parsed, dict):
                        ids += self._ids_of(str(args))
                        continue
                    call = {"name": fn.get("name"), "arguments": parsed}
                    if call["name"] == "backtest" and isinstance(parsed.get("formula"), str):
                        tested.append(parsed["formula"])
                    ids += self._written.get(_key(call)) or action_ids(self.tok, call)
            elif role == "tool":
                pieces = observation_pieces(_text(m.get("content")))
                over = over or "obs:over" in pieces
                ids += [self.tok.ids[p] for p in pieces]
        return ids, tested, over or turns > budget

    def _ids_of(self, text: str) -> list[int]:
        from .research_rl import action_ids

        return self._written.get(_key(text)) or action_ids(self.tok, text)

    # ------------------------------------------------------------------ answering
    def complete(self, body: Any) -> dict[str, Any]:
        """The ``chat.completion`` object answering request ``body`` (module doc)."""
        import torch

        from .policy import sample
        from .research_rl import action_call

        if not isinstance(body, dict):
            raise RequestError("the request body must be a JSON object")
        messages = body.get("messages")
        digest = hashlib.sha256(json.dumps([self.seed, messages], sort_keys=True,
                                           default=str).encode()).hexdigest()
        with self._lock:
            ids, tested, over = self.context(messages)
            self.served += 1
            if over:
                out, written = None, []
            else:
                gen = None if self.temperature == 0.0 else \
                    torch.Generator().manual_seed(int(digest[:15], 16))
                written = sample(self.model, self.tok, ids, 1, max_new=self.max_action,
                                 temperature=self.temperature or 1.0, generator=gen,
                                 greedy=self.temperature == 0.0)[0]
                out = action_call(self.tok, written, tested)
            if isinstance(out, dict) and out["name"] == "submit":  # the gym's text submit form
                out = f"<alpha>{out['arguments']['formula']}</alpha>"
            if isinstance(out, dict):
                args = json.dumps(out["arguments"], sort_keys=True)
                self._written[_key({"name": out["name"], "arguments": out["arguments"]})] = written
                message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [{
                    "id": f"call_{digest[:24]}", "type": "function",
                    "function": {"name": out["name"], "arguments": args}}]}
                finish = "tool_calls"
            else:
                text = out or ""
                if written:
                    self._written[_key(text)] = written
                message, finish = {"role": "assistant", "content": text}, "stop"
        return {"id": f"chatcmpl-{digest[:24]}", "object": "chat.completion", "created": 0,
                "model": str(body.get("model") or self.model_name),
                "choices": [{"index": 0, "message": message, "finish_reason": finish,
                             "logprobs": None}],
                "usage": {"prompt_tokens": len(ids), "completion_tokens": len(written),
                          "total_tokens": len(ids) + len(written)}}


def _key(x: Any) -> str:
    return json.dumps(x, sort_keys=True)


def _chunks(done: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """The completion as OpenAI's stream: a delta with the message, the finish, the usage."""
    base = {k: done[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    choice = done["choices"][0]
    msg = choice["message"]
    delta: dict[str, Any] = {"role": "assistant"}
    if msg.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(msg["tool_calls"])]
    else:
        delta["content"] = msg["content"]
    out = [{**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None,
                                 "logprobs": None}]},
           {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"],
                                 "logprobs": None}]}]
    if include_usage:
        out.append({**base, "choices": [], "usage": done["usage"]})
    return out


def _handler(policy: PolicyServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, code: int, data: bytes, ctype: str = "application/json") -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, code: int, message: str) -> None:
            self._send(code, json.dumps({"error": {"message": message, "type":
                                                   "invalid_request_error", "code": code}}).encode())

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, json.dumps({"object": "list", "data": [{
                    "id": policy.model_name, "object": "model", "created": 0,
                    "owned_by": "gymkit"}]}).encode())
                return
            self._error(404, f"no route {self.path}")

        def do_POST(self) -> None:
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._error(404, f"no route {self.path}")
                return
            try:
                try:
                    body = json.loads(raw or b"{}")
                except ValueError as exc:
                    raise RequestError(f"the request body is not JSON: {exc}") from None
                done = policy.complete(body)
            except (ValueError, RequestError) as exc:
                self._error(400, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
                return
            if body.get("stream"):
                inc = bool((body.get("stream_options") or {}).get("include_usage"))
                data = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n"
                                for c in _chunks(done, inc)) + b"data: [DONE]\n\n"
                self._send(200, data, "text/event-stream")
                return
            self._send(200, json.dumps(done).encode())

    return Handler


def start_server(policy: PolicyServer, host: str = "127.0.0.1", port: int = 0
                 ) -> tuple[ThreadingHTTPServer, str]:
    """Serve ``policy`` in a daemon thread; returns (server, OpenAI base URL ``.../v1``).
    Stop it with ``server.shutdown(); server.server_close()``."""
    server = ThreadingHTTPServer((host, port), _handler(policy))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://{host}:{server.server_address[1]}/v1"


def serve(path: str | Path, host: str = "127.0.0.1", port: int = 8000, **kwargs: Any) -> None:
    """Serve the research policy at ``path`` until interrupted (``gymkit train serve``)."""
    policy = PolicyServer(path, **kwargs)
    server = ThreadingHTTPServer((host, port), _handler(policy))
    print(f"serving {policy.folder} as {policy.model_name!r} at "
          f"http://{host}:{server.server_address[1]}/v1 (POST /chat/completions)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
