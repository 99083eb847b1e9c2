"""OTLP logs: log records (the evaluation events tooltrail writes, GenAI content) decoded
into small records, from protobuf or OTLP/JSON.

Scores go back onto traces as ``gen_ai.evaluation.result`` log records; offline they are
written into OTLP logs files (``write.encode.encode_logs_request``) and read back from them
(``read.log_files``: same formats, framings and compression as trace files).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from tooltrail.otlp.decode.decode_error import DecodeError
from tooltrail.otlp.decode.ids import SPAN_ID_BYTES, TRACE_ID_BYTES, json_id
from tooltrail.otlp.decode.lazy import Where
from tooltrail.otlp.decode.values import (
    Notes,
    json_attributes,
    json_int,
    json_value,
    pb_attributes,
    pb_value,
)


@dataclass(slots=True)
class LogRecord:
    """One OTLP log record. Ids are lower-case hex, ``""`` when the record has none."""

    trace_id: str = ""
    span_id: str = ""
    time_ns: int = 0
    event_name: str = ""
    attributes: Mapping[str, Any] = field(default_factory=dict)
    body: Any = None
    severity_number: int = 0
    resource: Mapping[str, Any] = field(default_factory=dict)
    scope_name: str = ""
    #: Where the record was read from: ``"path:line"`` or ``"path@offset"``.
    origin: str = ""


def _id_or_report(value: bytes, size: int, where: Where, path: str) -> str | None:
    if not value or value == bytes(size):
        return ""
    if len(value) != size:
        where.report(path, f"log record rejected: expected {size} bytes, got {len(value)}")
        return None
    return value.hex()


def logs_from_bytes(data: bytes, where: Where) -> list[LogRecord]:
    try:
        request = ExportLogsServiceRequest.FromString(data)
    except (ProtobufDecodeError, RecursionError, ValueError) as exc:
        raise DecodeError(f"not a valid OTLP protobuf logs message ({exc})") from None
    limits = where.limits
    out: list[LogRecord] = []
    for ri, rl in enumerate(request.resource_logs):
        notes: Notes = []
        rpath = f"resourceLogs[{ri}]"
        resource = pb_attributes(rl.resource.attributes, limits, f"{rpath}.resource", notes)
        for si, sl in enumerate(rl.scope_logs):
            for li, record in enumerate(sl.log_records):
                path = f"{rpath}.scopeLogs[{si}].logRecords[{li}]"
                trace_id = _id_or_report(record.trace_id, TRACE_ID_BYTES, where, f"{path}.traceId")
                span_id = _id_or_report(record.span_id, SPAN_ID_BYTES, where, f"{path}.spanId")
                if trace_id is None or span_id is None:
                    continue
                out.append(
                    LogRecord(
                        trace_id=trace_id,
                        span_id=span_id,
                        time_ns=record.time_unix_nano or record.observed_time_unix_nano,
                        event_name=record.event_name,
                        attributes=pb_attributes(record.attributes, limits, path, notes),
                        body=pb_value(record.body, limits, f"{path}.body", notes)
                        if record.HasField("body")
                        else None,
                        severity_number=record.severity_number,
                        resource=resource,
                        scope_name=sl.scope.name,
                        origin=where.origin,
                    )
                )
        where.report_notes(notes)
    return out


def _get(obj: Mapping[str, Any], camel: str, snake: str, default: Any = None) -> Any:
    value = obj.get(camel)
    if value is None:
        value = obj.get(snake, default)
    return default if value is None else value


def _json_log_id(value: Any, size: int, where: Where, path: str) -> str | None:
    if not value or value == "0" * (2 * size):
        return ""
    try:
        return json_id(value, size)
    except DecodeError as exc:
        where.report(path, f"log record rejected: {exc.reason}")
        return None


def logs_from_json(doc: Any, where: Where) -> list[LogRecord]:
    return _json_logs(doc, where, ids_only=False)


def log_trace_ids_from_json(doc: Any, where: Where) -> list[str]:
    """The trace id of every record ``logs_from_json`` returns (the census of a two-pass
    read), decoding only its ids and time. A record the full reader then rejects for a
    malformed body or attribute list is counted but never read: its trace is converted at
    the end of the input instead of after its last record, as the span census does."""
    return _json_logs(doc, where, ids_only=True)


def _json_logs(doc: Any, where: Where, *, ids_only: bool) -> list[Any]:
    if not isinstance(doc, dict):
        raise DecodeError("expected an object", field="(document)")
    groups = _get(doc, "resourceLogs", "resource_logs")
    if groups is None:
        if "resourceSpans" in doc or "resource_spans" in doc or "resourceMetrics" in doc:
            return []
        raise DecodeError("not an OTLP logs document (no resourceLogs)", field="resourceLogs")
    limits = where.limits
    out: list[Any] = []
    for ri, rl in enumerate(_list(groups, "resourceLogs")):
        rpath = f"resourceLogs[{ri}]"
        notes: Notes = []
        resource_obj = rl.get("resource") if isinstance(rl, dict) else None
        resource = (
            json_attributes(resource_obj.get("attributes"), limits, f"{rpath}.resource", notes)
            if isinstance(resource_obj, dict) and not ids_only
            else {}
        )
        for si, sl in enumerate(
            _list(_get(rl, "scopeLogs", "scope_logs", []), f"{rpath}.scopeLogs")
        ):
            scope = sl.get("scope") if isinstance(sl, dict) else None
            scope_name = scope.get("name", "") if isinstance(scope, dict) else ""
            spath = f"{rpath}.scopeLogs[{si}]"
            for li, record in enumerate(_list(_get(sl, "logRecords", "log_records", []), spath)):
                path = f"{spath}.logRecords[{li}]"
                try:
                    head = _json_log_head(record, where, path)
                    if head is None:  # rejected for its id, and reported so
                        continue
                    if ids_only:
                        out.append(head[0])
                        continue
                    out.append(_json_log(record, where, path, head, notes, resource, scope_name))
                except DecodeError as exc:  # (a value's error names its whole path)
                    field = exc.field or path
                    if not field.startswith(path):
                        field = f"{path}.{field}"
                    where.report(field, f"log record rejected: {exc.reason}")
        where.report_notes(notes)
    return out


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise DecodeError("expected a list", field=path)
    return value


def _json_log_head(record: Any, where: Where, path: str) -> tuple[str, str, int] | None:
    """(trace id, span id, time) of a record: what decides whether it is read. ``None`` when
    an id rejects it (reported); ``DecodeError`` when it is not a record at all."""
    if not isinstance(record, dict):
        raise DecodeError("expected an object")
    trace_id = _json_log_id(
        _get(record, "traceId", "trace_id"), TRACE_ID_BYTES, where, f"{path}.traceId"
    )
    span_id = _json_log_id(
        _get(record, "spanId", "span_id"), SPAN_ID_BYTES, where, f"{path}.spanId"
    )
    if trace_id is None or span_id is None:
        return None
    time = _get(record, "timeUnixNano", "time_unix_nano") or _get(
        record, "observedTimeUnixNano", "observed_time_unix_nano", 0
    )
    return trace_id, span_id, json_int(time, "timeUnixNano") if time else 0


def _json_log(
    record: dict[str, Any],
    where: Where,
    path: str,
    head: tuple[str, str, int],
    notes: Notes,
    resource: dict[str, Any],
    scope_name: Any,
) -> LogRecord:
    body = record.get("body")
    event_name = _get(record, "eventName", "event_name", "")
    severity = _get(record, "severityNumber", "severity_number", 0)
    return LogRecord(
        trace_id=head[0],
        span_id=head[1],
        time_ns=head[2],
        event_name=event_name if isinstance(event_name, str) else "",
        attributes=json_attributes(
            record.get("attributes"), where.limits, f"{path}.attributes", notes
        ),
        body=json_value(body, where.limits, f"{path}.body", notes) if body else None,
        severity_number=severity if isinstance(severity, int) else 0,
        resource=resource,
        scope_name=scope_name if isinstance(scope_name, str) else "",
        origin=where.origin,
    )


LOGS = (logs_from_json, logs_from_bytes)
