"""OTLP/JSON traces to ``Span`` objects, over ``orjson.loads`` output.

Not ``google.protobuf.json_format``: it reads ids as base64 (OTLP/JSON ids are hex) and is far
slower. Accepted: hex ids in any case (base64 ids by their length), int64 as strings or
numbers, enum ints or names, lowerCamelCase or snake_case keys, the pre-2022
``instrumentationLibrarySpans``, every AnyValue shape, attribute lists or plain objects.
"""

from __future__ import annotations

from typing import Any

import orjson

from tooltrail.otlp.decode.decode_error import DecodeError
from tooltrail.otlp.decode.ids import (
    SPAN_ID_BYTES,
    SPAN_ID_HEX,
    TRACE_ID_BYTES,
    ZERO_HEX,
    ZERO_SPAN_ID,
    json_id,
)
from tooltrail.otlp.decode.jsontyped import TypedRequest, decode_typed, typed_spans
from tooltrail.otlp.decode.lazy import JsonAttributes, JsonEvents, Where, json_event, span_path
from tooltrail.otlp.decode.limits import DEFAULT_LIMITS, Limits
from tooltrail.otlp.decode.rest import JsonGroup
from tooltrail.otlp.decode.span import Diagnostic, Interest, Span, SpanHead, head_of
from tooltrail.otlp.decode.stores import store_spans
from tooltrail.otlp.decode.values import Notes, json_attributes, json_int

_SPAN_KINDS = {
    "UNSPECIFIED": 0, "INTERNAL": 1, "SERVER": 2, "CLIENT": 3, "PRODUCER": 4, "CONSUMER": 5,
}  # fmt: skip
_STATUS_CODES = {"UNSET": 0, "OK": 1, "ERROR": 2}
_NO_EVENTS: tuple[()] = ()


def decode_json_request(
    request: Any,
    *,
    origin: str = "",
    limits: Limits = DEFAULT_LIMITS,
    diagnostics: list[Diagnostic] | None = None,
    lazy: bool = False,
    interest: Interest | None = None,
) -> list[Span]:
    """The spans of one OTLP/JSON traces request, given as bytes, str or parsed object.

    Raises ``DecodeError`` (with the field path) when the request as a whole is unusable. A
    span with an invalid id or a wrong-typed field is left out and reported in
    ``diagnostics``. With ``lazy``, attributes and events are decoded on first use (a bad
    attribute is then dropped with a diagnostic instead of rejecting its span); with an
    ``interest`` too, spans outside it come as ``SpanHead`` (see ``spans_from_json``).
    """
    if isinstance(request, (bytes, bytearray, memoryview, str)):
        size = len(request)
        if size > limits.max_record_bytes:
            raise DecodeError(
                f"request of {size} bytes exceeds the {limits.max_record_bytes} byte limit"
            )
        request = parse_json(request)
    return spans_from_json(
        request, Where(origin, None, None, limits, diagnostics), lazy=lazy, interest=interest
    )


def parse_json(data: Any) -> Any:
    """One JSON record: a ``TypedRequest`` when it is a traces request in the canonical
    shape (read faster, see ``jsontyped``), else what ``orjson.loads`` returns."""
    typed = decode_typed(data)
    if typed is not None:
        return typed
    return _loads(data)


def _loads(data: Any) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"invalid JSON ({exc})") from None


def _get(obj: dict[str, Any], camel: str, snake: str) -> Any:
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


def _list(obj: dict[str, Any], camel: str, snake: str, path: str) -> list[Any]:
    value = obj.get(camel)
    if value is None:
        value = obj.get(snake)
        if value is None:
            return []
    if not isinstance(value, list):
        raise DecodeError(f"expected a list, got {type(value).__name__}", field=f"{path}.{camel}")
    return value


def _object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DecodeError(f"expected an object, got {type(value).__name__}", field=path)
    return value


def _enum(value: Any, names: dict[str, int], prefix: str, path: str) -> int:
    if type(value) is int:
        return value
    if isinstance(value, str):
        name = value.upper()
        if name.startswith(prefix):
            name = name[len(prefix) :]
        if name in names:
            return names[name]
        if name.isdigit():
            return int(name)
    raise DecodeError(f"unknown enum value {str(value)[:40]!r}", field=path)


def json_resource(rs: dict[str, Any], where: Where, ri: int, lazy: bool) -> dict[str, Any]:
    resource = rs.get("resource")
    if not resource:
        return {}
    path = f"resourceSpans[{ri}].resource"
    _object(resource, path)
    notes: Notes = []
    attrs = json_attributes(resource.get("attributes"), where.limits, f"{path}.attributes", notes)
    where.report_notes(notes)
    return attrs


