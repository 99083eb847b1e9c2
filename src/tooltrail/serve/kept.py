"""The compact form ``tooltrail serve`` keeps of a judged trace, for a revision.

A judged trace is kept for the revision window (``pipeline.revisions``) so that a late piece
can be merged with it. Kept as decoded objects, every span costs the cyclic garbage collector
a walk on each collection that reaches it (each span, its wrapper and its events list are
tracked containers), and it holds its whole request's parsed message alive (``Span.wire``).
Packed here, a trace is one ``bytes`` object, or a tuple of it and the request bodies it points
into, which the collector never walks (a tuple of ``bytes`` is untracked at its first
collection); it is unpacked only when a late piece of it arrives (rare). The figures are in
docs/serve.md (Revisions).

A span is kept, first choice, as its place in the request body it came in: the body is held
(``KeptBodies``: not copied, counted once however many kept traces point into it, and bounded
in bytes), and ``unpack`` decodes it again as the receiver did (``intake.decode_body``) and
takes the span at that place. Nothing of the span is serialized again, so keeping a trace costs
the evaluation path next to nothing per span. Past the byte bound (or where no body is known),
a span read from a protobuf request is kept as its lean message's bytes (``Span.wire``
serialized, in C), decoded again the same way with the resource, scope name and origin its
group gave it; every other item (a span read from OTLP/JSON or by the compiled core, which
keeps no wire form, a ``SpanHead``, a log record) is kept field by field. ``marshal`` writes all
of it and keeps each value's type (``True`` is not ``1``, a tuple is not a list, floats bit for
bit, dict order); an object shared by several items (a request's resource) is written once
and comes back shared. Left out is only what the encoder alone reads (``Span.wire`` and
``wire_group`` of the kept form): a kept trace is never dumped or forwarded again. Items it
cannot hold exactly (an attribute value of another type, a lazily decoded mapping) make
``pack`` return ``None``: the caller keeps the items as they are.
"""

from __future__ import annotations

import marshal
import threading
from collections.abc import Iterator, Sequence
from dataclasses import fields
from operator import attrgetter
from typing import Any, Literal

from tooltrail.convert.facts import FactSpan, SpanFact
from tooltrail.dialects import DialectCall, ModelCall
from tooltrail.otlp import LogRecord, Span, decode_request
from tooltrail.otlp.decode.span import SpanEvent, SpanHead
from tooltrail.otlp.decode.wire import LeanTraces
from tooltrail.serve.intake import Received, ReceivedLog, ReceivedRequest, ReceivedSpan, decode_body

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
#: A ``SpanHead`` (a span the core read outside ``dialects.INTEREST``): its fields in
#: constructor order, and a ``None`` that makes its row's length its own.
_SPAN_HEAD_FIELDS = tuple(f.name for f in fields(SpanHead))
_span_head_row = attrgetter(*_SPAN_HEAD_FIELDS)
_SPAN_HEAD_ROW = len(_SPAN_HEAD_FIELDS) + 1
#: A ``FactSpan`` (a span the core read in the facts mode): its fields in constructor order,
#: its ``SpanFact`` as a row of its own (``_fact_row``), and two ``None`` for the row's length.
_FACT_SPAN_FIELDS = tuple(f.name for f in fields(FactSpan))
_FACT = _FACT_SPAN_FIELDS.index("fact")
_fact_span_row = attrgetter(*_FACT_SPAN_FIELDS)
_FACT_SPAN_ROW = len(_FACT_SPAN_FIELDS) + 2
_SPAN_FACT_FIELDS = tuple(f.name for f in fields(SpanFact))
_CALL, _MODEL_CALLS = _SPAN_FACT_FIELDS.index("call"), _SPAN_FACT_FIELDS.index("model_calls")
_span_fact_row = attrgetter(*_SPAN_FACT_FIELDS)
_dialect_call_row = attrgetter(*(f.name for f in fields(DialectCall)))
_model_call_row = attrgetter(*(f.name for f in fields(ModelCall)))
assert len({_SPAN_ROW, len(_LOG_FIELDS), _HEAD_ROW, _SPAN_HEAD_ROW, _FACT_SPAN_ROW}) == 5
#: The message class of a protobuf span's ``wire`` (``otlp.decode.pb``, lean schema).
_LEAN_SPAN = type(LeanTraces().resource_spans.add().scope_spans.add().spans.add())
#: Bytes of request bodies held for kept traces, per span or log record ``--revision-max-spans``
#: allows: a body of the SDK's batch of 512 small spans is about 100 KB, and the traces it
#: carries are kept (and let go) together, so at the default cap (10,000: 10 MB) bodies are
#: held for all of them; a large body holding few kept spans is packed instead.
BODY_BYTES_PER_KEPT_ITEM = 1024
#: Its serializer, looked up once (on a message, an attribute is looked up among the
#: message's fields before its methods); "partial": proto3 has no required field to check.
_SERIALIZE = _LEAN_SPAN.SerializePartialToString


