"""Trace-store downloads read as OTLP: Jaeger JSON and Grafana Tempo JSON.

A user who downloads a trace from the Jaeger UI or query API, or from Grafana Tempo, gets one
of these documents instead of an OTLP request:

- **Jaeger** (``/api/traces/{id}``, ``/api/traces?...``, the UI's JSON download):
  ``{"data": [trace, ...], "total", "limit", "offset", "errors"}``; also a bare trace object
  (``{"traceID", "spans", "processes"}``) and a single span with its ``process`` inline (one
  per line, as Jaeger's storage exporters write them). Spans become ``Span`` objects here, the
  OTLP fields Jaeger turned into tags (``span.kind``, ``otel.status_code``,
  ``otel.status_description``, ``error``, ``otel.scope.name``) going back to those fields.
- **Tempo** (trace by id): ``{"batches": [ResourceSpans, ...]}`` and
  ``{"trace": {"resourceSpans": [...]}}``; also Jaeger v2's ``{"result": {"resourceSpans"}}``.
  These are OTLP/JSON inside a wrapper key: ``otlpjson.spans_from_json`` reads them, and its
  diagnostics name the wrapper's field path (``batches[0].scopeSpans[1].spans[3].spanId``).

``otlpjson.spans_from_json`` asks ``store_spans`` only for a document without
``resourceSpans``, so reading OTLP costs nothing more. Every reader goes through it: files
(``read_spans``, ``read_traces`` in one or two passes, the census), request bodies
(``decode_json_request``) and the batch pass.

Bad input is reported as OTLP's is: a span with a missing or invalid id, or a field of the
wrong type, is left out ("span rejected", naming ``data[t].spans[i].<field>``); a bad tag or
log is dropped with a diagnostic and its span kept; the rest of the document is read.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Protocol

from tooltrail.otlp.decode.decode_error import DecodeError
from tooltrail.otlp.decode.ids import SPAN_ID_BYTES, TRACE_ID_BYTES, short_hex_id
from tooltrail.otlp.decode.lazy import Where
from tooltrail.otlp.decode.span import (
    STATUS_ERROR,
    STATUS_UNSET,
    Interest,
    Span,
    SpanEvent,
    head_of,
)
from tooltrail.otlp.decode.values import Notes, cut_bytes, cut_str

#: ``span.kind`` tag values (as the OTLP to Jaeger translation writes them) -> OTLP kinds.
_KINDS = {"internal": 1, "server": 2, "client": 3, "producer": 4, "consumer": 5}
_STATUS_CODES = {"UNSET": 0, "OK": 1, "ERROR": 2}
#: Tags naming the instrumentation scope (the second is the pre-1.0 spelling).
_SCOPE_TAGS = ("otel.scope.name", "otel.library.name")
#: Tags the translation adds that carry nothing a reader wants back.
_DROPPED_TAGS = frozenset(("otel.scope.version", "otel.library.version", "internal.span.format"))
#: Wrapper keys around OTLP/JSON -> the field path the inner document's paths get.
_OTLP_WRAPPERS = ("trace", "result")


class OtlpReader(Protocol):
    """``otlpjson.spans_from_json``'s signature."""

    def __call__(
        self, doc: Any, where: Where, *, lazy: bool = ..., interest: Interest | None = ...
    ) -> list[Any]: ...


def store_spans(
    doc: dict[str, Any],
    where: Where,
    *,
    lazy: bool,
    interest: Interest | None,
    otlp: OtlpReader,
) -> list[Any] | None:
    """The spans of a Jaeger or Tempo document (a parsed object without ``resourceSpans``),
    or ``None`` when it is neither. ``otlp`` reads the OTLP/JSON a Tempo wrapper holds
    (``otlpjson.spans_from_json``, which calls this: passed in, so neither module imports
    the other)."""
    batches = doc.get("batches")
    if batches.__class__ is list:
        renamed = {"resourceSpans": batches}
        return _otlp(otlp, renamed, where, "resourceSpans", "batches", lazy, interest)
    for key in _OTLP_WRAPPERS:
        inner = doc.get(key)
        if inner.__class__ is dict and (
            "resourceSpans" in inner or "resource_spans" in inner or "batches" in inner
        ):
            return _otlp(otlp, inner, where, "", f"{key}.", lazy, interest)
    if is_jaeger(doc):
        return jaeger_spans(doc, where, interest=interest if lazy else None)
    return None


def is_store_document(doc: Any) -> bool:
    """Whether a parsed JSON object is a Jaeger or Tempo document ``store_spans`` reads."""
    if doc.__class__ is not dict:
        return False
    if doc.get("batches").__class__ is list or is_jaeger(doc):
        return True
    for key in _OTLP_WRAPPERS:
        inner = doc.get(key)
        if inner.__class__ is dict and (
            "resourceSpans" in inner or "resource_spans" in inner or "batches" in inner
        ):
            return True
    return False


# --- Tempo (and other OTLP/JSON in a wrapper) --------------------------------------------------


class _Renamed(Where):
    """A ``Where`` whose field paths start with the wrapper's, not ``resourceSpans``."""

    __slots__ = ("outer", "old", "new")

    def __init__(self, outer: Where, old: str, new: str) -> None:
        super().__init__(outer.path, outer.line, outer.offset, outer.limits, outer.sink)
        self.origin = outer.origin
        self.outer = outer
        self.old = old
        self.new = new

    def rename(self, field: str) -> str:
        if field and field.startswith(self.old):
            return self.new + field[len(self.old) :]
        return field

    def report(self, field: str, reason: str) -> None:
        self.outer.report(self.rename(field), reason)


def _otlp(
    read: OtlpReader,
    doc: dict[str, Any],
    where: Where,
    old: str,
    new: str,
    lazy: bool,
    interest: Interest | None,
) -> list[Any]:
    renamed = _Renamed(where, old, new)
    try:
        return read(doc, renamed, lazy=lazy, interest=interest)
    except DecodeError as exc:
        raise DecodeError(exc.reason, field=renamed.rename(exc.field)) from None


# --- Jaeger ------------------------------------------------------------------------------


def is_jaeger(doc: dict[str, Any]) -> bool:
    """A Jaeger API response (``data``), a bare trace, or a span with its process inline."""
    data = doc.get("data", doc)
    if data.__class__ is list:
        if data:
            first = data[0]
            return first.__class__ is dict and ("spans" in first or "traceID" in first)
        return "errors" in doc or "total" in doc
    if data is None:  # an error response: {"data": null, "errors": [...]}
        return "errors" in doc
    if doc.get("spans").__class__ is list:
        return "processes" in doc or "traceID" in doc
    return "spanID" in doc and "traceID" in doc and "operationName" in doc


def jaeger_spans(doc: dict[str, Any], where: Where, *, interest: Interest | None) -> list[Any]:
    """The spans of a Jaeger document (see ``is_jaeger``), in document order."""
    out: list[Any] = []
    errors = doc.get("errors")
    if errors.__class__ is list:
        for i, error in enumerate(errors):
            where.report(f"errors[{i}]", f"the trace store reported an error: {_error(error)}")
    data = doc.get("data", doc)
    if data is None:
        return out
    if data.__class__ is not list:
        if "spans" in doc:
            _trace(doc, "", where, interest, out)
        else:  # one span, its process inline
            _read_span(doc, "", {}, where, interest, out)
        return out
    for ti, trace in enumerate(data):
        path = f"data[{ti}]"
        if trace.__class__ is not dict:
            where.report(path, f"expected a trace object, got {_kind(trace)}; skipped")
            continue
        _trace(trace, f"{path}.", where, interest, out)
    return out


def _error(error: Any) -> str:
    if error.__class__ is dict:
        code, msg = error.get("code"), error.get("msg")
        text = " ".join(str(part) for part in (code, msg) if part is not None)
        return text[:200] or "(no message)"
    return str(error)[:200]


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _trace(
    trace: dict[str, Any], prefix: str, where: Where, interest: Interest | None, out: list[Any]
) -> None:
    spans = trace.get("spans")
    if spans is None:
        return
    if spans.__class__ is not list:
        where.report(f"{prefix}spans", f"expected a list, got {_kind(spans)}; trace skipped")
        return
    processes = trace.get("processes")
    if processes is not None and processes.__class__ is not dict:
        where.report(f"{prefix}processes", f"expected an object, got {_kind(processes)}")
        processes = None
    resources = _Resources(processes or {}, f"{prefix}processes", where)
    for si, s in enumerate(spans):
        _read_span(s, f"{prefix}spans[{si}]", resources, where, interest, out)


class _Resources:
    """The resource of each process id of one trace, built once (shared like OTLP's)."""

    def __init__(self, processes: dict[str, Any], path: str, where: Where) -> None:
        self.processes = processes
        self.path = path
        self.where = where
        self.built: dict[str, dict[str, Any]] = {}

    def get(self, key: str, default: Any = None) -> dict[str, Any] | None:
        found = self.built.get(key)
        if found is None:
            process = self.processes.get(key)
            if process is None:
                return default
            path = f"{self.path}.{key}"
            found = self.built[key] = _resource(process, path, self.where, False)
        return found


def _read_span(
    s: Any,
    path: str,
    resources: _Resources | dict[str, Any],
    where: Where,
    interest: Interest | None,
    out: list[Any],
) -> None:
    notes: Notes = []
    base = f"{path}." if path else ""
    try:
        span = _span(s, base, resources, where, notes)
    except DecodeError as exc:
        where.report(f"{base}{exc.field}" if exc.field else path, f"span rejected: {exc.reason}")
        return
    finally:
        where.report_notes(notes)
    if (
        interest is not None
        and span.parent_span_id
        and not interest.named(span.name)
        and interest.key_set.isdisjoint(span.attributes)
    ):
        out.append(head_of(span))
        return
    out.append(span)


def _span(
    s: Any,
    base: str,
    resources: _Resources | dict[str, Any],
    where: Where,
    notes: Notes,
) -> Span:
    """One Jaeger span; raises ``DecodeError`` naming the field (relative to the span)."""
    if s.__class__ is not dict:
        raise DecodeError(f"expected a span object, got {_kind(s)}")
    trace_id = short_hex_id(s.get("traceID"), TRACE_ID_BYTES, "traceID")
    span_id = short_hex_id(s.get("spanID"), SPAN_ID_BYTES, "spanID")
    parent = _parent(s, trace_id)
    name = s.get("operationName", "")
    if name is None:
        name = ""
    elif name.__class__ is not str:
        raise DecodeError(f"expected a string, got {_kind(name)}", field="operationName")
    start = _micros(s.get("startTime"), "startTime")
    duration = _micros(s.get("duration"), "duration")
    process = s.get("process")
    as_strings = process is not None  # Jaeger writes inline-process spans' values as text
    tags = _key_values(s.get("tags"), "tags", base, where, notes, as_strings)
    attributes: dict[str, Any] = {}
    kind = 0
    code: int | None = None
    message = ""
    error = False
    scope = ""
    for key, value in tags:
        if value.__class__ is str:
            if key == "span.kind" and value.lower() in _KINDS:
                kind = _KINDS[value.lower()]
                continue
            if key == "otel.status_code" and value.upper() in _STATUS_CODES:
                code = _STATUS_CODES[value.upper()]
                continue
            if key == "otel.status_description":
                message = value
                continue
            if key in _SCOPE_TAGS:
                scope = scope or value
                continue
        elif key == "error" and value.__class__ is bool:
            error = value
            continue
        if key in _DROPPED_TAGS:
            continue
        attributes[key] = value
    if code is None:
        code = STATUS_ERROR if error else STATUS_UNSET
    events = _events(s.get("logs"), base, where, notes, as_strings)
    resource: dict[str, Any] | None
    if process is not None:
        resource = _resource(process, f"{base}process", where, as_strings)
    else:
        process_id = s.get("processID")
        resource = resources.get(process_id) if process_id.__class__ is str else None
        if resource is None:
            if process_id is not None:
                notes.append((f"{base}processID", "no such process in the trace; no resource"))
            resource = {}
    return Span(
        trace_id,
        span_id,
        parent,
        name,
        kind,
        start * 1000,
        (start + duration) * 1000,
        code,
        message,
        attributes,
        events,
        resource,
        scope,
        where.origin,
    )


def _parent(s: dict[str, Any], trace_id: str) -> str:
    """The parent span id: the ``CHILD_OF`` reference in the span's trace, else the first
    ``FOLLOWS_FROM`` one, else the older ``parentSpanID`` field; ``""`` for a root."""
    references = s.get("references")
    if references is not None:
        if references.__class__ is not list:
            raise DecodeError(f"expected a list, got {_kind(references)}", field="references")
        follows: str | None = None
        for i, ref in enumerate(references):
            path = f"references[{i}]"
            if ref.__class__ is not dict:
                raise DecodeError(f"expected a reference object, got {_kind(ref)}", field=path)
            ref_type = ref.get("refType", "CHILD_OF")
            if ref_type.__class__ is not str:
                raise DecodeError(
                    f"expected a string, got {_kind(ref_type)}", field=f"{path}.refType"
                )
            ref_trace = ref.get("traceID")
            if (
                ref_trace is not None
                and short_hex_id(ref_trace, TRACE_ID_BYTES, f"{path}.traceID") != trace_id
            ):
                continue  # a span of another trace cannot be the parent here
            ref_type = ref_type.upper()
            if ref_type == "CHILD_OF":
                return short_hex_id(ref.get("spanID"), SPAN_ID_BYTES, f"{path}.spanID")
            if ref_type == "FOLLOWS_FROM" and follows is None:
                follows = short_hex_id(ref.get("spanID"), SPAN_ID_BYTES, f"{path}.spanID")
        if follows is not None:
            return follows
    parent = s.get("parentSpanID")
    if parent is None or parent == "" or (parent.__class__ is str and parent.strip("0") == ""):
        return ""
    return short_hex_id(parent, SPAN_ID_BYTES, "parentSpanID")


def _micros(value: Any, field: str) -> int:
    """A time or duration in microseconds: a JSON integer or a decimal string."""
    if value is None:
        return 0
    if value.__class__ is int:
        return int(value)
    if value.__class__ is str:
        try:
            return int(value)
        except ValueError:
            pass
    elif value.__class__ is float and value.is_integer():
        return int(value)
    raise DecodeError(f"expected an integer (microseconds), got {_kind(value)}", field=field)


def _key_values(
    items: Any, field: str, base: str, where: Where, notes: Notes, as_strings: bool
) -> list[tuple[str, Any]]:
    """Jaeger ``[{key, type, value}]`` as (key, Python value) pairs; a bad pair is dropped
    with a note. ``as_strings``: values written as text (spans with their process inline)."""
    if items is None:
        return []
    if items.__class__ is not list:
        raise DecodeError(f"expected a list, got {_kind(items)}", field=field)
    limits = where.limits
    out: list[tuple[str, Any]] = []
    for i, item in enumerate(items):
        if i >= limits.max_attributes:
            notes.append(
                (f"{base}{field}", f"more than {limits.max_attributes} attributes; rest dropped")
            )
            break
        path = f"{base}{field}[{i}]"
        if item.__class__ is not dict:
            notes.append((path, f"expected a key/type/value object, got {_kind(item)}; dropped"))
            continue
        key = item.get("key")
        if key.__class__ is not str:
            notes.append((f"{path}.key", f"expected a string, got {_kind(key)}; dropped"))
            continue
        try:
            value = _value(item.get("type"), item.get("value"), as_strings)
        except DecodeError as exc:
            notes.append((f"{path}.value", f"{exc.reason}; dropped"))
            continue
        if value.__class__ is str:
            value = cut_str(value, limits, f"{path}.value", notes)
        elif value.__class__ is bytes:
            value = cut_bytes(value, limits, f"{path}.value", notes)
        out.append((key, value))
    return out


