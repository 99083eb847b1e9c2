"""OTLP protobuf (``ExportTraceServiceRequest`` / ``TracesData``) to ``Span`` objects."""

from __future__ import annotations

from typing import Any

from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from tooltrail.otlp.decode.decode_error import DecodeError
from tooltrail.otlp.decode.ids import SPAN_ID_BYTES, TRACE_ID_BYTES, ZERO_SPAN_ID, bad_id
from tooltrail.otlp.decode.lazy import PbAttributes, PbEvents, Where, span_path
from tooltrail.otlp.decode.limits import DEFAULT_LIMITS, Limits
from tooltrail.otlp.decode.mapped import MappedAttributes, RequestBytes
from tooltrail.otlp.decode.rest import PbGroup
from tooltrail.otlp.decode.span import Diagnostic, Interest, Span, SpanHead
from tooltrail.otlp.decode.values import Notes, pb_attributes, pb_raw_attributes
from tooltrail.otlp.decode.wire import LeanTraces, MappedTraces

#: Status messages as SDKs serialize them most of the time.
_COMMON_STATUS = {b"": (0, ""), b"\x18\x01": (1, ""), b"\x18\x02": (2, "")}
_NO_EVENTS: tuple[()] = ()


def decode_request(
    data: bytes,
    *,
    origin: str = "",
    limits: Limits = DEFAULT_LIMITS,
    diagnostics: list[Diagnostic] | None = None,
    lazy: bool = False,
    interest: Interest | None = None,
) -> list[Span]:
    """The spans of one serialized ``ExportTraceServiceRequest`` or ``TracesData``.

    Raises ``DecodeError`` when the message cannot be parsed at all. A span with an invalid
    id is left out and reported in ``diagnostics`` (a receiver counts them as rejected).
    With ``lazy``, attributes and events are decoded on first use; with an ``interest`` too,
    spans outside it come as ``SpanHead`` (see ``spans_from_bytes``).
    """
    if len(data) > limits.max_record_bytes:
        raise DecodeError(
            f"request of {len(data)} bytes exceeds the {limits.max_record_bytes} byte limit"
        )
    return spans_from_bytes(
        data, Where(origin, None, None, limits, diagnostics), lazy=lazy, interest=interest
    )


_PARSE_ERRORS = (ProtobufDecodeError, RecursionError, ValueError)


def spans_from_bytes(
    data: bytes, where: Where, *, lazy: bool = True, interest: Interest | None = None
) -> list[Any]:
    """Lazily: parsed with the mapped schema (attribute lookups in C), or, when that refuses
    the request (a bad attribute somewhere), with the lean one, which reports it. With an
    ``interest``, spans of the mapped schema outside it come out as ``SpanHead``."""
    if lazy:
        try:
            mapped = MappedTraces.FromString(data)
        except _PARSE_ERRORS:
            pass
        else:
            return spans_from_message(mapped, where, request=RequestBytes(data), interest=interest)
    try:
        message = LeanTraces.FromString(data)
    except _PARSE_ERRORS as exc:
        raise DecodeError(f"not a valid OTLP protobuf traces message ({exc})") from None
    return spans_from_message(message, where, lazy=lazy)


def _status(raw: bytes) -> tuple[int, str]:
    known = _COMMON_STATUS.get(raw)
    if known is not None:
        return known
    try:
        status = Status.FromString(raw)
    except ProtobufDecodeError:
        return 0, ""
    return status.code, status.message


def _resource(raw: bytes, where: Where, ri: int) -> dict[str, Any]:
    if not raw:
        return {}
    path = f"resourceSpans[{ri}].resource"
    try:
        resource = Resource.FromString(raw)
    except (ProtobufDecodeError, RecursionError) as exc:
        where.report(path, f"undecodable resource dropped ({exc})")
        return {}
    notes: Notes = []
    attrs = pb_attributes(resource.attributes, where.limits, path + ".attributes", notes)
    where.report_notes(notes)
    return attrs


