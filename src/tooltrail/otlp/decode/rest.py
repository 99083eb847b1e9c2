"""What a decoded span does not hold, kept as read until the span is encoded again.

``Span`` holds what tooltrail reads: ids, name, kind, times, status, attributes, events, the
resource's attributes and the scope's name. The rest of the OTLP data model (a span's flags,
trace state, links and dropped counts; the scope's version, attributes and dropped count; the
resource's dropped count and entity references; both schema URLs) stays where the reader
found it: ``Span.wire`` is the span as parsed (a protobuf message, a JSON object or struct)
and ``Span.wire_group`` the resource and scope group it was read in. A reader stores two
references per span and parses nothing more; only the encoder (``otlp.write.encode``) asks a group
for the rest, so re-encoding loses nothing and decoding costs what it did.

Attributes and events always come from the ``Span`` (a caller may have redacted them); only
what ``Span`` has no field for comes from the wire. A part of the rest that is malformed
(a link with a bad id, a count that is not an unsigned 32-bit integer) is left out of the
re-encoded span and reported to the reader's diagnostics, naming the field.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.common.v1.common_pb2 import EntityRef, InstrumentationScope
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans
from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan

from tooltrail.otlp.decode.decode_error import DecodeError
from tooltrail.otlp.decode.ids import SPAN_ID_BYTES, TRACE_ID_BYTES, json_id
from tooltrail.otlp.decode.lazy import Where, decode_json_attributes_tolerant
from tooltrail.otlp.decode.mapped import RequestBytes
from tooltrail.otlp.decode.values import Notes, json_int, set_attributes
from tooltrail.otlp.decode.wire import SpanRest

_UINT32 = 1 << 32
_PARSE_ERRORS = (ProtobufDecodeError, RecursionError, ValueError)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


class _Shells:
    """The group's ``ResourceSpans`` and ``ScopeSpans`` without spans, built on first use by
    ``_build`` (each reader's own)."""

    __slots__ = ()

    def _build(self) -> tuple[ResourceSpans, ScopeSpans]:
        raise NotImplementedError

    def resource_spans(self) -> ResourceSpans:
        return self._build()[0]

    def scope_spans(self) -> ScopeSpans:
        return self._build()[1]


class PbGroup(_Shells):
    """A group of a lean or mapped protobuf message (``wire.LeanTraces`` / ``MappedTraces``):
    the unknown fields the parser kept are read back by parsing the parts again in full."""

    __slots__ = ("_resource_spans", "_scope_spans", "_where", "_path", "_shells", "_request")

    def __init__(
        self,
        resource_spans: Any,
        scope_spans: Any,
        where: Where,
        ri: int,
        si: int,
        request: RequestBytes | None = None,
    ) -> None:
        #: With the request's bytes, a span's ``wire`` is its location in them (a span
        #: message kept per span would cost the reader time), else the lean span itself.
        self._request = request
        self._resource_spans = resource_spans
        self._scope_spans = scope_spans
        self._where = where
        self._path = f"resourceSpans[{ri}].scopeSpans[{si}]"
        self._shells: tuple[ResourceSpans, ScopeSpans] | None = None

    def _build(self) -> tuple[ResourceSpans, ScopeSpans]:
        shells = self._shells
        if shells is None:
            group = ResourceSpans(schema_url=_text(self._resource_spans.schema_url))
            raw = self._resource_spans.resource
            if raw:
                try:
                    group.resource.MergeFrom(Resource.FromString(raw))
                except _PARSE_ERRORS:
                    pass  # reported when read: the resource was dropped
                group.resource.ClearField("attributes")
            scope = ScopeSpans(schema_url=_text(self._scope_spans.schema_url))
            if self._scope_spans.HasField("scope"):
                raw = self._scope_spans.scope.SerializeToString()
                try:
                    scope.scope.MergeFrom(InstrumentationScope.FromString(raw))
                except _PARSE_ERRORS as exc:
                    self._where.report(
                        f"{self._path}.scope", f"scope left out on re-encoding ({exc})"
                    )
            shells = self._shells = (group, scope)
        return shells

    def fill_span(self, wire: Any, out: PbSpan) -> None:
        if self._request is not None:
            wire = self._request.lean_span(wire)
        rest = SpanRest.FromString(wire.SerializeToString())
        out.trace_state = _text(rest.trace_state)
        out.flags = rest.flags
        out.dropped_attributes_count = rest.dropped_attributes_count
        out.dropped_events_count = rest.dropped_events_count
        out.dropped_links_count = rest.dropped_links_count
        links = out.links
        for i, raw in enumerate(rest.links):
            try:
                links.add().MergeFromString(raw)
            except _PARSE_ERRORS as exc:
                del links[len(links) - 1]
                self._where.report(
                    f"{self._path}.spans[spanId={wire.span_id.hex()}].links[{i}]",
                    f"undecodable link left out on re-encoding ({exc})",
                )


class JsonGroup(_Shells):
    """A group of an OTLP/JSON document (any accepted spelling): the rest is read from the
    JSON objects as they were parsed, with the reader's rules for ids and integers."""

    __slots__ = ("_resource", "_scope", "_schema_urls", "_where", "_path", "_shells")

    def __init__(
        self,
        resource: Any,
        scope: Any,
        schema_urls: tuple[Any, Any],
        where: Where,
        ri: int,
        si: int,
    ) -> None:
        self._resource = resource
        self._scope = scope
        self._schema_urls = schema_urls
        self._where = where
        self._path = f"resourceSpans[{ri}].scopeSpans[{si}]"
        self._shells: tuple[ResourceSpans, ScopeSpans] | None = None

    # -- what a reader of another JSON representation (typed structs) provides -------------

    def span_object(self, wire: Any) -> dict[str, Any]:
        """The span as a JSON object (lowerCamelCase or snake_case members)."""
        return wire if isinstance(wire, dict) else {}

    # -- the group ---------------------------------------------------------------------------

    def _build(self) -> tuple[ResourceSpans, ScopeSpans]:
        shells = self._shells
        if shells is None:
            resource_url, scope_url = self._schema_urls
            group = ResourceSpans()
            scope = ScopeSpans()
            fields = _Fields(self._where, self._path.split(".")[0])
            group.schema_url = fields.text(resource_url, "schemaUrl")
            if isinstance(self._resource, dict):
                resource = group.resource
                resource.dropped_attributes_count = fields.uint32(
                    self._resource, "droppedAttributesCount", "resource."
                )
                for ref in fields.entity_refs(self._resource):
                    resource.entity_refs.append(ref)
            fields = _Fields(self._where, self._path)
            scope.schema_url = fields.text(scope_url, "schemaUrl")
            if isinstance(self._scope, dict):
                fields.scope(self._scope, scope.scope)
            shells = self._shells = (group, scope)
        return shells

    def fill_span(self, wire: Any, out: PbSpan) -> None:
        obj = self.span_object(wire)
        span_id = obj.get("spanId", obj.get("span_id"))
        fields = _Fields(self._where, f"{self._path}.spans[spanId={span_id}]")
        out.trace_state = fields.text(_member(obj, "traceState"), "traceState")
        out.flags = fields.uint32(obj, "flags")
        out.dropped_attributes_count = fields.uint32(obj, "droppedAttributesCount")
        out.dropped_events_count = fields.uint32(obj, "droppedEventsCount")
        out.dropped_links_count = fields.uint32(obj, "droppedLinksCount")
        links = _member(obj, "links")
        if links is None:
            return
        if not isinstance(links, list):
            fields.drop("links", "expected a list")
            return
        for i, link in enumerate(links):
            fields.link(link, f"links[{i}]", out.links)


def _snake(camel: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)


def _member(obj: dict[str, Any], camel: str) -> Any:
    value = obj.get(camel)
    return obj.get(_snake(camel)) if value is None else value


class _Fields:
    """Reads members of the rest with the JSON reader's rules; a bad one is reported under
    ``path`` and left at its default."""

    __slots__ = ("_where", "_path")

    def __init__(self, where: Where, path: str) -> None:
        self._where = where
        self._path = path

    def drop(self, field: str, reason: str) -> None:
        self._where.report(f"{self._path}.{field}", f"{reason}; left out on re-encoding")

    def text(self, value: Any, field: str) -> str:
        if value is None or isinstance(value, str):
            return value or ""
        self.drop(field, f"expected a string, got {type(value).__name__}")
        return ""

    def uint32(self, obj: dict[str, Any], camel: str, prefix: str = "") -> int:
        value = _member(obj, camel)
        if not value:
            return 0
        try:
            number = json_int(value, camel)
        except DecodeError as exc:
            self.drop(prefix + camel, exc.reason)
            return 0
        if not 0 <= number < _UINT32:
            self.drop(prefix + camel, "not an unsigned 32-bit integer")
            return 0
        return number

    def attributes(self, obj: dict[str, Any], target: Any, prefix: str) -> None:
        pairs = obj.get("attributes")
        if not pairs:
            return
        notes: Notes = []
        path = f"{self._path}.{prefix}attributes"
        values = decode_json_attributes_tolerant(pairs, self._where.limits, path, notes)
        self._where.report_notes(notes)
        set_attributes(target, values)

    def scope(self, obj: dict[str, Any], out: InstrumentationScope) -> None:
        out.version = self.text(obj.get("version"), "scope.version")
        self.attributes(obj, out.attributes, "scope.")
        out.dropped_attributes_count = self.uint32(obj, "droppedAttributesCount", "scope.")

    def entity_refs(self, resource: dict[str, Any]) -> list[EntityRef]:
        refs = _member(resource, "entityRefs")
        out: list[EntityRef] = []
        if refs is None:
            return out
        if not isinstance(refs, list):
            self.drop("resource.entityRefs", "expected a list")
            return out
        for i, ref in enumerate(refs):
            field = f"resource.entityRefs[{i}]"
            if not isinstance(ref, dict):
                self.drop(field, "expected an object")
                continue
            message = EntityRef()
            message.schema_url = self.text(_member(ref, "schemaUrl"), f"{field}.schemaUrl")
            message.type = self.text(ref.get("type"), f"{field}.type")
            for name in ("idKeys", "descriptionKeys"):
                keys = _member(ref, name) or []
                if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
                    self.drop(f"{field}.{name}", "expected a list of strings")
                    continue
                getattr(message, _snake(name)).extend(keys)
            out.append(message)
        return out

    def link(self, link: Any, field: str, target: Any) -> None:

        if not isinstance(link, dict):
            self.drop(field, "expected a link object")
            return
        ids = []
        for name, size in (("traceId", TRACE_ID_BYTES), ("spanId", SPAN_ID_BYTES)):
            value = _member(link, name)
            try:
                ids.append(bytes.fromhex(json_id(value, size)))
            except DecodeError as exc:
                if value != "0" * (2 * size):  # an all-zero id is kept: it is not ours to judge
                    self.drop(f"{field}.{name}", exc.reason)
                    return
                ids.append(bytes(size))
        out = target.add()
        out.trace_id, out.span_id = ids
        out.trace_state = self.text(_member(link, "traceState"), f"{field}.traceState")
        self.attributes(link, out.attributes, f"{field}.")
        out.dropped_attributes_count = self.uint32(link, "droppedAttributesCount", f"{field}.")
        out.flags = self.uint32(link, "flags", f"{field}.")
