"""Settings of ``tooltrail serve``, with every default in one place."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tooltrail.pipeline.console import DEFAULT_CONSOLE_RATE
from tooltrail.pipeline.judge_queue import DEFAULT_JUDGE_QUEUE
from tooltrail.pipeline.revisions import (
    DEFAULT_MAX_KEPT_ITEMS,
    DEFAULT_MAX_REVISIONS,
    DEFAULT_REVISION_WINDOW_S,
    SDK_LOGS_SCHEDULE_DELAY_S,
    SDK_SCHEDULE_DELAY_S,
)
from tooltrail.redact import Redaction
from tooltrail.sampling import DEFAULT_TEST_ATTRIBUTES, TestTraffic

DEFAULT_HOST = "127.0.0.1"
#: The OTLP defaults, so an SDK pointed at "localhost" with no port finds the receiver.
DEFAULT_GRPC_PORT = 4317
DEFAULT_HTTP_PORT = 4318
#: OTLP/HTTP path for traces; the collector's ``otlphttp`` exporter appends it to its endpoint.
TRACES_PATH = "/v1/traces"
#: OTLP/HTTP path for logs: the content (replies, tool calls) GenAI instrumentations log.
LOGS_PATH = "/v1/logs"
HEALTH_PATH = "/healthz"
STATS_PATH = "/stats"


@dataclass(slots=True)
class ServeConfig:
    """Where to listen, how much to hold, and where results go."""

    suite: Path | None = None
    host: str = DEFAULT_HOST
    #: ``0`` picks a free port (tests); ``None`` turns the listener off.
    grpc_port: int | None = DEFAULT_GRPC_PORT
    http_port: int | None = DEFAULT_HTTP_PORT
    #: Processes evaluating traces; more than 1 routes spans by trace id to worker processes.
    workers: int = 1
    #: Largest request accepted, on the wire and again once decompressed (gzip bombs stop here).
    max_request_bytes: int = 16 * 1024 * 1024
    #: Spans held in the buffer, all traces together; past it requests get 503/RESOURCE_EXHAUSTED.
    max_buffered_spans: int = 200_000
    #: Traces held at once; past it requests get 503/RESOURCE_EXHAUSTED.
    max_traces: int = 20_000
    #: A single trace past this many spans is evaluated as a partial trace.
    max_spans_per_trace: int = 10_000
    #: Seconds to wait after a trace's root span arrives, for late children: one tick of the
    #: SDK's BatchSpanProcessor (``schedule_delay`` 5 s), so another process's spans of the
    #: trace normally arrive within it (later ones revise the verdict).
    grace: float = SDK_SCHEDULE_DELAY_S
    #: Once the receiver has taken any logs request: seconds to wait after a trace's root span
    #: arrives, for its log records (the wait is the longer of this and ``grace``): one tick of
    #: the SDK's BatchLogRecordProcessor (``schedule_delay`` 1 s).
    logs_grace: float = SDK_LOGS_SCHEDULE_DELAY_S
    #: Seconds after a trace's first verdict that late spans or log records of it are merged
    #: and judged again (the SDK's schedule delay plus its export timeout: 5 + 30 s).
    revision_window: float = DEFAULT_REVISION_WINDOW_S
    #: Times a trace is judged again within the window.
    max_revisions: int = DEFAULT_MAX_REVISIONS
    #: Spans and log records kept of judged traces for revisions, all traces together.
    revision_max_spans: int = DEFAULT_MAX_KEPT_ITEMS
    #: A trace whose root never arrives is evaluated as partial after this many seconds.
    max_age: float = 300.0
    #: Seconds a throttled client is told to wait (``Retry-After`` / gRPC ``RetryInfo``).
    retry_after: float = 1.0
    #: Seconds shutdown waits for in-flight requests before closing connections.
    shutdown_timeout: float = 10.0
    #: Connections open at once on each listener (HTTP, gRPC); past it an idle one is closed,
    #: half-open ones first (kept well under the usual 1,024 file descriptors per process).
    max_connections: int = 512
    #: Seconds a connection may wait between requests (gRPC: idle connections) before it is
    #: closed.
    idle_timeout: float = 60.0
    #: Seconds from a request's first byte to the end of its headers (gRPC: to a new
    #: connection's first byte, and the handshake).
    header_timeout: float = 10.0
    #: Seconds to read a request body.
    body_timeout: float = 30.0
    #: gRPC streams (concurrent calls) per connection, and calls in progress at once.
    max_concurrent_streams: int = 100
    #: A file holding the bearer token clients must send (``Authorization: Bearer <token>``).
    auth_token_file: Path | None = None
    #: PEM certificate (chain) and private key: both listeners speak TLS.
    tls_cert: Path | None = None
    tls_key: Path | None = None
    results: Path | None = None
    #: One line per evaluated trace on standard error (``serve.console``): the command turns
    #: it on unless ``--quiet``; a program embedding the receiver (``start_in_thread``) keeps
    #: its standard error to itself unless it asks.
    console: bool = False
    #: Verdict lines a second at most, all worker processes together; the rest are counted
    #: (``console_lines_left_out``) and said.
    console_rate: int = DEFAULT_CONSOLE_RATE
    scores_endpoint: str | None = None
    #: ``grpc`` or ``http/protobuf`` for the scores endpoint.
    scores_protocol: str = "grpc"
    #: Put explanations (which may echo argument values) on evaluation events.
    explanations: bool = False
    forward: str | None = None
    #: ``grpc`` or ``http/protobuf`` for the forward endpoint.
    forward_protocol: str = "http/protobuf"
    dump: Path | None = None
    dump_format: str = "json"
    #: Seconds between flushes of the dump: a crash (SIGKILL) loses at most this much of it.
    dump_flush_interval: float = 1.0
    #: What ``--dump`` and ``--forward`` hide; ``None``: the live path's settings
    #: (``TOOLTRAIL_REDACT_*`` variables, else the defaults).
    redaction: Redaction | None = None
    #: Plug-in modules whose ``TOOLTRAIL_CHECKS`` are registered (``--plugin``), on top of
    #: installed plug-ins and ``TOOLTRAIL_PLUGINS`` (``tooltrail.checks.plugins``).
    plugins: tuple[str, ...] = ()
    #: The judge of the suite's judge checks, over its ``judge:`` block (``None``: the
    #: block's): ``--judge-model``, ``--judge-cache``, ``--no-judge-cache`` (``judge_cache``
    #: false), ``--judge-concurrency`` (requests in flight, per worker process, and the judge
    #: queue's threads), ``--judge-budget`` (US dollars, per worker process).
    judge_model: str | None = None
    judge_cache_path: Path | None = None
    judge_cache: bool | None = None
    judge_concurrency: int | None = None
    judge_budget: float | None = None
    #: Traces waiting for a judge (per worker process); past it a trace's judge scores are
    #: errors (``judge queue full``, counter ``judge_queue_full``).
    judge_queue: int = DEFAULT_JUDGE_QUEUE
    #: ``hour`` or ``day``: ``judge_budget`` is then a spend window, so many dollars per hour
    #: or day for every worker together (``pipeline.spend_window``), instead of per process.
    judge_budget_per: str | None = None
    #: The window's length in seconds, instead of ``judge_budget_per``'s (tests, simulations).
    judge_budget_window_s: float | None = None
    #: The window's clock (seconds since the epoch; ``None``: the system's). A
    #: ``pipeline.spend_window.ManualClock`` in tests; with workers, one made ``shared``.
    judge_budget_clock: Any = None
    #: What becomes of a trace marked as a test run (``tooltrail.sampling``): ``score`` every
    #: check of it, outside sampling and the spend window, or ``skip`` it (counted only).
    test_traffic: str = "score"
    #: ``deployment.environment`` values whose traces are test runs (``--test-environment``).
    test_environments: tuple[str, ...] = ()
    #: Attributes that mark a trace as a test run (resource, root or agent span).
    test_attributes: tuple[str, ...] = DEFAULT_TEST_ATTRIBUTES
    #: With ``forward``: send each trace on once it is judged, its verdict on its root span
    #: (``tooltrail.verdict``, ``tooltrail.failed_checks``: ``pipeline.verdicts``).
    forward_verdicts: bool = False
    #: With ``scores_endpoint``: also send one ``gen_ai.evaluation.internal`` span per
    #: evaluated trace, linked to its root span (``pipeline.evaluation_spans``).
    evaluation_spans: bool = False

    @property
    def keeps_wire(self) -> bool:
        """Whether received spans must keep their wire form: the dump and ``--forward`` write
        them again from it, so the intake reads with the Python decoders (``serve.intake``)."""
        return self.dump is not None or bool(self.forward)

    def judge_overrides(self) -> dict[str, Any]:
        """The judge settings given here, as ``tooltrail.score.run_judge_settings`` takes
        them (``None``: not given)."""
        return {
            "model": self.judge_model,
            "cache_path": str(self.judge_cache_path) if self.judge_cache_path else None,
            "cache": self.judge_cache,
            "concurrency": self.judge_concurrency,
            # With a window, the budget is the window's (``spend_window``), not the process's.
            "budget_usd": self.judge_budget if self.judge_budget_per is None else None,
        }

    def traffic(self) -> TestTraffic:
        """The test traffic rule these settings describe (``tooltrail.sampling``)."""
        return TestTraffic(
            attributes=tuple(self.test_attributes),
            environments=tuple(self.test_environments),
            mode=self.test_traffic,  # type: ignore[arg-type]  # checked by TestTraffic
        )
