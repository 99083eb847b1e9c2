"""``tooltrail serve`` as one object: listeners -> intake -> TraceBuffer -> dump, forward, score.

    server = TraceReceiver(ServeConfig(suite=Path("policies.yaml"), results=Path("r.jsonl")))
    await server.start()          # binds 4317 and 4318 on 127.0.0.1
    ...
    await server.stop()           # stop accepting, drain, evaluate, flush partials

``start_in_thread`` runs the same thing on a background event loop (tests, embedding).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from tooltrail.checks import default_registry
from tooltrail.checks.plugins import load_plugins
from tooltrail.serve.auth import check_tls
from tooltrail.serve.collector import set_for_serving
from tooltrail.serve.config import ServeConfig
from tooltrail.serve.listeners import Listeners
from tooltrail.serve.signals import StopSignals
from tooltrail.serve.stages import TracePipeline
from tooltrail.suite import TestSuite


class TraceReceiver:
    """The receiver service. ``suite`` overrides ``config.suite``; ``log_exporter`` (any SDK
    ``LogRecordExporter``, only with one worker) overrides ``config.scores_endpoint``, and
    ``span_exporter`` (any SDK ``SpanExporter``, one worker) takes the evaluation spans
    (``config.evaluation_spans``).

    With ``config.workers`` > 1, spans are routed by trace id to that many worker processes,
    each running its own ``TracePipeline`` (see ``tooltrail.serve.workers``).
    Raises ``SuiteError`` for a bad suite file, ``PluginError`` for a plug-in that cannot
    be loaded and ``TlsFileError`` (a ``ValueError``) for TLS files that cannot serve, before
    anything is started; ``StartCancelled`` when ``stop_requested`` is set
    while worker processes start (they are stopped first).
    """

    def __init__(
        self,
        config: ServeConfig,
        *,
        suite: TestSuite | None = None,
        log_exporter: Any = None,
        stop_requested: threading.Event | None = None,
        span_exporter: Any = None,
    ) -> None:
        self.config = config
        if config.tls_cert is not None and config.tls_key is not None:
            check_tls(config.tls_cert, config.tls_key)
        if suite is None:
            suite = TestSuite.load(config.suite) if config.suite else TestSuite("(no suite)")
        load_plugins(config.plugins)
        default_registry().check(suite)
        self.suite = suite
        self._stopping = False
        self.pipeline: Any
        if config.workers > 1:
            if log_exporter is not None or span_exporter is not None:
                raise ValueError("log_exporter needs workers=1; use scores_endpoint instead")
            from tooltrail.serve.workers import WorkerPool

            self.pipeline = WorkerPool(config, suite, stop_requested=stop_requested)
        else:
            self.pipeline = TracePipeline(
                config, suite, log_exporter=log_exporter, span_exporter=span_exporter
            )
        self.counters = self.pipeline.counters
        self.listeners = Listeners(
            config,
            self.pipeline.ingest,
            self.counters,
            stats=self.stats,
            healthy=self.healthy,
            ingest_logs=self.pipeline.ingest_logs,
        )

    @property
    def grpc_port(self) -> int | None:
        return self.listeners.grpc_port

    @property
    def http_port(self) -> int | None:
        return self.listeners.http_port

    def healthy(self) -> bool:
        return not self._stopping and self.pipeline.healthy()

    def stats(self) -> dict[str, Any]:
        """Counters since start, plus what is held now (the ``/stats`` document)."""
        return self.pipeline.stats()

    async def start(self) -> None:
        """Bind the listeners; the receiver takes requests once this returns."""
        try:
            await self.listeners.start()
        except BaseException:
            await asyncio.get_running_loop().run_in_executor(None, self.pipeline.shutdown)
            raise

    async def stop(self) -> dict[str, Any]:
        """Stop accepting, let requests in flight finish, evaluate everything held (traces not
        yet complete are evaluated partial), flush every sink. Returns the final ``stats()``."""
        self._stopping = True
        await self.listeners.stop(self.config.shutdown_timeout)
        self.pipeline.close()
        await asyncio.get_running_loop().run_in_executor(None, self.pipeline.shutdown)
        return self.stats()

    async def run(
        self, stop: asyncio.Event, *, on_ready: Callable[[], None] | None = None
    ) -> dict[str, Any]:
        """Start, call ``on_ready``, serve until ``stop`` is set, then ``stop()`` gracefully."""
        await self.start()
        if on_ready is not None:
            on_ready()
        await stop.wait()
        return await self.stop()

    async def run_until_signal(
        self,
        *,
        on_ready: Callable[[], None] | None = None,
        signals: StopSignals | None = None,
    ) -> dict[str, Any]:
        """``run`` until SIGTERM or SIGINT (main thread only: for a process that is the receiver,
        whose garbage collector this sets, see ``serve.collector``). ``signals``: handlers
        installed since start-up (a signal that came before the loop ran stops it at once)."""
        if signals is None:
            with StopSignals() as own:
                return await self.run_until_signal(on_ready=on_ready, signals=own)
        # This owns the process (the CLI): the collector is set for serving (``collector``).
        set_for_serving()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        signals.attach(loop, stop)
        try:
            return await self.run(stop, on_ready=on_ready)
        finally:
            signals.detach(loop)


class RunningReceiver:
    """A ``TraceReceiver`` serving on a background thread's event loop; ``stop()`` ends it."""

    def __init__(self, receiver: TraceReceiver) -> None:
        self.receiver = receiver
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self.final_stats: dict[str, Any] | None = None
        self._thread = threading.Thread(target=self._main, name="tooltrail-serve", daemon=True)
        self._thread.start()
        self._started.wait()
        if self._error is not None:
            raise self._error

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve())
        finally:
            self._loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        try:
            self.final_stats = await self.receiver.run(self._stop, on_ready=self._started.set)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the starting thread
            self._error = exc
            self._started.set()

    @property
    def grpc_port(self) -> int | None:
        return self.receiver.grpc_port

    @property
    def http_port(self) -> int | None:
        return self.receiver.http_port

    def stop(self, timeout: float = 60.0) -> dict[str, Any]:
        """Shut down gracefully (as on SIGTERM) and return the final stats."""
        if self._thread.is_alive() and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout)
        return self.final_stats if self.final_stats is not None else self.receiver.stats()

    def __enter__(self) -> RunningReceiver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_in_thread(
    config: ServeConfig,
    *,
    suite: TestSuite | None = None,
    log_exporter: Any = None,
    span_exporter: Any = None,
) -> RunningReceiver:
    """Build a ``TraceReceiver`` and serve it on a background thread until ``stop()``."""
    return RunningReceiver(
        TraceReceiver(config, suite=suite, log_exporter=log_exporter, span_exporter=span_exporter)
    )
