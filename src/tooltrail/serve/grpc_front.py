"""The public gRPC port: connections admitted as HTTP's are, relayed to the gRPC server.

grpc's own connection limit (``grpc.max_allowed_incoming_connections``) refuses every new
connection past it: 512 sockets that connect and say nothing lock real exporters out until the
handshake timeout, and a peer that keeps reconnecting keeps them out for good. grpc has no
public way to close the oldest idle connection instead, so the port is owned here: each TCP
connection is admitted by a ``ConnectionGuard`` (past ``max_connections`` the one that never
sent a byte, else the one quiet longest, is closed: ``connections_evicted``), must send its
first byte within ``header_timeout`` (``connections_timed_out``), and from its first byte on is
relayed, bytes as they are (TLS included), to the grpc server listening on a Unix socket in a
private directory. grpc's own handshake, idle, age and keepalive limits apply behind it.

A connection costs three file descriptors once it has spoken (the peer's, the relay's, grpc's
end of it), one before.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import socket
import sys
import tempfile
from typing import Any

from tooltrail.pipeline.throttle import ThrottledWarning
from tooltrail.serve.guard import ConnectionGuard

_log = logging.getLogger(__name__)
_warn = ThrottledWarning(_log)

#: Bytes read from a peer before the relay to grpc is up; past it reading pauses.
_EARLY_BYTES = 256 * 1024


def relay_supported() -> bool:
    """Unix sockets and ``loop.create_unix_connection`` (not on Windows)."""
    return hasattr(socket, "AF_UNIX") and sys.platform != "win32"


class GrpcFront:
    """Owns the public gRPC port (the bound ``sock``); ``upstream`` is where the grpc server
    must listen (``unix:...``)."""

    def __init__(self, guard: ConnectionGuard, sock: socket.socket) -> None:
        self._guard = guard
        self._sock: socket.socket | None = sock
        self._directory = tempfile.mkdtemp(prefix="tooltrail-grpc-")  # 0700: ours alone
        self.path = os.path.join(self._directory, "grpc.sock")
        self._server: asyncio.Server | None = None
        self._relays: set[_Relay] = set()

    @property
    def upstream(self) -> str:
        return f"unix:{self.path}"

    @property
    def port(self) -> int:
        assert self._sock is not None
        return int(self._sock.getsockname()[1])

    async def start(self) -> None:
        """Accept connections (the grpc server listens on ``upstream`` by now)."""
        assert self._sock is not None
        self._server = await asyncio.get_running_loop().create_server(
            lambda: _Relay(self), sock=self._sock, backlog=128
        )

    def close(self) -> None:
        """Stop accepting; relays in progress go on until ``abort_all``."""
        if self._server is not None:
            self._server.close()
            self._server = None
        elif self._sock is not None:
            self._sock.close()  # never started
        self._sock = None

    def abort_all(self) -> None:
        for relay in list(self._relays):
            relay.close()
        shutil.rmtree(self._directory, ignore_errors=True)


class _Relay(asyncio.Protocol):
    """One peer connection, relayed to grpc once it has sent its first byte."""

    def __init__(self, front: GrpcFront) -> None:
        self._front = front
        self._guard = front._guard
        self.transport: Any = None
        self.busy = 0  # a relay knows no requests: the quietest one makes room
        self._upstream: Any = None
        self._early: list[bytes] = []
        self._early_size = 0
        self._connecting: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._closed = False

    # -- the peer ------------------------------------------------------------------------

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        if not self._guard.admit(self):
            self._closed = True
            transport.abort()
            return
        self._front._relays.add(self)
        loop = asyncio.get_running_loop()
        self._timer = loop.call_at(loop.time() + self._guard.header_timeout, self._silent)

    def _silent(self) -> None:
        self._timer = None
        self._guard.timed_out(self, "no gRPC handshake within the header timeout")

    def data_received(self, data: bytes) -> None:
        if self._closed:
            return
        self._guard.heard(self)
        if self._upstream is not None:
            self._upstream.write(data)
            return
        self._early.append(data)
        self._early_size += len(data)
        if self._early_size > _EARLY_BYTES:
            self.transport.pause_reading()
        if self._connecting is None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._connecting = asyncio.ensure_future(self._connect())

    async def _connect(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            transport, _ = await loop.create_unix_connection(
                lambda: _Upstream(self), self._front.path
            )
        except OSError as exc:  # grpc stopped (shutdown under way) or its socket is gone
            _warn.warn("upstream", "tooltrail serve: a gRPC connection was closed: %s", exc)
            self.close()
            return
        if self._closed:
            transport.close()
            return
        self._upstream = transport
        for data in self._early:
            transport.write(data)
        self._early = []
        self.transport.resume_reading()

    def eof_received(self) -> bool | None:
        if self._upstream is not None and self._upstream.can_write_eof():
            self._upstream.write_eof()
            return True  # half-closed: grpc may still answer
        return None

    def pause_writing(self) -> None:
        if self._upstream is not None:
            self._upstream.pause_reading()

    def resume_writing(self) -> None:
        if self._upstream is not None:
            self._upstream.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.close()

    # -- both ----------------------------------------------------------------------------

    def close(self) -> None:
        """Close both ends at once (the peer's by abort: evicted or timed out)."""
        if self._closed and self.transport is None:
            return
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._connecting is not None and not self._connecting.done():
            self._connecting.cancel()
        self._guard.closed(self)
        self._front._relays.discard(self)
        if self._upstream is not None:
            self._upstream.close()
            self._upstream = None
        if self.transport is not None:
            if not self.transport.is_closing():
                self.transport.abort()
            self.transport = None

    def upstream_closed(self) -> None:
        """grpc closed its end: the peer's is closed once what grpc sent has gone out."""
        self._upstream = None
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()  # flushes, then ``connection_lost``


class _Upstream(asyncio.Protocol):
    """The relay's connection to the grpc server."""

    def __init__(self, relay: _Relay) -> None:
        self._relay = relay

    def data_received(self, data: bytes) -> None:
        peer = self._relay.transport
        if peer is not None:
            self._relay._guard.heard(self._relay)
            peer.write(data)

    def pause_writing(self) -> None:
        if self._relay.transport is not None:
            self._relay.transport.pause_reading()

    def resume_writing(self) -> None:
        if self._relay.transport is not None:
            self._relay.transport.resume_reading()

    def eof_received(self) -> bool | None:
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._relay.upstream_closed()
