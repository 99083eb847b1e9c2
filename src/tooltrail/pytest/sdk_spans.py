"""Captured SDK spans -> the trajectory, through the same converter every other path uses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from tooltrail.convert import to_eval_trace
from tooltrail.model import EvalTrace
from tooltrail.otlp.span import Span, SpanEvent


def trace_of_spans(spans: Sequence[ReadableSpan]) -> EvalTrace:
    """One ``EvalTrace`` of the spans (one trace, or several read as one conversation).

    The converter counts a trace with no agent span as one turn. In a test, tools are often
    called directly, each call a trace of its own: when every call is a root span, they are
    all turn 1 of one trajectory rather than one turn each.
    """
    if not spans:
        return EvalTrace(trace_id="", metadata={"turn_count": 0})
    trace = to_eval_trace([otlp_span(span) for span in spans])
    calls = trace.tool_calls
    if len(calls) > 1 and all(not call.parent_span_id for call in calls):
        for call in calls:
            call.turn = 1
        trace.metadata["turn_count"] = 1
    return trace


def otlp_span(span: ReadableSpan) -> Span:
    """The decoded-span view of an SDK span (ids as lower-case hex, OTLP enum values)."""
    context = span.context
    parent = span.parent
    return Span(
        trace_id=format(context.trace_id, "032x") if context else "",
        span_id=format(context.span_id, "016x") if context else "",
        parent_span_id=format(parent.span_id, "016x") if parent else "",
        name=span.name,
        kind=span.kind.value + 1,  # OTLP numbers kinds from 1 (INTERNAL); the SDK from 0
        start_ns=span.start_time or 0,
        end_ns=span.end_time or 0,
        status_code=span.status.status_code.value,
        status_message=span.status.description or "",
        attributes=_plain(span.attributes),
        events=[SpanEvent(e.name, e.timestamp or 0, _plain(e.attributes)) for e in span.events],
        resource=_plain(span.resource.attributes) if span.resource else {},
        scope_name=span.instrumentation_scope.name if span.instrumentation_scope else "",
    )


def _plain(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    if not attributes:
        return {}
    return {k: list(v) if isinstance(v, tuple) else v for k, v in attributes.items()}
