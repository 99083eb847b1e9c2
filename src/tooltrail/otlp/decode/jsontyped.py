"""OTLP/JSON traces in the collector's canonical shape, decoded by ``msgspec`` into structs.

The collector, the SDK exporters and most dumps write one shape: lowerCamelCase keys, hex
ids, attributes as lists of ``{key, value}``. Decoding that shape straight into structs
skips building a dict per span and per attribute, and indexing attributes from structs is
cheaper than from dicts. Only that shape is accepted here: anything else (snake_case keys,
attributes as objects, ``instrumentationLibrarySpans``, wrong types, invalid or base64 ids,
integers past 64 bits, ...) makes ``decode_typed`` or ``typed_spans`` give up, and the record
is read by the ``orjson`` path in ``otlpjson``, which then reports exactly what it always did.

What is kept as plain JSON (attribute values, events, links, the resource, the scope) is what
``orjson`` would have produced, with two differences made good: ``msgspec`` reads an integer
beyond 64 bits exactly where ``orjson`` reads it as a float, and on Python 3.12+ it reads
nesting deeper than ``orjson`` accepts (see ``jsonparity``).
"""

from __future__ import annotations

import sys
import threading
from typing import Annotated, Any

import msgspec
from msgspec import UNSET, Meta, Struct

from tooltrail.otlp.decode.decode_error import DecodeError
from tooltrail.otlp.decode.ids import (
    SPAN_ID_BYTES,
    SPAN_ID_HEX,
    TRACE_ID_BYTES,
    TRACE_ID_HEX,
    ZERO_SPAN_ID,
    ZERO_TRACE_ID,
)
from tooltrail.otlp.decode.jsonparity import nested_past, orjson_ints
from tooltrail.otlp.decode.lazy import JsonAttributes, JsonEvents, Where, json_event, span_path
from tooltrail.otlp.decode.rest import JsonGroup
from tooltrail.otlp.decode.span import Diagnostic, Interest, Span, SpanHead
from tooltrail.otlp.decode.values import Notes, json_attributes

#: Before Python 3.12 ``msgspec`` nests as deep as the recursion limit allows; above this
#: limit the fast path stays off (hostile nesting could then exhaust the C stack).
_MAX_RECURSION_LIMIT = 10_000

Int64 = Annotated[int, Meta(ge=-(1 << 63), le=(1 << 63) - 1)]


class _Seen(threading.local):
    """The ``_Members`` decoded by the current ``decode_typed`` call in this thread."""

    members: list[_Members] | None = None


_SEEN = _Seen()


class _Members(Struct, forbid_unknown_fields=True, gc=False):
    """The object of an ``arrayValue`` or ``kvlistValue``; ``values`` stays plain JSON. Only
    below one of these can an attribute value nest deep, so each one decoded is noted."""

    values: Any = UNSET

    def __post_init__(self) -> None:
        seen = _SEEN.members
        if seen is not None:
            seen.append(self)


#: What a member of an AnyValue object may hold (anything else: not the canonical shape).
_Member = str | int | float | bool | None | _Members


class _KeyValue(Struct, forbid_unknown_fields=True, gc=False):
    key: str
    #: The AnyValue object (``_as_orjson`` gives it as ``orjson`` would have).
    value: dict[str, _Member] | None = None


class _Status(Struct, forbid_unknown_fields=True, gc=False):
    code: Int64 = 0
    message: str = ""


class _Span(Struct, forbid_unknown_fields=True, gc=False):
    traceId: str = ""
    spanId: str = ""
    parentSpanId: str | None = None
    name: str = ""
    kind: Int64 = 0
    startTimeUnixNano: Int64 | str = 0
    endTimeUnixNano: Int64 | str = 0
    attributes: list[_KeyValue] | None = None
    #: Plain JSON, decoded on first use like the ``orjson`` path's events.
    events: list[Any] | None = None
    status: _Status | None = None
    # Present in real dumps, never read.
    traceState: str = ""
    flags: int = 0
    droppedAttributesCount: int = 0
    droppedEventsCount: int = 0
    links: list[Any] | None = None
    droppedLinksCount: int = 0


class _ScopeSpans(Struct, forbid_unknown_fields=True, gc=False):
    scope: Any = None
    spans: list[_Span] | None = None
    schemaUrl: str = ""


class _ResourceSpans(Struct, forbid_unknown_fields=True, gc=False):
    resource: Any = None
    scopeSpans: list[_ScopeSpans] | None = None
    schemaUrl: str = ""


class _Request(Struct, forbid_unknown_fields=True, gc=False):
    resourceSpans: list[_ResourceSpans]


_decode = msgspec.json.Decoder(_Request).decode
_DECODE_ERRORS = (msgspec.MsgspecError, RecursionError, UnicodeError, ValueError, TypeError)


