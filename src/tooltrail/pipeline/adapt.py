"""SDK ``ReadableSpan`` -> ``tooltrail.otlp.Span``, the decoded span the converter reads.

A direct field-by-field copy: cheaper than encoding to protobuf and decoding again, and it
keeps values exactly (SDK tuples become lists, as decoded ``arrayValue`` are).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from tooltrail.otlp.decode.span import STATUS_ERROR, STATUS_OK, STATUS_UNSET, Span, SpanEvent

#: OTLP enum values of SDK span kinds (OTLP counts from 1 = INTERNAL).
_KIND = {
    SpanKind.INTERNAL: 1,
    SpanKind.SERVER: 2,
    SpanKind.CLIENT: 3,
    SpanKind.PRODUCER: 4,
    SpanKind.CONSUMER: 5,
}
_STATUS = {StatusCode.UNSET: STATUS_UNSET, StatusCode.OK: STATUS_OK, StatusCode.ERROR: STATUS_ERROR}


def plain(value: Any) -> Any:
    """An SDK attribute value as the OTLP decoder gives it: tuples -> lists, mappings -> dicts."""
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    return value


def _attributes(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    if not attributes:
        return {}
    return {k: plain(v) if isinstance(v, (tuple, Mapping)) else v for k, v in attributes.items()}


def otlp_span(span: ReadableSpan, resource_cache: dict[int, dict[str, Any]] | None = None) -> Span:
    """``span`` as a ``tooltrail.otlp.Span`` (lower-case hex ids, ``""`` parent for a root)."""
    context = span.context
    parent = span.parent
    resource = span.resource
    if resource_cache is not None:
        attrs = resource_cache.get(id(resource))
        if attrs is None:
            attrs = resource_cache[id(resource)] = _attributes(resource.attributes)
    else:
        attrs = _attributes(resource.attributes)
    scope = span.instrumentation_scope
    return Span(
        trace_id=f"{context.trace_id:032x}" if context else "",
        span_id=f"{context.span_id:016x}" if context else "",
        parent_span_id=f"{parent.span_id:016x}" if parent is not None else "",
        name=span.name,
        kind=_KIND.get(span.kind, 0),
        start_ns=span.start_time or 0,
        end_ns=span.end_time or 0,
        status_code=_STATUS.get(span.status.status_code, STATUS_UNSET),
        status_message=span.status.description or "",
        attributes=_attributes(span.attributes),
        events=[
            SpanEvent(name=e.name, time_ns=e.timestamp, attributes=_attributes(e.attributes))
            for e in span.events
        ],
        resource=attrs,
        scope_name=scope.name if scope is not None else "",
        origin="live",
    )


def otlp_spans(spans: Iterable[ReadableSpan]) -> list[Span]:
    """Every span of ``spans`` converted, sharing one resource dict per SDK resource."""
    cache: dict[int, dict[str, Any]] = {}
    return [otlp_span(span, cache) for span in spans]