def spans_from_json(
    doc: Any, where: Where, *, lazy: bool = True, interest: Interest | None = None
) -> list[Any]:
    """Spans of a parsed OTLP/JSON traces document; bad spans are reported and skipped.
    Lazily and with an ``interest``, a span outside it is a ``SpanHead``."""
    if doc.__class__ is TypedRequest:
        spans = typed_spans(doc.request, where, lazy=lazy, interest=interest)
        if spans is not None:
            return spans
        doc = _loads(doc.data)  # not canonical after all: read (and report) it as always
    _object(doc, "(document)")
    groups_of = doc.get("resourceSpans")
    if groups_of is None:
        groups_of = doc.get("resource_spans")
        if groups_of is None:
            if "resourceLogs" in doc or "resourceMetrics" in doc or "resource_logs" in doc:
                return []  # another signal in the same dump: not spans, not an error
            # Jaeger, Tempo: Tempo's OTLP/JSON inside a wrapper comes back to this reader
            spans = store_spans(doc, where, lazy=lazy, interest=interest, otlp=spans_from_json)
            if spans is not None:
                return spans
            raise DecodeError(
                "not an OTLP traces document (no resourceSpans)", field="resourceSpans"
            )
    if not isinstance(groups_of, list):
        raise DecodeError("expected a list", field="resourceSpans")
    out: list[Any] = []
    append = out.append
    origin = where.origin
    trace_cache: dict[Any, str] = {}
    if not lazy:
        interest = None
    for ri, rs in enumerate(groups_of):
        rpath = f"resourceSpans[{ri}]"
        _object(rs, rpath)
        resource = json_resource(rs, where, ri, lazy)
        groups = _list(rs, "scopeSpans", "scope_spans", rpath)
        groups = groups + _list(
            rs, "instrumentationLibrarySpans", "instrumentation_library_spans", rpath
        )
        for si, ss in enumerate(groups):
            spath = f"{rpath}.scopeSpans[{si}]"
            _object(ss, spath)
            scope = ss.get("scope") or _get(ss, "instrumentationLibrary", "instrumentation_library")
            scope_name = scope.get("name", "") if isinstance(scope, dict) else ""
            if not isinstance(scope_name, str):
                scope_name = ""
            urls = (_get(rs, "schemaUrl", "schema_url"), _get(ss, "schemaUrl", "schema_url"))
            group = JsonGroup(rs.get("resource"), scope, urls, where, ri, si)
            for pi, s in enumerate(_list(ss, "spans", "spans", spath)):
                span: Any = None
                if lazy:
                    span = fast_span(s, where, (ri, si, pi), trace_cache, interest)
                if span is None:
                    span = careful_span(s, where, (ri, si, pi), lazy, trace_cache)
                    if span is None:
                        continue
                    if (
                        interest is not None
                        and span.parent_span_id
                        and not _of_interest(interest, span.name, s.get("attributes"), where)
                    ):
                        span = head_of(span)
                span.resource = resource
                span.scope_name = scope_name
                span.origin = origin
                if span.__class__ is Span:
                    span.wire = s
                    span.wire_group = group
                append(span)
    return out


_fromhex = bytes.fromhex


def _of_interest(interest: Interest, name: str, attrs: Any, where: Where) -> bool:
    """Whether a span (with a parent) must be read in full: its name or one of its keys is of
    interest, or its attributes are malformed (reading them reports that)."""
    if interest.named(name):
        return True
    if not attrs:
        return False
    if attrs.__class__ is list:
        if len(attrs) > where.limits.max_attributes:
            return True
        keys = interest.key_set
        for pair in attrs:
            if pair.__class__ is not dict:
                return True
            key = pair.get("key")
            if key.__class__ is not str or key in keys:
                return True
        return False
    if attrs.__class__ is dict:
        return not interest.key_set.isdisjoint(attrs)
    return True


