"""Spans to OTLP requests, and requests to the bytes the collector ``file`` exporter writes.

``json_line`` / ``logs_json_line`` write OTLP/JSON as the collector does: lower-case hex ids,
64-bit integers as decimal strings, enums as integers, lowerCamelCase keys, empty fields left
out (a span's ``status`` is always written). ``frame`` is the 4-byte big-endian length prefix
of the ``proto`` format and of every compressed format.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan

from tooltrail.otlp.decode.log_records import LogRecord
from tooltrail.otlp.decode.span import Span
from tooltrail.otlp.decode.values import MAX_ENCODED_DEPTH, set_any_value, set_attributes


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return (type(value).__name__, value)


def _pb_span(span: Span, out: PbSpan) -> None:
    group = span.wire_group
    if group is not None:  # flags, trace state, links, dropped counts: kept as read
        group.fill_span(span.wire, out)
    out.trace_id = bytes.fromhex(span.trace_id)
    out.span_id = bytes.fromhex(span.span_id)
    if span.parent_span_id:
        out.parent_span_id = bytes.fromhex(span.parent_span_id)
    out.name = span.name
    out.kind = span.kind  # type: ignore[assignment]
    out.start_time_unix_nano = span.start_ns
    out.end_time_unix_nano = span.end_ns
    set_attributes(out.attributes, span.attributes)
    for event in span.events:
        pb_event = out.events.add()
        pb_event.name = event.name
        pb_event.time_unix_nano = event.time_ns
        set_attributes(pb_event.attributes, event.attributes)
        pb_event.dropped_attributes_count = event.dropped_attributes_count
    out.status.SetInParent()
    out.status.code = span.status_code  # type: ignore[assignment]
    if span.status_message:
        out.status.message = span.status_message


class _Groups:
    """The ``ResourceSpans`` and ``ScopeSpans`` of a request being built. A span goes to the
    group of equal resource (attributes, and the rest: schema URL, dropped count, entity
    references) and equal scope (name, and the rest), in order of first appearance."""

    def __init__(self, request: ExportTraceServiceRequest) -> None:
        self._request = request
        #: (id of resource, id of wire group) -> both (kept alive, so that ids stay unique),
        #: the output group and the scope as read: spans of one group share both objects.
        self._seen: dict[tuple[int, int], tuple[Any, Any, Any, Any, bytes]] = {}
        self._resources: dict[tuple[Any, bytes], Any] = {}
        self._scopes: dict[tuple[int, bytes, str], Any] = {}

    def scope_spans(self, span: Span) -> Any:
        """The ``ScopeSpans`` ``span`` goes to."""
        resource = span.resource
        wire_group = span.wire_group
        ident = (id(resource), id(wire_group))
        seen = self._seen.get(ident)
        if seen is None:
            shell = wire_group.resource_spans() if wire_group is not None else None
            key = (_freeze(resource), _key(shell))
            group = self._resources.get(key)
            if group is None:
                group = self._resources[key] = self._request.resource_spans.add()
                if shell is not None:
                    group.CopyFrom(shell)
                group.resource.SetInParent()
                set_attributes(group.resource.attributes, resource)
            scope = wire_group.scope_spans() if wire_group is not None else None
            seen = self._seen[ident] = (resource, wire_group, group, scope, _key(scope))
        group, scope, scope_key = seen[2:]
        out_key = (id(group), scope_key, span.scope_name)
        scope_spans = self._scopes.get(out_key)
        if scope_spans is None:
            scope_spans = self._scopes[out_key] = group.scope_spans.add()
            if scope is not None:
                scope_spans.CopyFrom(scope)
            scope_spans.scope.name = span.scope_name
        return scope_spans


def _key(message: Any) -> bytes:
    return b"" if message is None else message.SerializeToString(deterministic=True)


def encode_request(spans: Iterable[Span]) -> ExportTraceServiceRequest:
    """An ``ExportTraceServiceRequest`` holding ``spans``, grouped by resource and scope.

    Every field of the OTLP data model a span was read with is written again: what ``Span``
    holds from the span (its attributes and events as they are now, e.g. redacted), the rest
    (flags, trace state, links, dropped counts, the scope's version and attributes, schema
    URLs) as it was read (``otlp.decode.rest``)."""
    request = ExportTraceServiceRequest()
    groups = _Groups(request)
    for span in spans:
        _pb_span(span, groups.scope_spans(span).spans.add())
    return request


def frame(data: bytes) -> bytes:
    """``data`` with the collector file exporter's 4-byte big-endian length prefix."""
    return len(data).to_bytes(4, "big") + data