class TypedRequest(dict):  # type: ignore[type-arg]
    """A traces request decoded into structs, with the bytes it came from (to read it the
    ``orjson`` way when ``typed_spans`` gives up). A dict holding just ``resourceSpans`` so
    that readers of other signals (logs) see a traces document, as they would from ``orjson``."""

    __slots__ = ("request", "data")

    def __init__(self, request: _Request, data: Any) -> None:
        super().__init__(resourceSpans=request.resourceSpans)
        self.request = request
        self.data = data


def decode_typed(data: Any) -> TypedRequest | None:
    """``data`` (bytes or str) as a ``TypedRequest``, or ``None`` if it is not JSON ``orjson``
    reads, in the canonical shape."""
    if sys.version_info < (3, 12) and sys.getrecursionlimit() > _MAX_RECURSION_LIMIT:
        return None
    seen: list[_Members] = []
    _SEEN.members = seen
    try:
        request = _decode(data)
    except _DECODE_ERRORS:
        return None
    finally:
        _SEEN.members = None
    if _nests_too_deep(request, seen):
        return None
    return TypedRequest(request, data)


def _nests_too_deep(request: _Request, seen: list[_Members]) -> bool:
    """Whether the document nests deeper than ``orjson`` reads. Only its plain JSON parts can
    nest (at a known depth each: the document is 1, ``resourceSpans`` 2, ...)."""
    for members in seen:
        if members.values.__class__ in (dict, list) and nested_past(members.values, 12):
            return True
    for rs in request.resourceSpans:
        if rs.resource.__class__ in (dict, list) and nested_past(rs.resource, 4):
            return True
        for ss in rs.scopeSpans or ():
            if ss.scope.__class__ in (dict, list) and nested_past(ss.scope, 6):
                return True
            for s in ss.spans or ():
                if (s.events and nested_past(s.events, 8)) or (s.links and nested_past(s.links, 8)):
                    return True
    return False


_fromhex = bytes.fromhex
_NO_EVENTS: tuple[()] = ()


class _GiveUp(Exception):
    """The record is not in the canonical shape after all: read it the ``orjson`` way."""


def typed_spans(
    request: _Request, where: Where, *, lazy: bool = True, interest: Interest | None = None
) -> list[Any] | None:
    """The spans of a typed request, equal to what ``otlpjson.spans_from_json`` returns for
    the same record, or ``None`` (nothing reported) when only that path can read it."""
    sink: list[Diagnostic] | None = [] if where.sink is not None else None
    early = Where(where.path, where.line, where.offset, where.limits, sink)
    try:
        spans = _spans(request, where, early, lazy, interest if lazy else None)
    except (_GiveUp, DecodeError, ValueError):
        return None
    if sink and where.sink is not None:
        where.sink.extend(sink)
    return spans


def _spans(
    request: _Request, where: Where, early: Where, lazy: bool, interest: Interest | None
) -> list[Any]:
    """``where`` goes to lazy values (they report late); ``early`` collects what is reported
    now, kept back until the whole record is known to be readable here."""
    out: list[Any] = []
    append = out.append
    origin = where.origin
    cache: dict[str, str] = {}
    for ri, rs in enumerate(request.resourceSpans):
        resource = _resource(rs.resource, early, ri)
        for si, ss in enumerate(rs.scopeSpans or ()):
            scope = ss.scope
            scope_name = scope.get("name", "") if scope.__class__ is dict else ""
            if scope_name.__class__ is not str:
                scope_name = ""
            held = (resource, scope_name, origin)
            group = TypedGroup(rs.resource, scope, (rs.schemaUrl, ss.schemaUrl), where, ri, si)
            for pi, s in enumerate(ss.spans or ()):
                append(_span(s, where, early, (ri, si, pi), cache, lazy, interest, held, group))
    return out


def _resource(resource: Any, early: Where, ri: int) -> dict[str, Any]:
    if not resource:
        return {}
    if resource.__class__ is not dict:
        raise _GiveUp
    path = f"resourceSpans[{ri}].resource"
    notes: Notes = []
    attrs = json_attributes(
        _as_orjson(resource.get("attributes")), early.limits, f"{path}.attributes", notes
    )
    early.report_notes(notes)
    return attrs