def fast_span(
    s: Any,
    where: Where,
    loc: tuple[int, int, int],
    trace_cache: dict[Any, str],
    interest: Interest | None = None,
) -> Any:
    """The common case (lowerCamelCase, hex ids, string times, int enums) at speed, or
    ``None`` to let ``careful_span`` handle (and report) anything else. With an
    ``interest``, a span outside it is a ``SpanHead``."""
    try:
        trace_key = s["traceId"]
        trace_hex = trace_cache.get(trace_key)
        if trace_hex is None:
            return None
        span_id = s["spanId"]
        if len(span_id) != SPAN_ID_HEX:
            return None
        raw = _fromhex(span_id)
        if len(raw) != SPAN_ID_BYTES or raw == ZERO_SPAN_ID:
            return None
        parent = s.get("parentSpanId")
        if parent:
            if len(parent) != SPAN_ID_HEX:
                return None
            parent_raw = _fromhex(parent)
            if len(parent_raw) != SPAN_ID_BYTES:
                return None
            parent_hex = parent_raw.hex() if parent_raw != ZERO_SPAN_ID else ""
        else:
            parent_hex = ""
        name = s.get("name", "")
        kind = s.get("kind", 0)
        start = s["startTimeUnixNano"]
        end = s["endTimeUnixNano"]
        if (
            type(name) is not str
            or type(kind) is not int
            or type(start) is not str
            or type(end) is not str
        ):
            return None
        status = s.get("status")
        if status:
            code = status.get("code", 0)
            message = status.get("message", "")
            if type(code) is not int or type(message) is not str:
                return None
        else:
            code, message = 0, ""
        attrs = s.get("attributes")
        events = s.get("events")
        if events is not None and type(events) is not list:
            return None
        if interest is not None and parent_hex and not _of_interest(interest, name, attrs, where):
            return SpanHead(
                trace_hex, raw.hex(), parent_hex, name, int(start), int(end), code, {}, "", ""
            )
        return Span(
            trace_hex,
            raw.hex(),
            parent_hex,
            name,
            kind,
            int(start),
            int(end),
            code,
            message,
            JsonAttributes(attrs, where, loc) if attrs else {},
            JsonEvents(events, where, loc) if events else _NO_EVENTS,
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def careful_span(
    s: Any, where: Where, loc: tuple[int, int, int], lazy: bool, trace_cache: dict[Any, str]
) -> Span | None:
    """One span, every accepted spelling checked; a bad span is reported, ``None``."""
    field = ""
    try:
        if type(s) is not dict:
            raise DecodeError("expected a span object")
        trace_key = _get(s, "traceId", "trace_id")
        field = "traceId"
        trace_hex = trace_cache.get(trace_key) if type(trace_key) is str else None
        if trace_hex is None:
            trace_hex = json_id(trace_key, TRACE_ID_BYTES)
            if type(trace_key) is str:
                trace_cache[trace_key] = trace_hex
        field = "spanId"
        span_hex = json_id(_get(s, "spanId", "span_id"), SPAN_ID_BYTES)
        field = "parentSpanId"
        parent = _get(s, "parentSpanId", "parent_span_id")
        if not parent:
            parent_hex = ""
        else:
            try:
                parent_hex = json_id(parent, SPAN_ID_BYTES)
            except DecodeError:
                if parent != ZERO_HEX[SPAN_ID_BYTES]:
                    raise
                parent_hex = ""
        field = "name"
        name = s.get("name", "")
        if type(name) is not str:
            raise DecodeError(f"expected a string, got {type(name).__name__}")
        field = ""
        span = _span_rest(s, where, loc, lazy)
    except DecodeError as exc:
        path = span_path(*loc)
        if exc.field.startswith("resourceSpans"):
            path = exc.field
        elif exc.field or field:
            path = f"{path}.{exc.field or field}"
        where.report(path, f"span rejected: {exc.reason}")
        return None
    span.trace_id = trace_hex
    span.span_id = span_hex
    span.parent_span_id = parent_hex
    span.name = name
    return span


def _span_rest(s: dict[str, Any], where: Where, loc: tuple[int, int, int], lazy: bool) -> Span:
    """Everything but ids, name and context; raises ``DecodeError`` naming the field."""
    kind = s.get("kind", 0)
    if type(kind) is not int:
        kind = _enum(kind, _SPAN_KINDS, "SPAN_KIND_", "kind")
    start = _get(s, "startTimeUnixNano", "start_time_unix_nano")
    end = _get(s, "endTimeUnixNano", "end_time_unix_nano")
    start = json_int(start, "startTimeUnixNano") if start else 0
    end = json_int(end, "endTimeUnixNano") if end else 0
    code, message = 0, ""
    status = s.get("status")
    if status:
        if type(status) is not dict:
            raise DecodeError("expected an object", field="status")
        code = status.get("code", 0)
        if type(code) is not int:
            code = _enum(code, _STATUS_CODES, "STATUS_CODE_", "status.code")
        message = status.get("message", "")
        if type(message) is not str:
            raise DecodeError("expected a string", field="status.message")
    attrs = s.get("attributes")
    raw_events = s.get("events")
    if raw_events is not None and type(raw_events) is not list:
        raise DecodeError("expected a list", field="events")
    if lazy:
        attributes: Any = JsonAttributes(attrs, where, loc) if attrs else {}
        events: Any = JsonEvents(raw_events, where, loc) if raw_events else _NO_EVENTS
    else:
        notes: Notes = []
        base = span_path(*loc)
        attributes = (
            json_attributes(attrs, where.limits, f"{base}.attributes", notes) if attrs else {}
        )
        events = [
            json_event(event, where.limits, f"{base}.events[{i}]", notes)
            for i, event in enumerate(raw_events or ())
        ]
        where.report_notes(notes)
    return Span("", "", "", "", kind, start, end, code, message, attributes, events)
