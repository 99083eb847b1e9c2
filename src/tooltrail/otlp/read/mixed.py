"""Traces and logs read in one pass: spans, and the log records that carry their content.

GenAI instrumentations write prompts, replies and tool calls as log records. They reach a user
in the same OTLP/JSON document as the spans (``resourceLogs`` beside ``resourceSpans``) or in a
logs file of their own (the collector's file exporter writes one per signal). This module's
signal decodes both kinds of record from any file ``records`` reads; its output mixes ``Span``
(or ``SpanHead``) and ``LogRecord`` objects, which ``convert`` tells apart.

Protobuf messages say nothing of their signal: an ``ExportLogsServiceRequest`` parses as a
traces request with garbage spans. ``is_logs_message`` tells them apart by the wire types of
the first record's fields (a span's field 1 is its trace id, bytes; a log record's is its time,
a fixed64; fields 6, 7, 8 and 11 differ too).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any, cast

from tooltrail.otlp.decode.decode_error import DecodeError
from tooltrail.otlp.decode.jsontyped import TypedRequest
from tooltrail.otlp.decode.lazy import Where
from tooltrail.otlp.decode.limits import DEFAULT_LIMITS, Limits
from tooltrail.otlp.decode.log_records import (
    LogRecord,
    log_trace_ids_from_json,
    logs_from_bytes,
    logs_from_json,
)
from tooltrail.otlp.decode.otlpjson import parse_json, spans_from_json
from tooltrail.otlp.decode.pb import spans_from_bytes
from tooltrail.otlp.decode.span import Diagnostic, Interest, Span, SpanHead
from tooltrail.otlp.read.decoders import RecordDecoders
from tooltrail.otlp.read.records import Record, expand_paths, file_records

__all__ = [
    "LogRecord",
    "decode_mixed_json",
    "decode_mixed_request",
    "is_logs_message",
    "iter_mixed_records",
    "read_spans_and_logs",
    "spans_and_logs",
    "trace_counts",
]

# Wire types: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32.
_SPAN_FIELDS = {1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 6: 0, 7: 1, 8: 1, 9: 2, 10: 0, 11: 2, 12: 0}
_LOG_FIELDS = {1: 1, 2: 0, 3: 2, 5: 2, 6: 2, 7: 0, 8: 5, 9: 2, 10: 2, 11: 1, 12: 2}
_NOTHING = memoryview(b"")


def spans_and_logs(
    interest: Interest | None, decoders: RecordDecoders | None = None
) -> tuple[Any, ...]:
    """A ``records`` signal: each record's spans (``SpanHead`` outside ``interest``), then its
    log records; with a caller's ``decoders`` (``read.decoders``), a reader of JSON lines
    too, and its protobuf decoder tried before the Python one."""

    def from_json(doc: Any, where: Where) -> list[Any]:
        spans = spans_from_json(doc, where, lazy=True, interest=interest)
        if doc.__class__ is not TypedRequest and ("resourceLogs" in doc or "resource_logs" in doc):
            return spans + logs_from_json(doc, where)
        return spans

    def python(data: bytes, where: Where) -> list[Any]:
        return spans_from_bytes(data, where, lazy=True, interest=interest)

    traces = python
    if decoders is not None:
        own = decoders.protobuf

        def first_own(data: bytes, where: Where) -> list[Any]:
            spans = own(data, where)
            return python(data, where) if spans is None else spans

        traces = first_own

    def from_bytes(data: bytes, where: Where) -> list[Any]:
        if is_logs_message(data):
            return list(logs_from_bytes(data, where))
        return traces(data, where)

    if decoders is None:
        return from_json, from_bytes
    return from_json, from_bytes, decoders.json_line


def read_spans_and_logs(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    limits: Limits = DEFAULT_LIMITS,
    diagnostics: list[Diagnostic] | None = None,
    interest: Interest | None = None,
    decoders: RecordDecoders | None = None,
) -> Iterator[Span | SpanHead | LogRecord]:
    """``read_spans``, with the log records of the same files among the spans."""
    files = expand_paths(paths, diagnostics)
    return read_files_spans_and_logs(
        files, limits=limits, diagnostics=diagnostics, interest=interest, decoders=decoders
    )


def read_files_spans_and_logs(
    files: Iterable[tuple[str, bool]],
    *,
    limits: Limits = DEFAULT_LIMITS,
    diagnostics: list[Diagnostic] | None = None,
    interest: Interest | None = None,
    decoders: RecordDecoders | None = None,
) -> Iterator[Span | SpanHead | LogRecord]:
    """``read_spans_and_logs`` of files already found (``expand_paths``' ``(path, named)``)."""
    signal = spans_and_logs(interest, decoders)
    for path, named in files:
        for record in file_records(path, limits, diagnostics, named, signal):
            yield from record.spans


def trace_counts(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    limits: Limits = DEFAULT_LIMITS,
) -> dict[str, int]:
    """Trace id -> how many spans and log records ``read_spans_and_logs`` yields for it: the
    census of a two-pass read that waits for a trace's log records too. Spans are counted
    by ``census`` (ids only); log records, rarer, by their own decoder."""
    from tooltrail.otlp.read.census import (
        trace_ids_from_bytes,
        trace_ids_from_json,
        trace_ids_from_json_line,
    )

    def from_json(doc: Any, where: Where) -> list[str]:
        ids = trace_ids_from_json(doc, where)
        if doc.__class__ is not TypedRequest and ("resourceLogs" in doc or "resource_logs" in doc):
            ids += log_trace_ids_from_json(doc, where)
        return ids

    def from_bytes(data: bytes, where: Where) -> list[str]:
        if is_logs_message(data):
            return [record.trace_id for record in logs_from_bytes(data, where)]
        return trace_ids_from_bytes(data, where)

    signal = (from_json, from_bytes, trace_ids_from_json_line)
    counts: Counter[str] = Counter()
    for path, named in expand_paths(paths):
        for record in file_records(path, limits, None, named, signal):
            counts.update(cast("list[str]", record.spans))  # this signal's records
    return dict(counts)


def is_logs_message(data: bytes) -> bool:
    """Whether an OTLP protobuf request is a logs request: the first record's fields fit a
    log record and not a span. A request with no record at all reads as traces (either way
    it holds nothing)."""
    record = _first_record(data)
    if record is None:
        return False
    span_like = log_like = True
    for number, wire in _fields(record):
        if _SPAN_FIELDS.get(number, wire) != wire:
            span_like = False
        if _LOG_FIELDS.get(number, wire) != wire:
            log_like = False
    return log_like and not span_like


def _first_record(data: bytes) -> memoryview | None:
    """Bytes of the first span or log record: request field 1 -> field 2 -> field 2 (views,
    not copies: the outer messages are the whole request)."""
    message: memoryview | None = _first_field(memoryview(data), 1)
    for _ in range(2):
        if message is None:
            return None
        message = _first_field(message, 2)
    return message


def _first_field(data: memoryview, wanted: int) -> memoryview | None:
    for number, wire, value in _walk(data):
        if number == wanted and wire == 2:
            return value
    return None


def _fields(data: memoryview) -> Iterator[tuple[int, int]]:
    for number, wire, _ in _walk(data):
        yield number, wire


def _walk(data: memoryview) -> Iterator[tuple[int, int, memoryview]]:
    """(field number, wire type, value bytes for length-delimited) of a message's fields;
    stops quietly at the first malformed field."""
    pos, end = 0, len(data)
    while pos < end:
        tag, pos = _varint(data, pos)
        if tag is None:
            return
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            if value is None:
                return
            yield number, wire, _NOTHING
        elif wire == 1 or wire == 5:
            pos += 8 if wire == 1 else 4
            if pos > end:
                return
            yield number, wire, _NOTHING
        elif wire == 2:
            size, pos = _varint(data, pos)
            if size is None or pos + size > end:
                return
            yield number, wire, data[pos : pos + size]
            pos += size
        else:
            return


def _varint(data: memoryview, pos: int) -> tuple[int | None, int]:
    value = shift = 0
    while pos < len(data) and shift < 64:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    return None, pos


def decode_mixed_json(
    request: bytes,
    *,
    origin: str = "",
    limits: Limits = DEFAULT_LIMITS,
    diagnostics: list[Diagnostic] | None = None,
    interest: Interest | None = None,
    decoders: RecordDecoders | None = None,
) -> list[Any]:
    """``decode_json_request`` (lazily), with the request's log records after its spans; a
    caller's ``decoders`` read it first (``read.decoders``)."""
    _within_limit(request, limits)
    signal = spans_and_logs(interest, decoders)
    where = Where(origin, None, None, limits, diagnostics)
    if len(signal) > 2 and isinstance(request, bytes):
        spans: list[Any] | None = signal[2](request, where)
        if spans is not None:
            return spans
    return signal[0](parse_json(request), where)  # type: ignore[no-any-return]


def decode_mixed_request(
    data: bytes,
    *,
    origin: str = "",
    limits: Limits = DEFAULT_LIMITS,
    diagnostics: list[Diagnostic] | None = None,
    interest: Interest | None = None,
    decoders: RecordDecoders | None = None,
) -> list[Any]:
    """``decode_request`` (lazily) of a traces or a logs request (see ``is_logs_message``)."""
    _within_limit(data, limits)
    from_bytes = spans_and_logs(interest, decoders)[1]
    return from_bytes(data, Where(origin, None, None, limits, diagnostics))  # type: ignore[no-any-return]


def _within_limit(data: bytes, limits: Limits) -> None:
    if len(data) > limits.max_record_bytes:
        raise DecodeError(
            f"request of {len(data)} bytes exceeds the {limits.max_record_bytes} byte limit"
        )


def iter_mixed_records(
    path: str | os.PathLike[str],
    *,
    limits: Limits = DEFAULT_LIMITS,
    diagnostics: list[Diagnostic] | None = None,
    interest: Interest | None = None,
    decoders: RecordDecoders | None = None,
) -> Iterator[Record]:
    """``iter_records``, each record's log records after its spans."""
    signal = spans_and_logs(interest, decoders)
    return file_records(os.fspath(path), limits, diagnostics, True, signal)
