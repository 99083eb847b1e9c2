"""The two OTLP listeners, gRPC and HTTP, started and stopped together on one event loop."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from typing import Any

import grpc
from aiohttp import web

from tooltrail.serve.auth import BearerToken, grpc_key_pair, tls_context
from tooltrail.serve.config import ServeConfig
from tooltrail.serve.counters import ReceiverCounters
from tooltrail.serve.grpc_front import GrpcFront, relay_supported
from tooltrail.serve.grpc_service import logs_service, trace_service
from tooltrail.serve.guard import ConnectionGuard
from tooltrail.serve.http import Ingest, build_app

_log = logging.getLogger(__name__)


class Listeners:
    """OTLP/gRPC and OTLP/HTTP servers feeding one ``ingest`` function (and, for logs,
    ``ingest_logs``).

    ``start`` binds both (port 0 picks a free port: read ``grpc_port``/``http_port`` after);
    ``stop`` closes the listening sockets first, then lets in-flight requests finish for up to
    ``timeout`` seconds, so every request that got an answer was fully taken or refused.
    """

    def __init__(
        self,
        config: ServeConfig,
        ingest: Ingest,
        counters: ReceiverCounters,
        *,
        stats: Callable[[], dict[str, Any]] | None = None,
        healthy: Callable[[], bool] = lambda: True,
        ingest_logs: Ingest | None = None,
    ) -> None:
        self._config = config
        self._ingest = ingest
        self._ingest_logs = ingest_logs
        self._counters = counters
        self._stats = stats
        self._healthy = healthy
        self._grpc: grpc.aio.Server | None = None
        self._front: GrpcFront | None = None
        self._runner: web.AppRunner | None = None
        self._http: asyncio.Server | None = None
        self._auth = (
            BearerToken.from_file(config.auth_token_file)
            if config.auth_token_file is not None
            else None
        )
        self.grpc_port: int | None = None
        self.http_port: int | None = None

    async def start(self) -> None:
        config = self._config
        try:
            if config.grpc_port is not None:
                await self._start_grpc(config.host, config.grpc_port)
            if config.http_port is not None:
                await self._start_http(config.host, config.http_port)
        except BaseException:
            await self.stop(0)
            raise

    def _guard(self) -> ConnectionGuard:
        config = self._config
        return ConnectionGuard(
            self._counters,
            max_connections=config.max_connections,
            header_timeout=config.header_timeout,
            idle_timeout=config.idle_timeout,
        )

    async def _start_grpc(self, host: str, port: int) -> None:
        """grpc serves a private Unix socket behind ``GrpcFront``, which owns the port (where
        Unix sockets exist; elsewhere grpc binds the port itself, with grpc's own limits)."""
        config = self._config
        if relay_supported():
            # The port's errors first, before anything else starts.
            self._front = GrpcFront(self._guard(), _bind(host, port))
        server = grpc.aio.server(
            options=grpc_options(config, relayed=self._front is not None),
            maximum_concurrent_rpcs=config.max_concurrent_streams,
        )
        handlers = [trace_service(self._ingest, self._counters, self._auth).handler()]
        if self._ingest_logs is not None:
            handlers.append(logs_service(self._ingest_logs, self._counters, self._auth).handler())
        server.add_generic_rpc_handlers(tuple(handlers))
        address = self._front.upstream if self._front is not None else _grpc_address(host, port)
        if config.tls_cert is not None and config.tls_key is not None:
            credentials = grpc.ssl_server_credentials(
                [grpc_key_pair(config.tls_cert, config.tls_key)]
            )
            bound = server.add_secure_port(address, credentials)
        else:
            bound = server.add_insecure_port(address)
        if bound == 0:
            raise OSError(f"cannot listen for OTLP/gRPC on {host}:{port}")
        await server.start()
        self._grpc = server
        if self._front is not None:
            self.grpc_port = self._front.port
            await self._front.start()
        else:
            self.grpc_port = bound

    async def _start_http(self, host: str, port: int) -> None:
        config = self._config
        guard = self._guard()
        app = build_app(
            self._ingest,
            self._counters,
            max_request_bytes=config.max_request_bytes,
            stats=self._stats,
            healthy=self._healthy,
            ingest_logs=self._ingest_logs,
            body_timeout=config.body_timeout,
            auth=self._auth,
            middlewares=[guard.middleware],
        )
        runner = web.AppRunner(
            app,
            access_log=None,
            shutdown_timeout=config.shutdown_timeout,
            # Bodies are decompressed by tooltrail, under the request size limit.
            auto_decompress=False,
        )
        await runner.setup()
        self._runner = runner
        guard.factory = runner.server
        sock = _bind(host, port)
        tls = None
        if config.tls_cert is not None and config.tls_key is not None:
            tls = tls_context(config.tls_cert, config.tls_key)
        self._http = await asyncio.get_running_loop().create_server(
            guard,
            sock=sock,
            ssl=tls,
            ssl_handshake_timeout=config.header_timeout if tls is not None else None,
            backlog=128,
        )
        self.http_port = sock.getsockname()[1]

    async def stop(self, timeout: float | None = None) -> None:
        """Stop accepting, then wait up to ``timeout`` seconds for requests in flight."""
        grace = self._config.shutdown_timeout if timeout is None else timeout
        tasks = []
        if self._http is not None:
            self._http.close()  # stop accepting; aiohttp's shutdown ends the connections
        front, self._front = self._front, None
        if front is not None:
            front.close()  # stop accepting; relays end with grpc's connections
        if self._grpc is not None:
            tasks.append(self._grpc.stop(grace))
        if self._runner is not None:
            tasks.append(self._runner.cleanup())
        self._grpc = None
        self._runner = None
        self._http = None
        for result in await asyncio.gather(*tasks, return_exceptions=True):
            if isinstance(result, BaseException):
                _log.warning("error while stopping a listener: %s", result)
        if front is not None:
            front.abort_all()


def grpc_options(config: ServeConfig, *, relayed: bool = False) -> list[tuple[str, int]]:
    """The gRPC server's limits: message size, and connections that cannot be held forever.

    ``relayed``: ``GrpcFront`` admits connections (closing idle ones for new ones); grpc's own
    limit, which refuses the new ones instead, is then only a backstop (a connection the front
    closed may still count here for a moment)."""
    incoming = 2 * config.max_connections if relayed else config.max_connections
    return [
        # Checked by grpc after decompression too, so a compressed bomb stops here.
        ("grpc.max_receive_message_length", config.max_request_bytes),
        ("grpc.so_reuseport", 0),
        ("grpc.max_concurrent_streams", config.max_concurrent_streams),
        ("grpc.max_allowed_incoming_connections", incoming),
        # A connection that has not finished its handshake (TLS, HTTP/2 preface) is closed.
        ("grpc.server_handshake_timeout_ms", int(config.header_timeout * 1000)),
        ("grpc.max_connection_idle_ms", int(config.idle_timeout * 1000)),
        # Long-lived connections are recycled (clients reconnect), in-flight calls get a grace.
        ("grpc.max_connection_age_ms", 30 * 60 * 1000),
        ("grpc.max_connection_age_grace_ms", int(config.shutdown_timeout * 1000)),
        # Ping idle peers; a peer that does not answer within 20 s is gone.
        ("grpc.keepalive_time_ms", 60 * 1000),
        ("grpc.keepalive_timeout_ms", 20 * 1000),
        ("grpc.http2.min_ping_interval_without_data_ms", 10 * 1000),
    ]


def _grpc_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock
