"""How many spans each trace has in a set of OTLP files, without decoding the spans.

``read_traces`` reads a big input twice: this census first, then the spans, so that each
trace can be converted right after its last span and memory stays bounded. The census must
count exactly the spans ``read_spans`` yields, so it goes through the same file reader
(sniffing, framings, compression, limits) and applies the same span validity rules; only
what is computed per span differs (a trace id instead of a ``Span``):

- protobuf: the lean schema the span reader falls back to (so a request is accepted exactly
  when the span reader accepts it), three id fields read per span;
- JSON lines: ``msgspec`` decodes only the fields that decide whether a span is read and
  skips the rest without building it. A line in the canonical shape (lowerCamelCase, string
  ids and times, int enums) is typed in C, and the spans of a scope are checked column by
  column; any other line is decoded untyped and checked span by span; a line ``msgspec``
  cannot decode at all goes through ``orjson`` and the span reader itself. ``orjson``
  refuses a few lines ``msgspec`` skips over (a number beyond the float range inside a
  skipped value, a string that is not UTF-8 is checked here first) and reads an integer
  beyond 64 bits as a float (a span ``kind`` or status ``code`` then rejects its span):
  those spans are counted but never read, and their traces are then converted at the end
  of the input instead of after their last span.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from typing import Annotated, Any, cast

import msgspec
import orjson
from google.protobuf.message import DecodeError as ProtobufDecodeError
from msgspec import UNSET, Meta, Raw, UnsetType

from tooltrail.otlp.decode.decode_error import DecodeError
from tooltrail.otlp.decode.ids import (
    SPAN_ID_BYTES,
    SPAN_ID_HEX,
    TRACE_ID_BYTES,
    ZERO_HEX,
    ZERO_SPAN_ID,
    ZERO_TRACE_ID,
    hex_parent_ids,
    hex_span_ids,
    json_id,
)
from tooltrail.otlp.decode.lazy import Where
from tooltrail.otlp.decode.limits import DEFAULT_LIMITS, Limits
from tooltrail.otlp.decode.otlpjson import (
    careful_span,
    fast_span,
    json_resource,
    spans_from_json,
)
from tooltrail.otlp.decode.wire import LeanTraces

_fromhex = bytes.fromhex


def span_counts(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    limits: Limits = DEFAULT_LIMITS,
) -> dict[str, int]:
    """Trace id -> number of spans ``read_spans(paths, limits=limits)`` yields for it."""
    from tooltrail.otlp.read.records import expand_paths, file_records

    counts: Counter[str] = Counter()
    for path, named in expand_paths(paths):
        for record in file_records(path, limits, None, named, signal=CENSUS):
            counts.update(cast("list[str]", record.spans))  # this signal's records
    return dict(counts)


# --- protobuf ------------------------------------------------------------------------------


def trace_ids_from_bytes(data: bytes, where: Where) -> list[str]:  # noqa: ARG001 - a signal
    """The trace id of every span ``pb.spans_from_bytes`` would return, in order."""
    try:
        message = LeanTraces.FromString(data)
    except (ProtobufDecodeError, RecursionError, ValueError) as exc:
        raise DecodeError(f"not a valid OTLP protobuf traces message ({exc})") from None
    out: list[str] = []
    append = out.append
    hex_of: dict[bytes, str] = {}
    for resource_spans in message.resource_spans:
        groups = list(resource_spans.scope_spans)
        groups.extend(resource_spans.instrumentation_library_spans)
        for scope_spans in groups:
            for s in scope_spans.spans:
                trace_id = s.trace_id
                trace_hex = hex_of.get(trace_id)
                if trace_hex is None:
                    if len(trace_id) != TRACE_ID_BYTES or trace_id == ZERO_TRACE_ID:
                        continue
                    trace_hex = hex_of[trace_id] = trace_id.hex()
                span_id = s.span_id
                if len(span_id) != SPAN_ID_BYTES or span_id == ZERO_SPAN_ID:
                    continue
                parent = s.parent_span_id
                if parent and len(parent) != SPAN_ID_BYTES:
                    continue
                append(trace_hex)
    return out


# --- JSON ----------------------------------------------------------------------------------


def trace_ids_from_json(doc: Any, where: Where) -> list[str]:
    """The trace ids of a parsed document, through the span reader itself."""
    return [span.trace_id for span in spans_from_json(doc, where, lazy=True)]


def trace_ids_from_json_line(line: bytes, where: Where) -> list[str] | None:
    """The trace ids of one JSON line in the common shape, or ``None`` to read it in full.
    ``where`` must not collect diagnostics: the span reader reports, not the census."""
    if not line.isascii():
        try:
            line.decode()
        except UnicodeDecodeError:
            return None  # orjson refuses it too: the full reader reports it
    try:
        request = _decode_canonical(line)
    except (msgspec.DecodeError, RecursionError):  # a ValidationError too: not canonical
        return _trace_ids_of_heads(line, where)
    if request.resourceLogs is not UNSET:
        return None
    return _canonical_trace_ids(request, where)


# The canonical shape (what the OpenTelemetry exporters write), typed so that msgspec checks
# the member types in C: the per-span Python is then only the id and time checks. A line
# with any other spelling or type fails to decode and goes the general way (_SpanHead).


_Time = Annotated[str, Meta(min_length=1, max_length=640)]  # int() parses 640 digits always


class _Status(msgspec.Struct, gc=False):
    code: int = 0
    message: str = ""


class _CanonicalSpan(msgspec.Struct, gc=False):
    """The members of a canonical span that decide whether the span reader keeps it. The
    reader reads a snake_case spelling only when the lowerCamelCase one is missing or null:
    so only ``parent_span_id`` (the one optional id) is refused (``UnsetType``)."""

    traceId: str
    spanId: Annotated[str, Meta(min_length=SPAN_ID_HEX, max_length=SPAN_ID_HEX)]
    startTimeUnixNano: _Time
    endTimeUnixNano: _Time
    parentSpanId: str = ""
    name: str = ""
    kind: int = 0
    status: _Status | None = None
    events: list[Raw] | UnsetType = UNSET  # a list of anything: the reader reads it lazily
    parent_span_id: UnsetType = UNSET


class _CanonicalScope(msgspec.Struct, gc=False):
    spans: list[_CanonicalSpan] | UnsetType = UNSET


class _CanonicalGroup(msgspec.Struct, gc=False):
    resource: Raw | UnsetType = UNSET
    scopeSpans: list[_CanonicalScope] | UnsetType = UNSET
    scope_spans: UnsetType = UNSET
    instrumentationLibrarySpans: UnsetType = UNSET
    instrumentation_library_spans: UnsetType = UNSET


class _CanonicalRequest(msgspec.Struct, gc=False):
    resourceSpans: list[_CanonicalGroup]
    #: Log records in the same document: such a line is read in full (``otlp.read.mixed`` counts
    #: them); declared so that msgspec notes them while it skips them.
    resourceLogs: Raw | UnsetType = UNSET


_decode_canonical = msgspec.json.Decoder(_CanonicalRequest).decode


def _canonical_trace_ids(request: _CanonicalRequest, where: Where) -> list[str] | None:
    """The trace ids of the spans the reader keeps, ``None`` if it rejects the line."""
    out: list[str] = []
    cache: dict[Any, str] = {}  # trace id as written -> hex, filled as the reader fills it
    for ri, group in enumerate(request.resourceSpans):
        if group.resource is not UNSET and not _resource_reads(group.resource, where, ri):
            return None
        if group.scopeSpans is UNSET:
            continue
        for si, scope in enumerate(group.scopeSpans):
            spans = scope.spans
            if spans is UNSET or not spans:
                continue
            kept = _all_kept(spans, cache)
            if kept is not None:
                out += kept
                continue
            for pi, head in enumerate(spans):
                trace_hex = _canonical_trace_of(head, cache)
                if trace_hex is None:
                    trace_hex = _general_trace_of(head, where, (ri, si, pi), cache)
                    if trace_hex is None:
                        continue
                out.append(trace_hex)
    return out


def _all_kept(spans: list[_CanonicalSpan], cache: dict[Any, str]) -> list[str] | None:
    """The trace ids of these spans if ``_canonical_trace_of`` would pass every one of them,
    else ``None`` (then each span is decided alone). The same checks over whole columns, in C
    loops: span ids and parents (``ids.hex_span_ids``, ``ids.hex_parent_ids``); times (1 to
    640 characters) that join into ASCII digits parse."""
    traces = [head.traceId for head in spans]
    ids = [head.spanId for head in spans]
    parents = [head.parentSpanId for head in spans]
    times = [head.startTimeUnixNano for head in spans]
    times += [head.endTimeUnixNano for head in spans]
    try:
        for trace_key in set(traces).difference(cache):
            cache[trace_key] = json_id(trace_key, TRACE_ID_BYTES)
        if (
            not hex_span_ids(ids)
            or not hex_parent_ids(parents)
            or not "".join(times).encode().isdigit()
        ):
            return None
    except (DecodeError, ValueError):
        return None
    return list(map(cache.__getitem__, traces))


def _canonical_trace_of(head: _CanonicalSpan, cache: dict[Any, str]) -> str | None:
    """``otlpjson.fast_span``'s checks that msgspec did not make: the trace id when they all
    pass (the reader keeps the span then), ``None`` to let the reader's checks decide.

    A trace id seen first is read as ``careful_span`` (which the reader then asks) reads it,
    and cached as it caches it: a span that passes ``fast_span``'s checks passes the careful
    ones too."""
    trace_key = head.traceId
    trace_hex = cache.get(trace_key)
    try:
        if trace_hex is None:
            trace_hex = cache[trace_key] = json_id(trace_key, TRACE_ID_BYTES)
        span_id = head.spanId
        if (
            len(span_id) != SPAN_ID_HEX
            or len(_fromhex(span_id)) != SPAN_ID_BYTES
            or span_id == ZERO_HEX[SPAN_ID_BYTES]
        ):
            return None
        parent = head.parentSpanId
        if parent and (len(parent) != SPAN_ID_HEX or len(_fromhex(parent)) != SPAN_ID_BYTES):
            return None
        int(head.startTimeUnixNano), int(head.endTimeUnixNano)
    except (DecodeError, ValueError):
        return None
    return trace_hex


def _general_trace_of(
    head: _CanonicalSpan, where: Where, loc: tuple[int, int, int], cache: dict[Any, str]
) -> str | None:
    """The reader's own verdict on a canonical span the quick checks left undecided."""
    status = head.status
    span: dict[str, Any] = {
        "traceId": head.traceId,
        "spanId": head.spanId,
        "parentSpanId": head.parentSpanId,  # "" reads as absent: no snake_case spelling here
        "name": head.name,
        "kind": head.kind,
        "startTimeUnixNano": head.startTimeUnixNano,
        "endTimeUnixNano": head.endTimeUnixNano,
        "status": None if status is None else {"code": status.code, "message": status.message},
    }
    if head.events is not UNSET:
        span["events"] = []  # what the reader's type check sees
    read = fast_span(span, where, loc, cache) or careful_span(span, where, loc, True, cache)
    return read.trace_id if read is not None else None


