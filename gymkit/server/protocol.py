"""uvicorn's h11 protocol with a request-header deadline (slow-loris guard).

uvicorn closes idle keep-alive connections (``timeout_keep_alive``) but has no deadline for a
client that trickles its request headers one byte at a time: every byte cancels the idle
timer.  :func:`guarded_h11` returns a protocol class that arms a deadline when a connection
opens and after each response; if the next request's headers are still incomplete when it
fires (h11's peer state still ``IDLE``), the connection is closed.  h11 itself bounds header
size (``h11_max_incomplete_event_size``); the body deadline lives in the app's guard.
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["guarded_h11"]


class _GuardedH11(H11Protocol):
    header_timeout_s: float = 10.0
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
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
