"""uvicorn's h11 protocol with a request-header deadline (slow-loris guard).

uvicorn closes idle keep-alive connections (``timeout_keep_alive``) but has no deadline for a
client that trickles its request headers one byte at a time: every byte cancels the idle
timer.  :func:`guarded_h11` returns a protocol class that arms a deadline when a connection
opens and after each response; if the next request's headers are still incomplete when it
fires (h11's peer state still ``IDLE``), the connection is closed.  h11 itself bounds header
size (``h11_max_incomplete_event_size``); the body deadline lives in the app's guard.

Connection pressure: when open connections pass ``shed_at`` (the concurrency limit less a
margin), each new connection closes the oldest connections that have been idle (no request
in progress, no request bytes pending) for at least ``SHED_MIN_IDLE_S``, so idle sockets
cannot starve new requests.  At the limit itself a request is answered at once with a JSON
503 ``server_busy``; the HTTP parser's 400s are JSON ``bad_request`` too.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import STATUS_PHRASES, H11Protocol

__all__ = ["SHED_MIN_IDLE_S", "guarded_h11"]

#: A connection idle for less than this is never shed (it may be about to send its request).
SHED_MIN_IDLE_S = 0.5


def _error_body(code: str, message: str) -> bytes:
    return json.dumps({"error": {"code": code, "message": message}}, separators=(",", ":")).encode()


_BUSY = _error_body("server_busy", "the server is at its connection limit; retry shortly")


class _GuardedH11(H11Protocol):
    header_timeout_s: float = 10.0
    shed_margin: int = 32
    _header_timer: asyncio.TimerHandle | None = None
    _idle_since: float = 0.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # the concurrency limit is enforced by _limited_app (a JSON 503), not by uvicorn
        self._limit = self.limit_concurrency
        self.limit_concurrency = None
        if self._limit is not None:
            self.app = self._limited_app(self.app)

    def _limited_app(self, app: Any) -> Any:
        async def limited(scope: Any, receive: Any, send: Any) -> None:
            # this request's own task is in self.tasks already, hence '>'
            if len(self.connections) > self._limit or len(self.tasks) > self._limit:
                await send({"type": "http.response.start", "status": 503, "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(_BUSY)).encode()), (b"connection", b"close"),
                    (b"retry-after", b"1")]})
                await send({"type": "http.response.body", "body": _BUSY, "more_body": False})
                return
            await app(scope, receive, send)
        return limited

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._idle_since = self.loop.time()
        self._arm_header_timer()
        if self._limit is not None and len(self.connections) > self._limit - self.shed_margin:
            self._shed()

    def data_received(self, data: bytes) -> None:
        self._idle_since = float("inf")  # busy until its response completes
        super().data_received(data)

    def _idle_for(self, now: float) -> float:
        busy = self.cycle is not None and not self.cycle.response_complete
        if busy or self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return -1.0
        return now - self._idle_since

    def _shed(self) -> None:
        """Close the longest-idle connections until the count is back under the margin."""
        now = self.loop.time()
        excess = len(self.connections) - (self._limit - self.shed_margin)
        idle = sorted(((p._idle_for(now), id(p), p) for p in self.connections
                       if p is not self and isinstance(p, _GuardedH11)), reverse=True)
        for age, _, p in idle[:excess]:
            if age < SHED_MIN_IDLE_S:
                break
            p.transport.close()

    def send_400_response(self, msg: str) -> None:
        body = _error_body("bad_request", f"invalid HTTP request: {msg}")
        headers = [(b"content-type", b"application/json"),
                   (b"content-length", str(len(body)).encode()), (b"connection", b"close")]
        try:
            self.transport.write(self.conn.send(h11.Response(status_code=400, headers=headers,
                                                             reason=STATUS_PHRASES[400])))
            self.transport.write(self.conn.send(h11.Data(data=body)))
            self.transport.write(self.conn.send(h11.EndOfMessage()))
        except h11.LocalProtocolError:
            pass  # a response had already started: just close
        self.transport.close()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._idle_since = self.loop.time()
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _arm_header_timer(self) -> None:
        self._cancel_header_timer()
        if not self.transport.is_closing():
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._header_deadline)

    def _header_deadline(self) -> None:
        self._header_timer = None
        in_request = self.cycle is not None and not self.cycle.response_complete
        if self.transport.is_closing() or in_request:
            return
        if self.conn.their_state is h11.IDLE:  # headers of the next request still incomplete
            self.transport.close()


def guarded_h11(header_timeout_s: float) -> type[H11Protocol]:
    """An ``H11Protocol`` subclass closing connections whose headers take > ``header_timeout_s``."""
    return type("GuardedH11Protocol", (_GuardedH11,), {"header_timeout_s": float(header_timeout_s)})
