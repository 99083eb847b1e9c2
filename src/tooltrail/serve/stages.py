"""Everything between a request body and its verdicts, in one process.

    intake (decode, admit) -> TraceBuffer (complete traces) -> dump -> forward -> evaluate
    (results file, evaluation events) -> release (the intake may take more)

Log records (``ingest_logs``) take the same way: their content records go into the buffer
with the spans of their trace and are joined to them when the trace is evaluated.

``TracePipeline`` is what the listeners feed when ``workers`` is 1, and what each worker
process runs when it is more (see ``tooltrail.serve.workers``).
"""

from __future__ import annotations

from typing import Any

from tooltrail.convert.engine import Needs
from tooltrail.origins import Origins
from tooltrail.otlp import Limits
from tooltrail.pipeline.buffer import DEFAULT_SINK_TIMEOUT_S, TraceBuffer, TraceSink
from tooltrail.pipeline.evaluation_events import EvaluationEventEmitter, otlp_log_exporter
from tooltrail.pipeline.evaluation_spans import EvaluationSpanEmitter
from tooltrail.pipeline.spend_window import SpendState
from tooltrail.score import evaluation_time_limit
from tooltrail.scores import EventOptions
from tooltrail.serve.config import LOGS_PATH, TRACES_PATH, ServeConfig
from tooltrail.serve.confirmed import ConfirmedExporter
from tooltrail.serve.console import ServeConsole
from tooltrail.serve.counters import ReceiverCounters
from tooltrail.serve.forward import ForwardSink
from tooltrail.serve.intake import TraceIntake
from tooltrail.serve.logs_intake import DecodedLogs, decode_logs
from tooltrail.serve.outcome import Accepted
from tooltrail.serve.production import check_spend, spend_window
from tooltrail.serve.received_items import ReceivedItems
from tooltrail.serve.redaction import redaction_from_env
from tooltrail.serve.sinks import (
    DumpSink,
    LogsSeen,
    ReleaseSink,
    ResultsFile,
    received_evaluator,
)
from tooltrail.suite import TestSuite

#: How many rejection reasons ``partial_success.error_message`` quotes.
_MAX_REASONS = 3
#: The slowest evaluation rate shutdown allows for (a quarter of the ~20,000 spans/s measured
#: by ``benchmarks/bench_serve.py``): the buffer gets time to score every span serve may hold.
_SHUTDOWN_SPANS_PER_S = 5_000


def buffer_shutdown_timeout(config: ServeConfig) -> float:
    """How long the buffer's shutdown may take: ``--shutdown-timeout`` plus the time to score
    ``--max-buffered-spans`` at the slowest rate allowed for. Only what is still unscored after
    about 70% of it is given up (``traces_dropped``, one results line each)."""
    return config.shutdown_timeout + config.max_buffered_spans / _SHUTDOWN_SPANS_PER_S


def rejection_message(reasons: list[str]) -> str:
    """The first few reasons, for ``partial_success.error_message``."""
    message = "; ".join(reasons[:_MAX_REASONS])
    if len(reasons) > _MAX_REASONS:
        message += f"; and {len(reasons) - _MAX_REASONS} more"
    return message


def logs_counts(decoded: DecodedLogs) -> dict[str, int]:
    """What a taken logs request adds to the counters: added before its records can be judged
    and released, as a request's spans are (``TraceIntake``)."""
    return {
        "log_records_received": len(decoded.records),
        "log_records_rejected": len(decoded.rejected),
        "log_records_without_trace": decoded.without_trace,
        "log_records_not_content": decoded.not_content,
    }


def logs_accepted(decoded: DecodedLogs) -> Accepted:
    """A taken logs request's ``Accepted`` (records taken, kept or not)."""
    accepted = len(decoded.records) + decoded.without_trace + decoded.not_content
    return Accepted(accepted, len(decoded.rejected), rejection_message(decoded.rejected))


def otlp_span_exporter(config: ServeConfig) -> Any:
    """An OTLP span exporter to the scores endpoint, for the evaluation spans
    (``--evaluation-spans``): ``/v1/traces`` appended to an OTLP/HTTP base URL."""
    endpoint = config.scores_endpoint or ""
    if config.scores_protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcSpanExporter,
        )

        return GrpcSpanExporter(endpoint=endpoint)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpSpanExporter,
    )

    endpoint = endpoint.rstrip("/")
    if endpoint.endswith(LOGS_PATH):
        endpoint = endpoint[: -len(LOGS_PATH)]
    if not endpoint.endswith(TRACES_PATH):
        endpoint += TRACES_PATH
    return HttpSpanExporter(endpoint=endpoint)


def scores_url(config: ServeConfig) -> str | None:
    """The events endpoint: an OTLP/HTTP base URL gets ``/v1/logs`` appended, as the SDK's
    environment variables would; a gRPC endpoint is used as given."""
    endpoint = config.scores_endpoint
    if endpoint and config.scores_protocol != "grpc":
        endpoint = endpoint.rstrip("/")
        if not endpoint.endswith(LOGS_PATH):
            endpoint += LOGS_PATH
    return endpoint