# The general shape: every member untyped, the reader's checks on what was present.


class _SpanHead(msgspec.Struct):
    """The members of an OTLP/JSON span that decide whether the span reader keeps it."""

    traceId: Any = UNSET
    trace_id: Any = UNSET
    spanId: Any = UNSET
    span_id: Any = UNSET
    parentSpanId: Any = UNSET
    parent_span_id: Any = UNSET
    name: Any = UNSET
    kind: Any = UNSET
    startTimeUnixNano: Any = UNSET
    start_time_unix_nano: Any = UNSET
    endTimeUnixNano: Any = UNSET
    end_time_unix_nano: Any = UNSET
    status: Any = UNSET
    events: Raw | UnsetType = UNSET


class _ScopeHead(msgspec.Struct):
    spans: list[_SpanHead] | UnsetType = UNSET


class _ResourceHead(msgspec.Struct):
    resource: Raw | UnsetType = UNSET
    scopeSpans: list[_ScopeHead] | UnsetType = UNSET
    scope_spans: Raw | UnsetType = UNSET
    instrumentationLibrarySpans: Raw | UnsetType = UNSET
    instrumentation_library_spans: Raw | UnsetType = UNSET


class _RequestHead(msgspec.Struct):
    resourceSpans: list[_ResourceHead] | UnsetType = UNSET
    resourceLogs: Raw | UnsetType = UNSET