class KeptBodies:
    """Request bodies that kept traces point into, each held once with a count of the kept
    traces that use it, at most ``max_bytes`` in all (``pin`` refuses past it: counted in
    ``refused``, and that trace's spans are packed instead). Thread-safe."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes_held = 0
        #: Bodies ``pin`` refused, for being over ``max_bytes`` with what is held.
        self.refused = 0
        self._held: dict[int, list[Any]] = {}  # id(body) -> [body, users]
        self._lock = threading.Lock()

    @property
    def bodies_held(self) -> int:
        return len(self._held)

    def pin(self, body: bytes) -> bool:
        """Hold ``body`` for one more kept trace; False when it would pass ``max_bytes``."""
        with self._lock:
            held = self._held.get(id(body))
            if held is not None:
                held[1] += 1
                return True
            if self.bytes_held + len(body) > self.max_bytes:
                self.refused += 1
                return False
            self._held[id(body)] = [body, 1]
            self.bytes_held += len(body)
            return True

    def unpin(self, body: bytes) -> None:
        """One kept trace less uses ``body``; the last one lets it go."""
        with self._lock:
            held = self._held[id(body)]
            held[1] -= 1
            if not held[1]:
                del self._held[id(body)]
                self.bytes_held -= len(body)

    def release(self, kept: Any) -> None:
        """A kept form (``pack``'s) is let go: the bodies it points into."""
        if kept.__class__ is tuple:
            for body in kept[1:]:
                self.unpin(body)


def pack(items: list[Received], bodies: KeptBodies | None = None) -> bytes | tuple[Any, ...] | None:
    """``items`` (``ReceivedSpan`` and ``ReceivedLog`` of one trace) in their kept form, or
    ``None`` when they hold something the packed form would not give back exactly.

    With ``bodies``, spans whose request body it accepts are kept as their place in it: the
    form is ``(rows, body_0, body_1, ...)``, the bodies pinned in ``bodies`` until
    ``KeptBodies.release``. Otherwise it is ``rows`` alone. ``rows`` is one ``bytes``
    (``marshal``): first the list of how the bodies were read (encoding, facts mode), then,
    in item order: ``n << 32 | index`` for span ``index`` of body ``n`` (``int``); a lean
    span's bytes (``bytes``),
    preceded by a head row ``(resource, scope_name, origin)`` whenever those change; a span's
    fields; a log record's fields (``unpack`` tells them apart by type and length)."""
    if bodies is not None and items:
        whole = _one_request(items, bodies)
        if whole is False:  # its body was refused: packed
            return pack(items)
        if whole is not None:
            return whole
    encodings: list[tuple[str, bool]] = []
    rows: list[Any] = [encodings]
    append = rows.append
    lean_span, serialize = _LEAN_SPAN, _SERIALIZE
    resource: Any = None
    scope_name = origin = None
    pinned: list[bytes] = []
    #: id(body) -> its number in ``pinned`` (-1: not pinned); the last body seen.
    numbers: dict[int, int] = {}
    last_body: Any = None
    last_number = -1
    for item in items:
        if isinstance(item, ReceivedLog):
            if item.decoded.__class__ is not LogRecord:
                _unpinned(bodies, pinned)
                return None
            append(_log_row(item.decoded))
            continue
        inner = item.decoded
        request = item.request
        if request is not None and bodies is not None and request.body is not None:
            body = request.body
            if body is not last_body:
                last_body = body
                last_number = numbers.get(id(body), -2)
                if last_number == -2:
                    last_number = numbers[id(body)] = len(pinned) if bodies.pin(body) else -1
                    if last_number >= 0:
                        pinned.append(body)
                        encodings.append(_read_as(request))
            if last_number >= 0:
                append(last_number << 32 | item.index)
                continue
        if inner.__class__ is SpanHead:
            append((*_span_head_row(inner), None))
            continue
        if inner.__class__ is FactSpan:
            fact = _fact_row(inner.fact)
            if fact is None:
                _unpinned(bodies, pinned)
                return None
            row = _fact_span_row(inner)
            append((*row[:_FACT], fact, *row[_FACT + 1 :], None, None))
            continue
        if inner.__class__ is not Span:
            _unpinned(bodies, pinned)
            return None
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
                _unpinned(bodies, pinned)
                return None
            row = (*row[:_EVENTS], tuple(map(_event_row, events)), *row[_EVENTS + 1 :])
        append(row)
    try:
        packed = marshal.dumps(rows)
    except ValueError:  # a value of a type marshal does not hold (or a lazy mapping)
        _unpinned(bodies, pinned)
        return None
    return (packed, *pinned) if pinned else packed


def _one_request(
    items: list[Received], bodies: KeptBodies
) -> tuple[bytes, bytes] | Literal[False] | None:
    """The common case, quickly: every item a span of one request, whose body ``bodies``
    holds; ``False`` when it refused the body, ``None`` when this is not the case."""
    first = items[0]
    if not isinstance(first, ReceivedSpan):
        return None
    request = first.request
    if request is None or request.body is None:
        return None
    places = [
        item.index for item in items if item.__class__ is ReceivedSpan and item.request is request
    ]
    if len(places) != len(items):
        return None
    if not bodies.pin(request.body):
        return False
    return marshal.dumps([[_read_as(request)], *places]), request.body


def _read_as(request: ReceivedRequest) -> tuple[str, bool]:
    """How ``unpack`` reads a kept body again: as the intake read it (``decode_body``)."""
    return request.encoding, request.facts


def _unpinned(bodies: KeptBodies | None, pinned: list[bytes]) -> None:
    """No kept form after all: the bodies pinned for it are let go."""
    if bodies is not None:
        for body in pinned:
            bodies.unpin(body)


def unpack(kept: bytes | tuple[Any, ...], trace_id: int) -> list[Received]:
    """The items ``pack`` was given, wrapped for the evaluator again (each span read from a
    held body keeps its place in it, so packing them again points into the same body)."""
    if isinstance(kept, bytes):
        rows = marshal.loads(kept)
        bodies: tuple[bytes, ...] = ()
    else:
        rows = marshal.loads(kept[0])
        bodies = kept[1:]
    encodings = rows[0]  # (encoding, facts) of each body: ``_read_as``
    requests = [ReceivedRequest(body, *encodings[n]) for n, body in enumerate(bodies)]
    decoded: dict[int, Sequence[Span | SpanHead | FactSpan]] = {}
    lean = _lean_spans([row for row in rows[1:] if row.__class__ is bytes])
    items: list[Received] = []
    append = items.append
    head: tuple[Any, ...] = ()
    for row in rows[1:]:
        kind = row.__class__
        if kind is int:
            number, index = row >> 32, row & 0xFFFFFFFF
            spans = decoded.get(number)
            if spans is None:
                encoding, facts = encodings[number]
                spans = decoded[number] = decode_body(encoding, bodies[number], facts=facts)
            append(ReceivedSpan(spans[index], trace_id, requests[number], index))
            continue
        if kind is bytes:
            span = next(lean)
            span.resource, span.scope_name, span.origin = head
        elif len(row) == _HEAD_ROW:
            head = row
            continue
        elif len(row) == _SPAN_HEAD_ROW:
            append(ReceivedSpan(SpanHead(*row[:-1]), trace_id))  # type: ignore[arg-type]
            continue
        elif len(row) == _FACT_SPAN_ROW:
            fact = _span_fact(row[_FACT])
            made = FactSpan(*row[:_FACT], fact, *row[_FACT + 1 : -2])  # type: ignore[arg-type,call-arg]
            append(ReceivedSpan(made, trace_id))
            continue
        elif len(row) == _SPAN_ROW:
            span = Span(*row)
            events = row[_EVENTS]
            if events:
                span.events = [SpanEvent(*event) for event in events]
        else:
            append(ReceivedLog(LogRecord(*row), trace_id))
            continue
        append(ReceivedSpan(span, trace_id))
    return items


def _fact_row(fact: Any) -> tuple[Any, ...] | None:
    """A ``SpanFact``'s fields, its call and its model's calls as rows of theirs (the list or
    tuple they came in kept); ``None`` for a fact of another shape."""
    if fact.__class__ is not SpanFact:
        return None
    row = list(_span_fact_row(fact))
    call = row[_CALL]
    if call is not None:
        if call.__class__ is not DialectCall:
            return None
        row[_CALL] = _dialect_call_row(call)
    asked = row[_MODEL_CALLS]
    if asked:
        if any(c.__class__ is not ModelCall for c in asked):
            return None
        row[_MODEL_CALLS] = asked.__class__(map(_model_call_row, asked))
    return tuple(row)


def _span_fact(row: tuple[Any, ...]) -> SpanFact:
    """The ``SpanFact`` of a ``_fact_row``."""
    fields_ = list(row)
    call = fields_[_CALL]
    if call is not None:
        fields_[_CALL] = DialectCall(*call)
    asked = fields_[_MODEL_CALLS]
    if asked:
        fields_[_MODEL_CALLS] = asked.__class__(ModelCall(*c) for c in asked)
    return SpanFact(*fields_)


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