class TracePipeline:
    """Intake, buffer and sinks built from a ``ServeConfig``.

    ``log_exporter``: any SDK ``LogRecordExporter`` for the evaluation events, instead of the
    OTLP exporter ``config.scores_endpoint`` names. ``admission=False`` takes every request
    (a worker process, whose router already admitted it). ``console_window``: the shared
    array of the workers' common console rate (``serve.console``; ``None``: this process's
    own). ``spend_state``: the workers' common judge spend window (``serve.production``;
    ``None``: this process's own). ``span_exporter``: any SDK ``SpanExporter`` for the
    evaluation spans (``--evaluation-spans``), instead of the scores endpoint's.
    """

    def __init__(
        self,
        config: ServeConfig,
        suite: TestSuite,
        *,
        log_exporter: Any = None,
        admission: bool = True,
        console_window: Any = None,
        spend_state: SpendState | None = None,
        span_exporter: Any = None,
    ) -> None:
        if config.forward_verdicts and not config.forward:
            raise ValueError("--forward-verdicts needs --forward ENDPOINT")
        check_spend(config, suite)
        traffic = config.traffic()
        self.config = config
        self.counters = ReceiverCounters()
        self.logs = LogsSeen()
        self._limits = Limits()
        sinks: list[TraceSink] = []
        redaction = config.redaction or redaction_from_env()
        if config.dump is not None:
            sinks.append(
                DumpSink(
                    config.dump,
                    format=config.dump_format,
                    logs=self.logs,
                    redaction=redaction,
                    flush_interval=config.dump_flush_interval,
                )
            )
        self.forwarder: ForwardSink | None = None
        if config.forward:
            self.forwarder = ForwardSink(
                config.forward,
                protocol=config.forward_protocol,
                redaction=redaction,
                unwrap=lambda r: r.decoded,
                logs_seen=lambda: self.logs.seen,
            )
            if not config.forward_verdicts:  # else the evaluator hands traces on once judged
                sinks.append(self.forwarder)
        self.emitter: EvaluationEventEmitter | None = None
        self.scores: ConfirmedExporter | None = None
        origins = Origins(suite, judge_model=config.judge_model, traffic=traffic)
        if log_exporter is not None or config.scores_endpoint:
            self.scores = ConfirmedExporter(
                log_exporter
                or otlp_log_exporter(config.scores_protocol, endpoint=scores_url(config))
            )
            self.emitter = EvaluationEventEmitter(
                self.scores, explanations=config.explanations, suite=suite.name, origins=origins
            )
        #: One evaluation span per evaluated trace (``--evaluation-spans``), else ``None``.
        self.evaluation_spans: EvaluationSpanEmitter | None = None
        if config.evaluation_spans and (span_exporter is not None or config.scores_endpoint):
            self.evaluation_spans = EvaluationSpanEmitter(
                span_exporter or otlp_span_exporter(config),
                options=EventOptions(
                    explanations=config.explanations, suite=suite.name, origins=origins
                ),
            )
        #: The judge's spend window, shared by the workers (``None``: none asked for).
        self.spend = spend_window(config, spend_state)
        #: The per-trace console lines (``None``: ``--quiet``, or an embedding program's).
        self.console: ServeConsole | None = None
        callbacks: list[Any] = [self.emitter] if self.emitter is not None else []
        if self.evaluation_spans is not None:
            callbacks.append(self.evaluation_spans)
        if config.console:
            self.console = ServeConsole(
                rate=config.console_rate, redaction=redaction, shared_window=console_window
            )
            callbacks.append(self.console.verdicts)
        results = (
            ResultsFile(config.results, explanations=config.explanations)
            if config.results is not None
            else None
        )
        #: The received spans and log records as the evaluator reads and keeps them.
        self.received = ReceivedItems(
            self.counters, logs=self.logs, max_kept_items=config.revision_max_spans
        )
        self.evaluator = received_evaluator(
            suite,
            self.counters,
            self.received,
            results=results,
            on_result=callbacks or None,
            explanations=config.explanations,
            redaction=redaction,
            revision_window_s=config.revision_window,
            max_revisions=config.max_revisions,
            judge_overrides=config.judge_overrides(),
            judge_queue=config.judge_queue,
            # Queued traces' spans are let go by the intake: the queue bounds them instead.
            judge_queue_spans=config.max_buffered_spans,
            judge_drain_s=config.shutdown_timeout,
            traffic=traffic,
            spend=self.spend,
            forward_to=(
                [self.forwarder] if config.forward_verdicts and self.forwarder is not None else ()
            ),
        )
        sinks.append(self.evaluator)
        sinks.append(ReleaseSink(lambda trace_id, n: self.intake.release(trace_id, n)))
        self.buffer = TraceBuffer(
            *sinks,
            grace_s=config.grace,
            max_age_s=config.max_age,
            # The intake refuses before this is reached; the buffer's own bound is a backstop.
            max_traces=2 * config.max_traces,
            max_spans=config.max_spans_per_trace,
            # Likewise: the intake's admission bounds memory; the buffer gives traces up
            # (``export_dropped``) only past twice that (one request far over the limit).
            max_buffered_spans=2 * config.max_buffered_spans,
            shutdown_timeout_s=buffer_shutdown_timeout(config),
            # A trace's checks may take their time limits (``checks.timelimit``): the
            # evaluator is not reported stuck before they are up.
            sink_timeout_s=DEFAULT_SINK_TIMEOUT_S + evaluation_time_limit(suite.cases),
        )
        unbounded = 1 << 62
        self.intake = TraceIntake(
            self.buffer,
            self.counters,
            max_buffered_spans=config.max_buffered_spans if admission else unbounded,
            max_traces=config.max_traces if admission else unbounded,
            retry_after=config.retry_after,
            # Without admission (a worker) nothing is refused, so nothing needs evicting.
            evict_rootless=admission,
            wire=config.keeps_wire,
            # What the suite reads decides how the engine decodes (``convert.engine``).
            needs=Needs(usage=self.evaluator.usage, content=self.evaluator.content),
        )

    def ingest(self, encoding: str, body: bytes) -> Accepted:
        """Decode an export request and take its spans (raises ``Throttled`` when full)."""
        return self.intake(encoding, body)

    def ingest_logs(self, encoding: str, body: bytes) -> Accepted:
        """Decode a logs request and hold its content records with their traces (raises
        ``Undecodable``, ``Throttled``, ``ShuttingDown``)."""
        decoded = decode_logs(encoding, body, self._limits)
        self.logs_arrived()
        self.intake.take_logs(decoded.records, **logs_counts(decoded))
        return logs_accepted(decoded)

    def logs_arrived(self) -> None:
        """From now on traces may hold log records, and a complete trace waits ``logs_grace``
        after its root span for them."""
        if not self.logs.seen:
            self.logs.seen = True
            self.buffer.grace_s = max(self.buffer.grace_s, self.config.logs_grace)

    def close(self) -> None:
        """Refuse every further request."""
        self.intake.close()

    def stats(self) -> dict[str, Any]:
        """Counters since start, plus what is held now. The spans released are read first:
        a trace's spans are released after its counts are added, so every trace they count
        done is counted in the snapshot read after (read the other way round, a reader saw
        every span released and a revision not yet counted). The results lines held are
        written after the snapshot: every trace it counts evaluated has its line in the file
        (``ResultsFile`` holds lines for a burst of traces)."""
        released = self.intake.released_spans
        stats: dict[str, Any] = self.counters.snapshot()
        self.evaluator.flush_lines()
        # What the exporter confirmed; events it could not build or send are failed.
        stats["scores_sent"] = self.scores.sent if self.scores is not None else 0
        stats["scores_failed"] = (
            self.scores.failed + self.emitter.failed
            if self.scores is not None and self.emitter is not None
            else 0
        )
        buffered = self.buffer.stats()
        stats["sink_errors"] = buffered.sink_errors + self.evaluator.errors
        # Counted where traces are given up: their notices skip an evaluator reported stuck.
        stats["traces_dropped"] = buffered.traces_dropped
        stats["spans_held"] = self.intake.held_spans
        stats["traces_held"] = self.intake.held_traces
        stats["spans_released"] = released
        stats["reading_path"] = self.intake.reading_path
        revisions = self.evaluator.revisions
        stats["revision_spans_kept"] = revisions.items_kept
        stats["revision_traces_kept"] = revisions.traces_kept
        stats["revision_traces_evicted"] = revisions.traces_evicted
        bodies = self.received.bodies
        stats["revision_bodies_held"] = bodies.bodies_held
        stats["revision_body_bytes_held"] = bodies.bytes_held
        stats["revision_bodies_refused"] = bodies.refused
        # Judge checks: the queue they wait in, and what the judge cost (``judge_*``).
        stats.update(self.evaluator.judge_stats())
        # Production: per sampled check, and the spend window (``docs/serve.md``).
        sampling = self.evaluator.sampling_stats()["sampling"]
        if sampling:
            stats["sampling"] = sampling
        if self.spend is not None:
            stats.update(self.spend.stats())
        if self.forwarder is not None:
            stats["traces_forwarded"] = self.forwarder.traces_forwarded
            stats["traces_not_forwarded"] = self.forwarder.traces_dropped
        if self.console is not None:
            stats.update(self.console.stats())
        return stats

    def shutdown(self) -> None:
        """Evaluate everything held (incomplete traces partial) and flush every sink. Blocks."""
        self.intake.close()
        self.buffer.shutdown()
        if self.console is not None:  # after the last verdict: the count left out is said
            self.console.close()

    def healthy(self) -> bool:
        return True