def spans_from_message(
    message: Any,
    where: Where,
    *,
    lazy: bool = True,
    request: RequestBytes | None = None,
    interest: Interest | None = None,
) -> list[Any]:
    """Spans of a parsed lean traces message, or of a mapped one (``wire.MappedTraces``) parsed
    from ``request``; spans with bad ids are reported and skipped. With a mapped message and an
    ``interest``, a span outside it is a ``SpanHead``."""
    out: list[Any] = []
    keys = interest.keys if interest is not None and request is not None else None
    max_attributes = where.limits.max_attributes
    append = out.append
    origin = where.origin
    hex_cache: dict[bytes, str] = {}
    status_of = _status
    common_status = _COMMON_STATUS
    for ri, resource_spans in enumerate(message.resource_spans):
        resource = _resource(resource_spans.resource, where, ri)
        groups = list(resource_spans.scope_spans)
        groups.extend(resource_spans.instrumentation_library_spans)
        for si, scope_spans in enumerate(groups):
            scope_name = scope_spans.scope.name
            group = PbGroup(resource_spans, scope_spans, where, ri, si, request)
            for pi, s in enumerate(scope_spans.spans):
                trace_id = s.trace_id
                span_id = s.span_id
                parent = s.parent_span_id
                trace_hex = hex_cache.get(trace_id)
                if trace_hex is None:
                    problem = bad_id(trace_id, TRACE_ID_BYTES)
                    if problem:
                        where.report(
                            f"{span_path(ri, si, pi)}.traceId", f"span rejected: {problem}"
                        )
                        continue
                    trace_hex = hex_cache[trace_id] = trace_id.hex()
                if len(span_id) != SPAN_ID_BYTES or span_id == ZERO_SPAN_ID:
                    where.report(
                        f"{span_path(ri, si, pi)}.spanId",
                        f"span rejected: {bad_id(span_id, SPAN_ID_BYTES)}",
                    )
                    continue
                if parent:
                    if len(parent) != SPAN_ID_BYTES:
                        where.report(
                            f"{span_path(ri, si, pi)}.parentSpanId",
                            f"span rejected: {bad_id(parent, SPAN_ID_BYTES)}",
                        )
                        continue
                    parent_hex = "" if parent == ZERO_SPAN_ID else parent.hex()
                else:
                    parent_hex = ""
                status = s.status
                known = common_status.get(status)
                code, status_message = known if known is not None else status_of(status)
                if keys is not None and parent_hex:
                    entries = s.attributes
                    for key in keys:  # a marker key, most spans of agent traces have one
                        if key in entries:
                            break
                    else:
                        name = s.name
                        if not (interest.named(name) or len(entries) > max_attributes):  # type: ignore[union-attr]
                            append(
                                SpanHead(
                                    trace_hex,
                                    span_id.hex(),
                                    parent_hex,
                                    name,
                                    s.start_time_unix_nano,
                                    s.end_time_unix_nano,
                                    code,
                                    resource,
                                    scope_name,
                                    origin,
                                )
                            )
                            continue
                loc = (ri, si, pi)
                raw_events = s.events
                if request is not None:
                    entries = s.attributes
                    attributes: Any = (
                        MappedAttributes(entries, where, loc, request) if entries else {}
                    )
                    events: Any = PbEvents(raw_events, where, loc) if raw_events else _NO_EVENTS
                elif lazy:
                    attributes = PbAttributes(s, where, loc)
                    events = PbEvents(raw_events, where, loc) if raw_events else _NO_EVENTS
                else:
                    attributes, events = _eager(s, where, loc)
                append(
                    Span(
                        trace_hex,
                        span_id.hex(),
                        parent_hex,
                        s.name,
                        s.kind,
                        s.start_time_unix_nano,
                        s.end_time_unix_nano,
                        code,
                        status_message,
                        attributes,
                        events,
                        resource,
                        scope_name,
                        origin,
                        s if request is None else loc,  # (``loc`` keeps no message alive)
                        group,
                    )
                )
    return out


def _eager(s: Any, where: Where, loc: tuple[int, int, int]) -> tuple[dict[str, Any], list[Any]]:
    notes: Notes = []
    path = span_path(*loc)
    attributes = pb_raw_attributes(
        s.attributes, where.limits, f"{path}.attributes", notes, strict=True
    )
    events = list(PbEvents(s.events, where, loc)) if s.events else []
    where.report_notes(notes)
    return attributes, events
