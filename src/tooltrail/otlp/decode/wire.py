"""Lean protobuf schemas for reading OTLP traces fast.

They mirror the OTLP messages field for field but keep a span's status (and, in the lean
schema, its attributes) as raw bytes, so parsing a request costs a fraction of the full
schema. The pre-2022 ``instrumentation_library_spans`` (field 1000) is read as scope spans.

- ``LeanTraces``: attributes stay serialized ``KeyValue`` bytes, in wire order. Fields no
  reader needs (a span's flags, trace state and links, a scope's version and attributes) are
  left unknown to it: the parser keeps them, unparsed, and ``otlp.decode.rest`` reads them when a
  span is encoded again.
- ``MappedTraces``: the same layout, but a span's attributes are declared as
  ``map<string, AnyValue>``. A ``KeyValue`` is encoded exactly like a map entry (key = 1,
  value = 2), so the C parser builds a hash table per span and a key lookup costs one call
  into C instead of indexing every key in Python. It is stricter than the lean schema (keys
  must be UTF-8, values well-formed, nesting within the parser's depth limit): a request it
  refuses is read with ``LeanTraces``, which reports problems attribute by attribute.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from opentelemetry.proto.common.v1 import common_pb2

_F = descriptor_pb2.FieldDescriptorProto
_ONE, _MANY = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED

_MESSAGES: dict[str, list[tuple[str, int, int, int, str]]] = {
    "Scope": [("name", 1, _F.TYPE_STRING, _ONE, "")],
    "Event": [
        ("time_unix_nano", 1, _F.TYPE_FIXED64, _ONE, ""),
        ("name", 2, _F.TYPE_STRING, _ONE, ""),
        ("attributes", 3, _F.TYPE_BYTES, _MANY, ""),
        ("dropped_attributes_count", 4, _F.TYPE_UINT32, _ONE, ""),
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
        ("schema_url", 3, _F.TYPE_BYTES, _ONE, ""),
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
        ("schema_url", 3, _F.TYPE_BYTES, _ONE, ""),
    ],
    # ExportTraceServiceRequest and TracesData share this layout.
    "Traces": [
        ("resource_spans", 1, _F.TYPE_MESSAGE, _MANY, ".tooltrail.wire.ResourceSpans"),
    ],
    # What ``Span`` does not hold (``otlp.decode.rest``), parsed from a span's bytes when it is
    # encoded again; links stay bytes so that a bad one is dropped alone.
    "SpanRest": [
        ("trace_state", 3, _F.TYPE_BYTES, _ONE, ""),
        ("dropped_attributes_count", 10, _F.TYPE_UINT32, _ONE, ""),
        ("dropped_events_count", 12, _F.TYPE_UINT32, _ONE, ""),
        ("links", 13, _F.TYPE_BYTES, _MANY, ""),
        ("dropped_links_count", 14, _F.TYPE_UINT32, _ONE, ""),
        ("flags", 16, _F.TYPE_FIXED32, _ONE, ""),
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
#: A span's fields that ``Span`` does not hold (the others are left unknown, unparsed).
SpanRest: Any = _CLASSES["SpanRest"]

_ANY_VALUE = "." + common_pb2.AnyValue.DESCRIPTOR.full_name
_MAPPED_PACKAGE = "tooltrail.wire_mapped"


def _build_mapped() -> Any:
    """The lean layout with ``Span.attributes`` as ``map<string, AnyValue>``. It lives in the
    default pool because its map values are the real OTLP ``AnyValue``."""
    pool = descriptor_pool.Default()
    name = f"{_MAPPED_PACKAGE}.Traces"
    try:
        return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
    except KeyError:
        pass
    proto = descriptor_pb2.FileDescriptorProto(
        name="tooltrail/wire_mapped.proto",
        package=_MAPPED_PACKAGE,
        syntax="proto3",
        dependency=[common_pb2.DESCRIPTOR.name],
    )
    for message_name, fields in _MESSAGES.items():
        message = proto.message_type.add(name=message_name)
        for field_name, number, type_, label, type_name in fields:
            field = message.field.add(name=field_name, number=number, type=type_, label=label)
            if message_name == "Span" and field_name == "attributes":
                field.type = _F.TYPE_MESSAGE
                field.type_name = f".{_MAPPED_PACKAGE}.Span.AttributesEntry"
            elif type_name:
                field.type_name = type_name.replace(".tooltrail.wire.", f".{_MAPPED_PACKAGE}.")
        if message_name == "Span":
            entry = message.nested_type.add(name="AttributesEntry")
            entry.options.map_entry = True
            entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_ONE)
            entry.field.add(
                name="value", number=2, type=_F.TYPE_MESSAGE, label=_ONE, type_name=_ANY_VALUE
            )
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


#: ``LeanTraces`` whose spans' ``attributes`` is a map of key -> ``AnyValue`` (see above).
MappedTraces: Any = _build_mapped()