def _value(kind: Any, value: Any, as_strings: bool) -> Any:
    """A tag value as Python by its Jaeger type (``string bool int64 float64 binary``).
    Jaeger writes an int64 beyond JavaScript's safe range as a decimal string."""
    kind = kind.lower() if kind.__class__ is str else kind
    cls = value.__class__
    if kind == "string":
        if cls is str:
            return value
    elif kind == "bool":
        if cls is bool:
            return value
        if cls is str and value.lower() in ("true", "false"):
            return value.lower() == "true"
    elif kind == "int64":
        if cls is int:
            return value
        if cls is str:
            try:
                return int(value)
            except ValueError:
                pass
        elif cls is float and value.is_integer():
            return int(value)
    elif kind == "float64":
        if cls is float or cls is int:
            return float(value)
        if cls is str:
            try:
                return float(value)
            except ValueError:
                pass
    elif kind == "binary":
        if cls is str:
            try:
                if as_strings:
                    return bytes.fromhex(value)
                return base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                raise DecodeError(
                    "expected base64 bytes" if not as_strings else "expected hex bytes"
                ) from None
    elif kind is None and cls in (str, bool, int, float):
        return value
    else:
        raise DecodeError(f"unknown tag type {str(kind)[:20]!r}")
    article = "an" if kind == "int64" else "a"
    raise DecodeError(f"expected {article} {kind} value, got {_kind(value)}")


def _events(logs: Any, base: str, where: Where, notes: Notes, as_strings: bool) -> list[SpanEvent]:
    """Jaeger logs as span events: the ``event`` field is the name, the others attributes."""
    if logs is None:
        return []
    if logs.__class__ is not list:
        raise DecodeError(f"expected a list, got {_kind(logs)}", field="logs")
    out: list[SpanEvent] = []
    for i, log in enumerate(logs):
        path = f"logs[{i}]"
        if i >= where.limits.max_events_per_span:
            notes.append(
                (
                    f"{base}logs",
                    f"more than {where.limits.max_events_per_span} events; rest dropped",
                )
            )
            break
        if log.__class__ is not dict:
            notes.append(
                (f"{base}{path}", f"expected a log object, got {_kind(log)}; event dropped")
            )
            continue
        try:
            time = _micros(log.get("timestamp"), f"{path}.timestamp")
            fields = _key_values(
                log.get("fields"), f"{path}.fields", base, where, notes, as_strings
            )
        except DecodeError as exc:
            notes.append((f"{base}{exc.field}", f"{exc.reason}; event dropped"))
            continue
        name = ""
        attributes: dict[str, Any] = {}
        for key, value in fields:
            if key == "event" and value.__class__ is str and not name:
                name = value
            else:
                attributes[key] = value
        out.append(SpanEvent(name, time * 1000, attributes))
    return out


def _resource(process: Any, path: str, where: Where, as_strings: bool) -> dict[str, Any]:
    """A Jaeger process as OTLP resource attributes: ``service.name`` and its tags."""
    notes: Notes = []
    resource: dict[str, Any] = {}
    if process.__class__ is not dict:
        where.report(path, f"expected a process object, got {_kind(process)}; no resource")
        return resource
    service = process.get("serviceName")
    if service.__class__ is str and service:
        resource["service.name"] = service
    try:
        tags = _key_values(process.get("tags"), "tags", f"{path}.", where, notes, as_strings)
    except DecodeError as exc:
        notes.append((f"{path}.{exc.field}", exc.reason))
        tags = []
    for key, value in tags:
        resource[key] = value
    where.report_notes(notes)
    return resource