def _span(
    s: _Span,
    where: Where,
    early: Where,
    loc: tuple[int, int, int],
    cache: dict[str, str],
    lazy: bool,
    interest: Interest | None,
    held: tuple[dict[str, Any], str, str],
    group: TypedGroup,
) -> Any:
    """One span, or ``SpanHead`` outside the ``interest``; ``held``: its resource, scope name
    and origin; ``group``: its group as read. Raises ``_GiveUp`` (or ``ValueError``) for
    anything not canonical."""
    trace_key = s.traceId
    trace_hex = cache.get(trace_key)
    if trace_hex is None:
        raw = _fromhex(trace_key) if len(trace_key) == TRACE_ID_HEX else b""
        if len(raw) != TRACE_ID_BYTES or raw == ZERO_TRACE_ID:
            raise _GiveUp
        trace_hex = cache[trace_key] = raw.hex()
    span_id = s.spanId
    raw = _fromhex(span_id) if len(span_id) == SPAN_ID_HEX else b""
    if len(raw) != SPAN_ID_BYTES or raw == ZERO_SPAN_ID:
        raise _GiveUp
    span_hex = raw.hex()
    parent = s.parentSpanId
    if parent:
        parent_raw = _fromhex(parent) if len(parent) == SPAN_ID_HEX else b""
        if len(parent_raw) != SPAN_ID_BYTES:
            raise _GiveUp
        parent_hex = parent_raw.hex() if parent_raw != ZERO_SPAN_ID else ""
    else:
        parent_hex = ""
    start: Any = s.startTimeUnixNano
    end: Any = s.endTimeUnixNano
    if start.__class__ is str:
        start = int(start) if start else 0
    if end.__class__ is str:
        end = int(end) if end else 0
    status = s.status
    code, message = (status.code, status.message) if status is not None else (0, "")
    name = s.name
    attrs = s.attributes
    events = s.events
    if (
        interest is not None
        and parent_hex
        and not _of_interest(interest, name, attrs, where.limits.max_attributes)
    ):
        return SpanHead(trace_hex, span_hex, parent_hex, name, start, end, code, *held)
    if lazy:
        attributes: Any = StructAttributes(attrs, where, loc) if attrs else {}
        span_events: Any = StructEvents(events, where, loc) if events else _NO_EVENTS
    else:
        notes: Notes = []
        base = span_path(*loc)
        attributes = (
            json_attributes(_pairs(attrs), where.limits, f"{base}.attributes", notes)
            if attrs
            else {}
        )
        span_events = [
            json_event(_as_orjson(event), where.limits, f"{base}.events[{i}]", notes)
            for i, event in enumerate(events or ())
        ]
        early.report_notes(notes)
    return Span(
        trace_hex,
        span_hex,
        parent_hex,
        name,
        s.kind,
        start,
        end,
        code,
        message,
        attributes,
        span_events,
        *held,
        s,
        group,
    )


class TypedGroup(JsonGroup):
    """A group of a typed request: a span's rest is read from its struct, as from the JSON
    object ``orjson`` would have given."""

    __slots__ = ()

    def span_object(self, wire: Any) -> dict[str, Any]:
        return {
            "spanId": wire.spanId,
            "traceState": wire.traceState,
            "flags": wire.flags,
            "droppedAttributesCount": wire.droppedAttributesCount,
            "droppedEventsCount": wire.droppedEventsCount,
            "links": wire.links,
            "droppedLinksCount": wire.droppedLinksCount,
        }


def _of_interest(
    interest: Interest, name: str, attrs: list[_KeyValue] | None, max_attributes: int
) -> bool:
    """``otlpjson._of_interest`` for typed attributes (every pair has a string key)."""
    if interest.named(name):
        return True
    if not attrs:
        return False
    if len(attrs) > max_attributes:
        return True
    keys = interest.key_set
    for pair in attrs:
        if pair.key in keys:
            return True
    return False


def _pairs(attrs: list[_KeyValue]) -> list[dict[str, Any]]:
    """Typed attributes as the list of ``{key, value}`` objects ``orjson`` would give."""
    return [{"key": pair.key, "value": _as_orjson(pair.value)} for pair in attrs]


class StructAttributes(JsonAttributes):
    """Span attributes kept as a list of typed ``{key, value}`` pairs; values are read on
    first use exactly as ``JsonAttributes`` reads them."""

    __slots__ = ()

    def _build_index(self, notes: Notes) -> dict[str, Any]:
        raw = self._raw
        if len(raw) <= self._where.limits.max_attributes:
            return {pair.key: pair.value for pair in raw}
        self._raw = _pairs(raw)  # past the limit: the plain reader's rules and reports
        return super()._build_index(notes)

    def _decode_item(self, key: str, item: Any, notes: Notes) -> Any:
        return super()._decode_item(key, _as_orjson(item), notes)


class StructEvents(JsonEvents):
    """Span events of a typed span (plain JSON), read on first use as ``JsonEvents`` reads them."""

    __slots__ = ()

    def _decode(self) -> list[Any]:
        self._raw = _as_orjson(self._raw)
        return super()._decode()


def _as_orjson(value: Any) -> Any:
    """``value`` as ``orjson`` reads the same JSON: ``_Members`` as ``{"values": ...}``
    objects, integers outside the 64-bit range as floats. ``value`` itself when it has
    neither (the usual case)."""
    if value.__class__ is dict:
        for member in value.values():
            if member.__class__ is _Members:
                value = {key: _members_object(item) for key, item in value.items()}
                break
    return orjson_ints(value)


def _members_object(member: Any) -> Any:
    if member.__class__ is not _Members:
        return member
    return {} if member.values is UNSET else {"values": member.values}
