"""A fake OpenAI-compatible chat server on 127.0.0.1 that answers with canned completions.

It serves ``POST .../chat/completions`` (a ``chat.completion`` object whose one choice is the
next canned answer, in request order, cycling; with ``"stream": true`` the same answer as
OpenAI's server-sent events: ``chat.completion.chunk`` deltas, a ``finish_reason`` chunk, a usage
chunk when ``stream_options.include_usage`` is set, then ``data: [DONE]``) so a trainer
library's own client and rollout code run unchanged; every request body is kept in
``requests``.  A canned answer equal to :data:`FAIL` is served as an HTTP 500 with an OpenAI
error body instead (a provider failure).  Bounded: it serves only this process's test requests
and stops with :meth:`close`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: A canned "answer" that makes the server fail that request with HTTP 500 (a provider error).
FAIL = "\x00fake-openai: fail this request\x00"


class FakeOpenAI:
    """Start the server; ``url`` is its OpenAI base URL (``http://127.0.0.1:PORT/v1``)."""

    def __init__(self, answers: Sequence[str]) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(n) or b"{}")
                with fake._lock:
                    i = len(fake.requests)
                    fake.requests.append((self.path, body))
                    text = fake.answers[i % len(fake.answers)]
                if not self.path.endswith("/chat/completions"):
                    self.send_error(404)
                    return
                if text == FAIL:
                    err = json.dumps({"error": {"message": "the provider failed", "code": 500,
                                                "type": "server_error"}}).encode()
                    self.send_response(500)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(err)))
                    self.end_headers()
                    self.wfile.write(err)
                    return
                if body.get("stream"):
                    self._stream(i, body, text)
                    return
                out = {"id": f"cmpl-{i}", "object": "chat.completion", "created": 0,
                       "model": body.get("model", "fake"),
                       "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                                    "message": {"role": "assistant", "content": text}}],
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
                data = json.dumps(out).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, i: int, body: dict[str, Any], text: str) -> None:
                base = {"id": f"cmpl-{i}", "object": "chat.completion.chunk", "created": 0,
                        "model": body.get("model", "fake")}
                half = len(text) // 2  # two content deltas: the client must join them
                chunks = [
                    {**base, "choices": [{"index": 0, "finish_reason": None, "logprobs": None,
                                          "delta": {"role": "assistant", "content": text[:half]}}]},
                    {**base, "choices": [{"index": 0, "finish_reason": None, "logprobs": None,
                                          "delta": {"content": text[half:]}}]},
                    {**base, "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                                          "delta": {}}]},
                ]
                if (body.get("stream_options") or {}).get("include_usage"):
                    chunks.append({**base, "choices": [], "usage": {
                        "prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
                data = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
                data += b"data: [DONE]\n\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()
