"""Lean protobuf schemas for reading OTLP traces fast.

They mirror the OTLP messages field for field but keep a span's attributes as raw bytes and
its status as raw bytes, so parsing a request costs a third of the full schema and attributes
are decoded only when a reader asks for them (``tooltrail.otlp.attributes``). The
pre-2022 ``instrumentation_library_spans`` (field 1000) is read as scope spans.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_ONE, _MANY = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED

_MESSAGES: dict[str, list[tuple[str, int, int, int, str]]] = {
    "Scope": [("name", 1, _F.TYPE_STRING, _ONE, "")],
    "Event": [
        ("time_unix_nano", 1, _F.TYPE_FIXED64, _ONE, ""),
        ("name", 2, _F.TYPE_STRING, _ONE, ""),
        ("attributes", 3, _F.TYPE_BYTES, _MANY, ""),
    ],
    "Span": [
        ("trace_id", 1, _F.TYPE_BYTES, _ONE, ""),
        ("span_id", 2, _F.TYPE_BYTES, _ONE, ""),
        ("parent_span_id", 4, _F.TYPE_BYTES, _ONE, ""),
        ("name", 5, _F.TYPE_STRING, _ONE, ""),
        ("kind", 6, _F.TYPE_INT32, _ONE, ""),
        ("start_time_unix_nano", 7, _F.TYPE_FIXED64, _ONE, ""),
        ("end_time_unix_nano", 8, _F.TYPE_FIXED64, _ONE, ""),
        ("attributes", 9, _F.TYPE_BYTES, _MANY, ""),
        ("events", 11, _F.TYPE_MESSAGE, _MANY, ".tooltrail.wire.Event"),
        ("status", 15, _F.TYPE_BYTES, _ONE, ""),
    ],
    "ScopeSpans": [
        ("scope", 1, _F.TYPE_MESSAGE, _ONE, ".tooltrail.wire.Scope"),
        ("spans", 2, _F.TYPE_MESSAGE, _MANY, ".tooltrail.wire.Span"),
    ],
    "ResourceSpans": [
        ("resource", 1, _F.TYPE_BYTES, _ONE, ""),
        ("scope_spans", 2, _F.TYPE_MESSAGE, _MANY, ".tooltrail.wire.ScopeSpans"),
        (
            "instrumentation_library_spans",
            1000,
            _F.TYPE_MESSAGE,
            _MANY,
            ".tooltrail.wire.ScopeSpans",
        ),
    ],
    # ExportTraceServiceRequest and TracesData share this layout.
    "Traces": [
        ("resource_spans", 1, _F.TYPE_MESSAGE, _MANY, ".tooltrail.wire.ResourceSpans"),
    ],
}


def _build() -> dict[str, Any]:
    proto = descriptor_pb2.FileDescriptorProto(
        name="tooltrail/wire.proto", package="tooltrail.wire", syntax="proto3"
    )
    for message_name, fields in _MESSAGES.items():
        message = proto.message_type.add(name=message_name)
        for name, number, type_, label, type_name in fields:
            field = message.field.add(name=name, number=number, type=type_, label=label)
            if type_name:
                field.type_name = type_name
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"tooltrail.wire.{name}"))
        for name in _MESSAGES
    }


_CLASSES = _build()
#: ``ExportTraceServiceRequest`` / ``TracesData`` with lazily decodable span attributes.
LeanTraces: Any = _CLASSES["Traces"]
LeanSpan: Any = _CLASSES["Span"]