# --- protobuf to OTLP/JSON -----------------------------------------------------------------


def _double(value: float) -> Any:
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _any_json(value: AnyValue, depth: int = 0) -> dict[str, Any]:
    kind = value.WhichOneof("value")
    if depth > MAX_ENCODED_DEPTH and kind in ("array_value", "kvlist_value"):
        return {}
    if kind == "string_value":
        return {"stringValue": value.string_value}
    if kind == "int_value":
        return {"intValue": str(value.int_value)}
    if kind == "bool_value":
        return {"boolValue": value.bool_value}
    if kind == "double_value":
        return {"doubleValue": _double(value.double_value)}
    if kind == "bytes_value":
        return {"bytesValue": base64.b64encode(value.bytes_value).decode()}
    if kind == "array_value":
        items = [_any_json(v, depth + 1) for v in value.array_value.values]
        return {"arrayValue": {"values": items} if items else {}}
    if kind == "kvlist_value":
        pairs = _attributes_json(value.kvlist_value.values, depth + 1)
        return {"kvlistValue": {"values": pairs} if pairs else {}}
    return {}


def _attributes_json(pairs: Any, depth: int = 0) -> list[dict[str, Any]]:
    return [{"key": kv.key, "value": _any_json(kv.value, depth)} for kv in pairs]


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value:
        out[key] = value


def _with_attributes(out: dict[str, Any], message: Any) -> dict[str, Any]:
    if len(message.attributes):
        out["attributes"] = _attributes_json(message.attributes)
    _put(out, "droppedAttributesCount", message.dropped_attributes_count)
    return out


