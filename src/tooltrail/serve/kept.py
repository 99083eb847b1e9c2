"""The compact form ``tooltrail serve`` keeps of a judged trace, for a revision.

A judged trace is kept for the revision window (``pipeline.revisions``) so that a late piece
can be merged with it. Kept as decoded objects, every span costs the cyclic garbage collector
a walk on each collection that reaches it (each span, its wrapper and its events list are
tracked containers), and it holds its whole request's parsed message alive (``Span.wire``).
Packed here, a trace is one ``bytes`` object, which the collector never walks; it is unpacked
only when a late piece of it arrives (rare). The figures are in docs/serve.md (Revisions).

A span read from a protobuf request (the common case) is kept as its lean message's bytes
(``Span.wire`` serialized, in C: the cheapest form there is), and ``unpack`` decodes them again
as the receiver did, with the resource, scope name and origin its group gave it. Every other
item (a span read from OTLP/JSON, a log record) is kept field by field. ``marshal`` writes all
of it and keeps each value's type (``True`` is not ``1``, a tuple is not a list, floats bit for
bit, dict order); an object shared by several items (a request's resource) is written once
and comes back shared. Left out is only what the encoder alone reads (``Span.wire`` and
``wire_group`` of the kept form): a kept trace is never dumped or forwarded again. Items it
cannot hold exactly (an attribute value of another type, a lazily decoded mapping) make
``pack`` return ``None``: the caller keeps the items as they are.
"""

from __future__ import annotations

import marshal
from collections.abc import Iterator
from dataclasses import fields
from operator import attrgetter
from typing import Any

from tooltrail.otlp import LogRecord, Span, decode_request
from tooltrail.otlp.decode.span import SpanEvent
from tooltrail.otlp.decode.wire import LeanTraces
from tooltrail.serve.intake import ReceivedLog, ReceivedSpan, _TraceIds

#: ``Span`` fields in constructor order, up to ``origin`` (``wire`` and ``wire_group`` are
#: the encoder's, see above).
_SPAN_FIELDS = (
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "kind",
    "start_ns",
    "end_ns",
    "status_code",
    "status_message",
    "attributes",
    "events",
    "resource",
    "scope_name",
    "origin",
)
_EVENTS = _SPAN_FIELDS.index("events")
_LOG_FIELDS = (
    "trace_id",
    "span_id",
    "time_ns",
    "event_name",
    "attributes",
    "body",
    "severity_number",
    "resource",
    "scope_name",
    "origin",
)
_EVENT_FIELDS = ("name", "time_ns", "attributes", "dropped_attributes_count")
_span_row = attrgetter(*_SPAN_FIELDS)
_log_row = attrgetter(*_LOG_FIELDS)
_event_row = attrgetter(*_EVENT_FIELDS)
#: Rows tell spans from log records by their length.
_SPAN_ROW = len(_SPAN_FIELDS)
# Rows are read back by position: the field lists above must stay the constructors' order.
assert tuple(f.name for f in fields(Span))[:_SPAN_ROW] == _SPAN_FIELDS
assert tuple(f.name for f in fields(LogRecord)) == _LOG_FIELDS
assert tuple(f.name for f in fields(SpanEvent)) == _EVENT_FIELDS
#: What the lean spans after it get from their group: (resource, scope_name, origin).
_HEAD_ROW = 3
assert len({_SPAN_ROW, len(_LOG_FIELDS), _HEAD_ROW}) == 3
#: The message class of a protobuf span's ``wire`` (``otlp.decode.pb``, lean schema).
_LEAN_SPAN = type(LeanTraces().resource_spans.add().scope_spans.add().spans.add())
#: Its serializer, looked up once (on a message, an attribute is looked up among the
#: message's fields before its methods); "partial": proto3 has no required field to check.
_SERIALIZE = _LEAN_SPAN.SerializePartialToString


def pack(items: list[Any]) -> bytes | None:
    """``items`` (``ReceivedSpan`` and ``ReceivedLog`` of one trace) as one ``bytes``, or
    ``None`` when they hold something the packed form would not give back exactly.

    The rows, in item order: a lean span's bytes (``bytes``), preceded by a head row
    ``(resource, scope_name, origin)`` whenever those change; a span's fields; a log record's
    fields (``unpack`` tells them apart by type and length)."""
    rows: list[Any] = []
    append = rows.append
    lean_span, serialize = _LEAN_SPAN, _SERIALIZE
    resource: Any = None
    scope_name = origin = None
    for item in items:
        inner = item.span
        kind = inner.__class__
        if kind is Span:
            wire = inner.wire
            if wire.__class__ is lean_span:
                if (
                    inner.resource is not resource
                    or inner.scope_name != scope_name
                    or inner.origin != origin
                ):
                    resource, scope_name, origin = inner.resource, inner.scope_name, inner.origin
                    append((resource, scope_name, origin))
                append(serialize(wire))
                continue
            row = _span_row(inner)
            events = row[_EVENTS]
            if events:
                if any(event.__class__ is not SpanEvent for event in events):
                    return None
                row = (*row[:_EVENTS], tuple(map(_event_row, events)), *row[_EVENTS + 1 :])
            append(row)
        elif kind is LogRecord:
            append(_log_row(inner))
        else:
            return None
    try:
        return marshal.dumps(rows)
    except ValueError:  # a value of a type marshal does not hold (or a lazy mapping)
        return None


def unpack(data: bytes, trace_id: int) -> list[Any]:
    """The items ``pack`` was given, wrapped for the evaluator again."""
    rows = marshal.loads(data)
    lean = _lean_spans([row for row in rows if row.__class__ is bytes])
    context = _TraceIds(trace_id)
    items: list[Any] = []
    append = items.append
    head: tuple[Any, ...] = ()
    for row in rows:
        if row.__class__ is bytes:
            span = next(lean)
            span.resource, span.scope_name, span.origin = head
        elif len(row) == _HEAD_ROW:
            head = row
            continue
        elif len(row) == _SPAN_ROW:
            span = Span(*row)
            events = row[_EVENTS]
            if events:
                span.events = [SpanEvent(*event) for event in events]
        else:
            append(ReceivedLog(LogRecord(*row), context))
            continue
        append(ReceivedSpan(span, context))
    return items


def _lean_spans(raw: list[bytes]) -> Iterator[Span]:
    """Lean span messages decoded as the receiver decodes a protobuf request (the same
    default ``Limits``), in order; ids were valid when they were first read, so none is
    rejected now."""
    if not raw:
        return iter(())
    request = LeanTraces()
    spans = request.resource_spans.add().scope_spans.add().spans
    for message in raw:
        spans.add().MergeFromString(message)
    decoded = decode_request(request.SerializeToString(), lazy=False)
    if len(decoded) != len(raw):
        raise ValueError("a kept span could not be decoded again")
    return iter(decoded)
