"""Send scores as ``gen_ai.evaluation.result`` log records through the OpenTelemetry Logs API.

The emitter owns its ``LoggerProvider``: the application's global logs pipeline (its handlers,
processors and exporters) never sees tooltrail's events, and tooltrail never sees the app's logs.
Each record carries a non-recording span context built from the judged span's ids, so a
backend files it under that span even though the span ended long ago.

    emitter = EvaluationEventEmitter()          # OTLP, configured by OTEL_EXPORTER_OTLP_*
    evaluator = InlineEvaluator(suite, on_result=[emitter])   # any (trace, results) callback

What each event says, and which span it points at, is decided in ``tooltrail.scores``.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from opentelemetry._logs import SeverityNumber
from opentelemetry.context import Context
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    LogRecordExporter,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import (
    INVALID_SPAN,
    NonRecordingSpan,
    SpanContext,
    TraceFlags,
    set_span_in_context,
)

from tooltrail.model import EvalTrace
from tooltrail.scores import (
    ENV_EXPLANATIONS,
    EVENT_NAME,
    REVISION,
    SUPERSEDES_REVISION,
    CaseResultLike,
    EvaluationEvent,
    EventOptions,
    OriginsLike,
    evaluation_events,
    explanations_from_env,
)
from tooltrail.version import __version__

__all__ = [
    "ENV_EXPLANATIONS",
    "SCOPE_NAME",
    "EvaluationEventEmitter",
    "explanations_from_env",
    "otlp_log_exporter",
    "span_context_of",
]

_log = logging.getLogger(__name__)

#: Name of the instrumentation scope the events are emitted under.
SCOPE_NAME = "tooltrail"

_PROTOCOLS = ("grpc", "http/protobuf")


def otlp_log_exporter(
    protocol: str | None = None,
    *,
    endpoint: str | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> LogRecordExporter:
    """An OTLP log exporter, configured like the OpenTelemetry SDK configures one.

    ``protocol`` is ``"grpc"`` or ``"http/protobuf"``; when not given it is read from
    ``OTEL_EXPORTER_OTLP_LOGS_PROTOCOL``, then ``OTEL_EXPORTER_OTLP_PROTOCOL``, defaulting to
    gRPC as the Python SDK's ``otlp`` exporter does. Endpoint, headers, TLS, timeout and
    compression not given explicitly come from the standard ``OTEL_EXPORTER_OTLP_*`` variables.
    An unsupported protocol logs a warning and falls back to gRPC.
    """
    chosen = (
        protocol
        or os.environ.get("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "grpc"
    ).strip()
    if chosen not in _PROTOCOLS:
        _log.warning("Unsupported OTLP protocol %r for evaluation events; using grpc", chosen)
        chosen = "grpc"
    if chosen == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import (
            OTLPLogExporter as GrpcLogExporter,
        )

        grpc_headers = dict(headers) if headers is not None else None
        return GrpcLogExporter(endpoint=endpoint, headers=grpc_headers, timeout=timeout)
    from opentelemetry.exporter.otlp.proto.http._log_exporter import (
        OTLPLogExporter as HttpLogExporter,
    )

    return HttpLogExporter(endpoint=endpoint, headers=headers, timeout=timeout)


def span_context_of(trace_id: str, span_id: str) -> Context:
    """A fresh context whose current span is a non-recording span with the given hex ids.

    Built on an empty context, never the caller's, so no ambient span leaks into an event.
    Missing or invalid ids give the invalid span context (the record then has no trace ids).
    """
    try:
        tid, sid = int(trace_id, 16), int(span_id, 16)
    except ValueError:
        return set_span_in_context(INVALID_SPAN, Context())
    if not tid or not sid:
        return set_span_in_context(INVALID_SPAN, Context())
    span_context = SpanContext(tid, sid, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    return set_span_in_context(NonRecordingSpan(span_context), Context())


class EvaluationEventEmitter:
    """Emits evaluation events for evaluated traces; usable directly as an ``on_result`` callback.

    Call ``shutdown`` (the inline evaluator does, from the tracer provider's shutdown) to
    export what is still batched: the emitter does not shut itself down at exit.

    ``exporter``: any ``LogRecordExporter``; default ``otlp_log_exporter()``. Records go through a
    ``BatchLogRecordProcessor`` (``batch=False``: one export per record, on the calling thread).
    ``explanations``: include ``gen_ai.evaluation.explanation``; default from
    ``TOOLTRAIL_EVALUATION_EXPLANATIONS``, else off. ``suite``: the ``tooltrail.suite`` attribute.
    ``origins``: the provenance attributes every event carries (``tooltrail.origins.Origins``:
    the check's version and configuration hash, the judge model and prompt hash, whether the
    trace was sampled).
    Never raises into the caller: a failure is logged (without any argument values) and dropped.
    """

    def __init__(
        self,
        exporter: LogRecordExporter | None = None,
        *,
        explanations: bool | None = None,
        suite: str | None = None,
        resource: Resource | None = None,
        batch: bool = True,
        case_verdicts: bool = True,
        origins: OriginsLike | None = None,
    ) -> None:
        self.options = EventOptions(
            explanations=explanations_from_env() if explanations is None else explanations,
            suite=suite,
            case_verdicts=case_verdicts,
            origins=origins,
        )
        self.exporter = exporter if exporter is not None else otlp_log_exporter()
        # Not shut down by its own ``atexit`` hook: that hook, registered after the tracer
        # provider's, would run first and drop the events of the traces the tracer
        # provider's shutdown still evaluates. The emitter's owner shuts it down (the inline
        # evaluator's ``shutdown``, after the buffer delivered its last trace).
        self.provider = LoggerProvider(
            resource=resource or Resource.create(), shutdown_on_exit=False
        )
        processor = (
            BatchLogRecordProcessor(self.exporter)
            if batch
            else SimpleLogRecordProcessor(self.exporter)
        )
        self.provider.add_log_record_processor(processor)
        self._logger = self.provider.get_logger(SCOPE_NAME, __version__)
        self.emitted = 0
        self.failed = 0

    def __call__(self, trace: EvalTrace, results: Sequence[CaseResultLike]) -> None:
        """The inline evaluator's ``on_result`` callback: emit every event of ``results``.

        A revised verdict (``trace.metadata["revision"]``, set by the inline evaluator) emits
        its events again with ``tooltrail.revision`` and ``tooltrail.supersedes_revision``."""
        try:
            events = evaluation_events(trace, results, options=self.options, time_ns=time.time_ns())
            revision = trace.metadata.get("revision")
            if revision:  # a revised verdict: its events say which ones they supersede
                supersedes = trace.metadata.get("supersedes_revision")
                for event in events:
                    event.attributes[REVISION] = revision
                    if supersedes is not None:
                        event.attributes[SUPERSEDES_REVISION] = supersedes
        except Exception:  # noqa: BLE001 - never break the host application
            self.failed += 1
            _log.warning("Could not build evaluation events for a trace", exc_info=False)
            return
        self.emit(events)

    def emit(self, events: Iterable[EvaluationEvent]) -> None:
        """Emit prepared events (from ``tooltrail.scores.evaluation_events``)."""
        for event in events:
            try:
                self._logger.emit(
                    timestamp=event.time_ns or time.time_ns(),
                    context=span_context_of(event.trace_id, event.span_id),
                    severity_number=SeverityNumber(event.severity_number),
                    severity_text=event.severity_text,
                    attributes=_otel_attributes(event.attributes),
                    event_name=event.name or EVENT_NAME,
                )
                self.emitted += 1
            except Exception:  # noqa: BLE001 - never break the host application
                self.failed += 1
                _log.warning("Could not emit an evaluation event", exc_info=False)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Export every event emitted so far."""
        return bool(self.provider.force_flush(timeout_millis))

    def shutdown(self) -> None:
        """Flush and release the exporter. The emitter emits nothing afterwards."""
        self.provider.shutdown()


def _otel_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """OpenTelemetry attribute values: lists become tuples of their items."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in attributes.items()}
