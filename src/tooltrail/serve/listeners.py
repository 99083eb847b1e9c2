"""The two OTLP listeners, gRPC and HTTP, started and stopped together on one event loop."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from typing import Any

import grpc
from aiohttp import web

from tooltrail.serve.config import ServeConfig
from tooltrail.serve.counters import ReceiverCounters
from tooltrail.serve.grpc_service import logs_service, trace_service
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
        self._runner: web.AppRunner | None = None
        self._site: web.SockSite | None = None
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

    async def _start_grpc(self, host: str, port: int) -> None:
        limit = self._config.max_request_bytes
        server = grpc.aio.server(
            options=[
                # Checked by grpc after decompression too, so a compressed bomb stops here.
                ("grpc.max_receive_message_length", limit),
                ("grpc.so_reuseport", 0),
            ]
        )
        handlers = [trace_service(self._ingest, self._counters).handler()]
        if self._ingest_logs is not None:
            handlers.append(logs_service(self._ingest_logs, self._counters).handler())
        server.add_generic_rpc_handlers(tuple(handlers))
        bound = server.add_insecure_port(_grpc_address(host, port))
        if bound == 0:
            raise OSError(f"cannot listen for OTLP/gRPC on {host}:{port}")
        await server.start()
        self._grpc = server
        self.grpc_port = bound

    async def _start_http(self, host: str, port: int) -> None:
        app = build_app(
            self._ingest,
            self._counters,
            max_request_bytes=self._config.max_request_bytes,
            stats=self._stats,
            healthy=self._healthy,
            ingest_logs=self._ingest_logs,
        )
        runner = web.AppRunner(
            app,
            access_log=None,
            shutdown_timeout=self._config.shutdown_timeout,
            # Bodies are decompressed by tooltrail, under the request size limit.
            auto_decompress=False,
        )
        await runner.setup()
        self._runner = runner
        sock = _bind(host, port)
        site = web.SockSite(runner, sock)
        await site.start()
        self._site = site
        self.http_port = sock.getsockname()[1]

    async def stop(self, timeout: float | None = None) -> None:
        """Stop accepting, then wait up to ``timeout`` seconds for requests in flight."""
        grace = self._config.shutdown_timeout if timeout is None else timeout
        tasks = []
        if self._grpc is not None:
            tasks.append(self._grpc.stop(grace))
        if self._runner is not None:
            tasks.append(self._runner.cleanup())
        self._grpc = None
        self._runner = None
        self._site = None
        for result in await asyncio.gather(*tasks, return_exceptions=True):
            if isinstance(result, BaseException):
                _log.warning("error while stopping a listener: %s", result)


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