_decode_head = msgspec.json.Decoder(_RequestHead).decode
_HEAD_FIELDS = _SpanHead.__struct_fields__


def _trace_ids_of_heads(line: bytes, where: Where) -> list[str] | None:
    """``trace_ids_from_json_line`` for a line not in the canonical shape."""
    try:
        request = _decode_head(line)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    groups = request.resourceSpans
    if groups is UNSET or request.resourceLogs is not UNSET:
        return None
    out: list[str] = []
    cache: dict[Any, str] = {}
    for ri, group in enumerate(groups):
        if not (
            group.scope_spans is UNSET
            and group.instrumentationLibrarySpans is UNSET
            and group.instrumentation_library_spans is UNSET
        ):
            return None
        if group.resource is not UNSET and not _resource_reads(group.resource, where, ri):
            return None
        if group.scopeSpans is UNSET:
            continue
        for si, scope in enumerate(group.scopeSpans):
            if scope.spans is UNSET:
                continue
            for pi, head in enumerate(scope.spans):
                trace_hex = _trace_of(head, where, (ri, si, pi), cache)
                if trace_hex is not None:
                    out.append(trace_hex)
    return out


def _resource_reads(raw: Raw, where: Where, ri: int) -> bool:
    """Whether the span reader accepts this resource (a bad one rejects the whole record)."""
    try:
        json_resource({"resource": orjson.loads(memoryview(raw))}, where, ri, True)
    except (DecodeError, orjson.JSONDecodeError):
        return False
    return True


