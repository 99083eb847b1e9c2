"""One evaluation span per evaluated trace, linked to the span it evaluates (opt-in).

The GenAI conventions put a verdict on the evaluated span as ``gen_ai.evaluation.result``
events (``pipeline.evaluation_events``); their proposal ``gen_ai.evaluation.internal`` adds an
optional span for the evaluation itself, kind INTERNAL, ``gen_ai.operation.name`` =
``evaluation``, named ``evaluation {name}``, linked (a span link, not a parent) to the span or
trace it evaluated, so a backend shows how a verdict was reached without the evaluated trace
changing. ``EvaluationSpanEmitter`` is that span, as an ``on_result`` callback beside the
events: a trace of its own (a new trace id) whose one span links to the evaluated trace's root
span and carries

- ``tooltrail.verdict`` and ``tooltrail.failed_checks`` (``pipeline.verdicts``), the suite,
  the cases, and what sampling left out (``tooltrail.sampled_out``, ``tooltrail.test_traffic``);
- what judging it took: ``tooltrail.judge.calls`` (judge scores that called or asked the
  cache), ``gen_ai.usage.input_tokens`` / ``output_tokens`` and ``tooltrail.judge.cost_usd``
  summed over the judge scores' records;
- each score as a ``gen_ai.evaluation.result`` span event (with ``tooltrail.judged_span_id``
  naming the span it judged), the provenance attributes included when ``origins`` are given.

Status ERROR when the verdict is ``fail`` or ``error``. It never raises into the evaluator: a
failure is counted (``failed``) and logged without values.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from tooltrail.model import EvalTrace
from tooltrail.pipeline.verdicts import trace_verdict
from tooltrail.results import CaseResult
from tooltrail.sampling import decision_of
from tooltrail.scores import CASE_SCORE_NAME, EVALUATION_NAME, EventOptions, evaluation_events
from tooltrail.version import __version__

_log = logging.getLogger(__name__)

#: ``gen_ai.operation.name`` of an evaluation span (the proposal's value).
OPERATION = "evaluation"
OPERATION_NAME = "gen_ai.operation.name"
JUDGED_SPAN_ID = "tooltrail.judged_span_id"
SCOPE_NAME = "tooltrail"


def otlp_span_exporter(protocol: str | None = None, *, endpoint: str | None = None) -> Any:
    """An OTLP span exporter for the evaluation spans, configured as the SDK configures one:
    ``protocol`` (``grpc`` or ``http/protobuf``) else ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL``,
    ``OTEL_EXPORTER_OTLP_PROTOCOL``, else gRPC; what is not given from the
    ``OTEL_EXPORTER_OTLP_*`` variables."""
    chosen = (
        protocol
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "grpc"
    ).strip()
    if chosen == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter as HttpSpanExporter,
        )

        return HttpSpanExporter(endpoint=endpoint)
    if chosen != "grpc":
        _log.warning("Unsupported OTLP protocol %r for evaluation spans; using grpc", chosen)
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
        OTLPSpanExporter as GrpcSpanExporter,
    )

    return GrpcSpanExporter(endpoint=endpoint)


class EvaluationSpanEmitter:
    """Emits the evaluation span of each evaluated trace through ``exporter`` (any SDK
    ``SpanExporter``), from a ``TracerProvider`` of its own: the application's provider never
    sees these spans. ``options``: how the score events on it are built (the suite's name,
    explanations, ``origins``)."""

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        options: EventOptions | None = None,
        resource: Resource | None = None,
        batch: bool = True,
    ) -> None:
        self.options = options or EventOptions()
        self.provider = TracerProvider(
            resource=resource or Resource.create(), shutdown_on_exit=False
        )
        processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
        self.provider.add_span_processor(processor)
        self._tracer = self.provider.get_tracer(SCOPE_NAME, __version__)
        self.emitted = 0
        self.failed = 0

    def __call__(self, trace: EvalTrace, results: Sequence[CaseResult]) -> None:
        try:
            self._emit(trace, results)
        except Exception:  # noqa: BLE001 - never break the evaluator or the application
            self.failed += 1
            _log.warning("Could not emit an evaluation span for a trace", exc_info=False)

    def _emit(self, trace: EvalTrace, results: Sequence[CaseResult]) -> None:
        verdict = trace_verdict(trace, results)
        suite = self.options.suite
        attributes: dict[str, Any] = {
            OPERATION_NAME: OPERATION,
            EVALUATION_NAME: CASE_SCORE_NAME,
            **verdict.attributes(),
            "tooltrail.case_ids": list(dict.fromkeys(str(r.case_id) for r in results)),
        }
        if suite:
            attributes["tooltrail.suite"] = suite
        decided = decision_of(trace)
        if decided is not None:
            if decided.get("sampled_out"):
                attributes["tooltrail.sampled_out"] = list(decided["sampled_out"])
            if decided.get("test"):
                attributes["tooltrail.test_traffic"] = True
        revision = trace.metadata.get("revision")
        if isinstance(revision, int) and revision > 0:
            attributes["tooltrail.revision"] = revision
        attributes.update(_judging(results))
        now = time.time_ns()
        events = [
            (
                event.name,
                {**event.attributes, JUDGED_SPAN_ID: event.span_id}
                if event.span_id
                else dict(event.attributes),
            )
            for event in evaluation_events(trace, results, options=self.options, time_ns=now)
            if event.attributes.get(EVALUATION_NAME) != CASE_SCORE_NAME
        ]
        span = self._tracer.start_span(
            f"evaluation {suite}" if suite else "evaluation",
            context=Context(),  # a trace of its own, never the caller's current span
            kind=SpanKind.INTERNAL,
            links=_links(trace),
            attributes=_otel(attributes),
            start_time=now,
        )
        for name, event_attributes in events:
            span.add_event(name, _otel(event_attributes), timestamp=now)
        if verdict.verdict in ("fail", "error"):
            failed = ", ".join(verdict.failed)
            span.set_status(Status(StatusCode.ERROR, f"Failed: {failed}" if failed else None))
        span.end(end_time=time.time_ns())
        self.emitted += 1

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return bool(self.provider.force_flush(timeout_millis))

    def shutdown(self) -> None:
        self.provider.shutdown()


def _links(trace: EvalTrace) -> list[Link]:
    """A link to the evaluated trace's root span (its first trace's, for a conversation)."""
    trace_ids = [str(t) for t in trace.metadata.get("trace_ids") or ()] or [str(trace.trace_id)]
    root = trace.metadata.get("root_span_id")
    try:
        trace_id, span_id = int(trace_ids[0], 16), int(str(root), 16)
    except (TypeError, ValueError):
        return []
    if not trace_id or not span_id:
        return []
    context = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(1))
    return [Link(context, {"tooltrail.link": "evaluated"})]


def _judging(results: Sequence[CaseResult]) -> dict[str, Any]:
    """What the judge scores' records add up to."""
    calls = input_tokens = output_tokens = 0
    cost = 0.0
    for result in results:
        for score in result.scores:
            record = score.judge
            if not isinstance(record, dict):
                continue
            calls += 1
            input_tokens += int(record.get("input_tokens") or 0)
            output_tokens += int(record.get("output_tokens") or 0)
            cost += float(record.get("cost_usd") or 0.0)
    if not calls:
        return {}
    return {
        "tooltrail.judge.calls": calls,
        "gen_ai.usage.input_tokens": input_tokens,
        "gen_ai.usage.output_tokens": output_tokens,
        "tooltrail.judge.cost_usd": round(cost, 9),
    }


def _otel(attributes: dict[str, Any]) -> dict[str, Any]:
    """OpenTelemetry attribute values: lists as tuples of their items, ``None`` left out."""
    return {
        key: tuple(value) if isinstance(value, list) else value
        for key, value in attributes.items()
        if value is not None
    }
