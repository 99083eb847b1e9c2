"""HTTP connections under limits: a peer cannot hold the receiver's sockets forever.

aiohttp has no header read timeout, and a connection that never sends a request is held until
the peer goes away: enough of them exhaust the file descriptors, and then ``/healthz`` stops
answering. ``ConnectionGuard`` sits between the listening socket and aiohttp's protocol:

- a connection between requests must start its next request within ``idle_timeout`` seconds
  (also the wait for the first one), and once its first bytes arrived, must deliver the
  request's headers within ``header_timeout`` (a slow-loris client is cut off there);
- at most ``max_connections`` are open: a new one past the limit closes another that has no
  request in progress: the oldest that never sent a byte (half-open), else the one that has
  been quiet longest; it is itself refused only when every open connection is serving a
  request;
- the body of a request is read under its own timeout (``BODY_TIMEOUT`` in the handler).

Each closing is counted (``connections_timed_out``, ``connections_evicted``,
``connections_refused``; ``connections_open`` is the gauge). The moment a request's handler
starts and ends is told by ``middleware``, so no HTTP parsing happens here (HTTP pipelining,
which OTLP exporters do not use, is served but its later requests count as "in progress").

The same admission guards the gRPC port (``tooltrail.serve.grpc_front``), whose connections are
never "in progress": there, past the limit, the quietest connection makes room.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from aiohttp import web

from tooltrail.pipeline.throttle import ThrottledWarning
from tooltrail.serve.counters import ReceiverCounters

_log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Guarded(Protocol):
    """What the guard needs of a connection."""

    transport: Any
    #: Requests in progress (never closed for room while non-zero).
    busy: int

    def close(self) -> None: ...


class ConnectionGuard:
    """A protocol factory for ``loop.create_server``: aiohttp's (``factory``), guarded."""

    def __init__(
        self,
        counters: ReceiverCounters,
        *,
        max_connections: int,
        header_timeout: float,
        idle_timeout: float,
    ) -> None:
        #: aiohttp's protocol factory (``runner.server``), set once the runner is set up.
        self.factory: Callable[[], asyncio.Protocol] | None = None
        self._counters = counters
        self.max_connections = max_connections
        self.header_timeout = header_timeout
        self.idle_timeout = idle_timeout
        #: Open connections by transport: those that never sent a byte, oldest first, and the
        #: others, the one quiet longest first.
        self._silent: dict[Any, Guarded] = {}
        self._heard: dict[Any, Guarded] = {}
        self._warn = ThrottledWarning(_log)

    def __call__(self) -> asyncio.Protocol:
        assert self.factory is not None, "set ConnectionGuard.factory first"
        return _GuardedConnection(self, self.factory())

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Marks the connection busy while a request's handler runs."""
        connection = self._connection(request.transport)
        if not isinstance(connection, _GuardedConnection):
            return await handler(request)
        connection.busy += 1
        connection.disarm()
        try:
            return await handler(request)
        finally:
            connection.busy -= 1
            if not connection.busy:
                connection.arm_idle()

    def _connection(self, transport: Any) -> Guarded | None:
        return self._silent.get(transport) or self._heard.get(transport)

    def _victim(self) -> Guarded | None:
        """The connection to close for a new one: no request in progress, silent ones first."""
        for connection in self._silent.values():
            if not connection.busy:
                return connection
        for connection in self._heard.values():
            if not connection.busy:
                return connection
        return None

    def admit(self, connection: Guarded) -> bool:
        """Make room for ``connection``; False when it must be refused."""
        open_now = len(self._silent) + len(self._heard)
        if open_now >= self.max_connections:
            victim = self._victim()
            if victim is None:
                self._counters.add(connections_refused=1)
                self._warn.warn(
                    "refused",
                    "tooltrail serve: %d connections open, all serving requests: a new one was "
                    "refused (counter connections_refused)",
                    open_now,
                )
                return False
            self._counters.add(connections_evicted=1)
            self._warn.warn(
                "evicted",
                "tooltrail serve: %d connections open: an idle one (half-open first, else the "
                "one quiet longest) was closed (counter connections_evicted)",
                open_now,
            )
            self.closed(victim)  # gone from the count now, not when its loss is reported
            victim.close()
        self._silent[connection.transport] = connection
        self._counters.add(connections_open=1)
        return True

    def heard(self, connection: Guarded) -> None:
        """Bytes arrived on ``connection``: it is now the last to be closed for room."""
        transport = connection.transport
        if self._silent.pop(transport, None) is None and self._heard.pop(transport, None) is None:
            return  # closed already
        self._heard[transport] = connection

    def closed(self, connection: Guarded) -> None:
        transport = connection.transport
        if self._silent.pop(transport, None) is None and self._heard.pop(transport, None) is None:
            return
        self._counters.add(connections_open=-1)

    def timed_out(self, connection: Guarded, what: str) -> None:
        self._counters.add(connections_timed_out=1)
        self._warn.warn(
            "timeout",
            "tooltrail serve: a connection was closed: %s (counter connections_timed_out)",
            what,
        )
        connection.close()


class _GuardedConnection(asyncio.Protocol):
    """One connection: aiohttp's protocol, behind the guard's timers."""

    def __init__(self, guard: ConnectionGuard, inner: asyncio.Protocol) -> None:
        self._guard = guard
        self._inner = inner
        self.transport: Any = None
        self.busy = 0
        self._admitted = False
        self._timer: asyncio.TimerHandle | None = None
        #: True while the connection waits for a request and has not sent a byte of one.
        self._idle = True

    # -- asyncio.Protocol ----------------------------------------------------------------

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        if not self._guard.admit(self):
            transport.abort()
            return
        self._admitted = True
        self._inner.connection_made(transport)
        self.arm_idle()

    def data_received(self, data: bytes) -> None:
        if not self._admitted:
            return
        self._guard.heard(self)
        if self._idle and not self.busy:
            self._idle = False
            self._arm(self._guard.header_timeout, "request headers not received in time")
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self.disarm()
        self._guard.closed(self)
        if self._admitted:
            self._inner.connection_lost(exc)

    # -- timers --------------------------------------------------------------------------

    def arm_idle(self) -> None:
        self._idle = True
        self._arm(self._guard.idle_timeout, "no request within the idle timeout")

    def _arm(self, seconds: float, what: str) -> None:
        self.disarm()
        loop = asyncio.get_running_loop()
        self._timer = loop.call_at(loop.time() + seconds, self._expire, what)

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self, what: str) -> None:
        self._timer = None
        if not self.busy:
            self._guard.timed_out(self, what)

    def close(self) -> None:
        self.disarm()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.abort()