def _scope_json(scope: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _put(out, "name", scope.name)
    _put(out, "version", scope.version)
    return _with_attributes(out, scope)


def _span_json(span: PbSpan) -> dict[str, Any]:
    out: dict[str, Any] = {"traceId": span.trace_id.hex(), "spanId": span.span_id.hex()}
    _put(out, "traceState", span.trace_state)
    _put(out, "parentSpanId", span.parent_span_id.hex())
    out["name"] = span.name
    _put(out, "kind", span.kind)
    _put(
        out,
        "startTimeUnixNano",
        str(span.start_time_unix_nano) if span.start_time_unix_nano else "",
    )
    _put(out, "endTimeUnixNano", str(span.end_time_unix_nano) if span.end_time_unix_nano else "")
    _with_attributes(out, span)
    if len(span.events):
        events = []
        for event in span.events:
            item: dict[str, Any] = {}
            _put(item, "timeUnixNano", str(event.time_unix_nano) if event.time_unix_nano else "")
            _put(item, "name", event.name)
            events.append(_with_attributes(item, event))
        out["events"] = events
    _put(out, "droppedEventsCount", span.dropped_events_count)
    if len(span.links):
        links = []
        for link in span.links:
            item = {"traceId": link.trace_id.hex(), "spanId": link.span_id.hex()}
            _put(item, "traceState", link.trace_state)
            _with_attributes(item, link)
            _put(item, "flags", link.flags)
            links.append(item)
        out["links"] = links
    _put(out, "droppedLinksCount", span.dropped_links_count)
    status: dict[str, Any] = {}
    _put(status, "message", span.status.message)
    _put(status, "code", span.status.code)
    out["status"] = status
    _put(out, "flags", span.flags)
    return out


def _resource_json(resource: Any) -> dict[str, Any]:
    out = _with_attributes({}, resource)
    refs = []
    for ref in getattr(resource, "entity_refs", ()):
        item: dict[str, Any] = {}
        _put(item, "schemaUrl", ref.schema_url)
        _put(item, "type", ref.type)
        _put(item, "idKeys", list(ref.id_keys))
        _put(item, "descriptionKeys", list(ref.description_keys))
        refs.append(item)
    _put(out, "entityRefs", refs)
    return out


def json_line(request: Any) -> bytes:
    """One OTLP/JSON line (with its ``\\n``) for an ``ExportTraceServiceRequest`` or
    ``TracesData``, byte for byte in the collector file exporter's style."""
    groups = []
    for rs in request.resource_spans:
        group: dict[str, Any] = {"resource": _resource_json(rs.resource)}
        scopes = []
        for ss in rs.scope_spans:
            scope: dict[str, Any] = {"scope": _scope_json(ss.scope)}
            scope["spans"] = [_span_json(s) for s in ss.spans]
            _put(scope, "schemaUrl", ss.schema_url)
            scopes.append(scope)
        group["scopeSpans"] = scopes
        _put(group, "schemaUrl", rs.schema_url)
        groups.append(group)
    return orjson.dumps({"resourceSpans": groups}) + b"\n"


def _log_json(record: Any) -> dict[str, Any]:
    # Members in field-number order, as the collector writes them.
    out: dict[str, Any] = {}
    _put(out, "timeUnixNano", str(record.time_unix_nano) if record.time_unix_nano else "")
    _put(out, "severityNumber", record.severity_number)
    _put(out, "severityText", record.severity_text)
    if record.HasField("body"):
        out["body"] = _any_json(record.body)
    _with_attributes(out, record)
    _put(out, "flags", record.flags)
    _put(out, "traceId", record.trace_id.hex())
    _put(out, "spanId", record.span_id.hex())
    observed = record.observed_time_unix_nano
    _put(out, "observedTimeUnixNano", str(observed) if observed else "")
    _put(out, "eventName", record.event_name)
    return out


def logs_json_line(request: ExportLogsServiceRequest | Any) -> bytes:
    """One OTLP/JSON line (with its ``\\n``) for an ``ExportLogsServiceRequest`` or ``LogsData``."""
    groups = []
    for rl in request.resource_logs:
        group: dict[str, Any] = {"resource": _resource_json(rl.resource)}
        scopes = []
        for sl in rl.scope_logs:
            scope: dict[str, Any] = {"scope": _scope_json(sl.scope)}
            scope["logRecords"] = [_log_json(r) for r in sl.log_records]
            _put(scope, "schemaUrl", sl.schema_url)
            scopes.append(scope)
        group["scopeLogs"] = scopes
        _put(group, "schemaUrl", rl.schema_url)
        groups.append(group)
    return orjson.dumps({"resourceLogs": groups}) + b"\n"


def encode_logs_request(
    records: Iterable[LogRecord],
    *,
    resource: Mapping[str, Any] | None = None,
    scope_name: str = "tooltrail",
) -> ExportLogsServiceRequest:
    """An ``ExportLogsServiceRequest`` with ``records`` under one resource and scope."""
    request = ExportLogsServiceRequest()
    group = request.resource_logs.add()
    group.resource.SetInParent()
    set_attributes(group.resource.attributes, resource or {})
    scope_logs = group.scope_logs.add()
    scope_logs.scope.name = scope_name
    for record in records:
        out = scope_logs.log_records.add()
        out.time_unix_nano = record.time_ns
        out.observed_time_unix_nano = record.time_ns
        if record.severity_number:
            out.severity_number = record.severity_number  # type: ignore[assignment]
        if record.body is not None:
            set_any_value(out.body, record.body)
        set_attributes(out.attributes, record.attributes)
        if record.trace_id:
            out.trace_id = bytes.fromhex(record.trace_id)
        if record.span_id:
            out.span_id = bytes.fromhex(record.span_id)
        out.event_name = record.event_name
    return request
