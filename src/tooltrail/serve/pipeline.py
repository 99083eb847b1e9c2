"""Everything between a request body and its verdicts, in one process.

    intake (decode, admit) -> TraceBuffer (complete traces) -> dump -> forward -> evaluate
    (results file, evaluation events) -> release (the intake may take more)

``TracePipeline`` is what the listeners feed when ``workers`` is 1, and what each worker
process runs when it is more (see ``tooltrail.serve.workers``).
"""

from __future__ import annotations

from typing import Any

from tooltrail.live.buffer import TraceBuffer, TraceSink
from tooltrail.live.evaluation_events import EvaluationEventEmitter, otlp_log_exporter
from tooltrail.serve.config import ServeConfig
from tooltrail.serve.counters import ReceiverCounters
from tooltrail.serve.forward import ForwardSink
from tooltrail.serve.intake import TraceIntake
from tooltrail.serve.outcome import Accepted
from tooltrail.serve.sinks import DumpSink, ReceivedTraceEvaluator, ReleaseSink, ResultsFile
from tooltrail.suite import TestSuite

LOGS_PATH = "/v1/logs"


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
    (a worker process, whose router already admitted it).
    """

    def __init__(
        self,
        config: ServeConfig,
        suite: TestSuite,
        *,
        log_exporter: Any = None,
        admission: bool = True,
    ) -> None:
        self.counters = ReceiverCounters()
        sinks: list[TraceSink] = []
        if config.dump is not None:
            sinks.append(DumpSink(config.dump, format=config.dump_format))
        self.forwarder: ForwardSink | None = None
        if config.forward:
            self.forwarder = ForwardSink(
                config.forward, protocol=config.forward_protocol, unwrap=lambda r: r.span
            )
            sinks.append(self.forwarder)
        self.emitter: EvaluationEventEmitter | None = None
        if log_exporter is not None or config.scores_endpoint:
            exporter = log_exporter or otlp_log_exporter(
                config.scores_protocol, endpoint=scores_url(config)
            )
            self.emitter = EvaluationEventEmitter(
                exporter, explanations=config.explanations, suite=suite.name
            )
        results = (
            ResultsFile(config.results, explanations=config.explanations)
            if config.results is not None
            else None
        )
        self.evaluator = ReceivedTraceEvaluator(
            suite,
            self.counters,
            results=results,
            on_result=[self.emitter] if self.emitter is not None else None,
            explanations=config.explanations,
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
        )
        unbounded = 1 << 62
        self.intake = TraceIntake(
            self.buffer,
            self.counters,
            max_buffered_spans=config.max_buffered_spans if admission else unbounded,
            max_traces=config.max_traces if admission else unbounded,
            retry_after=config.retry_after,
        )

    def ingest(self, encoding: str, body: bytes) -> Accepted:
        """Decode an export request and take its spans (raises ``Throttled`` when full)."""
        return self.intake(encoding, body)

    def close(self) -> None:
        """Refuse every further request."""
        self.intake.close()

    def stats(self) -> dict[str, Any]:
        """Counters since start, plus what is held now."""
        stats: dict[str, Any] = self.counters.snapshot()
        stats["scores_sent"] = self.emitter.emitted if self.emitter is not None else 0
        stats["sink_errors"] = self.buffer.stats().sink_errors + self.evaluator.errors
        stats["spans_held"] = self.intake.held_spans
        stats["traces_held"] = self.intake.held_traces
        stats["spans_released"] = self.intake.released_spans
        if self.forwarder is not None:
            stats["traces_forwarded"] = self.forwarder.traces_forwarded
            stats["traces_not_forwarded"] = self.forwarder.traces_dropped
        return stats

    def shutdown(self) -> None:
        """Evaluate everything held (incomplete traces partial) and flush every sink. Blocks."""
        self.intake.close()
        self.buffer.shutdown()

    def healthy(self) -> bool:
        return True