def _trace_of(
    head: _SpanHead, where: Where, loc: tuple[int, int, int], cache: dict[Any, str]
) -> str | None:
    """The span's trace id if the span reader keeps the span, else ``None``."""
    found = _common_trace_of(head, cache)
    if found is not None:
        return found
    span: dict[str, Any] = {}  # anything else: the reader's own checks on what was present
    for name in _HEAD_FIELDS:
        value = getattr(head, name)
        if value is not UNSET:
            span[name] = value
    events = span.get("events")
    if events is not None:
        span["events"] = _events_stand_in(events)
    read = fast_span(span, where, loc, cache) or careful_span(span, where, loc, True, cache)
    return read.trace_id if read is not None else None


def _events_stand_in(events: Raw) -> Any:
    """What the reader's type check sees: a list, ``None`` (JSON null), or something else."""
    text = memoryview(events)  # msgspec keeps the value's exact bytes, no whitespace around
    return [] if text[:1] == b"[" else (None if text == b"null" else "")


def _common_trace_of(head: _SpanHead, cache: dict[Any, str]) -> str | None:
    """``otlpjson.fast_span``'s checks on the head: the trace id when they all pass (the
    reader then keeps the span), ``None`` to let the reader's checks decide."""
    try:
        trace_hex = cache.get(head.traceId)
        if trace_hex is None:
            return None
        span_id = head.spanId
        if type(span_id) is not str or len(span_id) != SPAN_ID_HEX:
            return None
        raw = _fromhex(span_id)
        if len(raw) != SPAN_ID_BYTES or raw == ZERO_SPAN_ID:
            return None
        parent = head.parentSpanId
        if parent and parent is not UNSET:
            if (
                type(parent) is not str
                or len(parent) != SPAN_ID_HEX
                or len(_fromhex(parent)) != SPAN_ID_BYTES
            ):
                return None
        name, kind = head.name, head.kind
        start, end = head.startTimeUnixNano, head.endTimeUnixNano
        if (
            (name is not UNSET and type(name) is not str)
            or (kind is not UNSET and type(kind) is not int)
            or type(start) is not str
            or type(end) is not str
        ):
            return None
        int(start), int(end)
        status = head.status
        if status and status is not UNSET:
            if type(status.get("code", 0)) is not int or type(status.get("message", "")) is not str:
                return None
        events = head.events
        if events is not UNSET and type(_events_stand_in(events)) is not list:
            return None
    except (TypeError, ValueError, AttributeError):
        return None
    return trace_hex


#: The census as a signal for ``records.file_records``: from a parsed JSON document, from
#: protobuf bytes, and from a raw JSON line (tried first).
CENSUS = (trace_ids_from_json, trace_ids_from_bytes, trace_ids_from_json_line)
